package metatest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
)

// epoch is the fake clock's start. Every time in the suite is derived from
// it, so failures are reproducible.
var epoch = time.Date(2026, 1, 9, 13, 24, 0, 0, time.UTC)

// harness is one subtest's store, clock and bookkeeping. It remembers
// every claim and blob the subtest created, so that the invariants can be
// checked over all rows at the end (the Store interface has no listing).
type harness struct {
	t     *testing.T
	s     meta.Store
	clock *clock.Fake

	mu     sync.Mutex
	claims []string
	blobs  []string
}

func setup(t *testing.T, open func(t *testing.T) meta.Store) *harness {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	h := &harness{t: t, s: s, clock: clock.NewFake(epoch)}
	// Registered after Close, so it runs before it.
	t.Cleanup(func() {
		if !t.Failed() {
			h.checkInvariants(t)
		}
	})
	return h
}

func (h *harness) now() time.Time { return h.clock.Now() }

// ctx is the context of store calls. Not t.Context: the invariant check
// runs in Cleanup, after t.Context is cancelled.
func (h *harness) ctx() context.Context { return context.Background() }

// takeLease takes the named lease for holder at the clock's now, failing
// the test when it is not given.
func (h *harness) takeLease(name, holder string, ttl time.Duration) {
	h.t.Helper()
	if ok, err := h.s.TryLease(h.ctx(), name, holder, h.now(), ttl); err != nil || !ok {
		h.t.Fatalf("TryLease(%s, %s) = %v, %v; want the lease", name, holder, ok, err)
	}
}

// put describes one put. The zero value is a valid put of 100 fresh bytes
// into namespace "ns", due 24h after creation, with no grace period and no
// retention.
type put struct {
	NS             string
	Size           int64 // committed size; default 100
	Reserve        int64 // reservation while pending; default Size
	Digest         string
	Dedup          bool
	DedupNotBefore time.Time
	QuotaBytes     int64
	QuotaClaims    int64
	MaxAge         time.Duration // default 24h
	UploadWithin   time.Duration // pending deadline; default 1h

	Consumers       int
	ConsumerNames   []string
	DeleteAfterRead bool
	Retention       time.Duration
	Grace           time.Duration
	ContentType     string
	Labels          map[string]string
	TraceParent     string
}

func (p put) withDefaults() put {
	if p.NS == "" {
		p.NS = "ns"
	}
	if p.Size == 0 {
		p.Size = 100
	}
	if p.Reserve == 0 {
		p.Reserve = p.Size
	}
	if p.Digest == "" {
		p.Digest = randomDigest()
	}
	if p.MaxAge == 0 {
		p.MaxAge = 24 * time.Hour
	}
	if p.UploadWithin == 0 {
		p.UploadWithin = time.Hour
	}
	return p
}

func newID(prefix string) string { return prefix + rand.Text() }

func randomDigest() string { return digestOf(rand.Text()) }

func digestOf(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pendingParams builds the CreatePending parameters of p at the current
// fake time.
func (h *harness) pendingParams(p put) meta.CreatePendingParams {
	p = p.withDefaults()
	now := h.now()
	cid, bid := newID("c_"), newID("b_")
	due := now.Add(p.UploadWithin)
	return meta.CreatePendingParams{
		Claim: meta.Claim{
			ID: cid, Namespace: p.NS, BlobID: bid, State: meta.ClaimPending,
			Size: p.Reserve, ReservedBytes: p.Reserve,
			ContentType: p.ContentType, Labels: p.Labels,
			CreatedAt: now, ExpiresAt: now.Add(p.MaxAge),
			DueAt: due, DueReason: meta.ReasonNeverConfirmed,
			DeleteAfterRead: p.DeleteAfterRead, RetentionAfterRead: p.Retention, GracePeriod: p.Grace,
			Consumers: p.Consumers, ConsumerNames: p.ConsumerNames,
			TraceParent: p.TraceParent,
		},
		Blob: meta.Blob{
			ID: bid, Namespace: p.NS, Key: p.NS + "/" + bid, State: meta.BlobStaging,
			CreatedAt: now, StateAt: now, CollectAt: due,
		},
		Now:         now,
		QuotaBytes:  p.QuotaBytes,
		QuotaClaims: p.QuotaClaims,
	}
}

func (h *harness) tryPending(p put) (meta.CreatePendingParams, error) {
	cp := h.pendingParams(p)
	err := h.s.CreatePending(h.ctx(), cp)
	if err == nil {
		h.track(cp.Claim.ID, cp.Blob.ID)
	}
	return cp, err
}

// pending runs put step 1 and fails the test on error.
func (h *harness) pending(p put) meta.CreatePendingParams {
	h.t.Helper()
	cp, err := h.tryPending(p)
	if err != nil {
		h.t.Fatalf("CreatePending: %v", err)
	}
	return cp
}

func (h *harness) commitParams(cp meta.CreatePendingParams, p put) meta.CommitParams {
	p = p.withDefaults()
	return meta.CommitParams{
		ClaimID: cp.Claim.ID, BlobID: cp.Blob.ID,
		Digest: p.Digest, Size: p.Size, StoredSize: p.Size / 2, Compression: "zstd",
		Now:   h.now(),
		DueAt: cp.Claim.ExpiresAt, DueReason: meta.ReasonExpired,
		Dedup: p.Dedup, DedupNotBefore: p.DedupNotBefore,
		QuotaBytes: p.QuotaBytes,
	}
}

// commit runs put step 3 for cp and fails the test on error.
func (h *harness) commit(cp meta.CreatePendingParams, p put) meta.CommitResult {
	h.t.Helper()
	res, err := h.s.Commit(h.ctx(), h.commitParams(cp, p))
	if err != nil {
		h.t.Fatalf("Commit: %v", err)
	}
	return res
}

// put runs both steps of a put.
func (h *harness) put(p put) meta.CommitResult {
	h.t.Helper()
	p = p.withDefaults() // one digest for both steps
	return h.commit(h.pending(p), p)
}

func (h *harness) track(claimID, blobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims = append(h.claims, claimID)
	h.blobs = append(h.blobs, blobID)
}

func (h *harness) claim(id string) meta.Claim {
	h.t.Helper()
	c, err := h.s.Claim(h.ctx(), id)
	if err != nil {
		h.t.Fatalf("Claim(%s): %v", id, err)
	}
	return c
}

func (h *harness) blob(id string) meta.Blob {
	h.t.Helper()
	b, err := h.s.Blob(h.ctx(), id)
	if err != nil {
		h.t.Fatalf("Blob(%s): %v", id, err)
	}
	return b
}

func (h *harness) finish(id, reason string) (meta.FinishResult, bool) {
	h.t.Helper()
	res, done, err := h.s.FinishClaim(h.ctx(), id, reason, h.now(), false)
	if err != nil {
		h.t.Fatalf("FinishClaim(%s): %v", id, err)
	}
	return res, done
}

func (h *harness) beginCollect(limit int, retry time.Duration) []meta.Blob {
	h.t.Helper()
	bs, err := h.s.BeginCollect(h.ctx(), h.now(), limit, retry)
	if err != nil {
		h.t.Fatalf("BeginCollect: %v", err)
	}
	return bs
}

// counters is what a namespace's counters must be.
type counters struct{ used, reserved, active, pending int64 }

func (h *harness) wantCounters(ns string, want counters) {
	h.t.Helper()
	n, err := h.s.Namespace(h.ctx(), ns)
	if err != nil {
		h.t.Fatalf("Namespace(%s): %v", ns, err)
	}
	got := counters{n.UsedBytes, n.ReservedBytes, n.ActiveClaims, n.PendingClaims}
	if got != want {
		h.t.Errorf("namespace %s counters = %+v, want %+v", ns, got, want)
	}
}

// checkInvariants checks, over every row the subtest created, the rules
// that hold after any sequence of operations:
//   - namespace counters equal the sums over the claims;
//   - a pending claim points at a staging blob, an active one at a
//     committed blob;
//   - every non-terminal row has a due time, and terminal ones have none;
//   - no blob on its way out (deleting, deleted) is referenced by a live
//     claim.
func (h *harness) checkInvariants(t *testing.T) {
	t.Helper()
	ctx := h.ctx()
	h.mu.Lock()
	claimIDs, blobIDs := append([]string(nil), h.claims...), append([]string(nil), h.blobs...)
	h.mu.Unlock()

	blobs := make(map[string]meta.Blob)
	for _, id := range blobIDs {
		b, err := h.s.Blob(ctx, id)
		if err != nil {
			t.Errorf("invariants: Blob(%s): %v", id, err)
			continue
		}
		blobs[id] = b
		switch b.State {
		case meta.BlobStaging, meta.BlobOrphaned, meta.BlobDeleting:
			// A parked dead letter alone has no due time (it waits for
			// an operator), and only a deleting blob can be parked.
			if b.CollectAt.IsZero() && (b.State != meta.BlobDeleting || b.DeadAt.IsZero()) {
				t.Errorf("invariants: %s blob %s has no collect_at", b.State, id)
			}
		case meta.BlobCommitted, meta.BlobDeleted:
			if !b.CollectAt.IsZero() {
				t.Errorf("invariants: %s blob %s has collect_at %v", b.State, id, b.CollectAt)
			}
		default:
			t.Errorf("invariants: blob %s has unknown state %q", id, b.State)
		}
	}

	sums := make(map[string]counters)
	for _, id := range claimIDs {
		c, err := h.s.Claim(ctx, id)
		if err != nil {
			t.Errorf("invariants: Claim(%s): %v", id, err)
			continue
		}
		sum := sums[c.Namespace]
		switch c.State {
		case meta.ClaimPending:
			sum.reserved += c.ReservedBytes
			sum.pending++
		case meta.ClaimActive:
			sum.used += c.Size
			sum.active++
		}
		sums[c.Namespace] = sum
		if (c.State == meta.ClaimDeleted) != c.DueAt.IsZero() {
			t.Errorf("invariants: %s claim %s has due time %v", c.State, id, c.DueAt)
		}
		if c.State == meta.ClaimDeleted {
			continue
		}
		b, ok := blobs[c.BlobID]
		if !ok {
			b, err = h.s.Blob(ctx, c.BlobID)
			if err != nil {
				t.Errorf("invariants: claim %s: Blob(%s): %v", id, c.BlobID, err)
				continue
			}
		}
		want := meta.BlobCommitted
		if c.State == meta.ClaimPending {
			want = meta.BlobStaging
		}
		if b.State != want {
			t.Errorf("invariants: %s claim %s points at %s blob %s, want %s", c.State, id, b.State, b.ID, want)
		}
	}
	for ns, want := range sums {
		n, err := h.s.Namespace(ctx, ns)
		if err != nil {
			t.Errorf("invariants: Namespace(%s): %v", ns, err)
			continue
		}
		got := counters{n.UsedBytes, n.ReservedBytes, n.ActiveClaims, n.PendingClaims}
		if got != want {
			t.Errorf("invariants: namespace %s counters = %+v, sums over claims = %+v", ns, got, want)
		}
	}
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
