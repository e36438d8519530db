package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestRollingRestartWithStreams: two replicas on PostgreSQL behind a
// front that connects each new connection to a replica that accepts it
// (as a Kubernetes Service does), puts through it all along, and one
// `claimcheck events --follow` through it. Each round restarts, with
// SIGTERM, the replica the follower's stream is on, so the follower
// switches replica on every restart. Every replica exits 0 (the stream
// ends at once with a retry hint instead of holding the shutdown until
// it is cut off, ADR 0273), and the follower sees every created event
// the store holds, each once, in order of seq.
//
// Short mode restarts each replica once under a second or so of load;
// CLAIMCHECK_TEST_ROLLING_RESTARTS=N restarts N times.
func TestRollingRestartWithStreams(t *testing.T) {
	t.Parallel()
	dsn, _ := testsvc.Postgres(t)
	bin := buildBinary(t)
	restarts, load := 6, 2*time.Second
	if testing.Short() {
		restarts, load = 2, 500*time.Millisecond
	}
	if n, err := strconv.Atoi(os.Getenv("CLAIMCHECK_TEST_ROLLING_RESTARTS")); err == nil && n > 0 {
		restarts = n
	}
	cfg := fmt.Sprintf(`metadata: %q
storage: %q
defaults: false
namespaces:
  load: {threshold: 1}
subscriptions:
  settle: 100ms
`, dsn, "file://"+filepath.ToSlash(t.TempDir()))
	cfgPath := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	replicas := []*replica{startReplica(t, bin, cfgPath)} // the migrations run once
	replicas = append(replicas, startReplica(t, bin, cfgPath))
	front := newFront(t, replicas[0].url, replicas[1].url)
	puts := newFront(t, replicas[0].url, replicas[1].url)

	start := time.Now().UnixNano()
	follower := startFollower(t, bin, front.url(), start)

	stop := make(chan struct{})
	var produced sync.WaitGroup
	var putsOK, putsFailed int
	produced.Add(1)
	go func() {
		defer produced.Done()
		c, err := client.New(puts.url())
		if err != nil {
			panic(err)
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Put(context.Background(), "load", strings.NewReader("event "+strconv.Itoa(i)), claimcheck.PutOptions{}); err != nil {
				putsFailed++ // a replica going away; the store's events are the record
				time.Sleep(10 * time.Millisecond)
				continue
			}
			putsOK++
		}
	}()

	var exits []string
	for round := range restarts {
		follower.waitFor(t, follower.count()+5) // the stream delivers before each restart
		i := front.backendOf(t)
		old := replicas[i]
		_ = old.cmd.Process.Signal(syscall.SIGTERM)
		<-old.done
		err := old.cmd.Wait()
		code := old.cmd.ProcessState.ExitCode()
		exits = append(exits, fmt.Sprintf("replica %d: %d", i, code))
		if err != nil || code != 0 || strings.Contains(old.log(), "cut off") {
			t.Fatalf("round %d: replica %d exited %d (%v) with a stream open:\n%s", round, i, code, err, old.log())
		}
		replicas[i] = startReplica(t, bin, cfgPath)
		front.set(i, replicas[i].url)
		puts.set(i, replicas[i].url)
		time.Sleep(load)
	}
	close(stop)
	produced.Wait()

	// The store's record: every created event of the run, in seq order.
	var want []claimcheck.Event
	for after := start; ; {
		page, err := replicas[0].client.NamespaceEvents(context.Background(), "load", claimcheck.EventQuery{After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.Kind == "created" {
				want = append(want, e)
			}
		}
		if len(page) < claimcheck.MaxEventPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	got := follower.waitFor(t, len(want))
	follower.stop(t)
	if len(got) != len(want) {
		t.Fatalf("the follower saw %d created events, the store holds %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].ClaimID != want[i].ClaimID {
			t.Fatalf("event %d: the follower saw %d (%s), the store holds %d (%s): lost, repeated or out of order",
				i, got[i].Seq, got[i].ClaimID, want[i].Seq, want[i].ClaimID)
		}
	}
	t.Logf("rolling restart: %d restarts (%s), %d puts (%d refused while a replica went away), %d created events streamed, none lost; follower connections per replica slot %v",
		restarts, strings.Join(exits, ", "), putsOK, putsFailed, len(got), front.connections())
}

// front is a TCP front on 127.0.0.1 for the replicas: each connection it
// accepts goes to the first replica, from the one after the last used,
// that accepts one; a replica shutting down has closed its listener, so
// new connections reach the other, as behind a Kubernetes Service.
type front struct {
	ln    net.Listener
	mu    sync.Mutex
	addrs []string
	next  int
	last  int   // the backend of the newest connection
	conns []int // connections per backend slot
}

func newFront(t *testing.T, urls ...string) *front {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &front{ln: ln, last: -1, conns: make([]int, len(urls))}
	for _, u := range urls {
		f.addrs = append(f.addrs, strings.TrimPrefix(u, "http://"))
	}
	t.Cleanup(func() { _ = ln.Close() })
	go f.serve()
	return f
}

func (f *front) url() string { return "http://" + f.ln.Addr().String() }

// set replaces the replica in slot i.
func (f *front) set(i int, url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs[i] = strings.TrimPrefix(url, "http://")
}

// backendOf is the slot of the newest connection's replica: for the
// follower's front, the replica its stream is on.
func (f *front) backendOf(t *testing.T) int {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last < 0 {
		t.Fatal("no connection through the front yet")
	}
	return f.last
}

func (f *front) connections() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.conns...)
}

func (f *front) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.pass(c)
	}
}

// pass connects c to a replica and copies both ways until either ends.
func (f *front) pass(c net.Conn) {
	defer c.Close()
	f.mu.Lock()
	addrs, from := append([]string(nil), f.addrs...), f.next
	f.next = (f.next + 1) % len(addrs)
	f.mu.Unlock()
	for k := range addrs {
		i := (from + k) % len(addrs)
		b, err := net.Dial("tcp", addrs[i])
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.last = i
		f.conns[i]++
		f.mu.Unlock()
		defer b.Close()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
		<-done
		return
	}
}

// follower is a `claimcheck events --follow` process and the events it
// printed.
type follower struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []claimcheck.Event
	errs   strings.Builder
	more   chan struct{}
	done   chan struct{}
}

func startFollower(t *testing.T, bin, url string, after int64) *follower {
	t.Helper()
	cmd := exec.Command(bin, "events", "--follow", "--type", "created", "--ns", "load",
		"--after", strconv.FormatInt(after, 10), "--server", url)
	cmd.Env = append(os.Environ(), "CLAIMCHECK_SERVER=", "CLAIMCHECK_API_KEY=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	fl := &follower{cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &fl.mu, w: &fl.errs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-fl.done; _ = cmd.Wait() })
	go func() {
		defer close(fl.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e claimcheck.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				fl.mu.Lock()
				fmt.Fprintf(&fl.errs, "unreadable line %q: %v\n", sc.Text(), err)
				fl.mu.Unlock()
				continue
			}
			fl.mu.Lock()
			fl.events = append(fl.events, e)
			fl.mu.Unlock()
			select {
			case fl.more <- struct{}{}:
			default:
			}
		}
	}()
	return fl
}

func (fl *follower) count() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return len(fl.events)
}

// waitFor waits until the follower printed n events, and returns them.
func (fl *follower) waitFor(t *testing.T, n int) []claimcheck.Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		fl.mu.Lock()
		got, errs := append([]claimcheck.Event(nil), fl.events...), fl.errs.String()
		fl.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-fl.more:
		case <-fl.done:
			t.Fatalf("the follower ended after %d events, want %d:\n%s", len(got), n, errs)
		case <-timeout:
			t.Fatalf("the follower printed %d events, want %d:\n%s", len(got), n, errs)
		}
	}
}

// stop interrupts the follower, the normal end of a follow (exit 0).
func (fl *follower) stop(t *testing.T) {
	t.Helper()
	_ = fl.cmd.Process.Signal(os.Interrupt)
	<-fl.done
	var exit *exec.ExitError
	if err := fl.cmd.Wait(); errors.As(err, &exit) {
		t.Errorf("the follower exited %d when interrupted:\n%s", exit.ExitCode(), fl.errs.String())
	}
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
