package statement

import (
	"slices"
	"sync"
)

// GroupMax bounds the calls written by one statement.
const GroupMax = 64

// Groups queues calls by key (comparable) behind the statement running
// for that key, and runs those that queued as one group (doc.go). The
// zero value is ready for use.
type Groups[T any] struct {
	mu      sync.Mutex
	running map[any][]*groupEntry[T] // key present: a statement runs; the slice is who waits
}

type groupEntry[T any] struct {
	v    T
	wake chan groupWake
}

// groupWake is what a waiting call is woken with.
type groupWake int

const (
	groupAnswered groupWake = iota // the call holds its answer
	groupLead                      // lead the next group
	groupAlone                     // the leader failed before answering: run alone
)

// Do runs v: alone(v) when nothing of key runs, else in a group with
// together(group), which reports whether it did every call's work; if
// not, alone runs for each. alone and together record their answers in
// the calls (T is a pointer). The wait for a group does not end with a
// context: the running statement may be writing v's rows already.
func (g *Groups[T]) Do(key any, v T, alone func(T), together func([]T) bool) {
	g.mu.Lock()
	if g.running == nil {
		g.running = map[any][]*groupEntry[T]{}
	}
	queue, busy := g.running[key]
	if !busy {
		g.running[key] = nil
		g.mu.Unlock()
		defer g.handOver(key)
		alone(v)
		return
	}
	e := &groupEntry[T]{v: v, wake: make(chan groupWake, 1)}
	g.running[key] = append(queue, e)
	g.mu.Unlock()
	switch <-e.wake {
	case groupAnswered:
		return
	case groupAlone:
		alone(v)
		return
	}
	g.mu.Lock()
	queue = g.running[key] // e is its first
	n := min(len(queue), GroupMax)
	batch := slices.Clone(queue[:n])
	g.running[key] = queue[n:]
	g.mu.Unlock()
	// Every waiter of the batch is woken and the key handed over even if
	// the statement panics (net/http recovers a handler's panic; the
	// waiters must not wait for ever): a waiter not answered by then
	// runs alone.
	answered := 0
	defer func() {
		for i, b := range batch[1:] {
			if i+1 < answered {
				b.wake <- groupAnswered
			} else {
				b.wake <- groupAlone
			}
		}
		g.handOver(key)
	}()
	vs := make([]T, len(batch))
	for i, b := range batch {
		vs[i] = b.v
	}
	if len(vs) > 1 && together(vs) {
		answered = len(vs)
		return
	}
	for _, x := range vs {
		alone(x)
		answered++
	}
}

// handOver ends a statement of key: the first waiter, if any, leads the
// next group; else the key is free.
func (g *Groups[T]) handOver(key any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	queue := g.running[key]
	if len(queue) == 0 {
		delete(g.running, key)
		return
	}
	queue[0].wake <- groupLead
}

// Waiting is the number of calls queued behind the statement running for
// key (0 when none runs).
func (g *Groups[T]) Waiting(key any) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running[key])
}
