package storedform

import (
	"context"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	tinksubtle "github.com/tink-crypto/tink-go/v2/subtle"
)

// Random access into an encrypted object. tink's streaming AEAD only
// decrypts from the start (its reader has no offset and no io.ReaderAt),
// but its wire format is fixed and segment-wise: a header (length byte,
// salt, nonce prefix), then segments of SegmentSize bytes of ciphertext
// (the first one shortened by the header), each sealed with AES-GCM under
// a key derived by HKDF from the data key, the salt and the object's AAD,
// with nonce = prefix || segment number (32 bits, big endian) || a byte
// that is 1 on the last segment only. So segment i starts at a computable
// offset and can be opened alone: this file reads the header and just
// the segments a range touches. Each one is authenticated with its
// number and its last-flag, so a segment moved, swapped, cut or altered
// fails; segments_test.go checks the layout against tink's own writer.

// Objects reads byte ranges of stored objects (blob.Store is one).
type Objects interface {
	// NewRangeReader opens length bytes of the object at key from
	// offset.
	NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
}

// Object is a stored object as its blob row records it.
type Object struct {
	Key    string // where the object is stored
	Stored int64  // the object's size in the store
	Size   int64  // the payload's size
}

// segmentLayout is the geometry of one encrypted object of stored bytes.
type segmentLayout struct {
	header int64 // header length (and the first segment's offset)
	stored int64 // object size
	count  int64 // number of segments
}

func newSegmentLayout(header, stored int64) (segmentLayout, error) {
	l := segmentLayout{header: header, stored: stored}
	if stored < header+gcmTag {
		return l, fmt.Errorf("encrypted object of %d bytes is shorter than its header and one segment", stored)
	}
	l.count = 1
	if stored > SegmentSize {
		l.count += (stored - SegmentSize + SegmentSize - 1) / SegmentSize
	}
	if last := stored - l.ctStart(l.count-1); last < gcmTag {
		return l, fmt.Errorf("encrypted object of %d bytes ends in a segment of %d bytes, shorter than its tag", stored, last)
	}
	return l, nil
}

// ctStart is where segment i's ciphertext starts in the object.
func (l segmentLayout) ctStart(i int64) int64 {
	if i == 0 {
		return l.header
	}
	return i * SegmentSize
}

// ctEnd is where segment i's ciphertext ends.
func (l segmentLayout) ctEnd(i int64) int64 { return min((i+1)*SegmentSize, l.stored) }

// ptStart is the plaintext offset of segment i's first byte.
func (l segmentLayout) ptStart(i int64) int64 {
	first := SegmentSize - l.header - gcmTag
	if i == 0 {
		return 0
	}
	return first + (i-1)*(SegmentSize-gcmTag)
}

// plaintext is the object's plaintext length.
func (l segmentLayout) plaintext() int64 {
	return l.ptStart(l.count-1) + l.ctEnd(l.count-1) - l.ctStart(l.count-1) - gcmTag
}

// segmentOf is the segment holding plaintext offset off.
func (l segmentLayout) segmentOf(off int64) int64 {
	first := SegmentSize - l.header - gcmTag
	if off < first {
		return 0
	}
	return 1 + (off-first)/(SegmentSize-gcmTag)
}

// ErrSegment marks an authentication failure of a segment of an
// encrypted object, as opposed to a failed read of the object: the
// stored bytes are not what was written.
var ErrSegment = errors.New("decryption failed (altered, reordered or truncated segment)")

// segmented is an encrypted object opened for reads at an offset: its
// header is read and its segment key derived.
type segmented struct {
	objs Objects
	ctx  context.Context
	key  string
	l    segmentLayout
	aead cipher.AEAD
	// prefix is the nonce prefix from the header.
	prefix []byte
}

// openSegments reads the header of the encrypted object at key, of
// stored bytes. Errors wrapping ErrSegment mean the stored bytes are not
// what was written.
func openSegments(ctx context.Context, objs Objects, k *Key, key string, stored int64) (*segmented, error) {
	hlen := int64(k.aead.HeaderLength())
	l, err := newSegmentLayout(hlen, stored)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSegment, err)
	}
	hr, err := objs.NewRangeReader(ctx, key, 0, hlen)
	if err != nil {
		return nil, err
	}
	header := make([]byte, hlen)
	_, err = io.ReadFull(hr, header)
	_ = hr.Close()
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: the object is shorter than its header", ErrSegment)
	}
	if err != nil {
		return nil, err
	}
	if header[0] != byte(hlen) {
		return nil, fmt.Errorf("%w: invalid header length", ErrSegment)
	}
	salt, prefix := header[1:1+len(k.raw)], header[1+len(k.raw):]
	dkey, err := tinksubtle.ComputeHKDF("SHA256", k.raw, salt, objectAAD(key), uint32(len(k.raw)))
	if err != nil {
		return nil, err
	}
	aead, err := gcm(dkey)
	if err != nil {
		return nil, err
	}
	return &segmented{objs: objs, ctx: ctx, key: key, l: l, aead: aead, prefix: prefix}, nil
}

// plaintext is the object's plaintext length.
func (o *segmented) plaintext() int64 { return o.l.plaintext() }

// rangeReader returns plaintext bytes [off, off+n), reading just the
// segments they lie in.
func (o *segmented) rangeReader(off, n int64) (io.ReadCloser, error) {
	first, last := o.l.segmentOf(off), o.l.segmentOf(off+n-1)
	if last >= 1<<32-1 {
		return nil, fmt.Errorf("%w: segment number %d out of range", ErrSegment, last)
	}
	body, err := o.objs.NewRangeReader(o.ctx, o.key, o.l.ctStart(first), o.l.ctEnd(last)-o.l.ctStart(first))
	if err != nil {
		return nil, err
	}
	return &segmentReader{
		r: body, aead: o.aead, prefix: o.prefix, l: o.l, seg: first, lastSeg: last,
		skip: off - o.l.ptStart(first), left: n,
		ct: make([]byte, SegmentSize),
	}, nil
}

// DecryptRange returns the plaintext bytes [off, off+n) of obj, an
// uncompressed object encrypted under k, whose plaintext must be
// obj.Size bytes. It reads the header and the segments the range
// touches, nothing else. Errors wrapping ErrSegment, from DecryptRange or
// from the reader, mean the stored bytes are not what was written; other
// errors are the object store's.
func DecryptRange(ctx context.Context, objs Objects, k *Key, obj Object, off, n int64) (io.ReadCloser, error) {
	o, err := openSegments(ctx, objs, k, obj.Key, obj.Stored)
	if err != nil {
		return nil, err
	}
	if got := o.plaintext(); got != obj.Size {
		return nil, fmt.Errorf("%w: an encrypted object of %d bytes holds %d bytes, %d were recorded", ErrSegment, obj.Stored, got, obj.Size)
	}
	return o.rangeReader(off, n)
}

// segmentReader decrypts segments seg..lastSeg in order and releases
// plaintext only after its segment is authenticated.
type segmentReader struct {
	r       io.ReadCloser
	aead    cipher.AEAD
	prefix  []byte
	l       segmentLayout
	seg     int64 // the next segment to decrypt
	lastSeg int64
	skip    int64 // plaintext bytes before the range, in the first segment
	left    int64 // range bytes not yet returned
	ct      []byte
	pt      []byte // decrypted bytes not yet returned
	err     error
}

func (r *segmentReader) Read(p []byte) (int, error) {
	for len(r.pt) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.left == 0 || r.seg > r.lastSeg {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	m := copy(p, r.pt)
	r.pt = r.pt[m:]
	return m, nil
}

// next decrypts segment r.seg into r.pt, cut to the range.
func (r *segmentReader) next() error {
	i := r.seg
	size := r.l.ctEnd(i) - r.l.ctStart(i)
	ct := r.ct[:size]
	if _, err := io.ReadFull(r.r, ct); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return fmt.Errorf("%w: segment %d is cut short", ErrSegment, i)
		}
		return err
	}
	nonce := make([]byte, r.aead.NonceSize())
	copy(nonce, r.prefix)
	binary.BigEndian.PutUint32(nonce[len(r.prefix):], uint32(i))
	if i == r.l.count-1 {
		nonce[len(nonce)-1] = 1
	}
	pt, err := r.aead.Open(ct[:0], nonce, ct, nil)
	if err != nil {
		return fmt.Errorf("%w: segment %d: %v", ErrSegment, i, err)
	}
	pt = pt[r.skip:]
	r.skip = 0
	if int64(len(pt)) > r.left {
		pt = pt[:r.left]
	}
	r.left -= int64(len(pt))
	r.pt = pt
	r.seg++
	return nil
}

func (r *segmentReader) Close() error { return r.r.Close() }
