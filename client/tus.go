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
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/server/api"
)

// The client side of tus 1.0.0 (creation, termination, checksum) is the
// few requests below: POST to create, HEAD for the offset, PATCH the
// bytes, DELETE to drop. It is written here rather than imported so that
// the client stays on the standard library (TestContractDependencies);
// the protocol's names are server/api's (server/api/tus.go).

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
	op := "resumable upload to " + ns
	if opts.Digest == "" && size >= 0 {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
			return claimcheck.Ref{}, fmt.Errorf("%s: hashing the payload: %w", op, err)
		}
		opts.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	up, target, err := c.start(ctx, ns, claimcheck.ResumableRequest{Size: size, Digest: opts.Digest, ContentType: opts.ContentType})
	if err != nil {
		return claimcheck.Ref{}, err
	}
	if opts.Created != nil {
		if err := opts.Created(target.String()); err != nil {
			_ = c.AbortResumable(context.WithoutCancel(ctx), target.String())
			return claimcheck.Ref{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	// A new upload is at offset 0 (an empty one complete): no need to ask.
	return c.resume(ctx, target, r, size, opts, &up)
}

// ResumeUpload sends the rest of the resumable upload upload (its id, or
// the URL given to ResumableOptions.Created) from r, the size bytes of the
// whole payload as at creation, and returns the claim's reference. It
// asks the server for its offset first, so it continues an upload that
// another process started; an upload that is already complete only
// answers its reference. opts.Digest, when set, is checked against the
// reference the server answers.
func (c *Client) ResumeUpload(ctx context.Context, upload string, r io.ReaderAt, size int64, opts ResumableOptions) (claimcheck.Ref, error) {
	target, err := c.uploadURL(upload)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("resume upload: %w", err)
	}
	return c.resume(ctx, target, r, size, opts, nil)
}

// resume is ResumeUpload from the known state of the upload, or from a
// HEAD when known is nil.
func (c *Client) resume(ctx context.Context, target *url.URL, r io.ReaderAt, size int64, opts ResumableOptions, known *claimcheck.ResumableUpload) (claimcheck.Ref, error) {
	opts = opts.withDefaults()
	t := &tusTransfer{c: c, url: target, r: r, size: size, opts: opts, op: "resumable upload " + target.Redacted()}
	ref, err := t.run(ctx, known)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	if opts.Digest != "" && ref.Digest != opts.Digest || ref.Size != size {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: the server stored %d bytes with digest %s, not the %d bytes with %s sent", t.op, claimcheck.ErrChecksumMismatch, ref.Size, ref.Digest, size, opts.Digest)
	}
	return ref, nil
}

// StartResumable creates a resumable upload (tus creation) of req.Size
// bytes in namespace ns; see claimcheck.Uploads. req.Digest
// travels in the upload's metadata and is checked at completion.
func (c *Client) StartResumable(ctx context.Context, ns string, req claimcheck.ResumableRequest) (claimcheck.ResumableUpload, error) {
	up, _, err := c.start(ctx, ns, req)
	return up, err
}

func (c *Client) start(ctx context.Context, ns string, req claimcheck.ResumableRequest) (claimcheck.ResumableUpload, *url.URL, error) {
	op := "resumable upload to " + ns
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.ResumableUpload{}, nil, fmt.Errorf("resumable upload: %w", err)
	}
	if req.Size < 0 {
		return claimcheck.ResumableUpload{}, nil, fmt.Errorf("%s: %w: size %d is negative", op, claimcheck.ErrInvalidArgument, req.Size)
	}
	var meta []string
	if req.Digest != "" {
		hexDigest, ok := strings.CutPrefix(req.Digest, "sha256:")
		if !ok || !claimcheck.ValidDigest(req.Digest) {
			return claimcheck.ResumableUpload{}, nil, fmt.Errorf("%s: %w: digest %q is not sha256:<64 lowercase hex digits>", op, claimcheck.ErrInvalidArgument, req.Digest)
		}
		meta = append(meta, "sha256 "+base64.StdEncoding.EncodeToString([]byte(hexDigest)))
	}
	if req.ContentType != "" {
		meta = append(meta, "content_type "+base64.StdEncoding.EncodeToString([]byte(req.ContentType)))
	}
	hr, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "namespaces", ns, "tus")
	if err != nil {
		return claimcheck.ResumableUpload{}, nil, err
	}
	hr.Header.Set(api.HeaderTusResumable, api.TusVersion)
	hr.Header.Set(api.HeaderUploadLength, strconv.FormatInt(req.Size, 10))
	if len(meta) > 0 {
		hr.Header.Set(api.HeaderUploadMetadata, strings.Join(meta, ","))
	}
	resp, err := c.do(hr, http.StatusCreated, op, "")
	if err != nil {
		return claimcheck.ResumableUpload{}, nil, err
	}
	_ = resp.Body.Close()
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" || (loc.Scheme != "http" && loc.Scheme != "https") {
		return claimcheck.ResumableUpload{}, nil, fmt.Errorf("%s: the server's Location %q is not an upload URL", op, resp.Header.Get("Location"))
	}
	up := claimcheck.ResumableUpload{
		ID: path.Base(loc.Path), Namespace: ns, State: claimcheck.StatePending,
		Size: req.Size, Digest: req.Digest, ContentType: req.ContentType,
		ExpiresAt: expiresOf(resp),
	}
	// An empty upload is complete at creation: the answer has its ref.
	if up.Ref, err = answeredRef(resp); err != nil {
		return claimcheck.ResumableUpload{}, nil, fmt.Errorf("%s: %w", op, err)
	}
	if up.Ref != nil {
		up.State, up.ExpiresAt = claimcheck.StateActive, time.Time{}
	}
	return up, loc, nil
}

// ResumableUpload asks the server where the resumable upload upload (its
// id, or its URL) stands (HEAD); see claimcheck.Uploads. The
// Namespace is known once the upload completed (from its Ref).
func (c *Client) ResumableUpload(ctx context.Context, upload string) (claimcheck.ResumableUpload, error) {
	target, err := c.uploadURL(upload)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("resumable upload: %w", err)
	}
	t := &tusTransfer{c: c, url: target, op: "resumable upload " + target.Redacted()}
	return t.head(ctx)
}

// AppendResumable sends body as the bytes of upload (its id, or its URL)
// from offset, in one request, checked against chunk when it is set; see
// claimcheck.Uploads. The body's length is sent when http can
// tell it (a *bytes.Reader, say), otherwise the body is streamed chunked.
// The answer of a PATCH does not carry the upload's size, content type
// or (before completion) digest: those fields are left empty. When the
// request fails, the server is asked for the upload's state, which comes
// back with the error when it answers.
func (c *Client) AppendResumable(ctx context.Context, upload string, offset int64, body io.Reader, chunk claimcheck.ChunkChecksum) (claimcheck.ResumableUpload, error) {
	target, err := c.uploadURL(upload)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("append to upload: %w", err)
	}
	t := &tusTransfer{c: c, url: target, op: "resumable upload " + target.Redacted()}
	up, err := t.patch(ctx, offset, body, -1, chunk)
	if err != nil && ctx.Err() == nil && !errors.Is(err, claimcheck.ErrNotFound) && !errors.Is(err, claimcheck.ErrGone) {
		if st, herr := t.head(ctx); herr == nil {
			return st, err
		}
	}
	return up, err
}

// AbortResumable drops the resumable upload upload (its id, or its URL;
// tus termination): the server deletes what it received and gives the
// quota back.
func (c *Client) AbortResumable(ctx context.Context, upload string) error {
	target, err := c.uploadURL(upload)
	if err != nil {
		return fmt.Errorf("abort upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, target.String(), nil)
	if err != nil {
		return fmt.Errorf("abort upload: %w", err)
	}
	propagate(req)
	req.Header.Set(api.HeaderTusResumable, api.TusVersion)
	resp, err := c.do(req, http.StatusNoContent, "abort resumable upload "+target.Redacted(), "")
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// uploadURL is the URL of an upload given by its id (under this client's
// server) or by its URL (relative ones are taken relative to the server).
func (c *Client) uploadURL(upload string) (*url.URL, error) {
	if claimcheck.ValidClaimID(upload) {
		return c.base.JoinPath("v1", "tus", upload), nil
	}
	u, err := c.base.Parse(upload)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: %q is neither an upload id nor an http(s) URL", claimcheck.ErrInvalidArgument, upload)
	}
	return u, nil
}

// tusTransfer is one run of ResumeUpload, or one request of the
// claimcheck.Uploads methods (resumable part).
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
func (t *tusTransfer) run(ctx context.Context, known *claimcheck.ResumableUpload) (claimcheck.Ref, error) {
	failures := 0
	var st claimcheck.ResumableUpload
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
			before := st.Offset
			st, err = t.sendChunk(ctx, st.Offset)
			if err == nil || st.Offset > before {
				failures = 0
			}
			if err == nil {
				continue
			}
		}
		if !Retryable(err) || ctx.Err() != nil {
			return claimcheck.Ref{}, err
		}
		failures++
		if failures > t.opts.Retries {
			return claimcheck.Ref{}, fmt.Errorf("gave up after %d attempts in a row without progress: %w", failures, err)
		}
		if werr := clock.Sleep(ctx, clock.Real{}, RetryDelay(failures, err)); werr != nil {
			return claimcheck.Ref{}, fmt.Errorf("%s: %w", t.op, werr)
		}
		st, err = t.headed(ctx)
	}
}

// headed is head, reporting the offset to opts.Progress.
func (t *tusTransfer) headed(ctx context.Context) (claimcheck.ResumableUpload, error) {
	st, err := t.head(ctx)
	if err == nil && st.Ref == nil && t.opts.Progress != nil {
		t.opts.Progress(st.Offset, t.size)
	}
	return st, err
}

// head asks for the upload's offset, size, expiry, metadata, and
// reference when complete.
func (t *tusTransfer) head(ctx context.Context) (claimcheck.ResumableUpload, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, t.url.String(), nil)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", t.op, err)
	}
	propagate(req)
	req.Header.Set(api.HeaderTusResumable, api.TusVersion)
	resp, err := t.c.do(req, http.StatusOK, t.op, "")
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	_ = resp.Body.Close()
	st, err := t.state(resp)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	if st.Size, err = headerInt(resp, api.HeaderUploadLength); err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", t.op, err)
	}
	meta := parseMetadata(resp.Header.Get(api.HeaderUploadMetadata))
	if d := meta["sha256"]; d != "" {
		st.Digest = "sha256:" + d
	}
	st.ContentType = meta["content_type"]
	return st, nil
}

// state reads what every answer about an upload says: its offset, expiry
// and, once complete, its reference.
func (t *tusTransfer) state(resp *http.Response) (claimcheck.ResumableUpload, error) {
	st := claimcheck.ResumableUpload{ID: path.Base(t.url.Path), State: claimcheck.StatePending, Size: t.size, ExpiresAt: expiresOf(resp)}
	var err error
	if st.Offset, err = headerInt(resp, api.HeaderUploadOffset); err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", t.op, err)
	}
	if st.Ref, err = answeredRef(resp); err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", t.op, err)
	}
	if st.Ref != nil {
		st.State, st.ID, st.Namespace = claimcheck.StateActive, st.Ref.ID, st.Ref.Namespace
		st.Digest, st.ExpiresAt = st.Ref.Digest, time.Time{}
	}
	return st, nil
}

// sendChunk sends the chunk of r at offset with its sha256. Chunks end
// at multiples of ChunkSize, also after the server kept a part of a chunk
// that was cut.
func (t *tusTransfer) sendChunk(ctx context.Context, offset int64) (claimcheck.ResumableUpload, error) {
	n := min(t.opts.ChunkSize-offset%t.opts.ChunkSize, t.size-offset)
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(t.r, offset, n)); err != nil {
		return claimcheck.ResumableUpload{Offset: offset}, fmt.Errorf("%s: reading the payload: %w", t.op, err)
	}
	body := &exactReader{r: io.NewSectionReader(t.r, offset, n), left: n, size: n}
	st, err := t.patch(ctx, offset, body, n, claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: h.Sum(nil)})
	if err != nil {
		return claimcheck.ResumableUpload{Offset: offset}, err
	}
	if st.Offset != offset+n {
		return st, fmt.Errorf("%s: the server is at offset %d after a chunk of %d bytes from %d", t.op, st.Offset, n, offset)
	}
	if t.opts.Progress != nil {
		t.opts.Progress(st.Offset, t.size)
	}
	if st.Offset == t.size && st.Ref == nil {
		return st, fmt.Errorf("%s: the answer to the last chunk has no %s header", t.op, api.HeaderRef)
	}
	return st, nil
}

// patch sends body (n bytes, or -1 when unknown) from offset in one PATCH
// and returns the upload's state the server answers.
func (t *tusTransfer) patch(ctx context.Context, offset int64, body io.Reader, n int64, chunk claimcheck.ChunkChecksum) (claimcheck.ResumableUpload, error) {
	if body == nil {
		body, n = http.NoBody, 0
	}
	tracker := &bodyTracker{r: body}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, t.url.String(), tracker)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", t.op, err)
	}
	propagate(req)
	req.ContentLength = n
	if n < 0 {
		if l, ok := body.(interface{ Len() int }); ok {
			req.ContentLength = int64(l.Len())
		}
	}
	if req.ContentLength == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set(api.HeaderTusResumable, api.TusVersion)
	req.Header.Set("Content-Type", api.ContentTypeTusPatch)
	req.Header.Set(api.HeaderUploadOffset, strconv.FormatInt(offset, 10))
	if chunk.Algorithm != "" {
		req.Header.Set(api.HeaderUploadChecksum, chunk.Algorithm+" "+base64.StdEncoding.EncodeToString(chunk.Sum))
	}
	resp, err := t.c.do(req, http.StatusNoContent, t.op, "")
	if berr := tracker.finish(); err != nil && berr != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: reading the payload: %w", t.op, berr)
	}
	var e *Error
	if errors.As(err, &e) && e.Status == api.StatusChecksumMismatch && !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		// 460 from something that did not send claimcheck's JSON.
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w: %w", t.op, claimcheck.ErrChecksumMismatch, err)
	}
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	_ = resp.Body.Close()
	return t.state(resp)
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

// expiresOf reads Upload-Expires; zero when absent or not an HTTP date.
func expiresOf(resp *http.Response) time.Time {
	t, _ := http.ParseTime(resp.Header.Get(api.HeaderUploadExpires))
	return t
}

// parseMetadata reads tus's Upload-Metadata ("key base64,key2 base64");
// pairs that do not parse are left out.
func parseMetadata(v string) map[string]string {
	m := map[string]string{}
	for pair := range strings.SplitSeq(v, ",") {
		k, b, _ := strings.Cut(strings.TrimSpace(pair), " ")
		if val, err := base64.StdEncoding.DecodeString(b); err == nil && k != "" {
			m[k] = string(val)
		}
	}
	return m
}

func headerInt(resp *http.Response, name string) (int64, error) {
	v, err := strconv.ParseInt(resp.Header.Get(name), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("the server answered %s %q, not a byte count", name, resp.Header.Get(name))
	}
	return v, nil
}

// Retryable reports whether err may pass by itself: the server was not
// reached or the connection broke (ErrUnavailable, which 502, 503 and 504
// map to), the upload is locked by a request the server has not yet seen
// end (423), the server's offset is not ours (409: the next HEAD tells),
// the server failed (500), or a rate limit. Everything else (no such
// upload, a checksum mismatch, permission, quota) is final. Resumable
// uploads retry on it, and so may callers that resume other transfers
// (claimcheck get --continue).
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusConflict, http.StatusLocked, http.StatusTooManyRequests, http.StatusInternalServerError:
			return true
		}
	}
	return errors.Is(err, claimcheck.ErrUnavailable)
}

// RetryDelay is the wait before attempt n+1 after n failures in a row
// (n ≥ 1): the server's Retry-After when it gave one, else 0.5 s doubled
// per failure, at most 10 s.
func RetryDelay(n int, err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return min(500*time.Millisecond<<(n-1), 10*time.Second)
}
