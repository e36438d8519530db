package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Error is an error answered by the server. Its message is the server's;
// it unwraps to the sentinel error of its code (or a *claimcheck.GoneError
// for gone and expired claims), so callers test it with errors.Is and
// errors.As like the embedded store's errors.
type Error struct {
	// Status is the HTTP status of the answer; 0 for an error the server
	// reported in the trailer of a payload it had started to send.
	Status int
	// Code is the stable error code (see package server/api); empty when
	// the answer was not the server's JSON (a proxy's error page, say).
	Code string
	// Message is the server's message.
	Message string
	// RetryAfter is the server's Retry-After (rate_limited answers, and
	// any other that carries one in seconds); zero when absent.
	RetryAfter time.Duration

	err error // the sentinel or *GoneError; nil for codes without one
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("server answered %d %s", e.Status, e.Code)
	}
	return e.Message
}

// Unwrap returns the sentinel error (or *claimcheck.GoneError) the answer
// stands for, nil for codes that have none (internal).
func (e *Error) Unwrap() error { return e.err }

// newRequest builds a request for the API path made of segments, which
// the callers have validated (namespaces and claim ids need no escaping).
func (c *Client) newRequest(ctx context.Context, method string, body io.Reader, segments ...string) (*http.Request, error) {
	u := c.base.JoinPath(segments...)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	propagate(req)
	return req, nil
}

// claimRequest builds a request about the claim of ref: /v1/claims/{id}
// plus suffix, with ?ns= when the ref names a namespace.
func (c *Client) claimRequest(ctx context.Context, method string, ref claimcheck.Ref, body io.Reader, suffix string) (*http.Request, error) {
	if !claimcheck.ValidClaimID(ref.ID) {
		return nil, fmt.Errorf("%w: claim id %q is malformed", claimcheck.ErrInvalidArgument, ref.ID)
	}
	segments := []string{"v1", "claims", ref.ID}
	if suffix != "" {
		segments = append(segments, suffix)
	}
	req, err := c.newRequest(ctx, method, body, segments...)
	if err != nil {
		return nil, err
	}
	if ref.Namespace != "" {
		if err := claimcheck.ValidateNamespace(ref.Namespace); err != nil {
			return nil, err
		}
		req.URL.RawQuery = "ns=" + ref.Namespace
	}
	return req, nil
}

// do sends req and returns the response if its status is want. Any other
// answer becomes an *Error, returned as it is so that its message is the
// server's (id names the claim, for gone answers). A failure to reach the
// server is prefixed with op and wraps claimcheck.ErrUnavailable, unless
// the context ended.
func (c *Client) do(req *http.Request, want int, op, id string) (*http.Response, error) {
	return c.doAny(req, op, id, want)
}

// doAny is do for a request with several good answers.
func (c *Client) doAny(req *http.Request, op, id string, wants ...int) (*http.Response, error) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	req.Header.Set("User-Agent", "claimcheck-go-client")
	resp, err := c.hc.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return nil, fmt.Errorf("%s: %w: %w", op, claimcheck.ErrUnavailable, err)
	}
	if slices.Contains(wants, resp.StatusCode) {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	return nil, decodeError(resp, id)
}

// decodeError reads an error answer.
func decodeError(resp *http.Response, id string) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	var body api.Error
	if err := json.Unmarshal(b, &body); err == nil && body.Code != "" {
		return &Error{Status: resp.StatusCode, Code: body.Code, Message: body.Message, RetryAfter: retryAfter(resp), err: body.Sentinel(id)}
	}
	if resp.Request != nil && resp.Request.Method == http.MethodHead && len(b) == 0 {
		// An answer to HEAD (a tus upload's status) has no body: the
		// status is all the server can say.
		return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s answered %s", resp.Request.URL.Redacted(), resp.Status), err: headSentinel(resp.StatusCode)}
	}
	// Not the server's JSON: something in between answered, or the URL
	// points at another server. A gateway failure is worth a retry, a
	// 404 is not a missing claim.
	var sentinel error
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		sentinel = claimcheck.ErrUnavailable
	}
	snippet := strings.TrimSpace(string(b))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	return &Error{
		Status:  resp.StatusCode,
		Message: fmt.Sprintf("unexpected answer %s from %s (is this a claimcheck server?): %q", resp.Status, resp.Request.URL.Redacted(), snippet),
		err:     sentinel,
	}
}

// headSentinel is the error a status stands for in a bodiless answer to
// HEAD.
func headSentinel(status int) error {
	switch status {
	case http.StatusNotFound:
		return claimcheck.ErrNotFound
	case http.StatusGone:
		return claimcheck.ErrGone
	case http.StatusUnauthorized:
		return claimcheck.ErrUnauthenticated
	case http.StatusForbidden:
		return claimcheck.ErrPermissionDenied
	case http.StatusTooManyRequests:
		return claimcheck.ErrRateLimited
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return claimcheck.ErrUnavailable
	}
	return nil
}

// retryAfter reads a Retry-After header given in seconds (the form the
// server sends); HTTP dates and garbage count as absent.
func retryAfter(resp *http.Response) time.Duration {
	secs, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
	if err != nil || secs < 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// decodeAnswer reads a successful JSON answer into v and closes the body.
func decodeAnswer(resp *http.Response, v any) error {
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%w: reading the answer: %w", claimcheck.ErrUnavailable, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}

// decodeRef reads an answer that is a reference (a put's). It is
// claimcheck.ParseRef on the body, which json.Unmarshal would call too,
// after a validating pass of its own over the same bytes.
//
// An answer on a connection the server closes after it (a digest-first
// hit, answered before its body was sent: HTTP/1.1 leaves the server no
// other way) is read without its last byte when the rest is already the
// whole reference, and its body closed in the background: reading up to
// the end would make the caller wait while net/http tears the connection
// down. The server ends every JSON answer with a newline, the one byte
// left unread there; a body whose last byte belongs to the JSON does not
// parse without it and is read to its end as any other. The reference
// is checked whole either way; only a stray last byte after it would go
// unseen.
func decodeRef(resp *http.Response) (claimcheck.Ref, error) {
	var b []byte
	if n := resp.ContentLength; resp.Close && n > 1 && n <= maxAnswer {
		b = make([]byte, n-1, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			_ = resp.Body.Close()
			return claimcheck.Ref{}, fmt.Errorf("%w: reading the answer: %w", claimcheck.ErrUnavailable, err)
		}
		if ref, err := claimcheck.ParseRef(b); err == nil {
			go func() { _ = resp.Body.Close() }()
			return ref, nil
		}
	}
	defer func() { _ = resp.Body.Close() }()
	rest, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer-int64(len(b))))
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("%w: reading the answer: %w", claimcheck.ErrUnavailable, err)
	}
	ref, err := claimcheck.ParseRef(append(b, rest...))
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("decoding the answer: %w", err)
	}
	return ref, nil
}

// trailerChecker is a payload response body that, at its end, checks the
// Claimcheck-Error trailer: the server's verdict on a stream it had to
// break off after the status line was sent. An error there replaces
// io.EOF, so the verifying Payload never reports the stream as complete.
type trailerChecker struct {
	resp *http.Response
	id   string
}

func (t *trailerChecker) Read(p []byte) (int, error) {
	n, err := t.resp.Body.Read(p)
	if err == io.EOF {
		// Trailers are filled in once the body has been read to its end.
		if v := t.resp.Trailer.Get(api.TrailerError); v != "" {
			return n, trailerError(v, t.id)
		}
	}
	return n, err
}

func (t *trailerChecker) Close() error { return t.resp.Body.Close() }

func trailerError(v, id string) error {
	var body api.Error
	if err := json.Unmarshal([]byte(v), &body); err != nil || body.Code == "" {
		return &Error{Message: fmt.Sprintf("claim %s: the server broke off the payload stream: %s", id, v)}
	}
	return &Error{Code: body.Code, Message: body.Message, err: body.Sentinel(id)}
}

// exactReader passes on exactly size bytes of r and fails when r has
// fewer or more. It fails before the last byte is passed on, so the server
// never receives a whole body (it saw the Content-Length) and stores
// nothing.
type exactReader struct {
	r          io.Reader
	left, size int64
	err        error // sticky
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case e.left == 0 && err == io.EOF:
		return n, io.EOF
	case e.left == 0 && err == nil:
		// Make sure r ends here before handing over the last byte.
		var probe [1]byte
		switch _, perr := io.ReadFull(e.r, probe[:]); perr {
		case io.EOF:
			return n, io.EOF
		case nil:
			err = fmt.Errorf("%w: the body has more than the %d bytes declared in PutOptions.Size", claimcheck.ErrInvalidArgument, e.size)
		default:
			err = perr
		}
		e.err = err
		return n - 1, err // the last byte is withheld
	case err == io.EOF:
		e.err = fmt.Errorf("%w: the body ended after %d of the %d bytes declared in PutOptions.Size", claimcheck.ErrInvalidArgument, e.size-e.left, e.size)
		return n, e.err
	}
	return n, err
}

// bodyTracker stands between the transport and the caller's body. It
// remembers the first read error, which is the cause when the upload then
// fails, and stops reading the caller's body once Put has returned: the
// transport may go on reading in its own goroutine after an early answer
// (a 413 before the body was sent), and the caller owns the reader again.
type bodyTracker struct {
	r io.Reader

	mu   sync.Mutex
	err  error
	done bool
}

var errPutReturned = errors.New("the put has already returned")

func (b *bodyTracker) Read(p []byte) (int, error) {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done {
		return 0, errPutReturned
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

// finish stops further reads and returns the first read error.
func (b *bodyTracker) finish() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	return b.err
}
