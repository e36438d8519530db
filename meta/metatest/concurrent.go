package metatest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testConcurrent runs many goroutines that put the same few payloads with
// dedup while others finish claims, sweep due claims and collect blobs —
// the races of §7.5 of the design: dedup against finishing, dedup against
// collection, commit against the reaper. It checks the end state, not the
// interleaving: counters equal the rows, at most one committed or orphaned
// blob per digest, no live claim on a blob being deleted, and after
// everything expires, nothing is left.
func testConcurrent(t *testing.T, h *harness) {
	const (
		workers = 8
		rounds  = 40
		digests = 3
	)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	now := h.now()
	later := now.Add(time.Minute) // sweeps run a little ahead, so short-lived claims are due

	var (
		mu  sync.Mutex
		all []string // claim ids of every worker
	)
	pick := func(rng *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		return all[rng.IntN(len(all))]
	}
	ctx := h.ctx()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range rounds {
				p := put{
					Digest: digestOf(fmt.Sprint("content-", rng.IntN(digests))),
					Dedup:  true,
					Grace:  time.Duration(rng.IntN(2)) * time.Second,
				}
				if rng.IntN(2) == 0 {
					p.MaxAge = time.Second // due for the sweeps below
				}
				p = p.withDefaults()
				cp, err := h.tryPending(p)
				if err != nil {
					t.Errorf("CreatePending: %v", err)
					return
				}
				mu.Lock()
				all = append(all, cp.Claim.ID)
				mu.Unlock()
				if rng.IntN(5) > 0 { // some uploads are never confirmed
					if _, err := h.s.Commit(ctx, h.commitParams(cp, p)); err != nil && !errors.Is(err, meta.ErrConflict) {
						t.Errorf("Commit: %v", err)
					}
				}
				switch rng.IntN(5) {
				case 0:
					if _, _, err := h.s.FinishClaim(ctx, pick(rng), meta.ReasonDeleted, now, false); err != nil {
						t.Errorf("FinishClaim: %v", err)
					}
				case 1:
					if _, err := h.s.FinishDueClaims(ctx, later, 5); err != nil {
						t.Errorf("FinishDueClaims: %v", err)
					}
				case 2:
					bs, err := h.s.BeginCollect(ctx, later, 5, time.Minute)
					if err != nil {
						t.Errorf("BeginCollect: %v", err)
						continue
					}
					if err := h.s.FinishCollect(ctx, blobIDs(bs), later); err != nil {
						t.Errorf("FinishCollect: %v", err)
					}
				case 3:
					if _, err := h.s.RecordReads(ctx, []meta.Read{{ClaimID: pick(rng), At: now}}); err != nil {
						t.Errorf("RecordReads: %v", err)
					}
				case 4:
					if _, err := h.s.Release(ctx, pick(rng), fmt.Sprint("w", w), now); err != nil && !errors.Is(err, meta.ErrConflict) {
						t.Errorf("Release: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	h.checkInvariants(t)
	h.wantOneLiveBlobPerDigest(t)

	// Everything expires: after the sweeps nothing may be left, neither
	// usage nor a blob that was forgotten.
	h.clock.Set(now.Add(48 * time.Hour))
	for {
		rs, err := h.s.FinishDueClaims(ctx, h.now(), 50)
		if err != nil {
			t.Fatalf("FinishDueClaims: %v", err)
		}
		if len(rs) == 0 {
			break
		}
	}
	h.clock.Advance(time.Hour) // past every grace period
	for {
		bs := h.beginCollect(50, time.Minute)
		if len(bs) == 0 {
			break
		}
		if err := h.s.FinishCollect(ctx, blobIDs(bs), h.now()); err != nil {
			t.Fatal(err)
		}
	}
	h.wantCounters("ns", counters{})
	h.mu.Lock()
	blobs := append([]string(nil), h.blobs...)
	h.mu.Unlock()
	for _, id := range blobs {
		if b := h.blob(id); b.State != meta.BlobDeleted {
			t.Errorf("blob %s is %s after everything expired, want deleted", id, b.State)
		}
	}
	if due, err := h.s.OldestDue(ctx); err != nil || !due.IsZero() {
		t.Errorf("OldestDue after everything expired = %v, %v; want zero", due, err)
	}
}

// wantOneLiveBlobPerDigest checks the dedup invariant when every put used
// dedup: at most one committed or orphaned blob per (namespace, digest).
func (h *harness) wantOneLiveBlobPerDigest(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	ids := append([]string(nil), h.blobs...)
	h.mu.Unlock()
	live := make(map[string][]string)
	for _, id := range ids {
		b := h.blob(id)
		// A deduplicated staging blob is orphaned without a digest: it is
		// no dedup candidate.
		if b.Digest != "" && (b.State == meta.BlobCommitted || b.State == meta.BlobOrphaned) {
			k := b.Namespace + " " + b.Digest
			live[k] = append(live[k], b.ID)
		}
	}
	for k, ids := range live {
		if len(ids) > 1 {
			t.Errorf("digest %s has %d committed/orphaned blobs: %v", k, len(ids), ids)
		}
	}
}

// testConcurrentSameDigest commits one new payload from many goroutines
// at the same moment: exactly one commit writes the blob, every other one
// shares it. On PostgreSQL this is the unique-index race between two
// commits that both found no candidate.
func testConcurrentSameDigest(t *testing.T, h *harness) {
	const n = 16
	d := digestOf("same")
	p := put{Digest: d, Dedup: true}
	cps := make([]meta.CreatePendingParams, n)
	for i := range cps {
		cps[i] = h.pending(p)
	}
	start := make(chan struct{})
	results := make([]meta.CommitResult, n)
	var wg sync.WaitGroup
	for i := range cps {
		wg.Go(func() {
			<-start
			res, err := h.s.Commit(h.ctx(), h.commitParams(cps[i], p))
			if err != nil {
				t.Errorf("Commit: %v", err)
			}
			results[i] = res
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	misses := 0
	shared := ""
	for _, r := range results {
		if !r.DedupHit {
			misses++
			shared = r.Blob.ID
		}
	}
	if misses != 1 {
		t.Fatalf("%d commits wrote their own blob, want exactly 1", misses)
	}
	for _, r := range results {
		if r.Blob.ID != shared || r.Claim.BlobID != shared {
			t.Errorf("claim %s points at %s, want the shared blob %s", r.Claim.ID, r.Claim.BlobID, shared)
		}
	}
	if b := h.blob(shared); b.State != meta.BlobCommitted || b.Refcount != n {
		t.Errorf("shared blob = %+v, want committed with refcount %d", b, n)
	}
	h.wantOneLiveBlobPerDigest(t)
	h.wantCounters("ns", counters{used: 100 * n, active: n})
}
