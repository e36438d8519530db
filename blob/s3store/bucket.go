package s3store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// maxS3Batch is the most keys one DeleteObjects request takes.
const maxS3Batch = 1000

// MaxBatch implements blob.BatchDeleter.
func (b *Bucket) MaxBatch() int { return maxS3Batch }

// DeleteMany implements blob.BatchDeleter with one DeleteObjects request. Like
// Delete, a missing key is not a failure (S3 reports it as deleted anyway).
// A request-level failure (network, auth, ctx) is the returned error and
// the map is nil: nothing is known to be deleted.
func (b *Bucket) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > maxS3Batch {
		return nil, fmt.Errorf("blob: delete %d objects: at most %d per batch", len(keys), maxS3Batch)
	}
	failed := make(map[string]error)
	ids := make([]types.ObjectIdentifier, 0, len(keys))
	for _, k := range keys {
		if escapedByGocloud(k) {
			// gocloud stores such keys escaped; only its own Delete
			// knows the object's real name.
			if err := b.Delete(ctx, k); err != nil {
				failed[k] = err
			}
			continue
		}
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
	}
	if len(ids) > 0 {
		out, err := b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(b.name),
			// Quiet: the answer lists only the failures.
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return nil, fmt.Errorf("blob: delete %d objects (first %s): %w", len(ids), aws.ToString(ids[0].Key), err)
		}
		for _, e := range out.Errors {
			key, code := aws.ToString(e.Key), aws.ToString(e.Code)
			if code == "NoSuchKey" {
				continue
			}
			failed[key] = fmt.Errorf("blob: delete %s: %s: %s", key, code, aws.ToString(e.Message))
		}
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, nil
}

// escapedByGocloud reports whether s3blob would store key under another
// name (control characters, and the slash of "../"), or refuse it.
func escapedByGocloud(key string) bool {
	if !utf8.ValidString(key) || strings.Contains(key, "../") {
		return true
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 32 {
			return true
		}
	}
	return false
}

// abortTimeout bounds the clean-up request after a failed multipart upload.
const abortTimeout = 30 * time.Second

// singlePutMax is the largest object NewWriter sends with one PutObject;
// a longer stream becomes a multipart upload of parts this size.
const singlePutMax = gocloudbucket.WriteBufferSize

// putBuffers recycles the buffers of single-request writes: a busy
// server writes many small objects at once, and a buffer that grew to a
// megabyte once need not be grown again.
var putBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// NewWriter implements blob.Store. The bytes are buffered, up to
// singlePutMax: an object that ends within that goes out as one
// PutObject of known length when the writer closes, without the transfer
// manager's pipe, goroutine and growing first-part read that gocloud's
// writer puts in front of every upload (ADR 0180). A longer
// stream turns into gocloud's multipart writer, buffered bytes first, so
// memory stays bounded whatever the size. A write announced with its
// length and sha256 (blob.KnownPayloadWriter), larger than streamMin, is not
// buffered: its PutObject carries the bytes as they come (ADR 0165).
// Either way nothing is visible before Close returns nil, and a
// cancelled ctx makes Close fail without creating the object: the single
// request is never sent, or is aborted before S3 commits it; the
// multipart upload is never completed.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	if escapedByGocloud(key) {
		// Only gocloud knows the escaped name it stores the object under.
		return b.multipartWriter(ctx, key)
	}
	buf := putBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	return &s3Writer{b: b, ctx: ctx, key: key, buf: buf}, nil
}

// s3Writer buffers an object for one PutObject until it outgrows
// singlePutMax; then mp carries the rest of the stream.
type s3Writer struct {
	b   *Bucket
	ctx context.Context
	key string
	buf *bytes.Buffer // nil once mp took over or the writer closed
	mp  io.WriteCloser
	// sum is the hex sha256 of the bytes, from SetPayloadSHA256 ("" if
	// not given).
	sum string
	// stream, once SetKnownPayload started it, carries the bytes to S3
	// as they are written; buf and mp are then unused.
	stream *s3Stream
}

// s3Stream is a PutObject whose body is sent while the object is being
// written: its length and sha256 were announced (SetKnownPayload).
type s3Stream struct {
	pw   *io.PipeWriter // the request's body
	size int64
	sent int64  // bytes given to the request
	held []byte // the last bytes written, sent by Close
	done chan struct{}
	err  error // PutObject's, once done is closed
	// abort cancels the request (its context is the writer's), so that
	// a refused stream ends at once instead of after the SDK's retries.
	abort context.CancelFunc
}

// SetKnownPayload implements KnownPayloadWriter: an object of streamMin
// to singlePutMax bytes goes out as one PutObject that starts now and
// carries each Write on, signed with sum (over plain HTTP S3 checks the
// body against it; over TLS it goes unsigned, as any write). The request
// is sent size bytes in all: it cannot complete before the last byte,
// which Write holds back for Close, so cancelling ctx or closing with
// other than size bytes aborts it and stores nothing. Smaller and larger
// objects, and a writer already written to, keep the buffered or
// multipart path.
func (w *s3Writer) SetKnownPayload(size int64, sum []byte) bool {
	if w.stream != nil || w.mp != nil || w.buf == nil || w.buf.Len() > 0 || size < streamMin || size > singlePutMax || len(sum) != 32 {
		return false
	}
	w.release(w.buf) // sets w.buf to nil
	pr, pw := io.Pipe()
	ctx, abort := context.WithCancel(w.ctx)
	st := &s3Stream{pw: pw, size: size, done: make(chan struct{}), abort: abort}
	known := hex.EncodeToString(sum)
	go func() {
		defer close(st.done)
		defer abort()
		// Not the *io.PipeReader itself: the SDK sends one of those
		// chunked, without the Content-Length S3 requires.
		st.err = w.putObject(ctx, struct{ io.Reader }{pr}, size, known)
		// A request that ended early (refused, cancelled) reads no
		// more: Write must not wait for it.
		pr.CloseWithError(cmp.Or(st.err, errStreamEnded))
	}()
	w.stream = st
	return true
}

// streamMin is the smallest announced object that SetKnownPayload
// streams. A put reads its body in chunks of claimcheck.HashCopyChunk
// (128 KiB, kept equal to it here so that blob does not depend on the
// contract), so an object no larger than that is written whole, at once,
// after its last byte arrived: streaming it hides nothing and costs a goroutine, a pipe
// between it and the handler, and a second write of the request for the
// byte held back for Close. The buffered PutObject sends it from Close,
// signed with the same sha256 (blob.PayloadHasher), and only after the
// engine checked the body against it (ADR 0180).
const streamMin = 128<<10 + 1

// errStreamEnded is what a Write to a streamed PutObject gets after the
// request ended without a failure of its own: it already had all its
// bytes, so more are more than announced.
var errStreamEnded = errors.New("the request has all the bytes announced")

// write sends p on, keeping the last byte of the object back for Close.
func (st *s3Stream) write(key string, p []byte) (int, error) {
	if st.sent+int64(len(st.held))+int64(len(p)) > st.size {
		st.abort()
		return 0, fmt.Errorf("blob: write %s: more than the %d bytes announced", key, st.size)
	}
	n := min(int64(len(p)), st.size-1-st.sent)
	if n > 0 {
		m, err := st.pw.Write(p[:n])
		st.sent += int64(m)
		if err != nil {
			return m, fmt.Errorf("blob: write %s: %w", key, err)
		}
	}
	st.held = append(st.held, p[n:]...)
	return len(p), nil
}

// close sends the held bytes, when the writer's context is live and all
// size bytes were written, and waits for the answer; otherwise it aborts
// the request, which S3 then discards (it has fewer bytes than its
// Content-Length).
func (st *s3Stream) close(ctx context.Context, key string) error {
	var err error
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case st.sent+int64(len(st.held)) != st.size:
		err = fmt.Errorf("%d bytes written, %d announced", st.sent+int64(len(st.held)), st.size)
	}
	if err != nil {
		st.abort()
		st.pw.CloseWithError(err)
		<-st.done
		return fmt.Errorf("blob: write %s: %w", key, err)
	}
	if _, werr := st.pw.Write(st.held); werr != nil {
		<-st.done
		return fmt.Errorf("blob: write %s: %w", key, cmp.Or(st.err, werr))
	}
	_ = st.pw.Close() // a PipeWriter's Close always returns nil
	<-st.done
	if st.err != nil {
		return fmt.Errorf("blob: write %s: %w", key, st.err)
	}
	return nil
}

// SetPayloadSHA256 implements PayloadHasher: the single PutObject is
// signed with sum instead of the SDK's own pass over the buffer. A
// multipart upload signs each part, and hashes them itself.
func (w *s3Writer) SetPayloadSHA256(sum []byte) { w.sum = hex.EncodeToString(sum) }

func (w *s3Writer) Write(p []byte) (int, error) {
	if st := w.stream; st != nil {
		if st.pw == nil {
			return 0, fmt.Errorf("blob: write %s: writer is closed", w.key)
		}
		return st.write(w.key, p)
	}
	if w.mp != nil {
		return w.mp.Write(p)
	}
	if w.buf == nil {
		return 0, fmt.Errorf("blob: write %s: writer is closed", w.key)
	}
	if w.buf.Len()+len(p) <= singlePutMax {
		return w.buf.Write(p)
	}
	mp, err := w.b.multipartWriter(w.ctx, w.key)
	if err != nil {
		return 0, err
	}
	w.mp = mp
	_, err = mp.Write(w.buf.Bytes())
	w.release(w.buf)
	if err != nil {
		return 0, err
	}
	return mp.Write(p)
}

func (w *s3Writer) Close() error {
	if st := w.stream; st != nil {
		if st.pw == nil {
			return fmt.Errorf("blob: write %s: writer is closed", w.key)
		}
		err := st.close(w.ctx, w.key)
		st.pw = nil
		return err
	}
	if w.mp != nil {
		return w.mp.Close()
	}
	buf := w.buf
	if buf == nil {
		return fmt.Errorf("blob: write %s: writer is closed", w.key)
	}
	w.buf = nil
	if err := w.ctx.Err(); err != nil {
		w.release(buf)
		return fmt.Errorf("blob: write %s: %w", w.key, err)
	}
	if err := w.putObject(w.ctx, bytes.NewReader(buf.Bytes()), int64(buf.Len()), w.sum); err != nil {
		// Not recycled: the HTTP transport may still be reading the
		// body of a request that failed early.
		return fmt.Errorf("blob: write %s: %w", w.key, err)
	}
	w.release(buf)
	return nil
}

// putObject sends the object as one PutObject of n bytes read from
// body, signed with sum (hex sha256) when it is not "".
func (w *s3Writer) putObject(ctx context.Context, body io.Reader, n int64, sum string) error {
	in := &s3.PutObjectInput{
		Bucket: aws.String(w.b.name), Key: aws.String(w.key),
		Body: body, ContentLength: aws.Int64(n),
		// As Bucket.NewWriter: stored bytes are compressed or opaque.
		ContentType: aws.String("application/octet-stream"),
	}
	w.b.sse.apply(in)
	var opts []func(*s3.Options)
	if sum != "" {
		opts = append(opts, func(o *s3.Options) {
			o.APIOptions = append(slices.Clip(o.APIOptions), knownPayloadHash(sum))
		})
	}
	_, err := w.b.client.PutObject(ctx, in, opts...)
	return err
}

// release returns buf to the pool. Its contents never exceed
// singlePutMax, but bytes.Buffer grows its capacity by doubling; a
// buffer grown past twice that (which would take a bug) is dropped
// rather than kept alive in the pool.
func (w *s3Writer) release(buf *bytes.Buffer) {
	w.buf = nil
	if buf.Cap() <= 2*singlePutMax {
		putBuffers.Put(buf)
	}
}

// multipartWriter is Bucket's writer (gocloud's, over the transfer
// manager) that also aborts the multipart upload of a failed write: the
// transfer manager tries to, but with the caller's context, which is
// exactly what has been cancelled when a client goes away mid-put, so the
// parts (up to 16 MiB and more) would otherwise stay billed and invisible
// until the bucket's abort-incomplete lifecycle rule removes them a day
// later.
func (b *Bucket) multipartWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := b.Bucket.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &abortingWriter{WriteCloser: w, b: b, ctx: ctx, key: key}, nil
}

type abortingWriter struct {
	io.WriteCloser
	b   *Bucket
	ctx context.Context
	key string
}

func (w *abortingWriter) Close() error {
	err := w.WriteCloser.Close()
	var mp transfermanager.MultipartUploadError
	if err == nil || !errors.As(err, &mp) || escapedByGocloud(w.key) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	_, aerr := w.b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(w.b.name),
		Key:      aws.String(w.key),
		UploadId: aws.String(mp.UploadID()),
	})
	var api smithy.APIError
	if aerr == nil || errors.As(aerr, &api) && api.ErrorCode() == "NoSuchUpload" {
		return err // aborted now, or the transfer manager managed after all
	}
	return errors.Join(err, fmt.Errorf("blob: write %s: abort multipart upload %s: %w", w.key, mp.UploadID(), aerr))
}

// NewReader implements blob.Store with one GetObject, without gocloud's reader
// in between: on the redeem path its per-call bookkeeping cost about as
// much as the transfer itself (docs/PERFORMANCE-HISTORY.md, "Production
// backends: PostgreSQL + MinIO"). Keys gocloud would
// have escaped still go through it, so both agree on the object's name.
func (b *Bucket) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if escapedByGocloud(key) {
		return b.Bucket.NewReader(ctx, key)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
			err = blob.ErrNotFound
		}
		return nil, fmt.Errorf("blob: read %s: %w", key, err)
	}
	return &s3Reader{body: out.Body, key: key}, nil
}

type s3Reader struct {
	body io.ReadCloser
	key  string
}

func (r *s3Reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err == nil || err == io.EOF {
		// io.EOF must reach the caller unwrapped (io.Copy, io.ReadAll).
		return n, err
	}
	return n, fmt.Errorf("blob: read %s: %w", r.key, err)
}

func (r *s3Reader) Close() error {
	if err := r.body.Close(); err != nil {
		return fmt.Errorf("blob: read %s: %w", r.key, err)
	}
	return nil
}
