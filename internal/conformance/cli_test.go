package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

// cliDriver is the claimcheck binary's client commands (put, get,
// upload, upload --resume, release, events --follow).
type cliDriver struct{ bin string }

func newCLIDriver(bin string) cliDriver { return cliDriver{bin: bin} }

func (cliDriver) name() string { return "CLI" }
func (cliDriver) skip() string { return "" }

func (cliDriver) notOffered(path string) (string, bool) {
	if path == "range" {
		return "get asks for a range only to resume a broken download (get --continue)", true
	}
	return "", false
}

func (cliDriver) leftOut(path string) string {
	if path == "direct" {
		return "upload hashes the file it sends: no upload of wrong bytes, and so no retry after one"
	}
	return ""
}

// command is the binary with the target's server and key in its
// environment and a cache directory of the target's own (upload
// --resume keeps its state there).
func (d cliDriver) command(ctx context.Context, tg *target, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Dir = tg.dir
	cmd.Env = servetest.Env("CLAIMCHECK_SERVER="+tg.url, "CLAIMCHECK_API_KEY="+tg.key,
		"XDG_CACHE_HOME="+filepath.Join(tg.dir, "cache"))
	return cmd
}

func (d cliDriver) output(ctx context.Context, tg *target, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := d.command(ctx, tg, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("claimcheck %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// run stores the payload the path's way (put, upload, upload --resume),
// then does the rest of the path on the ref file.
func (d cliDriver) run(ctx context.Context, tg *target, path string) outcome {
	data, file, err := tg.writePayload(d.name(), path)
	if err != nil {
		return failErr(err)
	}
	ns := namespace(d.name(), path)
	store := []string{"put", "--ns", ns, file}
	switch path {
	case "direct":
		store = []string{"upload", "--ns", ns, file}
	case "tus":
		store = []string{"upload", "--resume", "--ns", ns, file}
	}
	ref, err := d.output(ctx, tg, store...)
	if err != nil {
		return failErr(err)
	}
	refFile := file + ".ref.json"
	if err := os.WriteFile(refFile, ref, 0o600); err != nil {
		return failErr(err)
	}
	switch path {
	case "redeem":
		out := file + ".out"
		if _, err := d.output(ctx, tg, "get", "@"+refFile, "-o", out); err != nil {
			return failErr(err)
		}
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
			return fail("get -o wrote other bytes than were put (%v)", err)
		}
	case "release":
		if _, err := d.output(ctx, tg, "release", "@"+refFile); err != nil {
			return failErr(err)
		}
	case "events":
		if err := d.follow(ctx, tg, ns, ref); err != nil {
			return failErr(err)
		}
	}
	return tg.checkRef(ctx, ref, data, path)
}

// follow runs events --follow from the oldest event retained until the
// created event of the ref's claim is printed, then ends the command.
func (d cliDriver) follow(ctx context.Context, tg *target, ns string, refJSON []byte) error {
	id, err := refID(refJSON)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stderr bytes.Buffer
	cmd := d.command(ctx, tg, "events", "--follow", "--type", "created", "--ns", ns, "--after", "oldest")
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if scanFor(out, id) {
		return nil
	}
	return fmt.Errorf("events --follow ended without the created event of %s: %s", id, strings.TrimSpace(stderr.String()))
}

// scanFor reads lines until one contains want (true) or the input ends.
func scanFor(r interface{ Read([]byte) (int, error) }, want string) bool {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return true
		}
	}
	return false
}
