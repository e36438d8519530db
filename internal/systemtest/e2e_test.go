package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// buildBinary is the binary every test runs, built once per test run.
func buildBinary(t testing.TB) string {
	t.Helper()
	return servetest.Build(t)
}

var servingLine = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)

// startServer runs `claimcheck serve` on a free loopback port and returns
// its URL. The process is stopped (SIGTERM, then waited for) at cleanup.
func startServer(t testing.TB, bin, dir string, args ...string) string {
	t.Helper()
	u, _ := startServerProcess(t, bin, dir, args...)
	return u
}

// startServerProcess is startServer that also returns the server's
// process id (for benchmarks that read its CPU time).
func startServerProcess(t testing.TB, bin, dir string, args ...string) (string, int) {
	t.Helper()
	return startServerEnv(t, bin, dir, nil, args...)
}

// startServerEnv is startServerProcess with env added to the server's
// environment.
func startServerEnv(t testing.TB, bin, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER="), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	var logs bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			t.Errorf("server exited: %v\n%s", err, logs.String())
		}
	})
	select {
	case u := <-urls:
		return u, cmd.Process.Pid
	case <-done:
		t.Fatalf("server exited before serving:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not report its address:\n%s", logs.String())
	}
	return "", 0
}

// run executes the CLI binary and returns stdout, stderr and the exit code.
func run(t *testing.T, bin string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func photosJSON(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i := 0; buf.Len() < n; i++ {
		if i > 0 {
			buf.WriteString(",")
		}
		fmt.Fprintf(&buf, `{"albumId":%d,"id":%d,"title":"photo number %d","url":"https://via.example/600/%06x","thumbnailUrl":"https://via.example/150/%06x"}`, i/50, i, i, i*7919, i*104729)
	}
	buf.WriteString("]")
	return buf.Bytes()
}

func TestCLIEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	url := startServer(t, bin, dir)
	server := "--server=" + url

	random := make([]byte, 5<<20)
	rand.Read(random)
	files := map[string][]byte{"photos.json": photosJSON(1200 << 10), "random.bin": random}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, name)
			if err := os.WriteFile(in, data, 0o600); err != nil {
				t.Fatal(err)
			}
			refJSON, stderr, code := run(t, bin, nil, "put", server, "--ns", "e2e", in)
			if code != 0 {
				t.Fatalf("put: exit %d: %s", code, stderr)
			}
			ref, err := claimcheck.ParseRef([]byte(refJSON))
			if err != nil {
				t.Fatalf("put printed %q: %v", refJSON, err)
			}
			if ref.Size != int64(len(data)) || ref.Digest != claimcheck.DigestOf(data) {
				t.Fatalf("ref does not describe the file: %+v", ref)
			}
			refFile := filepath.Join(dir, name+".ref")
			if err := os.WriteFile(refFile, []byte(refJSON), 0o600); err != nil {
				t.Fatal(err)
			}

			// get to a file, from @file
			out := filepath.Join(dir, name+".out")
			if _, stderr, code := run(t, bin, nil, "get", server, "@"+refFile, "-o", out); code != 0 {
				t.Fatalf("get: exit %d: %s", code, stderr)
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, data) {
				t.Fatalf("get -o: %d bytes differ from the %d put", len(got), len(data))
			}
			// get to stdout, ref on stdin
			stdout, stderr, code := run(t, bin, strings.NewReader(refJSON), "get", server, "-")
			if code != 0 || stdout != string(data) {
				t.Fatalf("get to stdout: exit %d (%d bytes): %s", code, len(stdout), stderr)
			}
			// stat, inline ref
			stdout, stderr, code = run(t, bin, nil, "stat", server, strings.TrimSpace(refJSON))
			if code != 0 {
				t.Fatalf("stat: exit %d: %s", code, stderr)
			}
			var info claimcheck.ClaimInfo
			if err := json.Unmarshal([]byte(stdout), &info); err != nil || info.State != claimcheck.StateActive || info.Reads != 2 {
				t.Fatalf("stat printed %s (%v)", stdout, err)
			}
		})
	}

	t.Run("release and rm", func(t *testing.T) {
		refJSON, _, code := run(t, bin, strings.NewReader("small payload"), "put", server, "--ns", "e2e", "-")
		if code != 0 {
			t.Fatal("put from stdin failed")
		}
		ref := strings.TrimSpace(refJSON)
		if _, stderr, code := run(t, bin, nil, "release", server, "--consumer", "billing", ref); code != 0 {
			t.Fatalf("release: %s", stderr)
		}
		if _, stderr, code := run(t, bin, nil, "rm", server, ref); code != 0 {
			t.Fatalf("rm: %s", stderr)
		}
		_, stderr, code := run(t, bin, nil, "get", server, ref)
		if code != 4 || !strings.Contains(stderr, "deleted") {
			t.Fatalf("get after rm: exit %d, %s; want exit 4 naming the reason", code, stderr)
		}
	})

	t.Run("errors are clear", func(t *testing.T) {
		_, stderr, code := run(t, bin, nil, "get", server, `{"type":"claim_check_ref","v":9}`)
		if code != 1 || !strings.Contains(stderr, "unsupported version 9") {
			t.Fatalf("future ref: exit %d: %s", code, stderr)
		}
		_, stderr, code = run(t, bin, nil, "get", server, "cc_AAAAAAAAAAAAAAAAAAAAAA")
		if code != 3 || !strings.Contains(stderr, "not found") {
			t.Fatalf("unknown claim: exit %d: %s", code, stderr)
		}
		_, stderr, code = run(t, bin, nil, "put", server, filepath.Join(dir, "photos.json"))
		if code != 2 || !strings.Contains(stderr, "ns") {
			t.Fatalf("put without --ns: exit %d: %s", code, stderr)
		}
		_, stderr, code = run(t, bin, nil, "put", "--server=http://127.0.0.1:1", "--ns", "x", filepath.Join(dir, "photos.json"))
		if code != 1 || stderr == "" {
			t.Fatalf("unreachable server: exit %d: %s", code, stderr)
		}
	})

	t.Run("help", func(t *testing.T) {
		for _, sub := range []string{"serve", "put", "get", "stat", "release", "rm"} {
			stdout, _, code := run(t, bin, nil, sub, "--help")
			if code != 0 || !strings.Contains(stdout, "Usage:") {
				t.Errorf("%s --help: exit %d: %s", sub, code, stdout)
			}
		}
	})
}

func TestServeRefusesBadConfig(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  a:\n    ttl:\n      max_age: 1m\n      retention_after_read: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, bin, nil, "serve", "--config", cfg, "--data", dir, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "namespaces.a.ttl.retention_after_read: ") || !strings.Contains(stderr, "1h0m0s") || !strings.Contains(stderr, "max_age 1m0s") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
