package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/meta"
)

// The scrub (ADR 0095): a paged, resumable walk over every blob that holds
// committed content, reading each object whole and checking it against
// its row (stored size; decrypted and decompressed, the size and sha256
// of the original bytes). What it finds is marked damaged (meta.
// IntegrityStore), so the next put of the same bytes repairs it and
// redeems answer checksum_mismatch at once instead of streaming bad
// bytes; a damaged blob whose object reads back good again (restored by
// an operator) is cleared. `claimcheck fsck --verify` runs it at a bounded
// rate; the sweeper runs it in the background under a byte budget
// (Config.ScrubRate, off by default) and the scrub lease, so one replica
// scrubs at a time. The position is kept in the cursors table after every
// blob, so a pass resumes where it stopped.

// ScrubLease is the lease the background scrub holds: one runner across
// replicas.
const ScrubLease = "scrub"

// ScrubCursor is the cursors row that keeps the scrub's position.
const ScrubCursor = "scrub"

// DefaultScrubRate is the byte budget of `claimcheck fsck --verify` and of
// the background scrub when enabled without a rate: low enough that
// redeems do not notice it (docs/PERFORMANCE-HISTORY.md, "Integrity:
// scrub and the digest-first existence check").
const DefaultScrubRate = 8 << 20

// holdsContent reports whether b should have a good object: committed, or
// orphaned after being committed (a digest says it held content).
func holdsContent(b meta.Blob) bool {
	return (b.State == meta.BlobCommitted || b.State == meta.BlobOrphaned) && b.Digest != ""
}

// Scrub walks the blobs and verifies their objects. Use one per runner.
type Scrub struct {
	meta     Store
	blobs    blob.Store
	keys     *masterkey.Ring
	clock    interface{ Now() time.Time }
	log      *slog.Logger
	metrics  *Metrics
	pageSize int
}

// NewScrub returns a scrub over m whose objects, in bs, it checks with
// integrity.Verify; keys unwraps the data keys of encrypted objects (nil
// when no master key is configured: an encrypted object then cannot be
// checked, which is an error of the step).
func NewScrub(m Store, bs blob.Store, keys *masterkey.Ring, clk interface{ Now() time.Time }, log *slog.Logger, metrics *Metrics, pageSize int) *Scrub {
	if pageSize <= 0 {
		pageSize = 250
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Scrub{meta: m, blobs: bs, keys: keys, clock: clk, log: log, metrics: metrics, pageSize: pageSize}
}

// ScrubFinding is one damaged blob a scrub step found.
type ScrubFinding struct {
	BlobID    string `json:"blob_id"`
	Namespace string `json:"namespace"`
	Key       string `json:"object_key"`
	Cause     string `json:"cause"`
	Detail    string `json:"detail"`
	// Marked: this step marked it; false when it was marked already.
	Marked bool `json:"marked"`
}

// ScrubReport is what one step did.
type ScrubReport struct {
	Blobs   int            `json:"blobs_verified"`
	Bytes   int64          `json:"bytes_read"`
	Found   []ScrubFinding `json:"damaged"`
	Cleared []string       `json:"cleared"` // damaged blobs whose object read back good
	// Unchecked lists blobs whose object could not be read (the storage
	// did not answer, a data key could not be unwrapped): nothing is
	// known about them; the step went on past them.
	Unchecked []Unchecked `json:"unchecked"`
	// PassDone: the step reached the last blob; the next step starts a
	// new pass from the first.
	PassDone bool `json:"pass_done"`
}

// Step verifies blobs after the saved position until budget object bytes
// were read (it always verifies at least one blob, so a blob larger than
// the budget is not skipped forever) or the pass ends, and saves the
// position after every blob.
func (sc *Scrub) Step(ctx context.Context, budget int64) (ScrubReport, error) {
	var rep ScrubReport
	after, err := sc.meta.Cursor(ctx, ScrubCursor)
	if err != nil {
		return rep, fmt.Errorf("sweep: scrub: %w", err)
	}
	for {
		page, err := sc.meta.Blobs(ctx, after, sc.pageSize)
		if err != nil {
			return rep, fmt.Errorf("sweep: scrub: %w", err)
		}
		for _, b := range page {
			if rep.Blobs > 0 && rep.Bytes >= budget {
				return rep, nil
			}
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			if holdsContent(b) {
				if err := sc.one(ctx, b, &rep); err != nil {
					return rep, err
				}
			}
			after = b.ID
			if err := sc.meta.SetCursor(ctx, ScrubCursor, after); err != nil {
				return rep, fmt.Errorf("sweep: scrub: %w", err)
			}
		}
		if len(page) < sc.pageSize {
			rep.PassDone = true
			sc.metrics.GC.ScrubPasses.Inc()
			if err := sc.meta.SetCursor(ctx, ScrubCursor, ""); err != nil {
				return rep, fmt.Errorf("sweep: scrub: %w", err)
			}
			return rep, nil
		}
	}
}

func (sc *Scrub) one(ctx context.Context, b meta.Blob, rep *ScrubReport) error {
	f, n, err := integrity.Verify(ctx, sc.meta, sc.blobs, sc.keys, b)
	rep.Bytes += n
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Go on past it: one object that cannot be read must not hide
		// the others' damage. Reported, and read again next pass.
		sc.log.Warn("integrity: scrub could not read a blob's object; going on", "blob", b.ID, "key", b.Key, "err", err)
		rep.Unchecked = append(rep.Unchecked, Unchecked{Blob: b, Error: err.Error()})
		return nil
	}
	rep.Blobs++
	sc.metrics.GC.ScrubBlobs.Inc()
	sc.metrics.GC.ScrubBytes.Add(float64(n))
	now := sc.clock.Now()
	if f.Cause == "" {
		if b.Damaged() {
			cleared, err := sc.meta.ClearDamage(ctx, b.ID, b.Key, now)
			if err != nil {
				return fmt.Errorf("sweep: scrub: %w", err)
			}
			if cleared {
				rep.Cleared = append(rep.Cleared, b.ID)
				sc.log.Info("integrity: a damaged blob's object reads back good; it is healthy again", "blob", b.ID, "key", b.Key)
			}
		}
		return nil
	}
	marked, err := integrity.MarkDamaged(ctx, sc.meta, sc.metrics.GC.Damaged, sc.log, b, f, now)
	if err != nil {
		return fmt.Errorf("sweep: scrub: %w", err)
	}
	// Reported whether this step marked it or an earlier finding had:
	// either way the object is bad now. A blob that changed object
	// meanwhile (repaired, collected) is not reported.
	if !marked {
		again, err := sc.meta.Blob(ctx, b.ID)
		if err != nil {
			return fmt.Errorf("sweep: scrub: %w", err)
		}
		if !again.Damaged() || again.Key != b.Key || !holdsContent(again) {
			return nil
		}
	}
	{
		rep.Found = append(rep.Found, ScrubFinding{BlobID: b.ID, Namespace: b.Namespace, Key: b.Key,
			Cause: f.Cause, Detail: f.Detail, Marked: marked})
	}
	return nil
}

// Scrub returns the sweeper's scrub, for fsck --verify and tests.
func (s *Sweeper) Scrub() *Scrub {
	s.scrubMu.Lock()
	defer s.scrubMu.Unlock()
	return s.scrub
}

// maxScrubBurst caps the budget that accrues while the scrub cannot run
// (lease held elsewhere, a long pause): at most this many seconds of
// ScrubRate at once, so the byte rate stays bounded over any window.
const maxScrubBurst = 10

// TickScrub does the background scrub's share of work: the budget is
// ScrubRate times the clock time since the last tick (capped), spent
// under the scrub lease. A step that read more than its budget (a large
// object) leaves a debt that later ticks pay first, so the rate holds on
// average. The loop calls it every interval; tests call it with a fake
// clock.
func (s *Sweeper) TickScrub(ctx context.Context) (ScrubReport, error) {
	s.scrubMu.Lock()
	defer s.scrubMu.Unlock()
	if !s.cfg.Scrub || s.scrub == nil {
		return ScrubReport{}, nil
	}
	now := s.clock.Now()
	last := s.scrubLast
	s.scrubLast = now
	if last.IsZero() || !now.After(last) {
		return ScrubReport{}, nil
	}
	rate := s.cfg.ScrubRate
	s.scrubBudget = min(s.scrubBudget+int64(now.Sub(last).Seconds()*float64(rate)), maxScrubBurst*rate)
	if s.scrubBudget <= 0 {
		return ScrubReport{}, nil
	}
	// Held across ticks while this replica scrubs; it expires a few
	// intervals after this one stops, and another replica takes over.
	ok, err := s.scrubLease.Take(ctx)
	if err != nil || !ok {
		s.scrubBudget = 0 // another replica scrubs: no budget piles up here
		if err != nil && ctx.Err() == nil {
			s.log.Warn("sweep: taking the scrub lease failed; retrying next tick", "err", err)
		}
		return ScrubReport{}, err
	}
	sctx, span := s.tracer.Start(ctx, spanScrub)
	rep, err := s.scrub.Step(sctx, s.scrubBudget)
	endScrub(span, rep, err)
	s.scrubBudget -= rep.Bytes
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: scrub step failed; retrying next tick", "err", err)
	}
	return rep, err
}
