package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Write tuning. Only S3 uses them (fileblob writes straight to its temp
// file, memblob keeps everything in memory anyway).
//
// The S3 transfer manager holds (writeConcurrency+1) parts of
// writeBufferSize in a pool, plus the first 16 MiB it reads to decide
// between a single PUT and a multipart upload (a fixed threshold gocloud
// does not expose). 5 MiB is S3's smallest part size; with one part in
// flight while the next fills, a stream costs about 26 MiB however large it
// is. The price: an object of unknown length can have at most 10,000 parts,
// so at most about 48 GiB.
const (
	writeBufferSize  = 5 << 20
	writeConcurrency = 1
)

// defaultPageSize is used when List is asked for pageSize <= 0.
const defaultPageSize = 1000

// Bucket is the Store over a gocloud.dev/blob bucket. It is the only place
// that sees gocloud's errors: gcerrors.NotFound becomes ErrNotFound, and
// every other error is wrapped with the operation and key.
type Bucket struct {
	b *gcblob.Bucket
	// startAfter is set for S3, whose page tokens are opaque: List then
	// asks the service to start after the key token. fileblob and memblob
	// use the last key of the previous page as their page token, which is
	// exactly our token, so it is passed through. The conformance suite's
	// token tests catch a driver that changes this.
	startAfter bool
}

var _ Store = (*Bucket)(nil)

// S3Bucket is the Store for S3 and S3-compatible services. Besides the
// portable Bucket it deletes in batches (DeleteObjects).
type S3Bucket struct {
	*Bucket
	client *s3.Client
	name   string
	sse    s3SSE // for the PutObject requests of NewWriter
}

var (
	_ Store        = (*S3Bucket)(nil)
	_ BatchDeleter = (*S3Bucket)(nil)
)

// Open opens the store at rawURL. The concrete type tells the engine, by
// type assertion, which optional abilities the backend has: a
// *FileBucket (an Appender) for file://, a *Bucket for mem://, an
// *S3Bucket (BatchDeleter, Presigner, Lifecycler, Appender) for s3://.
//
// URL forms:
//
//   - file:///abs/dir — objects are files under dir, which is created if
//     missing. file://./rel/dir (host ".") is a path relative to the working
//     directory at the time of Open. Other hosts than "", "localhost" and
//     "." are refused, because "file://data/blobs" would silently mean
//     "/blobs"; so is the filesystem root. fileblob's query parameters
//     (dir_file_mode, ...) pass through.
//   - mem:// — a fresh in-memory store, for tests.
//   - s3://bucket?endpoint=URL&region=R&use_path_style=true — S3 or an
//     S3-compatible service; credentials come from the AWS environment
//     (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, profiles, ...). See
//     gocloud.dev/blob/s3blob for the other parameters.
//
// File backend details: a write goes to a temp file next to its final path
// ("<key>.<hex>.tmp") and is renamed on a successful Close, so the rename
// never crosses devices and a payload never lands in a RAM-backed /tmp.
// Close after a cancelled ctx removes the temp file. A process killed mid
// write leaves its temp file behind; List shows it like any object, so the
// backstop collects it as debris once it is older than the grace period (an active write keeps touching its modification time).
// No ".attrs" sidecar files are written: the store keeps no metadata.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: open: %w", err)
	}
	switch u.Scheme {
	case "file":
		return openFile(ctx, u)
	case "mem":
		return &Bucket{b: memblob.OpenBucket(nil)}, nil
	case s3blob.Scheme:
		return openS3(ctx, u)
	default:
		return nil, fmt.Errorf("blob: open %s: unsupported scheme %q (want file, mem or s3)", redact(u), u.Scheme)
	}
}

func openFile(ctx context.Context, u *url.URL) (Store, error) {
	if u.Opaque != "" {
		return nil, fmt.Errorf("blob: open %s: write file:///absolute/dir or file://./relative/dir", u)
	}
	switch u.Host {
	case "", "localhost", ".":
	default:
		return nil, fmt.Errorf("blob: open %s: host %q: write file:///absolute/dir or file://./relative/dir", u, u.Host)
	}
	if strings.Trim(u.Path, "/") == "" {
		// Never the filesystem root or the bare working directory: the
		// backstop deletes unknown objects under the bucket.
		return nil, fmt.Errorf("blob: open %s: no directory", u)
	}
	opener := &fileblob.URLOpener{Options: fileblob.Options{
		CreateDir: true,
		NoTempDir: true,
		Metadata:  fileblob.MetadataDontWrite,
	}}
	b, err := opener.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", u, err)
	}
	// The root as the driver resolves it (a "." host: relative to the
	// working directory now), for appending to files in place.
	dir := u.Path
	if u.Host == "." {
		dir = strings.TrimPrefix(dir, "/")
	}
	abs, err := filepath.Abs(filepath.FromSlash(dir))
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("blob: open %s: %w", u, err)
	}
	return &FileBucket{Bucket: &Bucket{b: b}, dir: abs}, nil
}

// redact drops the query of a URL for error messages: it may carry
// endpoints with credentials or KMS key ids.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	v.User = nil
	return v.String()
}

// wrap translates a gocloud error once, at the boundary, and says what was
// being done.
func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		err = ErrNotFound
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

// NewWriter implements Store. gocloud's writer checks ctx in Close and
// discards the object (the file driver removes its temp file, S3 never
// completes the upload), which is what makes a cancelled write invisible.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := b.b.NewWriter(ctx, key, &gcblob.WriterOptions{
		// Stored bytes are compressed or opaque; naming the type also
		// stops gocloud from buffering the first 512 bytes to sniff it.
		ContentType:    "application/octet-stream",
		BufferSize:     writeBufferSize,
		MaxConcurrency: writeConcurrency,
	})
	if err != nil {
		return nil, wrap("write", key, err)
	}
	return &writer{w: w, key: key}, nil
}

type writer struct {
	w   *gcblob.Writer
	key string
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	return n, wrap("write", w.key, err)
}

func (w *writer) Close() error {
	return wrap("write", w.key, w.w.Close())
}

// NewReader implements Store.
func (b *Bucket) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrap("read", key, err)
	}
	return &reader{r: r, key: key}, nil
}

// NewRangeReader implements Store.
func (b *Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	r, err := b.b.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, wrap("read", key, err)
	}
	return &reader{r: r, key: key}, nil
}

type reader struct {
	r   *gcblob.Reader
	key string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err == io.EOF {
		// io.EOF must reach the caller unwrapped (io.Copy, io.ReadAll).
		return n, err
	}
	return n, wrap("read", r.key, err)
}

func (r *reader) Close() error {
	return wrap("read", r.key, r.r.Close())
}

// Attributes implements Store.
func (b *Bucket) Attributes(ctx context.Context, key string) (Attributes, error) {
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return Attributes{}, wrap("attributes", key, err)
	}
	return Attributes{Size: a.Size, ModTime: a.ModTime}, nil
}

// Delete implements Store.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	err := b.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return wrap("delete", key, err)
}

// List implements Store. pageSize <= 0 means 1,000.
func (b *Bucket) List(ctx context.Context, prefix, token string, pageSize int) ([]Object, string, error) {
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	opts := &gcblob.ListOptions{Prefix: prefix}
	pageToken := gcblob.FirstPageToken
	switch {
	case token == "":
	case b.startAfter:
		opts.BeforeList = func(as func(any) bool) error {
			var v2 *s3.ListObjectsV2Input
			if as(&v2) {
				v2.StartAfter = &token
				return nil
			}
			var v1 *s3.ListObjectsInput
			if as(&v1) {
				v1.Marker = &token
				return nil
			}
			return errors.New("cannot set the start key of an S3 listing")
		}
	default:
		pageToken = []byte(token)
	}
	page, next, err := b.b.ListPage(ctx, pageToken, pageSize, opts)
	if err != nil {
		return nil, "", wrap("list", prefix, err)
	}
	objs := make([]Object, 0, len(page))
	for _, o := range page {
		if o.IsDir {
			continue
		}
		objs = append(objs, Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
	}
	if len(next) == 0 || len(objs) == 0 {
		return objs, "", nil
	}
	return objs, objs[len(objs)-1].Key, nil
}

// Close implements Store.
func (b *Bucket) Close() error {
	if err := b.b.Close(); err != nil {
		return fmt.Errorf("blob: close: %w", err)
	}
	return nil
}
