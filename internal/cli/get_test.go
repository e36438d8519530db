package cli_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

// getServer serves a fresh store on 127.0.0.1 and puts payload into
// namespace "t"; it returns the server URL and the claim id.
func getServer(t *testing.T, payload []byte) (string, string) {
	t.Helper()
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := c.Put(ctx, "t", bytes.NewReader(payload), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, ref.ID
}

// runGet runs the CLI with stdout pretending to be a terminal or not.
func runGet(t *testing.T, terminal bool, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		IsTerminal: func(io.Writer) bool { return terminal },
	})
	return out.String(), errb.String(), code
}

// TestGetOutputNeverReplacesSpecialFiles: -o writes through a FIFO (a
// non-regular file made here, in a temporary directory) instead of
// renaming a regular file over it, follows symbolic links to their
// target, and keeps temp-file-and-rename for regular files.
func TestGetOutputNeverReplacesSpecialFiles(t *testing.T) {
	payload := bytes.Repeat([]byte("claim-check payload\n"), 4000)
	url, id := getServer(t, payload)
	dir := t.TempDir()

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "pipe")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		got := make(chan []byte, 1)
		go func() {
			f, err := os.Open(fifo) // blocks until get opens the writing end
			if err != nil {
				got <- nil
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- b
		}()
		if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", fifo); code != 0 {
			t.Fatalf("get -o FIFO = %d: %s", code, errOut)
		}
		if b := <-got; !bytes.Equal(b, payload) {
			t.Errorf("the FIFO's reader got %d bytes, want the %d of the payload", len(b), len(payload))
		}
		fi, err := os.Lstat(fifo)
		if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("after get -o, %s is %v (err %v), want it still a FIFO", fifo, fi.Mode(), err)
		}
	})

	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(dir, "target")
		if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link")
		if err := os.Symlink("target", link); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", link); code != 0 {
			t.Fatalf("get -o LINK = %d: %s", code, errOut)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
		}
		b, err := os.ReadFile(target)
		if err != nil || !bytes.Equal(b, payload) {
			t.Errorf("the link's target holds %d bytes (%v), want the payload", len(b), err)
		}
		if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
			t.Errorf("the target's mode is %v, want 0640 kept", fi.Mode().Perm())
		}
	})

	t.Run("dangling symlink", func(t *testing.T) {
		link := filepath.Join(dir, "dangling")
		if err := os.Symlink("created", link); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", link); code != 0 {
			t.Fatalf("get -o DANGLING = %d: %s", code, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "created")); err != nil || !bytes.Equal(b, payload) {
			t.Errorf("the dangling link's target holds %d bytes (%v), want the payload", len(b), err)
		}
	})

	t.Run("regular file", func(t *testing.T) {
		out := filepath.Join(dir, "regular")
		if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", out); code != 0 {
			t.Fatalf("get -o FILE = %d: %s", code, errOut)
		}
		if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, payload) {
			t.Errorf("%s holds %d bytes (%v), want the payload", out, len(b), err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".partial-") {
				t.Errorf("a temporary file was left behind: %s", e.Name())
			}
		}
	})

	t.Run("directory", func(t *testing.T) {
		if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", dir); code != cli.ExitUsage || !strings.Contains(errOut, "is a directory") {
			t.Errorf("get -o DIR = %d %q, want a usage error saying it is a directory", code, errOut)
		}
	})
}

// TestGetDevNullStaysADevice runs the fixed code against the real
// /dev/null (the FIFO test above proves the write-through path on a file
// of the test's own first).
func TestGetDevNullStaysADevice(t *testing.T) {
	before, err := os.Stat("/dev/null")
	if err != nil || before.Mode()&fs.ModeCharDevice == 0 {
		t.Skip("no character device /dev/null here")
	}
	url, id := getServer(t, []byte("discard me"))
	if _, errOut, code := runGet(t, false, "get", id, "--server", url, "-o", "/dev/null"); code != 0 {
		t.Fatalf("get -o /dev/null = %d: %s", code, errOut)
	}
	after, err := os.Stat("/dev/null")
	if err != nil || after.Mode()&fs.ModeCharDevice == 0 || after.Mode().Type() != before.Mode().Type() {
		t.Fatalf("/dev/null is %v after get -o /dev/null (was %v)", after.Mode(), before.Mode())
	}
}

// TestGetBinaryOnTerminal: like curl, a binary payload is not written to
// a terminal unless -o - asks for it; text is, and pipes get anything.
func TestGetBinaryOnTerminal(t *testing.T) {
	binaryPayload := []byte("PK\x03\x04\x00\x00binary\xff\xfe")
	for _, tc := range []struct {
		name     string
		payload  []byte
		terminal bool
		args     []string
		wantCode int
	}{
		{"binary to a terminal", binaryPayload, true, nil, cli.ExitUsage},
		{"binary to a terminal with -o -", binaryPayload, true, []string{"-o", "-"}, 0},
		{"binary to a pipe", binaryPayload, false, nil, 0},
		{"text to a terminal", []byte("héllo, wörld\n"), true, nil, 0},
		{"text cut mid-rune at the sniff length", append(bytes.Repeat([]byte("a"), 8<<10-1), "é and more"...), true, nil, 0},
		{"empty to a terminal", []byte{}, true, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, id := getServer(t, tc.payload)
			out, errOut, code := runGet(t, tc.terminal, append([]string{"get", id, "--server", url}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, errOut)
			}
			if code == 0 && out != string(tc.payload) {
				t.Errorf("stdout has %d bytes, want the %d of the payload", len(out), len(tc.payload))
			}
			if code != 0 && (out != "" || !strings.Contains(errOut, "-o -") || !strings.Contains(errOut, "-o FILE")) {
				t.Errorf("refusal wrote %d bytes; message %q should say -o FILE and -o -", len(out), errOut)
			}
		})
	}
}

// TestGetRefArgument: an argument that is neither JSON, @FILE, - nor a
// claim id says so, instead of a JSON parser's complaint.
func TestGetRefArgument(t *testing.T) {
	for _, arg := range []string{"foo", "cc_short", "  ", "orders/123"} {
		_, errOut, code := runGet(t, false, "get", arg, "--server", "http://127.0.0.1:1")
		if code != cli.ExitUsage || !strings.Contains(errOut, "neither a reference") || !strings.Contains(errOut, "nor a claim id") || strings.Contains(errOut, "invalid character") {
			t.Errorf("get %q = %d %q, want a usage error saying it is neither a reference nor a claim id", arg, code, errOut)
		}
	}
	// Broken JSON still gets the parser's detail.
	if _, errOut, code := runGet(t, false, "get", `{"type":`, "--server", "http://127.0.0.1:1"); code == 0 || strings.Contains(errOut, "neither a reference") {
		t.Errorf("get of broken JSON = %d %q, want the JSON error", code, errOut)
	}
}

// TestHelpShowsEachDefaultOnce: the client flags' help names each
// default once, and never prints the API key from the environment.
func TestHelpShowsEachDefaultOnce(t *testing.T) {
	for _, cmd := range []string{"get", "put", "stat", "release", "rm", "upload", "ns", "events"} {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), []string{cmd, "--help"}, cli.Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string {
				if k == "CLAIMCHECK_API_KEY" {
					return "cck_secretsecret"
				}
				return ""
			},
			Environ: func() []string { return nil },
		})
		if code != 0 {
			t.Fatalf("%s --help = %d: %s", cmd, code, errb.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if n := strings.Count(line, "default"); n > 1 {
				t.Errorf("%s --help: %q names a default %d times", cmd, line, n)
			}
		}
		if strings.Contains(out.String(), "cck_secretsecret") {
			t.Errorf("%s --help prints the API key from the environment", cmd)
		}
	}
}

// TestDLQSaysWhere: dlq says on stderr whether it worked offline on a
// store or through a server, since the same command line can do either.
func TestDLQSaysWhere(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runMain(t, "dlq", "ls", "--data", dir)
	if code != 0 || !strings.Contains(errOut, "offline") || !strings.Contains(errOut, "--data "+dir) {
		t.Errorf("dlq ls --data = %d %q, want a notice naming the offline store", code, errOut)
	}
	url, _ := getServer(t, []byte("x"))
	_, errOut, code = runMainEnv(t, map[string]string{"CLAIMCHECK_SERVER": url}, "dlq", "ls")
	if code != 0 || !strings.Contains(errOut, "through the server at "+url) {
		t.Errorf("dlq ls with $CLAIMCHECK_SERVER = %d %q, want a notice naming the server", code, errOut)
	}
}
