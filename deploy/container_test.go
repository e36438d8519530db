package deploy_test

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
)

// instruction is one Containerfile instruction: its keyword, upper case,
// and its arguments with continuation lines joined.
type instruction struct {
	cmd, args string
}

// parseContainerfile reads the instructions of a Containerfile, skipping
// comments and joining lines continued with a backslash.
func parseContainerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestContainerfile checks statically what the image promises, for
// machines where podman cannot build or run it (scripts/image.sh does
// both where it can): an empty base, a numeric non-root user, the port
// the server listens on, exec-form commands that need no shell, and the
// embedded defaults' data directory as a volume.
func TestContainerfile(t *testing.T) {
	ins := parseContainerfile(t, "container/Containerfile")
	all := func(cmd string) []string {
		var args []string
		for _, in := range ins {
			if in.cmd == cmd {
				args = append(args, in.args)
			}
		}
		return args
	}
	one := func(cmd string) string {
		args := all(cmd)
		if len(args) != 1 {
			t.Fatalf("%d %s instructions, want one", len(args), cmd)
		}
		return args[0]
	}

	if from := all("FROM"); !slices.Equal(from, []string{"scratch"}) {
		t.Errorf("FROM %v: want only scratch (the static binary needs no base)", from)
	}
	if run := all("RUN"); len(run) != 0 {
		t.Errorf("RUN %v: the base has no shell to run it", run)
	}

	user := one("USER")
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric non-root user (runAsNonRoot can verify only a number)", user)
	}

	// Exec form: a JSON array, run without a shell.
	var entry, cmd []string
	if err := json.Unmarshal([]byte(one("ENTRYPOINT")), &entry); err != nil || !slices.Equal(entry, []string{"/claimcheck"}) {
		t.Errorf("ENTRYPOINT %s: want the exec form [\"/claimcheck\"] (%v)", one("ENTRYPOINT"), err)
	}
	if err := json.Unmarshal([]byte(one("CMD")), &cmd); err != nil || len(cmd) == 0 || cmd[0] != "serve" {
		t.Fatalf("CMD %s: want the exec form of serve (%v)", one("CMD"), err)
	}
	i := slices.Index(cmd, "--config")
	if i < 0 || i+1 == len(cmd) {
		t.Fatalf("CMD %v: want --config FILE, the file users mount over", cmd)
	}
	configPath := cmd[i+1]

	// COPY sources and destinations: the binary at the entrypoint, the CA
	// bundle where Go looks on Linux (S3 over TLS), the config at --config,
	// and the data directory owned by USER.
	copies := map[string]string{} // destination → flags and source
	for _, c := range all("COPY") {
		f := strings.Fields(c)
		copies[f[len(f)-1]] = strings.Join(f[:len(f)-1], " ")
	}
	for dest, src := range map[string]string{
		"/claimcheck":                        "claimcheck",
		"/etc/ssl/certs/ca-certificates.crt": "ca-certificates.crt",
		configPath:                           "claimcheck.yaml",
	} {
		if !strings.HasSuffix(copies[dest], src) {
			t.Errorf("COPY to %s: %q, want %s from the build context (scripts/image.sh)", dest, copies[dest], src)
		}
	}

	// The embedded defaults put data in ./data under WORKDIR; that is the
	// VOLUME, and USER owns it so that a fresh volume is writable.
	workdir := one("WORKDIR")
	data := strings.TrimSuffix(workdir, "/") + "/" + strings.TrimPrefix(engine.DefaultDataDir, "./")
	if engine.DefaultDataDir != "./data" {
		t.Fatalf("engine.DefaultDataDir is %q: check that the image's VOLUME still holds it", engine.DefaultDataDir)
	}
	if vol := one("VOLUME"); vol != data && vol != `["`+data+`"]` {
		t.Errorf("VOLUME %s: want %s, where the embedded defaults keep their data", vol, data)
	}
	owned := false
	for dest, src := range copies {
		if strings.Contains(src, "--chown="+user) && (dest == workdir || dest == workdir+"/") {
			owned = true
		}
	}
	if !owned {
		t.Errorf("no COPY --chown=%s creates %s: the server could not write its data", user, data)
	}

	// The port: EXPOSE matches the listen address the environment sets
	// (the file cannot override it: environment beats file).
	env := map[string]string{}
	for _, e := range all("ENV") {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	listen := env["CLAIMCHECK_LISTEN"]
	m := regexp.MustCompile(`^:(\d+)$`).FindStringSubmatch(listen)
	if m == nil {
		t.Fatalf("ENV CLAIMCHECK_LISTEN=%q: want :PORT, every interface of the container", listen)
	}
	if expose := one("EXPOSE"); expose != m[1] && expose != m[1]+"/tcp" {
		t.Errorf("EXPOSE %s, but the server listens on %s", expose, listen)
	}

	// Every CLAIMCHECK_ variable the image sets is a config key serve
	// accepts, and the default config file parses.
	var fc struct {
		engine.Config `yaml:",inline"`
		Listen        string `yaml:"listen"`
	}
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	if err := config.Load("container/claimcheck.yaml", envList, &fc); err != nil {
		t.Errorf("the image's config and environment: %v", err)
	}
	if fc.Listen != listen || fc.Metadata != "" || fc.Storage != "" {
		t.Errorf("the image's default config: listen %q metadata %q storage %q; want the embedded defaults on %s", fc.Listen, fc.Metadata, fc.Storage, listen)
	}
}

// TestImageBinaryBuiltLikeTheRelease: the image built from source
// (scripts/image.sh without --binary) carries the release's binary, not
// a development build: scripts/image.sh builds it with scripts/release.sh
// and has no go build of its own, and release.sh's build is static,
// trimmed (-trimpath, -s -w) and stamps the VERSION file's version into
// the variable `claimcheck version` reads. A plain go build reports
// "(devel)" and keeps its symbol tables, a third larger.
func TestImageBinaryBuiltLikeTheRelease(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	image := scriptCommands(read("../scripts/image.sh"))
	if regexp.MustCompile(`\bgo (build|install)\b`).MatchString(image) {
		t.Errorf("scripts/image.sh runs go build itself: build the binary with scripts/release.sh, as the release is built")
	}
	if !regexp.MustCompile(`scripts/release\.sh"? +"?\$ctx/\S+"? +"?linux/\$arch"?`).MatchString(image) {
		t.Errorf("scripts/image.sh does not build its binary with scripts/release.sh DIR linux/$arch")
	}
	if !regexp.MustCompile(`version=\$\(cat "?\$root/VERSION"?\)`).MatchString(image) {
		t.Errorf("scripts/image.sh: the image's version label does not default to the VERSION file's")
	}

	release := scriptCommands(read("../scripts/release.sh"))
	build := regexp.MustCompile(`CGO_ENABLED=0 [^\n]*\n?\s*go build ([^\n]*\n?[^\n]*)`).FindStringSubmatch(release)
	if build == nil {
		t.Fatal("scripts/release.sh has no CGO_ENABLED=0 go build")
	}
	for _, want := range []string{"-trimpath", `-ldflags "-s -w `, "-X $pkg.version=$version"} {
		if !strings.Contains(build[1], want) {
			t.Errorf("scripts/release.sh's go build %q lacks %s", build[1], want)
		}
	}
	if !strings.Contains(release, "version=v$(cat VERSION)") || !strings.Contains(release, "pkg=github.com/claimcheck/claimcheck/internal/cli") {
		t.Errorf("scripts/release.sh does not stamp the VERSION file's version into internal/cli's version")
	}
	if !regexp.MustCompile(`(?m)^var version string$`).MatchString(read("../internal/cli/version.go")) {
		t.Errorf("internal/cli/version.go has no var version string for release.sh's -X to set")
	}
}

// scriptCommands is a shell script without its comments, its continued
// lines joined.
func scriptCommands(src string) string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, l)
	}
	return strings.ReplaceAll(strings.Join(out, "\n"), "\\\n", " ")
}
