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
					if _, err := h.s.RecordReads(ctx, []meta.Read{{ClaimID: pick(rng), Namespace: "ns", At: now}}); err != nil {
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

// testConcurrentQuota races the puts of one namespace for its last
// bytes, at CreatePending (reservations) and at Commit (a final size
// above the reservation). However the store runs concurrent calls —
// PostgreSQL writes those that queue on the namespace row in one
// statement (ADR 0160) — exactly as many fit as the limit admits, every
// other call gets a QuotaError and changes nothing, and the counters
// equal the rows.
func testConcurrentQuota(t *testing.T, h *harness) {
	const (
		workers = 24
		fit     = 10
	)
	race := func(fn func(i int) error) (ok, refused int) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i := range workers {
			wg.Go(func() {
				err := fn(i)
				var qe *meta.QuotaError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.As(err, &qe):
					refused++
				default:
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return ok, refused
	}

	// Reservations of 100 bytes against 1,000.
	var (
		mu   sync.Mutex
		made []meta.CreatePendingParams
	)
	reserve := put{NS: "reserve", Reserve: 100, Size: 100, QuotaBytes: fit * 100}
	ok, refused := race(func(int) error {
		cp, err := h.tryPending(reserve)
		if err == nil {
			mu.Lock()
			made = append(made, cp)
			mu.Unlock()
		}
		return err
	})
	if ok != fit || refused != workers-fit {
		t.Errorf("CreatePending: %d made and %d refused, want %d and %d", ok, refused, fit, workers-fit)
	}
	h.wantCounters("reserve", counters{reserved: fit * 100, pending: fit})
	// They all commit at their reserved size, at once.
	var wg sync.WaitGroup
	for i, cp := range made {
		wg.Go(func() {
			p := h.commitParams(cp, reserve)
			// Distinct times: the created events' numbers do not
			// collide, as on a clock that moves.
			p.Now = p.Now.Add(time.Duration(i))
			if _, err := h.s.Commit(h.ctx(), p); err != nil {
				t.Errorf("Commit within the reservation: %v", err)
			}
		})
	}
	wg.Wait()
	h.wantCounters("reserve", counters{used: fit * 100, active: int64(len(made))})

	// Commits growing from a 1-byte reservation to 100 bytes, each 99
	// more, against a limit that admits ten of them.
	var (
		ps  []put
		cps []meta.CreatePendingParams
	)
	for range workers {
		p := put{NS: "grow", Reserve: 1, Size: 100, QuotaBytes: workers + fit*99}.withDefaults()
		ps, cps = append(ps, p), append(cps, h.pending(p))
	}
	ok, refused = race(func(i int) error {
		cp := h.commitParams(cps[i], ps[i])
		cp.Now = cp.Now.Add(time.Duration(i))
		_, err := h.s.Commit(h.ctx(), cp)
		return err
	})
	if ok != fit || refused != workers-fit {
		t.Errorf("Commit: %d made and %d refused, want %d and %d", ok, refused, fit, workers-fit)
	}
	h.wantCounters("grow", counters{used: fit * 100, reserved: workers - fit, active: fit, pending: workers - fit})
	h.checkInvariants(t)
}
