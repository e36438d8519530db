package statement_test

import (
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta/sqlmeta/internal/statement"
)

type call struct {
	n      int
	by     string // "alone" or "group"
	groupN int
}

// hold runs a statement for key until the returned release is called,
// so that the calls that come meanwhile queue.
func hold(t *testing.T, g *statement.Groups[*call], key string) (release func()) {
	t.Helper()
	running, done, held := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		g.Do(key, &call{}, func(*call) { close(running); <-done }, func([]*call) bool { return false })
	}()
	<-running
	return func() { close(done); <-held }
}

// waitQueued waits until n calls wait behind key's statement.
func waitQueued(g *statement.Groups[*call], key string, n int) {
	for g.Waiting(key) < n {
		time.Sleep(time.Millisecond)
	}
}

// Calls that come while a statement of their key runs are run as one
// group (GroupMax at most), in the order they came; a call of another
// key runs at once.
func TestGroupsRunQueuedCallsTogether(t *testing.T) {
	var g statement.Groups[*call]
	release := hold(t, &g, "ns")
	const n = statement.GroupMax + 3
	var (
		mu     sync.Mutex
		groups [][]int
		wg     sync.WaitGroup
	)
	calls := make([]*call, n)
	for i := range n {
		calls[i] = &call{n: i}
		wg.Go(func() {
			g.Do("ns", calls[i], func(c *call) { c.by = "alone" }, func(cs []*call) bool {
				mu.Lock()
				defer mu.Unlock()
				var ns []int
				for _, c := range cs {
					c.by, c.groupN = "group", len(cs)
					ns = append(ns, c.n)
				}
				groups = append(groups, ns)
				return true
			})
		})
		waitQueued(&g, "ns", i+1)
	}
	other := &call{}
	g.Do("other", other, func(c *call) { c.by = "alone" }, func([]*call) bool { return false })
	if other.by != "alone" {
		t.Fatalf("a call of another key: %q, want run alone at once", other.by)
	}
	release()
	wg.Wait()
	// The first group is GroupMax calls; the 3 left are the next group.
	if len(groups) != 2 || len(groups[0]) != statement.GroupMax || len(groups[1]) != 3 {
		t.Fatalf("groups of sizes %v, want %d then 3", sizes(groups), statement.GroupMax)
	}
	for i, c := range calls {
		if c.by != "group" {
			t.Fatalf("call %d ran %s", i, c.by)
		}
	}
	if groups[0][0] != 0 || groups[1][0] != statement.GroupMax {
		t.Fatalf("groups do not keep the order the calls came in: %v", groups)
	}
	if g.Waiting("ns") != 0 {
		t.Fatal("calls still wait after every group ran")
	}
}

// A group whose statement does not do every call's work leaves each
// call to run alone.
func TestGroupsFallBackToSingleCalls(t *testing.T) {
	var g statement.Groups[*call]
	release := hold(t, &g, "ns")
	const n = 5
	var wg sync.WaitGroup
	calls := make([]*call, n)
	tried := 0
	for i := range n {
		calls[i] = &call{n: i}
		wg.Go(func() {
			g.Do("ns", calls[i], func(c *call) { c.by = "alone" }, func(cs []*call) bool {
				tried = len(cs)
				return false
			})
		})
		waitQueued(&g, "ns", i+1)
	}
	release()
	wg.Wait()
	if tried != n {
		t.Fatalf("the group statement was tried with %d calls, want %d", tried, n)
	}
	for i, c := range calls {
		if c.by != "alone" {
			t.Fatalf("call %d ran %q after its group failed, want alone", i, c.by)
		}
	}
}

func sizes(groups [][]int) []int {
	var out []int
	for _, g := range groups {
		out = append(out, len(g))
	}
	return out
}
