package sqlmeta

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta/internal/statement"
)

// TestPendingGroupNewNamespaceQuota checks that a group of CreatePending
// calls for a namespace that has no counter row yet cannot pass its
// quota together: the row's first insert has no WHERE to check, so a
// group whose sum exceeds the limit must leave each call to its own
// statement. Six reservations of 100 bytes against 300: exactly three
// fit, however they are grouped.
func TestPendingGroupNewNamespaceQuota(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: statement groups are PostgreSQL's")
	}
	s := openPostgresStore(t, dsn)
	ctx := context.Background()
	const (
		ns       = "fresh"
		calls    = 6
		reserve  = 100
		quota    = 300
		wantMade = quota / reserve
	)
	now := time.Now().UTC().Truncate(time.Microsecond)
	params := func(i int) meta.CreatePendingParams {
		cid, bid := newTestID("c_", i), newTestID("b_", i)
		due := now.Add(time.Hour)
		return meta.CreatePendingParams{
			Claim: meta.Claim{ID: cid, Namespace: ns, BlobID: bid, State: meta.ClaimPending,
				Size: reserve, ReservedBytes: reserve, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour),
				DueAt: due, DueReason: meta.ReasonNeverConfirmed, Consumers: 1},
			Blob: meta.Blob{ID: bid, Namespace: ns, Key: ns + "/" + bid, State: meta.BlobStaging,
				CreatedAt: now, StateAt: now, CollectAt: due},
			Now: now, QuotaBytes: quota,
		}
	}

	// Hold the namespace's key with a statement that runs until
	// released, so that every call queues and the first of them leads
	// all of them as one group once the key is handed over.
	key := pendingKey{namespace: ns, quotaBytes: quota}
	g := &s.pendingGroups
	release := holdGroupKey(g, key)

	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		made, refused, fail int
	)
	for i := range calls {
		wg.Go(func() {
			err := s.CreatePending(ctx, params(i))
			var qe *meta.QuotaError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case errors.As(err, &qe):
				refused++
			default:
				fail++
				t.Errorf("CreatePending %d: %v", i, err)
			}
		})
	}
	for g.Waiting(key) < calls {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()

	if made != wantMade || refused != calls-wantMade {
		t.Errorf("%d made, %d refused; want %d and %d", made, refused, wantMade, calls-wantMade)
	}
	n, err := s.Namespace(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if n.ReservedBytes != wantMade*reserve || n.PendingClaims != wantMade {
		t.Errorf("namespace counters: %d bytes reserved by %d pending claims, want %d by %d",
			n.ReservedBytes, n.PendingClaims, wantMade*reserve, wantMade)
	}
}

// holdGroupKey runs a statement of key in g that lasts until release is
// called, so that every call of key made meanwhile queues, and the first
// of them leads them all as one group once the key is handed over.
func holdGroupKey[T any](g *statement.Groups[T], key any) (release func()) {
	holding, done, held := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		var zero T
		g.Do(key, zero, func(T) {
			close(holding)
			<-done
		}, func([]T) bool { return false })
	}()
	<-holding
	return func() {
		close(done)
		<-held
	}
}

// newTestID is a well-formed row id, distinct per i.
func newTestID(prefix string, i int) string {
	return prefix + "pendinggroup" + string(rune('a'+i))
}
