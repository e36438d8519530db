package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release's version, set by scripts/release.sh with
// -ldflags -X (from the VERSION file). Empty in other builds: then the
// module version the go command stamped (v1.2.3 after go install …@v1.2.3,
// a pseudo-version or "(devel)" in a working tree) is the answer.
var version string

// commit, commitTime and modified are the commit a release was built
// from, set by scripts/release.sh like version: the go command records
// them itself (vcs.revision, vcs.time, vcs.modified) only when it finds
// the repository, which it does not in every checkout (a git worktree).
var commit, commitTime, modified string

// buildVersion is what claimcheck version prints.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`      // the VCS revision built, when the go command recorded it
	CommitAt  string `json:"commit_time,omitempty"` // its time (RFC 3339)
	Modified  bool   `json:"modified,omitempty"`    // built from a working tree with uncommitted changes
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// readBuildVersion reads the build information the go command linked in.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: version, Commit: commit, CommitAt: commitTime, Modified: modified == "true",
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "unknown"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	v.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitAt = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, the commit it was built from and the Go version",
		Args:  exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			v := readBuildVersion()
			if asJSON {
				return json.NewEncoder(env.Stdout).Encode(v)
			}
			fmt.Fprintf(env.Stdout, "claimcheck %s\n", v.Version)
			if v.Commit != "" {
				dirty := ""
				if v.Modified {
					dirty = " (modified)"
				}
				fmt.Fprintf(env.Stdout, "commit %s%s %s\n", v.Commit, dirty, v.CommitAt)
			}
			fmt.Fprintf(env.Stdout, "%s %s\n", v.GoVersion, v.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
