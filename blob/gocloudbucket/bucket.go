// Package gocloudbucket is the blob.Store over a gocloud.dev/blob
// bucket, which the backends built on gocloud share (blob/filestore,
// blob/memstore, blob/s3store, blob/gcsstore, blob/azurestore). It is
// the only place that sees gocloud's errors: gcerrors.NotFound becomes
// blob.ErrNotFound, gcerrors.Internal is marked blob.ErrObjectFault (the
// service's own error about the object, ADR 0255), and every error is
// wrapped with the operation and key. A backend opens its
// gocloud bucket, hands it to New and adds what gocloud cannot do
// (appends, presigning, lifecycle rules) on the type it returns.
package gocloudbucket

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	gcblob "gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/claimcheck/claimcheck/blob"
)

// WriteBufferSize and writeConcurrency tune writes. Only S3 uses them
// (fileblob writes straight to its temp file, memblob keeps everything
// in memory anyway).
//
// The S3 transfer manager holds (writeConcurrency+1) parts of
// WriteBufferSize in a pool, plus the first 16 MiB it reads to decide
// between a single PUT and a multipart upload (a fixed threshold gocloud
// does not expose). 5 MiB is S3's smallest part size; with one part in
// flight while the next fills, a stream costs about 26 MiB however large it
// is. The price: an object of unknown length can have at most 10,000 parts,
// so at most about 48 GiB.
const (
	WriteBufferSize  = 5 << 20
	writeConcurrency = 1
)

// defaultPageSize is used when List is asked for pageSize <= 0.
const defaultPageSize = 1000

// Bucket is the Store over a gocloud.dev/blob bucket.
type Bucket struct {
	b *gcblob.Bucket
	// startAfter, when set, is the listing option that makes a page
	// start after the key token (a service whose page tokens are opaque:
	// S3). Otherwise the token is passed through: fileblob and memblob use
	// the last key of the previous page as their page token, which is
	// exactly our token. The conformance suite's token tests catch a
	// driver that changes this.
	startAfter func(token string) func(as func(any) bool) error
	status     func(err error) int
}

var _ blob.Store = (*Bucket)(nil)

// Options are a backend's settings of its Bucket.
type Options struct {
	// StartAfter, for a service whose page tokens are opaque, returns
	// the gocloud BeforeList function that makes a listing start after
	// the key token (s3store sets S3's StartAfter), or at it (gcsstore
	// sets GCS's startOffset, azurestore Azure's startFrom): List drops
	// the token itself. Nil: the token is gocloud's page token.
	StartAfter func(token string) func(as func(any) bool) error
	// HTTPStatus, for a driver whose errors carry the service's HTTP
	// status in a type of their own (not an HTTPStatusCode method, which
	// blob.FaultOf reads by itself), returns it (0: none), so that a
	// 500 about one object is told from an outage (blob.FaultOf,
	// ADR 0255). The AWS SDK's errors need none.
	HTTPStatus func(err error) int
}

// New returns the Store over b, which it owns: Close closes b.
func New(b *gcblob.Bucket, o Options) *Bucket {
	return &Bucket{b: b, startAfter: o.StartAfter, status: o.HTTPStatus}
}

// Redact drops the query and user of a URL for error messages: they may
// carry endpoints with credentials or KMS key ids.
func Redact(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	v.User = nil
	return v.String()
}

// Wrap translates a gocloud error once, at the boundary, and says what
// was being done: "blob: <op> <key>: <err>", with gcerrors.NotFound
// turned into blob.ErrNotFound. Backends use it for the errors of their
// own calls too, so that every error of a store reads alike.
func Wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		err = blob.ErrNotFound
	case gcerrors.Internal:
		err = fmt.Errorf("%w: %w", blob.ErrObjectFault, err)
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

// wrap is Wrap with the driver's HTTP status attached (Options.HTTPStatus).
func (b *Bucket) wrap(op, key string, err error) error {
	if err != nil && b.status != nil {
		if st := b.status(err); st != 0 {
			err = &blob.StatusError{Status: st, Err: err}
		}
	}
	return Wrap(op, key, err)
}

// NewWriter implements blob.Store. gocloud's writer checks ctx in Close and
// discards the object (the file driver removes its temp file, S3 never
// completes the upload), which is what makes a cancelled write invisible.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := b.b.NewWriter(ctx, key, &gcblob.WriterOptions{
		// Stored bytes are compressed or opaque; naming the type also
		// stops gocloud from buffering the first 512 bytes to sniff it.
		ContentType:    "application/octet-stream",
		BufferSize:     WriteBufferSize,
		MaxConcurrency: writeConcurrency,
	})
	if err != nil {
		return nil, Wrap("write", key, err)
	}
	return &writer{w: w, key: key}, nil
}

type writer struct {
	w   *gcblob.Writer
	key string
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	return n, Wrap("write", w.key, err)
}

func (w *writer) Close() error {
	return Wrap("write", w.key, w.w.Close())
}

// NewReader implements blob.Store.
func (b *Bucket) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, b.wrap("read", key, err)
	}
	return &reader{r: r, key: key, wrap: b.wrap}, nil
}

// NewRangeReader implements blob.Store.
func (b *Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	r, err := b.b.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		err = b.wrap("read", key, err)
		if offset > 0 && blob.RangeNotSatisfiable(err) {
			// Starts at or past the end (S3, GCS and Azure answer 416;
			// a missing object is 404 first): no bytes, as the contract
			// says.
			return io.NopCloser(strings.NewReader("")), nil
		}
		return nil, err
	}
	return &reader{r: r, key: key, wrap: b.wrap}, nil
}

type reader struct {
	r    *gcblob.Reader
	key  string
	wrap func(op, key string, err error) error
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err == io.EOF {
		// io.EOF must reach the caller unwrapped (io.Copy, io.ReadAll).
		return n, err
	}
	return n, r.wrap("read", r.key, err)
}

func (r *reader) Close() error {
	return r.wrap("read", r.key, r.r.Close())
}

// Attributes implements blob.Store.
func (b *Bucket) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return blob.Attributes{}, b.wrap("attributes", key, err)
	}
	return blob.Attributes{Size: a.Size, ModTime: a.ModTime}, nil
}

// Delete implements blob.Store.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	err := b.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return Wrap("delete", key, err)
}

// List implements blob.Store. pageSize <= 0 means 1,000.
func (b *Bucket) List(ctx context.Context, prefix, token string, pageSize int) ([]blob.Object, string, error) {
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	opts := &gcblob.ListOptions{Prefix: prefix}
	pageToken := gcblob.FirstPageToken
	ask := pageSize
	switch {
	case token == "":
	case b.startAfter != nil:
		opts.BeforeList = b.startAfter(token)
		// A start that includes its key (Azure's startFrom, GCS's
		// startOffset) lists the token itself first: one more makes a
		// full page without it.
		ask++
	default:
		pageToken = []byte(token)
	}
	objs := make([]blob.Object, 0, min(pageSize, defaultPageSize))
	for {
		page, next, err := b.b.ListPage(ctx, pageToken, ask-len(objs), opts)
		if err != nil {
			return nil, "", Wrap("list", prefix, err)
		}
		for _, o := range page {
			if o.IsDir || token != "" && o.Key <= token {
				continue
			}
			objs = append(objs, blob.Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
		}
		more := len(next) > 0
		if len(objs) > pageSize {
			objs, more = objs[:pageSize], true
		}
		if more && len(objs) < pageSize && len(page) > 0 {
			// A short page (a service may answer fewer than asked, and
			// an including start lists the token): fill it from the next.
			pageToken = next
			continue
		}
		if !more || len(objs) == 0 {
			return objs, "", nil
		}
		return objs, objs[len(objs)-1].Key, nil
	}
}

// Close implements blob.Store.
func (b *Bucket) Close() error {
	if err := b.b.Close(); err != nil {
		return fmt.Errorf("blob: close: %w", err)
	}
	return nil
}
