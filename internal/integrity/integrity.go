package integrity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/meta"
)

// Finding is what a check found wrong with a blob's object; a zero Cause
// is a good object.
type Finding struct {
	Cause  string // a meta.Damage* cause
	Detail string
}

// copyBufferSize is the buffer Verify reads objects through.
const copyBufferSize = 256 << 10

// RetryDelays are the waits before each new question about an object
// the storage answered with an error of its own (blob.FaultObject): the
// answer is damage only if it is the same after the last one.
var RetryDelays = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// probeName is the object asked about to learn whether the storage
// answers requests while it answers one object with errors. It never
// exists: the store's "not found" is the answer that shows it works.
const probeName = ".claimcheck-probe"

// Attributes is bs.Attributes(key) under the rule that tells a damaged
// object from an outage (ADR 0255). It returns the object's attributes;
// or a finding: missing (not found), or unreadable (the storage answered
// about this object with an error of its own, again after RetryDelays,
// while it answered a request about another object in the same prefix);
// or an error, which says nothing about the object (the storage is
// unavailable: connection refused, timeouts, throttling, every request
// failing). It makes one request when the object answers.
func Attributes(ctx context.Context, bs blob.Store, key string) (blob.Attributes, Finding, error) {
	a, err := bs.Attributes(ctx, key)
	if err == nil {
		return a, Finding{}, nil
	}
	for _, d := range RetryDelays {
		if blob.FaultOf(err) != blob.FaultObject {
			break
		}
		select {
		case <-ctx.Done():
			return blob.Attributes{}, Finding{}, ctx.Err()
		case <-time.After(d):
		}
		if a, err = bs.Attributes(ctx, key); err == nil {
			return a, Finding{}, nil
		}
	}
	switch blob.FaultOf(err) {
	case blob.FaultMissing:
		return blob.Attributes{}, Finding{Cause: meta.DamageMissing, Detail: "object not found"}, nil
	case blob.FaultObject:
		probe := probeName
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			probe = key[:i+1] + probeName
		}
		if _, perr := bs.Attributes(ctx, probe); perr == nil || blob.FaultOf(perr) == blob.FaultMissing {
			return blob.Attributes{}, Finding{Cause: meta.DamageUnreadable,
				Detail: fmt.Sprintf("the storage answers every request about the object with an error (%d tries) while it answers others: %v", len(RetryDelays)+1, err)}, nil
		}
	}
	return blob.Attributes{}, Finding{}, fmt.Errorf("%w: %w", claimcheck.ErrUnavailable, err)
}

// Classify says what err, the failure of a read of key, means: the
// finding Attributes makes about key (an object that answers now, or a
// storage that answers nothing, is no finding and err is returned as
// unavailable).
func Classify(ctx context.Context, bs blob.Store, key string, err error) (Finding, error) {
	switch blob.FaultOf(err) {
	case blob.FaultMissing:
		return Finding{Cause: meta.DamageMissing, Detail: "object not found"}, nil
	case blob.FaultObject:
		if _, f, aerr := Attributes(ctx, bs, key); aerr != nil || f.Cause != "" {
			return f, aerr
		}
	}
	return Finding{}, fmt.Errorf("%w: %w", claimcheck.ErrUnavailable, err)
}

// CheckSize is the cheap check: one Attributes call (a HEAD on S3, a stat
// on files) that the object exists with the blob's stored size, under
// the rule of Attributes.
func CheckSize(ctx context.Context, bs blob.Store, b meta.Blob) (Finding, error) {
	a, f, err := Attributes(ctx, bs, b.Key)
	if err != nil {
		return Finding{}, fmt.Errorf("check object of blob %s: %w", b.ID, err)
	}
	if f.Cause != "" {
		return f, nil
	}
	if a.Size != b.StoredSize {
		return Finding{Cause: meta.DamageSize, Detail: fmt.Sprintf("object has %d bytes, stored size is %d", a.Size, b.StoredSize)}, nil
	}
	return Finding{}, nil
}

// DamageMarker is what MarkDamaged needs of the metadata store.
type DamageMarker interface {
	MarkDamaged(ctx context.Context, d meta.Damage) (bool, error)
}

// DataKeys is what Verify needs of the metadata store: the data keys
// that encrypted objects name.
type DataKeys interface {
	DataKey(ctx context.Context, id string) (meta.DataKey, error)
}

// MarkDamaged records finding f about blob b: the mark (a compare-and-swap
// on b's object key), its event, the metric (damaged, by cause; nil for
// none) and a log line (nil log for none). It reports whether the blob
// was marked now (false: already marked, or the blob no longer owns that
// object).
func MarkDamaged(ctx context.Context, m DamageMarker, damaged *prometheus.CounterVec, log *slog.Logger, b meta.Blob, f Finding, now time.Time) (bool, error) {
	marked, err := m.MarkDamaged(ctx, meta.Damage{BlobID: b.ID, Key: b.Key, Cause: f.Cause, Detail: f.Detail, Now: now})
	if err != nil {
		return false, err
	}
	if marked {
		if damaged != nil {
			damaged.WithLabelValues(f.Cause).Inc()
		}
		if log != nil {
			log.ErrorContext(ctx, "integrity: blob marked damaged; a put of the same bytes repairs it", "blob", b.ID,
				"namespace", b.Namespace, "key", b.Key, "cause", f.Cause, "detail", f.Detail)
		}
	}
	return marked, nil
}

// Verify reads blob b's object whole and checks it against the row: it
// exists with the stored size, and decrypted (its data key unwrapped by
// keys, nil when no master key is configured) and decompressed it has
// the blob's size and digest. It returns the object bytes it read. An
// error means the object could not be checked (storage unavailable, no
// master key), never damage. Objects under a destroyed data key cannot be
// checked and count as good (they can never be served either).
func Verify(ctx context.Context, m DataKeys, bs blob.Store, keys *masterkey.Ring, b meta.Blob) (Finding, int64, error) {
	if f, err := CheckSize(ctx, bs, b); err != nil || f.Cause != "" {
		return f, 0, err
	}
	var sk *storedform.Key
	if keyID, ok := masterkey.DataKeyOfObject(b.Key); ok {
		dk, err := m.DataKey(ctx, keyID)
		if errors.Is(err, meta.ErrNotFound) {
			return Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("object names data key %s, which does not exist", keyID)}, 0, nil
		}
		if err != nil {
			return Finding{}, 0, metaErr("verify blob "+b.ID, err)
		}
		if dk.Destroyed() {
			return Finding{}, 0, nil
		}
		if keys == nil {
			return Finding{}, 0, fmt.Errorf("verify blob %s: %w: the object is encrypted but no master_key is configured", b.ID, claimcheck.ErrUnavailable)
		}
		key, err := keys.Unwrap(dk)
		if err != nil {
			return Finding{}, 0, fmt.Errorf("verify blob %s: %w", b.ID, err)
		}
		if sk, err = storedform.NewKey(dk.ID, dk.CreatedAt, key); err != nil {
			return Finding{}, 0, fmt.Errorf("verify blob %s: %w", b.ID, err)
		}
	}
	return ReadBack(ctx, bs, b, sk)
}

// metaErr reports the metadata store's errors as the contract's.
var metaErr = meta.PublicError

// ReadBack reads b.Key through decryption (with sk, nil for a plain
// object) and decompression and compares size and digest with b's. It
// returns the object bytes read. A put calls it on the object it just
// wrote before that object repairs a damaged blob.
func ReadBack(ctx context.Context, bs blob.Store, b meta.Blob, sk *storedform.Key) (Finding, int64, error) {
	obj, err := bs.NewReader(ctx, b.Key)
	if err != nil {
		f, err := Classify(ctx, bs, b.Key, err)
		if err != nil {
			return Finding{}, 0, fmt.Errorf("verify blob %s: %w", b.ID, err)
		}
		return f, 0, nil
	}
	defer func() { _ = obj.Close() }()
	src := &SourceReader{R: obj}
	corrupt := func(what string, err error) (Finding, int64, error) {
		if src.Err != nil {
			return Finding{}, src.N, fmt.Errorf("verify blob %s: %w: read object: %v", b.ID, claimcheck.ErrUnavailable, src.Err)
		}
		if ctx.Err() != nil {
			return Finding{}, src.N, ctx.Err()
		}
		return Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("%s: %v", what, err)}, src.N, nil
	}
	var stored io.Reader = src
	if sk != nil {
		if stored, err = sk.Decrypt(src, b.Key); err != nil {
			return corrupt("decryption fails", err)
		}
	}
	dec, err := compress.NewReader(b.Compression, stored)
	if err != nil {
		return corrupt("cannot be decompressed", err)
	}
	defer func() { _ = dec.Close() }()
	h := sha256.New()
	n, err := io.CopyBuffer(h, readerOnly{dec}, make([]byte, copyBufferSize))
	if err != nil {
		return corrupt("stream fails", err)
	}
	if n != b.Size {
		return Finding{Cause: meta.DamageChecksum, Detail: fmt.Sprintf("content has %d bytes, recorded %d", n, b.Size)}, src.N, nil
	}
	// The detail never names the digests: for an encrypted blob the
	// plaintext digest must not outlive a shred in the events (ADR 0096).
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != b.Digest {
		return Finding{Cause: meta.DamageChecksum, Detail: "content does not hash to the recorded digest"}, src.N, nil
	}
	return Finding{}, src.N, nil
}

// SourceReader counts the object bytes read and remembers the object
// store's own read error, so that a decoder's failure (damage) can be told
// apart from a failure to read (the storage is unavailable). The engine's
// redeems read through it too.
type SourceReader struct {
	R   io.Reader
	N   int64 // bytes read
	Err error // the first read error other than io.EOF
}

func (r *SourceReader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	r.N += int64(n)
	if err != nil && err != io.EOF {
		r.Err = err
	}
	return n, err
}

// readerOnly hides WriterTo/ReaderFrom so io.CopyBuffer uses the buffer.
type readerOnly struct{ io.Reader }
