// Package servetest runs the real `claimcheck` binary for tests that
// judge the server from outside, as its users and attackers meet it: it
// builds cmd/claimcheck once per test binary, starts `serve` processes on
// a free 127.0.0.1 port, runs the other subcommands, and tells how a
// process ended (a refused start, an exit code after SIGTERM).
package servetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// binDir is where Build puts the binary: made by Main before the
// package's tests and removed after them.
var binDir string

// Main is the TestMain of a package that runs the binary: it makes the
// directory Build builds into, runs the tests, removes the directory and
// exits with the tests' code.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "claimcheck-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err) // the exit code stays the tests'
	}
	os.Exit(code)
}

// BinDir is the directory Main made, for a package that builds other
// variants of the binary beside it.
func BinDir() string { return binDir }

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Build compiles cmd/claimcheck once per test binary, the first time a
// test asks for it, and returns its path; the package's TestMain must be
// Main.
func Build(tb testing.TB) string {
	tb.Helper()
	if binDir == "" {
		tb.Fatal("servetest.Build: the package's TestMain must call servetest.Main")
	}
	buildOnce.Do(func() {
		bin := filepath.Join(binDir, "claimcheck")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/claimcheck/claimcheck/cmd/claimcheck")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return builtBin
}

// Env is the environment the subcommands run with: the caller's, less
// the variables that would point them at another server or key.
func Env(extra ...string) []string {
	return append(append(os.Environ(), "CLAIMCHECK_SERVER=", "CLAIMCHECK_API_KEY="), extra...)
}

// Result is how a finished command ended.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs the binary with args in dir and waits for it (at most a
// minute: a command that hangs fails the test rather than the run).
func Run(tb testing.TB, bin, dir string, args ...string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = Env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return Result{out.String(), errb.String(), exit.ExitCode()}
	case err != nil:
		tb.Fatalf("%s %v: %v", bin, args, err)
	}
	return Result{Stdout: out.String(), Stderr: errb.String()}
}

var servingLine = regexp.MustCompile(`url=(https?://127\.0\.0\.1:\d+)`)

// Server is one `claimcheck serve` process.
type Server struct {
	URL  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

// Logs is what the process wrote to stderr so far.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Stop sends SIGTERM and returns the exit code (-1 for a signal death).
func (s *Server) Stop(tb testing.TB) int {
	tb.Helper()
	_ = s.cmd.Process.Signal(os.Interrupt)
	return s.wait(tb)
}

func (s *Server) wait(tb testing.TB) int {
	tb.Helper()
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		tb.Errorf("serve did not end within 2m of SIGTERM:\n%s", s.Logs())
	}
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return 0
}

// Start runs `serve --listen 127.0.0.1:0 args...` in dir. It returns
// once the server reports its address; when the process ends first, it
// returns the server with an empty URL and the process's logs, so a test
// can check a refused start. A server still running at cleanup is
// stopped and must exit 0.
func Start(tb testing.TB, bin, dir string, args ...string) *Server {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = Env()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.logs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.URL = <-urls:
	case <-s.done:
		s.wait(tb)
		return s
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		tb.Fatalf("serve did not report its address within a minute:\n%s", s.Logs())
	}
	tb.Cleanup(func() {
		if s.cmd.ProcessState != nil {
			return
		}
		if code := s.Stop(tb); code != 0 {
			tb.Errorf("serve exited %d at cleanup:\n%s", code, s.Logs())
		}
	})
	return s
}
