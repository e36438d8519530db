// Package brokertest is what the tests of the message-broker
// integrations (integrations/kafka, integrations/nats, integrations/sqs)
// share: the embedded store they publish to and consume from, a wrapper
// that records the ref of every put, and bodies no store can compress or
// deduplicate.
//
// The store runs on a fake clock with its sweeper off, so a test moves
// time and then finds the claims due at that time with Stat; its two
// namespaces are the two ways a claim outlives its consumers' reads: a
// window after the first read, in which a broker's redelivery still
// redeems it, and release by every consumer that read it.
//
// The integrations are modules of their own; they reach this package of
// the root module through go.work, whose replace makes the root module
// this working tree.
package brokertest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// The namespaces of the store Open opens, and their policy.
const (
	// Window deletes a claim Retention after its first read: the
	// window in which a broker's redelivery still redeems it.
	Window = "window"
	// Acks keeps a claim until the consumers it expects released it,
	// then Retention more.
	Acks = "acks"

	// Threshold is both namespaces' offload threshold: a body of
	// Threshold bytes or more is stored, a smaller one travels inline.
	Threshold = 1024
	// MaxAge is both namespaces' TTL.
	MaxAge = time.Hour
	// Retention is both namespaces' retention after read (Window) or
	// release (Acks).
	Retention = 5 * time.Minute
)

// Start is the time the fake clock of Open starts at.
var Start = time.Date(2026, 1, 9, 12, 0, 0, 0, time.UTC)

// Open opens an embedded store with the namespaces Window and Acks, on
// a fake clock at Start and with the sweeper off, closed when tb ends.
func Open(tb testing.TB) (*engine.Store, *clock.Fake) {
	tb.Helper()
	clk := clock.NewFake(Start)
	yes, no := true, false
	store := enginetest.Open(tb, engine.Config{
		Clock: clk, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{
			Window: {Threshold: Threshold, TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(MaxAge), DeleteAfterRead: &yes, RetentionAfterRead: claimcheck.Duration(Retention)}},
			Acks: {Threshold: Threshold, TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(MaxAge), DeleteAfterRead: &no, RetentionAfterRead: claimcheck.Duration(Retention)}},
		},
	})
	return store, clk
}

// Stat returns the info of ref's claim after the store finished the
// claims due at its clock's time, as its sweeper would have by then.
func Stat(tb testing.TB, store *engine.Store, ref claimcheck.Ref) claimcheck.ClaimInfo {
	tb.Helper()
	ctx := context.Background()
	if _, err := store.SweepOnce(ctx, 1000); err != nil {
		tb.Fatal(err)
	}
	info, err := store.Stat(ctx, ref)
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

// Recorder wraps a store and records the ref of every put that
// succeeded, so that a test can follow a claim whose ref it never saw
// (the claim of a publish that failed after the put).
type Recorder struct {
	claimcheck.Claims

	mu   sync.Mutex
	refs []claimcheck.Ref
}

// Put puts through the wrapped store and records the ref.
func (r *Recorder) Put(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, error) {
	ref, err := r.Claims.Put(ctx, ns, body, opts)
	if err == nil {
		r.mu.Lock()
		r.refs = append(r.refs, ref)
		r.mu.Unlock()
	}
	return ref, err
}

// Refs returns the refs of the puts so far, in the order they ended.
func (r *Recorder) Refs() []claimcheck.Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]claimcheck.Ref(nil), r.refs...)
}

// Body returns n random bytes: they do not compress, and no two bodies
// are deduplicated.
func Body(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// Text returns n random characters of base64url, for message bodies
// that must be text (SQS): like Body, they neither compress much nor
// repeat.
func Text(n int) string {
	b := make([]byte, (n*3+3)/4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// SameBody fails tb unless got is want, saying both lengths: a body is
// too long to print.
func SameBody[B ~string | ~[]byte](tb testing.TB, got, want B) {
	tb.Helper()
	if string(got) != string(want) {
		tb.Fatalf("payload differs: got %d bytes, want %d", len(got), len(want))
	}
}
