package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// The client side of tus 1.0.0 (creation, termination, checksum) is the
// few requests below: POST to create, HEAD for the offset, PATCH the
// bytes, DELETE to drop. It is written here rather than imported so that
// the client stays on the standard library (TestContractDependencies).
const (
	tusVersion          = "1.0.0"
	headerTusResumable  = "Tus-Resumable"
	headerUploadLength  = "Upload-Length"
	headerUploadOffset  = "Upload-Offset"
	headerUploadMeta    = "Upload-Metadata"
	headerUploadCheck   = "Upload-Checksum"
	headerUploadExpires = "Upload-Expires"
	contentTypeTusPatch = "application/offset+octet-stream"
	// statusChecksumMismatch is tus's answer to a chunk or a payload
	// whose checksum did not match; nothing of it was stored.
	statusChecksumMismatch = 460
)

// Defaults of ResumableOptions.
const (
	DefaultChunkSize = 16 << 20
	DefaultRetries   = 5
)

// ResumableOptions tune a resumable upload. The zero value is good.
type ResumableOptions struct {
	// ContentType is stored with the claim.
	ContentType string
	// Digest is the payload's "sha256:<hex>". When empty it is computed
	// by reading the payload once before the upload starts. The server
	// checks the whole payload against it before it commits the claim.
	Digest string
	// ChunkSize is the number of bytes sent per PATCH request (default
	// DefaultChunkSize). Each chunk carries its own sha256
	// (Upload-Checksum), and a cut connection costs at most one chunk.
	ChunkSize int64
	// Retries bounds the attempts in a row that make no progress: a
	// failed request that moved the server's offset forward resets the
	// count. Negative means no retries; zero means DefaultRetries.
	Retries int
	// Created is called with the upload's URL as soon as the server has
	// created it, before any byte is sent: keep it to resume the upload
	// with ResumeUpload after this process ends. When it fails (the URL
	// could not be kept), the upload is dropped on the server and the
	// error returned.
	Created func(uploadURL string) error
	// Progress is called with the server's offset after every chunk it
	// accepted and every offset it reported.
	Progress func(offset, size int64)
}

func (o ResumableOptions) withDefaults() ResumableOptions {
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	return o
}

// ResumableStatus is what the server reports about a resumable upload
// (HEAD).
type ResumableStatus struct {
	Offset, Size int64
	// Expires is when the server drops the upload if it is not finished
	// (zero when the server did not say).
	Expires time.Time
	// Ref is the claim's reference once the upload is complete.
	Ref *claimcheck.Ref
}

// UploadResumable stores the size bytes of r in a new claim of namespace
// ns over tus: it creates an upload, sends the bytes in chunks of
// opts.ChunkSize and, when a request fails on the way (a cut connection,
// a server restarting, 5xx, 423, 429), asks the server for its offset and
// goes on from there, at most opts.Retries times in a row without
// progress, waiting 0.5 s, 1 s, 2 s … (at most 10 s, or the server's
// Retry-After) in between. It returns the claim's reference, which the
// server answers with the last chunk.
//
// The creation itself is not retried: one whose answer was lost may have
// created an upload that nobody knows (it expires on the server).
//
// r is read more than once (hash, chunk checksums, resent chunks), so it
// must keep its contents for the duration. When the process may end
// before the upload does, keep the URL passed to opts.Created and finish
// with ResumeUpload.
func (c *Client) UploadResumable(ctx context.Context, ns string, r io.ReaderAt, size int64, opts ResumableOptions) (claimcheck.Ref, error) {
	u, err := c.CreateResumable(ctx, ns, r, size, &opts)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	// A new upload is at offset 0: no need to ask. An empty one was
	// complete at creation, and the HEAD answers its reference.
	var fresh *ResumableStatus
	if size > 0 {
		fresh = &ResumableStatus{Size: size}
	}
	return c.resume(ctx, u, r, size, opts, fresh)
}

// CreateResumable creates a tus upload of size bytes in namespace ns and
// returns its URL. When opts.Digest is empty it is computed from r and
// filled in (so that the same opts go on to ResumeUpload); opts.Created
// is called with the URL (and a failure of it drops the upload).
func (c *Client) CreateResumable(ctx context.Context, ns string, r io.ReaderAt, size int64, opts *ResumableOptions) (string, error) {
	op := "resumable upload to " + ns
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return "", fmt.Errorf("resumable upload: %w", err)
	}
	if size < 0 {
		return "", fmt.Errorf("%s: %w: size %d is negative", op, claimcheck.ErrInvalidArgument, size)
	}
	if opts.Digest == "" {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
			return "", fmt.Errorf("%s: hashing the payload: %w", op, err)
		}
		opts.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	hexDigest, ok := strings.CutPrefix(opts.Digest, "sha256:")
	if !ok || !claimcheck.ValidDigest(opts.Digest) {
		return "", fmt.Errorf("%s: %w: digest %q is not sha256:<64 lowercase hex digits>", op, claimcheck.ErrInvalidArgument, opts.Digest)
	}
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "namespaces", ns, "tus")
	if err != nil {
		return "", err
	}
	req.Header.Set(headerTusResumable, tusVersion)
	req.Header.Set(headerUploadLength, strconv.FormatInt(size, 10))
	meta := []string{"sha256 " + base64.StdEncoding.EncodeToString([]byte(hexDigest))}
	if opts.ContentType != "" {
		meta = append(meta, "content_type "+base64.StdEncoding.EncodeToString([]byte(opts.ContentType)))
	}
	req.Header.Set(headerUploadMeta, strings.Join(meta, ","))
	resp, err := c.do(req, http.StatusCreated, op, "")
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" || (loc.Scheme != "http" && loc.Scheme != "https") {
		return "", fmt.Errorf("%s: the server's Location %q is not an upload URL", op, resp.Header.Get("Location"))
	}
	if opts.Created != nil {
		if err := opts.Created(loc.String()); err != nil {
			c.AbortResumable(context.WithoutCancel(ctx), loc.String())
			return "", fmt.Errorf("%s: %w", op, err)
		}
	}
	return loc.String(), nil
}

// ResumeUpload sends the rest of the tus upload at uploadURL from r (the
// size bytes of the whole payload, the same as at creation) and returns
// the claim's reference. It asks the server for its offset first, so it
// continues an upload that another process started; an upload that is
// already complete only answers its reference. opts.Digest, when set, is
// checked against the reference the server answers.
func (c *Client) ResumeUpload(ctx context.Context, uploadURL string, r io.ReaderAt, size int64, opts ResumableOptions) (claimcheck.Ref, error) {
	return c.resume(ctx, uploadURL, r, size, opts, nil)
}

// resume is ResumeUpload starting from status st, or from a HEAD when
// st is nil.
func (c *Client) resume(ctx context.Context, uploadURL string, r io.ReaderAt, size int64, opts ResumableOptions, st *ResumableStatus) (claimcheck.Ref, error) {
	opts = opts.withDefaults()
	target, op, err := c.uploadURL(uploadURL)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("resume upload: %w", err)
	}
	t := &tusTransfer{c: c, url: target, r: r, size: size, opts: opts, op: op}
	ref, err := t.run(ctx, st)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	if opts.Digest != "" && ref.Digest != opts.Digest || ref.Size != size {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: the server stored %d bytes with digest %s, not the %d bytes with %s sent", op, claimcheck.ErrChecksumMismatch, ref.Size, ref.Digest, size, opts.Digest)
	}
	return ref, nil
}

// ResumableStatus asks the server where the tus upload at uploadURL
// stands (HEAD).
func (c *Client) ResumableStatus(ctx context.Context, uploadURL string) (ResumableStatus, error) {
	target, op, err := c.uploadURL(uploadURL)
	if err != nil {
		return ResumableStatus{}, fmt.Errorf("resumable status: %w", err)
	}
	t := &tusTransfer{c: c, url: target, op: op}
	return t.head(ctx)
}

// AbortResumable drops the tus upload at uploadURL (termination): the
// server deletes what it received and gives the quota back.
func (c *Client) AbortResumable(ctx context.Context, uploadURL string) error {
	target, op, err := c.uploadURL(uploadURL)
	if err != nil {
		return fmt.Errorf("abort upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, target.String(), nil)
	if err != nil {
		return fmt.Errorf("abort upload: %w", err)
	}
	req.Header.Set(headerTusResumable, tusVersion)
	resp, err := c.do(req, http.StatusNoContent, "abort "+op, "")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// uploadURL parses an upload URL (relative ones are taken relative to
// the server) and names it for errors.
func (c *Client) uploadURL(raw string) (*url.URL, string, error) {
	u, err := c.base.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, "", fmt.Errorf("%w: upload URL %q is not an http(s) URL", claimcheck.ErrInvalidArgument, raw)
	}
	return u, "resumable upload " + u.Redacted(), nil
}

// tusTransfer is one run of ResumeUpload.
type tusTransfer struct {
	c    *Client
	url  *url.URL
	r    io.ReaderAt
	size int64
	opts ResumableOptions
	op   string
}

// run is the loop: HEAD for the offset, PATCH chunks from it; after a
// failure that may be passing (see retryable), back off and HEAD again.
// The server's offset is the only truth about what it has: a chunk
// whose answer was lost may have been stored whole, in part or not at
// all.
func (t *tusTransfer) run(ctx context.Context, known *ResumableStatus) (claimcheck.Ref, error) {
	failures := 0
	var st ResumableStatus
	var err error
	if known != nil {
		st = *known
	} else {
		st, err = t.headed(ctx)
	}
	for {
		if err == nil && st.Ref != nil {
			return *st.Ref, nil
		}
		if err == nil {
			if st.Size != t.size {
				return claimcheck.Ref{}, fmt.Errorf("%s: %w: the upload has %d bytes, the payload %d: it is another payload's upload", t.op, claimcheck.ErrInvalidArgument, st.Size, t.size)
			}
			var ref *claimcheck.Ref
			before := st.Offset
			ref, st.Offset, err = t.patch(ctx, st.Offset)
			if ref != nil {
				return *ref, nil
			}
			if err == nil || st.Offset > before {
				failures = 0
			}
			if err == nil {
				continue
			}
		}
		if !retryable(err) || ctx.Err() != nil {
			return claimcheck.Ref{}, err
		}
		failures++
		if failures > t.opts.Retries {
			return claimcheck.Ref{}, fmt.Errorf("%s: gave up after %d attempts in a row without progress: %w", t.op, failures, err)
		}
		if werr := sleepCtx(ctx, backoff(failures, err)); werr != nil {
			return claimcheck.Ref{}, fmt.Errorf("%s: %w", t.op, werr)
		}
		st, err = t.headed(ctx)
	}
}

// headed is head, reporting the offset to opts.Progress.
func (t *tusTransfer) headed(ctx context.Context) (ResumableStatus, error) {
	st, err := t.head(ctx)
	if err == nil && st.Ref == nil && t.opts.Progress != nil {
		t.opts.Progress(st.Offset, t.size)
	}
	return st, err
}

// head asks for the upload's offset, size, expiry, and reference when
// complete.
func (t *tusTransfer) head(ctx context.Context) (ResumableStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, t.url.String(), nil)
	if err != nil {
		return ResumableStatus{}, fmt.Errorf("%s: %w", t.op, err)
	}
	req.Header.Set(headerTusResumable, tusVersion)
	resp, err := t.c.do(req, http.StatusOK, t.op, "")
	if err != nil {
		return ResumableStatus{}, err
	}
	resp.Body.Close()
	var st ResumableStatus
	if st.Offset, err = headerInt(resp, headerUploadOffset); err != nil {
		return ResumableStatus{}, fmt.Errorf("%s: %w", t.op, err)
	}
	if st.Size, err = headerInt(resp, headerUploadLength); err != nil {
		return ResumableStatus{}, fmt.Errorf("%s: %w", t.op, err)
	}
	if v := resp.Header.Get(headerUploadExpires); v != "" {
		st.Expires, _ = http.ParseTime(v)
	}
	if st.Ref, err = answeredRef(resp); err != nil {
		return ResumableStatus{}, fmt.Errorf("%s: %w", t.op, err)
	}
	return st, nil
}

// patch sends the chunk at offset and returns the server's new offset,
// and the claim's reference when that chunk completed the upload.
func (t *tusTransfer) patch(ctx context.Context, offset int64) (*claimcheck.Ref, int64, error) {
	// Chunks end at multiples of ChunkSize, also after the server kept
	// a part of a chunk that was cut.
	n := min(t.opts.ChunkSize-offset%t.opts.ChunkSize, t.size-offset)
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(t.r, offset, n)); err != nil {
		return nil, offset, fmt.Errorf("%s: reading the payload: %w", t.op, err)
	}
	body := &bodyTracker{r: &exactReader{r: io.NewSectionReader(t.r, offset, n), left: n, size: n}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, t.url.String(), body)
	if err != nil {
		return nil, offset, fmt.Errorf("%s: %w", t.op, err)
	}
	req.ContentLength = n
	if n == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set(headerTusResumable, tusVersion)
	req.Header.Set("Content-Type", contentTypeTusPatch)
	req.Header.Set(headerUploadOffset, strconv.FormatInt(offset, 10))
	req.Header.Set(headerUploadCheck, "sha256 "+base64.StdEncoding.EncodeToString(h.Sum(nil)))
	resp, err := t.c.do(req, http.StatusNoContent, t.op, "")
	if berr := body.finish(); err != nil && berr != nil {
		return nil, offset, fmt.Errorf("%s: reading the payload: %w", t.op, berr)
	}
	var e *Error
	if errors.As(err, &e) && e.Status == statusChecksumMismatch && !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		// 460 from something that did not send claimcheck's JSON.
		return nil, offset, fmt.Errorf("%s: %w: %w", t.op, claimcheck.ErrChecksumMismatch, err)
	}
	if err != nil {
		return nil, offset, err
	}
	resp.Body.Close()
	next, err := headerInt(resp, headerUploadOffset)
	if err != nil {
		return nil, offset, fmt.Errorf("%s: %w", t.op, err)
	}
	if next != offset+n {
		return nil, next, fmt.Errorf("%s: the server is at offset %d after a chunk of %d bytes from %d", t.op, next, n, offset)
	}
	if t.opts.Progress != nil {
		t.opts.Progress(next, t.size)
	}
	if next < t.size {
		return nil, next, nil
	}
	ref, err := answeredRef(resp)
	if err == nil && ref == nil {
		err = fmt.Errorf("the answer to the last chunk has no %s header", api.HeaderRef)
	}
	if err != nil {
		return nil, next, fmt.Errorf("%s: %w", t.op, err)
	}
	return ref, next, nil
}

// answeredRef reads the Claimcheck-Ref header of a complete upload; nil
// when there is none.
func answeredRef(resp *http.Response) (*claimcheck.Ref, error) {
	v := resp.Header.Get(api.HeaderRef)
	if v == "" {
		return nil, nil
	}
	ref, err := claimcheck.ParseRef([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("header %s: %w", api.HeaderRef, err)
	}
	return &ref, nil
}

func headerInt(resp *http.Response, name string) (int64, error) {
	v, err := strconv.ParseInt(resp.Header.Get(name), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("the server answered %s %q, not a byte count", name, resp.Header.Get(name))
	}
	return v, nil
}

// retryable reports whether err may pass by itself: the server was not
// reached or the connection broke (ErrUnavailable, which 502, 503 and 504
// map to), the upload is locked by a request the server has not yet seen
// end (423), the server's offset is not ours (409: the next HEAD tells),
// the server failed (500), or a rate limit. Everything else (no such
// upload, a checksum mismatch, permission, quota) is final.
func retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusConflict, http.StatusLocked, http.StatusTooManyRequests, http.StatusInternalServerError:
			return true
		}
	}
	return errors.Is(err, claimcheck.ErrUnavailable)
}

// backoff is the wait before attempt n+1: the server's Retry-After when
// it gave one, else 0.5 s doubled per failure, at most 10 s.
func backoff(n int, err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return min(500*time.Millisecond<<(n-1), 10*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
