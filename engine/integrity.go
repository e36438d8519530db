package engine

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// Integrity under damage (ADR 0095). Whatever happens to the objects
// underneath, no acknowledged write is lost that a later put of the same
// bytes can bring back, and no wrong byte is handed out as good:
//
//   - a redeem that finds its object altered, short or missing marks the
//     blob damaged (a compare-and-swap on the blob's object key, so a
//     finding about an object the blob no longer owns changes nothing) and
//     answers checksum_mismatch; later redeems of it answer at once;
//   - dedup never attaches a claim to a damaged blob: a put that brings its
//     bytes reads its own new object back and, if it matches, gives it to
//     the damaged blob in the commit transaction (meta.CommitParams.
//     RepairVerified), so the claims that pointed at it redeem again;
//   - a digest-first hit checks with one Attributes call that the object
//     still exists with its stored size before it answers, and treats a
//     missing or resized object as damage (the put then sends its body);
//   - the scrub (sweep/scrub.go) reads objects whole with
//     integrity.Verify, given the same stores and master keys.
//
// The checks and the mark live in internal/integrity, which the engine
// and the sweeper both import.

// markDamaged records that blob b's object failed a check. Best effort:
// the finding is in the log either way, and the next check finds it again.
func (s *Store) markDamaged(ctx context.Context, b meta.Blob, cause, detail string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	var damaged *prometheus.CounterVec
	if s.sweepMetrics != nil {
		damaged = s.sweepMetrics.GC.Damaged
	}
	if _, err := integrity.MarkDamaged(cctx, s.meta, damaged, s.log, b, integrity.Finding{Cause: cause, Detail: detail}, s.clock.Now()); err != nil {
		s.log.WarnContext(ctx, "integrity: could not mark a damaged blob; the next check will", "blob", b.ID, "key", b.Key, "cause", cause, "err", err)
	}
}

// damagedErr is the answer to a redeem of a damaged blob: the bytes are not
// there to be served, which is a checksum mismatch for every client (the
// typed error of every path: 422 checksum_mismatch, CLI exit 5).
func damagedErr(id string, b meta.Blob) error {
	return fmt.Errorf("redeem %s: %w: the stored object of blob %s is damaged (%s); a put of the same bytes repairs it",
		id, claimcheck.ErrChecksumMismatch, b.ID, b.Damage)
}

// verifyWritten reads back the object a put just wrote, before it repairs
// a damaged blob with it: the write path hashed the bytes it was given,
// this checks the bytes storage kept.
func (s *Store) verifyWritten(ctx context.Context, ns, key string, w written, sk *sealKey) error {
	b := meta.Blob{ID: "(new object)", Namespace: ns, Key: key, Digest: w.digest, Size: w.size,
		StoredSize: w.stored, Compression: w.compression}
	f, err := integrity.CheckSize(ctx, s.blobs, b)
	if err == nil && f.Cause == "" {
		f, _, err = integrity.ReadBack(ctx, s.blobs, b, sk)
	}
	if err != nil {
		return err
	}
	if f.Cause != "" {
		return fmt.Errorf("%w: the object just written to %s does not read back (%s: %s)", claimcheck.ErrUnavailable, key, f.Cause, f.Detail)
	}
	return nil
}

// Scrub runs one step of the scrub (sweep/scrub.go) over this store: it
// verifies blobs from the saved position until budget object bytes were
// read or the pass ended. `claimcheck fsck --verify` calls it in a paced
// loop.
func (s *Store) Scrub(ctx context.Context, budget int64) (sweep.ScrubReport, error) {
	return s.sweeper.Scrub().Step(ctx, budget)
}

// ResetScrub makes the next scrub step start a pass from the first blob.
func (s *Store) ResetScrub(ctx context.Context) error {
	if err := s.meta.SetCursor(ctx, sweep.ScrubCursor, ""); err != nil {
		return fmt.Errorf("reset scrub: %w", metaErr("reset scrub", err))
	}
	return nil
}
