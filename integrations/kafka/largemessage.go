package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
)

// bakdata's kafka-large-message-serde (ADR 0281) carries a value either
// inline or as the URI of an object in S3, Azure Blob Storage or GCS,
// with a flag that says which: the value's first byte (0 inline, 1 URI),
// or, with use.headers, the header HeaderLargeValue (HeaderLargeKey for
// keys) whose one byte is the flag, the value then being the payload or
// the URI itself. With headers a producer may compress the payload (the
// one-byte HeaderLargeCompression). The stock tool never deletes objects.

// The bakdata headers.
const (
	HeaderLargeValue       = "__large.message.backed.value"
	HeaderLargeKey         = "__large.message.backed.key"
	HeaderLargeCompression = "__large.message.backed.compression"
)

// The flag's values.
const (
	largeInline byte = 0
	largeBacked byte = 1
)

// LargeCompression is the compression header's byte: Kafka's own
// compression type ids.
type LargeCompression byte

// The compression types the header may name.
const (
	LargeNone   LargeCompression = 0
	LargeGzip   LargeCompression = 1
	LargeSnappy LargeCompression = 2
	LargeLZ4    LargeCompression = 3
	LargeZstd   LargeCompression = 4
)

// ObjectReader reads one bucket (or container): a blob.Store of the
// claimcheck module (blob.Open with an s3://, gs:// or azblob:// storage
// URL) is one. A missing object's error must match fs.ErrNotExist, as
// blob.ErrNotFound does.
type ObjectReader interface {
	NewReader(ctx context.Context, key string) (io.ReadCloser, error)
}

// LargeMessageConfig lets a Consumer read bakdata's format.
type LargeMessageConfig struct {
	// Buckets maps the scheme and bucket of the URIs ("s3://payloads",
	// "abs://container", "gs://bucket") to their readers. A URI naming
	// another one is refused: records are input, and a consumer reads
	// only where it was told to.
	Buckets map[string]ObjectReader
	// MaxSize bounds a payload, stored or decompressed (default 64 MiB).
	MaxSize int64
}

const defaultLargeMax = 64 << 20

// DecodeLarge returns the payload of a value (or, with key, of a record
// key) in bakdata's format, reading a URI through cfg.Buckets and
// decompressing what the compression header names. Errors name the
// header or the URI as the record carries it. A missing object's error
// matches fs.ErrNotExist.
func DecodeLarge(ctx context.Context, cfg LargeMessageConfig, data []byte, headers []kgo.RecordHeader, key bool) ([]byte, error) {
	flagHeader := HeaderLargeValue
	if key {
		flagHeader = HeaderLargeKey
	}
	flagValue, hasFlag := header(headers, flagHeader)
	var flag byte
	body := data
	switch {
	case hasFlag:
		if len(flagValue) != 1 {
			return nil, fmt.Errorf("%w: header %s has %d bytes, want one (0 inline, 1 backed)", claimcheck.ErrInvalidArgument, flagHeader, len(flagValue))
		}
		flag = flagValue[0]
	case len(data) == 0:
		return nil, fmt.Errorf("%w: no %s header and an empty %s: not bakdata's format", claimcheck.ErrInvalidArgument, flagHeader, part(key))
	default:
		flag, body = data[0], data[1:]
	}
	comp := LargeNone
	if c, ok := header(headers, HeaderLargeCompression); ok {
		if len(c) != 1 {
			return nil, fmt.Errorf("%w: header %s has %d bytes, want one", claimcheck.ErrInvalidArgument, HeaderLargeCompression, len(c))
		}
		comp = LargeCompression(c[0])
	}
	maxSize := cfg.MaxSize
	if maxSize <= 0 {
		maxSize = defaultLargeMax
	}
	switch flag {
	case largeInline:
	case largeBacked:
		var err error
		if body, err = readURI(ctx, cfg, string(body), maxSize); err != nil {
			return nil, err
		}
	default:
		where := "first byte of the " + part(key)
		if hasFlag {
			where = "header " + flagHeader
		}
		return nil, fmt.Errorf("%w: %s is %d, want 0 (inline) or 1 (backed)", claimcheck.ErrInvalidArgument, where, flag)
	}
	return decompress(comp, body, maxSize)
}

func part(key bool) string {
	if key {
		return "key"
	}
	return "value"
}

func header(hs []kgo.RecordHeader, name string) ([]byte, bool) {
	for i := len(hs) - 1; i >= 0; i-- { // the last one wins, as Kafka's lastHeader
		if hs[i].Key == name {
			return hs[i].Value, true
		}
	}
	return nil, false
}

// readURI reads s3://, abs:// or gs:// bucket/key through its reader.
func readURI(ctx context.Context, cfg LargeMessageConfig, uri string, maxSize int64) ([]byte, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" || len(u.Path) < 2 {
		return nil, fmt.Errorf("%w: URI %q: want <scheme>://<bucket>/<key>", claimcheck.ErrInvalidArgument, uri)
	}
	switch u.Scheme {
	case "s3", "abs", "gs":
	default:
		return nil, fmt.Errorf("%w: URI %q: scheme %q is not s3, abs or gs", claimcheck.ErrInvalidArgument, uri, u.Scheme)
	}
	bucket := u.Scheme + "://" + u.Host
	r, ok := cfg.Buckets[bucket]
	if !ok {
		return nil, fmt.Errorf("%w: URI %q: %s is not one of the configured buckets", claimcheck.ErrInvalidArgument, uri, bucket)
	}
	key := strings.TrimPrefix(u.Path, "/")
	rc, err := r.NewReader(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		// Permanent: the stock tool never deletes, so someone else did
		// (a lifecycle rule): the record cannot be read again.
		return nil, fmt.Errorf("URI %q: %w: %w", uri, claimcheck.ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("URI %q: %w", uri, err)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(io.LimitReader(rc, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("URI %q: %w", uri, err)
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("%w: URI %q: object larger than %d bytes (LargeMessageConfig.MaxSize)", claimcheck.ErrInvalidArgument, uri, maxSize)
	}
	return data, nil
}

// xerialMagic opens snappy data as Kafka's Java client frames it
// (snappy-java's SnappyOutputStream): the magic, two int32 versions, then
// blocks each preceded by its int32 length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress undoes the compression header's codec, bounded by maxSize.
func decompress(c LargeCompression, data []byte, maxSize int64) ([]byte, error) {
	var r io.Reader
	switch c {
	case LargeNone:
		return data, nil
	case LargeGzip:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, compressionErr(c, err)
		}
		r = zr
	case LargeSnappy:
		out, err := unsnappy(data, maxSize)
		if err != nil {
			return nil, compressionErr(c, err)
		}
		return out, nil
	case LargeLZ4:
		r = lz4.NewReader(bytes.NewReader(data))
	case LargeZstd:
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxSize)))
		if err != nil {
			return nil, compressionErr(c, err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%w: header %s is %d, want 0 (none), 1 (gzip), 2 (snappy), 3 (lz4) or 4 (zstd)", claimcheck.ErrInvalidArgument, HeaderLargeCompression, c)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return nil, compressionErr(c, err)
	}
	if int64(len(out)) > maxSize {
		return nil, fmt.Errorf("%w: header %s %d: payload larger than %d bytes (LargeMessageConfig.MaxSize)", claimcheck.ErrInvalidArgument, HeaderLargeCompression, c, maxSize)
	}
	return out, nil
}

func compressionErr(c LargeCompression, err error) error {
	return fmt.Errorf("%w: header %s %d: %w", claimcheck.ErrChecksumMismatch, HeaderLargeCompression, c, err)
}

// unsnappy decodes xerial-framed snappy, or one raw snappy block.
func unsnappy(data []byte, maxSize int64) ([]byte, error) {
	if !bytes.HasPrefix(data, xerialMagic) {
		return snappyBlock(data, maxSize, nil)
	}
	rest := data[len(xerialMagic):]
	if len(rest) < 8 {
		return nil, errors.New("xerial snappy header cut short")
	}
	rest = rest[8:] // version, compatible version
	var out []byte
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, errors.New("xerial snappy block length cut short")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("xerial snappy block cut short")
		}
		var err error
		if out, err = snappyBlock(rest[:n], maxSize-int64(len(out)), out); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// snappyBlock appends the decoded block to out, refusing one whose
// declared length passes the bound before decoding it.
func snappyBlock(block []byte, maxSize int64, out []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if int64(n) > maxSize {
		return nil, fmt.Errorf("%w: payload larger than %d bytes (LargeMessageConfig.MaxSize)", claimcheck.ErrInvalidArgument, maxSize)
	}
	dec, err := s2.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(out, dec...), nil
}

// LargeMessageWriter makes a Publisher write bakdata's format, for stock
// bakdata consumers: an offloaded value becomes the URI of the claim's own
// object in the store's bucket (with the reference in HeaderRef beside
// it, for claimcheck consumers), an inline one is flagged inline. The
// namespace must store payloads as they are (compression: none, no
// encryption), so that the object is the payload; claimcheck keeps
// owning it (it is deleted when the claim is finished, never before).
type LargeMessageWriter struct {
	// URIPrefix is what the stock consumers prefix an object key of the
	// store with to read it (required): "s3://<bucket>/" (or
	// "abs://<container>/", "gs://<bucket>/") of the store's storage,
	// plus the storage URL's key prefix, if it has one.
	URIPrefix string
	// Headers writes the flag in HeaderLargeValue (stock use.headers=true)
	// instead of as the value's first byte.
	Headers bool
}

// check refuses a writer whose URIs a stock consumer could not read.
func (w LargeMessageWriter) check(pol claimcheck.Policy, ns string) error {
	u, err := url.Parse(w.URIPrefix)
	if err != nil || u.Host == "" || !strings.HasSuffix(w.URIPrefix, "/") || (u.Scheme != "s3" && u.Scheme != "abs" && u.Scheme != "gs") {
		return fmt.Errorf("%w: LargeMessage.URIPrefix %q: want s3://, abs:// or gs://<bucket>/ (ending in /)", claimcheck.ErrInvalidArgument, w.URIPrefix)
	}
	if pol.Compression != claimcheck.CompressionNone || pol.Encrypted() {
		return fmt.Errorf("%w: namespace %s has compression %q and encryption %q; bakdata consumers need compression: none and no encryption (the object must be the payload as it is)",
			claimcheck.ErrInvalidArgument, ns, pol.Compression, pol.Encryption)
	}
	return nil
}

// encode returns the value and the headers to add for a payload (inline)
// or a URI (backed).
func (w LargeMessageWriter) encode(flag byte, body []byte) ([]byte, []kgo.RecordHeader) {
	if w.Headers {
		// The compression header too, saying none: the object is the
		// payload as it is, and a reader that expects the header finds it.
		return body, []kgo.RecordHeader{{Key: HeaderLargeValue, Value: []byte{flag}}, {Key: HeaderLargeCompression, Value: []byte{byte(LargeNone)}}}
	}
	return append([]byte{flag}, body...), nil
}

// objectURI is the URI of ref's object, which Stat reports only for a
// claim stored as it is.
func (w LargeMessageWriter) objectURI(ctx context.Context, claims claimcheck.Claims, ref claimcheck.Ref) (string, error) {
	info, err := claims.Stat(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("stat claim %s for its object: %w", ref.ID, err)
	}
	if info.Object == "" {
		return "", fmt.Errorf("claim %s: %w: its object is not the payload as it is (stored compressed or encrypted), so no URI can name it", ref.ID, claimcheck.ErrInvalidArgument)
	}
	return w.URIPrefix + info.Object, nil
}
