package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
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
//   - the scrub (sweep/scrub.go) reads objects whole with VerifyBlob.

// markDamaged records that blob b's object failed a check. Best effort:
// the finding is in the log either way, and the next check finds it again.
func (s *Store) markDamaged(ctx context.Context, b meta.Blob, cause, detail string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, err := sweep.MarkDamaged(cctx, s.meta, s.sweepMetrics, s.log, b, sweep.Finding{Cause: cause, Detail: detail}, s.clock.Now()); err != nil {
		s.log.Warn("integrity: could not mark a damaged blob; the next check will", "blob", b.ID, "key", b.Key, "cause", cause, "err", err)
	}
}

// damagedErr is the answer to a redeem of a damaged blob: the bytes are not
// there to be served, which is a checksum mismatch for every client (the
// typed error of every path: 422 checksum_mismatch, CLI exit 5).
func damagedErr(id string, b meta.Blob) error {
	return fmt.Errorf("redeem %s: %w: the stored object of blob %s is damaged (%s); a put of the same bytes repairs it",
		id, claimcheck.ErrChecksumMismatch, b.ID, b.Damage)
}

// VerifyBlob reads blob b's object whole and checks it against the row: it
// exists with the stored size, and decrypted and decompressed it has the
// blob's size and digest. It is the scrub's sweep.Verifier. Objects under
// a destroyed data key cannot be checked and count as good (they can never
// be served either).
func (s *Store) VerifyBlob(ctx context.Context, b meta.Blob) (sweep.Finding, int64, error) {
	if f, err := sweep.CheckSize(ctx, s.blobs, b); err != nil || f.Cause != "" {
		return f, 0, err
	}
	var sk *sealKey
	if keyID, ok := dataKeyOfObject(b.Key); ok {
		dk, err := s.meta.DataKey(ctx, keyID)
		if errors.Is(err, meta.ErrNotFound) {
			return sweep.Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("object names data key %s, which does not exist", keyID)}, 0, nil
		}
		if err != nil {
			return sweep.Finding{}, 0, metaErr("verify blob "+b.ID, err)
		}
		if dk.Destroyed() {
			return sweep.Finding{}, 0, nil
		}
		if s.keys == nil {
			return sweep.Finding{}, 0, fmt.Errorf("verify blob %s: %w: the object is encrypted but no master_key is configured", b.ID, claimcheck.ErrUnavailable)
		}
		key, err := s.keys.unwrap(dk)
		if err != nil {
			return sweep.Finding{}, 0, fmt.Errorf("verify blob %s: %w", b.ID, err)
		}
		if sk, err = newSealKey(dk, key); err != nil {
			return sweep.Finding{}, 0, fmt.Errorf("verify blob %s: %w", b.ID, err)
		}
	}
	return s.verifyObject(ctx, b, sk)
}

// verifyObject reads b.Key through decryption (with sk) and decompression
// and compares size and digest with b's. It returns the object bytes read.
func (s *Store) verifyObject(ctx context.Context, b meta.Blob, sk *sealKey) (sweep.Finding, int64, error) {
	obj, err := s.blobs.NewReader(ctx, b.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return sweep.Finding{Cause: meta.DamageMissing, Detail: "object not found"}, 0, nil
	}
	if err != nil {
		return sweep.Finding{}, 0, fmt.Errorf("verify blob %s: %w: %v", b.ID, claimcheck.ErrUnavailable, err)
	}
	defer obj.Close()
	src := &sourceReader{r: obj}
	count := &countingReader{r: src}
	corrupt := func(what string, err error) (sweep.Finding, int64, error) {
		if src.err != nil {
			return sweep.Finding{}, count.n, fmt.Errorf("verify blob %s: %w: read object: %v", b.ID, claimcheck.ErrUnavailable, src.err)
		}
		if ctx.Err() != nil {
			return sweep.Finding{}, count.n, ctx.Err()
		}
		return sweep.Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("%s: %v", what, err)}, count.n, nil
	}
	var stored io.Reader = count
	if sk != nil {
		if stored, err = sk.Decrypt(count, b.Key); err != nil {
			return corrupt("decryption fails", err)
		}
	}
	dec, err := compress.NewReader(b.Compression, stored)
	if err != nil {
		return corrupt("cannot be decompressed", err)
	}
	defer dec.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, readerOnly{dec}, make([]byte, copyBufferSize))
	if err != nil {
		return corrupt("stream fails", err)
	}
	if n != b.Size {
		return sweep.Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("content has %d bytes, recorded %d", n, b.Size)}, count.n, nil
	}
	// The detail never names the digests: for an encrypted blob the
	// plaintext digest must not outlive a shred in the events (ADR 0096).
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != b.Digest {
		return sweep.Finding{Cause: meta.DamageChecksum, Detail: "content does not hash to the recorded digest"}, count.n, nil
	}
	return sweep.Finding{}, count.n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// verifyWritten reads back the object a put just wrote, before it repairs
// a damaged blob with it: the write path hashed the bytes it was given,
// this checks the bytes storage kept.
func (s *Store) verifyWritten(ctx context.Context, ns, key string, w written, sk *sealKey) error {
	b := meta.Blob{ID: "(new object)", Namespace: ns, Key: key, Digest: w.digest, Size: w.size,
		StoredSize: w.stored, Compression: w.compression}
	f, err := sweep.CheckSize(ctx, s.blobs, b)
	if err == nil && f.Cause == "" {
		f, _, err = s.verifyObject(ctx, b, sk)
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
