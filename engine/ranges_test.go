package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// Ranged redeems (ranges.go, internal/storedform, ADR 0110) on the real store:
// every storage form, against slices of the original bytes.

func ranged(c *engine.Config) {
	encrypted(c)
	c.Namespaces["zs"] = claimcheck.Policy{Compression: claimcheck.CompressionZstd}
}

// rangeNamespaces are the storage forms: plain, zstd, gzip, encrypted
// uncompressed (segment-wise reads) and encrypted zstd.
var rangeNamespaces = []string{"plain", "zs", "gz", "sealed", "sealedz"}

func (b *bundle) redeemRange(t *testing.T, ref claimcheck.Ref, off, n int64) (*claimcheck.Part, []byte, error) {
	t.Helper()
	p, err := b.store.RedeemRange(context.Background(), ref, off, n)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	got, err := io.ReadAll(p)
	return p, got, err
}

// want is the slice of data a RedeemRange(off, n) must answer.
func want(data []byte, off, n int64) []byte {
	size := int64(len(data))
	if off < 0 {
		return data[max(0, size+off):]
	}
	end := size
	if n > 0 && off+n < size {
		end = off + n
	}
	return data[off:end]
}

func TestRedeemRangeSlices(t *testing.T) {
	b := setup(t, ranged)
	const first, later = 65536 - 40 - 16, 65536 - 16 // plaintext per AEAD segment
	for _, ns := range rangeNamespaces {
		for _, size := range []int64{1, first, first + 1, first + later, 3*later + 17, 300_000} {
			data := jsonDoc(int(size))[:size]
			ref := b.put(t, ns, data)
			cases := [][2]int64{
				{0, 1}, {0, 100}, {0, -1}, {size - 1, 1}, {size - 1, -1}, {size / 2, 1000},
				{-1, 0}, {-100, 0}, {-(size + 5), 0}, {max(0, size-100), 1000},
				{first - 1, 2}, {first, later}, {first + later - 3, 10}, {1000, 2 * later},
			}
			for _, c := range cases {
				if c[0] >= size {
					continue
				}
				p, got, err := b.redeemRange(t, ref, c[0], c[1])
				if err != nil {
					t.Fatalf("%s, %d bytes, range %v: %v", ns, size, c, err)
				}
				w := want(data, c[0], c[1])
				if !bytes.Equal(got, w) {
					t.Fatalf("%s, %d bytes, range %v: got %d bytes, not the %d of the original", ns, size, c, len(got), len(w))
				}
				if p.Length != int64(len(w)) || p.End() > size || p.Ref.Digest != ref.Digest {
					t.Fatalf("%s, %d bytes, range %v: part says offset %d length %d", ns, size, c, p.Offset, p.Length)
				}
			}
		}
	}
}

func TestRedeemRangeUnsatisfiable(t *testing.T) {
	b := setup(t, ranged)
	for _, ns := range rangeNamespaces {
		data := jsonDoc(5000)[:5000]
		ref := b.put(t, ns, data)
		for _, off := range []int64{5000, 5001, 1 << 40} {
			_, _, err := b.redeemRange(t, ref, off, -1)
			var re *claimcheck.RangeError
			if !errors.As(err, &re) || !errors.Is(err, claimcheck.ErrRangeNotSatisfiable) || re.Size != int64(len(data)) {
				t.Fatalf("%s: offset %d of %d bytes: %v, want a RangeError with the size", ns, off, len(data), err)
			}
		}
		if _, _, err := b.redeemRange(t, ref, 10, 0); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("%s: length 0: %v, want ErrInvalidArgument", ns, err)
		}
		empty := b.put(t, ns, nil)
		if _, _, err := b.redeemRange(t, empty, -10, 0); !errors.Is(err, claimcheck.ErrRangeNotSatisfiable) {
			t.Fatalf("%s: suffix of an empty payload: %v", ns, err)
		}
	}
}

// Only a part that reaches the last byte counts as a read (ADR 0111).
func TestRedeemRangeCountsAsReadAtTheEnd(t *testing.T) {
	b := setup(t, ranged)
	ctx := context.Background()
	for _, ns := range rangeNamespaces {
		data := jsonDoc(100_000)
		ref := b.put(t, ns, data)
		if _, _, err := b.redeemRange(t, ref, 0, 50_000); err != nil {
			t.Fatal(err)
		}
		info, err := b.store.Stat(ctx, ref)
		if err != nil || info.Reads != 0 {
			t.Fatalf("%s: after a first part: reads %d, %v; want 0", ns, info.Reads, err)
		}
		if _, _, err := b.redeemRange(t, ref, 50_000, -1); err != nil {
			t.Fatal(err)
		}
		info, err = b.store.Stat(ctx, ref)
		if err != nil || info.Reads != 1 {
			t.Fatalf("%s: after the last part: reads %d, %v; want 1", ns, info.Reads, err)
		}
	}
}

// flipByte alters the byte at off of ns's one object.
func (b *bundle) flipByte(t *testing.T, ns string, off int64) {
	t.Helper()
	files := b.objectFiles(t, ns)
	if len(files) != 1 {
		t.Fatalf("%s: %d objects, want 1", ns, len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(raw))
	}
	raw[off] ^= 0x20
	if err := os.WriteFile(files[0], raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A corrupted byte is an error, never wrong bytes as success: encrypted
// objects fail authentication of the segment read; compressed ones fail
// the whole-payload check every compressed range ends with.
func TestRedeemRangeCorruption(t *testing.T) {
	const size = 300_000
	for _, ns := range []string{"zs", "gz", "sealed", "sealedz"} {
		t.Run(ns, func(t *testing.T) {
			b := setup(t, ranged)
			data := jsonDoc(size)[:size]
			ref := b.put(t, ns, data)
			// The second AEAD segment of a sealed object; the middle of
			// the zstd frame the ranges below fall in (a range decodes
			// only its frames, ADR 0112); the middle of the others.
			at := int64(65536 + 100)
			switch ns {
			case "zs":
				raw, err := os.ReadFile(b.objectFiles(t, ns)[0])
				if err != nil {
					t.Fatal(err)
				}
				tableLen, _ := compress.ParseSeekFooter(raw[len(raw)-compress.SeekTableTail:])
				frames, err := compress.ParseSeekTable(raw[int64(len(raw))-tableLen:], int64(len(raw)), size)
				if err != nil {
					t.Fatal(err)
				}
				first, last := compress.FramesOf(frames, 65536, 100_001-65536)
				if first != last {
					t.Fatalf("the ranges span frames %d to %d", first, last)
				}
				at = frames[first].Offset + frames[first].Size/2
			case "sealed":
			default:
				info, _ := os.Stat(b.objectFiles(t, ns)[0])
				at = info.Size() / 2
			}
			b.flipByte(t, ns, at)
			if ns == "sealed" {
				// A range of other segments reads only those, which are
				// intact and authenticated.
				if _, got, err := b.redeemRange(t, ref, 200_000, 1000); err != nil || !bytes.Equal(got, data[200_000:201_000]) {
					t.Fatalf("range of intact segments: %v", err)
				}
			}
			for _, r := range [][2]int64{{65536, 1000}, {100_000, 1}} {
				_, got, err := b.redeemRange(t, ref, r[0], r[1])
				if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
					t.Fatalf("range %v over a corrupted byte: %d bytes, err %v; want ErrChecksumMismatch", r, len(got), err)
				}
			}
		})
	}
}

// A plain object's block table (ADR 0257) catches an altered byte inside
// a range; the full redeem catches it by the payload's sha256.
func TestRedeemRangePlainCorruption(t *testing.T) {
	b := setup(t, ranged)
	data := jsonDoc(100_000)
	ref := b.put(t, "plain", data)
	b.flipByte(t, "plain", 500)
	if _, got, err := b.redeemRange(t, ref, 400, 200); !errors.Is(err, claimcheck.ErrChecksumMismatch) || len(got) != 0 {
		t.Fatalf("plain range over an altered byte: %d bytes, err %v; want none and ErrChecksumMismatch", len(got), err)
	}
	if _, err := b.redeem(t, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("full redeem of the altered object: %v", err)
	}
}

// A truncated encrypted object: the last segment is missing its end.
func TestRedeemRangeTruncatedEncrypted(t *testing.T) {
	b := setup(t, ranged)
	data := jsonDoc(200_000)
	ref := b.put(t, "sealed", data)
	f := b.objectFiles(t, "sealed")[0]
	info, _ := os.Stat(f)
	if err := os.Truncate(f, info.Size()-10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.redeemRange(t, ref, -100, 0); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("range of a truncated encrypted object: %v", err)
	}
}

// zstd objects are written in frames with a seek table (ADR 0112; 64 KiB
// of payload each since ADR 0150): a range decodes only the frames it
// touches. Ranges across frame boundaries match the original; a damaged
// frame fails the ranges that touch it, and only those.
func TestRedeemRangeFramedZstd(t *testing.T) {
	const mib = 1 << 20
	size := int64(3*mib + 12345)
	for _, ns := range []string{"zs", "sealedz"} {
		t.Run(ns, func(t *testing.T) {
			b := setup(t, ranged)
			data := jsonDoc(int(size))[:size]
			ref := b.put(t, ns, data)
			for _, c := range [][2]int64{{0, 10}, {mib - 5, 10}, {mib, mib}, {mib - 1, 2*mib + 2}, {-100, 0}, {3 * mib, -1}, {0, -1}} {
				_, got, err := b.redeemRange(t, ref, c[0], c[1])
				if err != nil || !bytes.Equal(got, want(data, c[0], c[1])) {
					t.Fatalf("range %v: %d bytes, %v", c, len(got), err)
				}
			}
			// Damage the first frame: the frames are laid out in order,
			// so a byte a little into the object is in frame 0.
			b.flipByte(t, ns, 1000)
			if _, got, err := b.redeemRange(t, ref, 2*mib+10, 1000); err != nil || !bytes.Equal(got, data[2*mib+10:2*mib+1010]) {
				t.Fatalf("a range of intact frames: %v", err)
			}
			if _, _, err := b.redeemRange(t, ref, 5000, 10); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("a range in the damaged frame: %v, want ErrChecksumMismatch", err)
			}
		})
	}
}

// A seek table longer than the first read of the object's end is read
// on its own (tables of more than about 8,000 frames; here, a first read
// of 20 bytes).
func TestRedeemRangeLongSeekTable(t *testing.T) {
	old := engine.SetSeekTableRead(20)
	t.Cleanup(func() { engine.SetSeekTableRead(old) })
	b := setup(t, ranged)
	size := int64(3<<20 + 99)
	data := jsonDoc(int(size))[:size]
	for _, ns := range []string{"zs", "sealedz"} {
		ref := b.put(t, ns, data)
		for _, c := range [][2]int64{{0, 10}, {2<<20 - 3, 10}, {-1000, 0}} {
			_, got, err := b.redeemRange(t, ref, c[0], c[1])
			if err != nil || !bytes.Equal(got, want(data, c[0], c[1])) {
				t.Fatalf("%s: range %v: %d bytes, %v", ns, c, len(got), err)
			}
		}
	}
}

// A zstd object written before framing (one frame, no seek table) still
// serves ranges, decoded from the start.
func TestRedeemRangeSingleFrameZstd(t *testing.T) {
	b := setup(t, ranged)
	data := jsonDoc(3 << 20)
	ref := b.put(t, "zs", data)
	var buf bytes.Buffer
	e, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(data); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if err := os.WriteFile(b.objectFiles(t, "zs")[0], buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int64{{0, 10}, {2 << 20, 1000}, {-10, 0}} {
		_, got, err := b.redeemRange(t, ref, c[0], c[1])
		if err != nil || !bytes.Equal(got, want(data, c[0], c[1])) {
			t.Fatalf("range %v of a single-frame object: %d bytes, %v", c, len(got), err)
		}
	}
}

// A truncated plain object: a range reaching into the missing part, or
// into the 64 KiB block the cut falls in (which its table cannot check
// any more, ADR 0257), fails (and marks the blob damaged, so the next
// redeem fails at once); one in the blocks before the cut is served.
func TestRedeemRangeTruncatedPlain(t *testing.T) {
	b := setup(t, ranged)
	data := jsonDoc(100_000)
	ref := b.put(t, "plain", data)
	f := b.objectFiles(t, "plain")[0]
	if err := os.Truncate(f, 70_000); err != nil {
		t.Fatal(err)
	}
	if _, got, err := b.redeemRange(t, ref, 0, 1000); err != nil || !bytes.Equal(got, data[:1000]) {
		t.Fatalf("range before the cut: %v", err)
	}
	if _, _, err := b.redeemRange(t, ref, 66_000, 100); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("range across the cut: %v, want ErrChecksumMismatch", err)
	}
	if _, _, err := b.redeemRange(t, ref, 0, 10); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("after the damage was found: %v, want ErrChecksumMismatch", err)
	}
}

// A plain object on MinIO cut short underneath the store: a range that
// starts past the cut is answered 416 by S3, which is the object being
// shorter than recorded (damage, checksum_mismatch), not the storage
// being unavailable.
func TestRedeemRangePastTheCutOnS3(t *testing.T) {
	u, _, _ := testsvc.S3(t)
	bs := blobtest.Open(t, u)
	t.Cleanup(func() { bs.Close() })
	b := setup(t, ranged, func(c *engine.Config) { c.BlobStore = bs })
	data := jsonDoc(100_000)
	ref := b.put(t, "plain", data)
	key := onlyKey(t, bs)
	stored, err := io.ReadAll(mustReader(t, bs, key))
	if err != nil {
		t.Fatal(err)
	}
	w, err := bs.NewWriter(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(stored[:50_000]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.redeemRange(t, ref, 90_000, 1000); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("range past the cut: %v, want ErrChecksumMismatch", err)
	}
	if _, _, err := b.redeemRange(t, ref, 0, 10); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("after the damage was found: %v, want ErrChecksumMismatch", err)
	}
}

func mustReader(t *testing.T, bs blob.Store, key string) io.Reader {
	t.Helper()
	r, err := bs.NewReader(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
