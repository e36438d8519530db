package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

const (
	// maxJSONBody bounds the small JSON request bodies (release).
	maxJSONBody = 64 << 10
	// streamChunk is the copy buffer of payload responses, and how much
	// of a payload is read before the status line is sent: a failure
	// within it (a small corrupt payload) still gets a proper error
	// status instead of a trailer.
	streamChunk = 64 << 10
	// relayChunk is the buffer of a payload response larger than
	// streamChunk: after the first streamChunk, one read and one chunked
	// write carry up to this much, so a megabyte relayed from S3 costs a
	// few system calls on each socket instead of sixteen reads and
	// thirty-two writes (ADR 0165).
	relayChunk = 256 << 10
	// defaultContentType is answered for payloads stored without one.
	defaultContentType = "application/octet-stream"
)

// put streams the request body into a new claim.
func (s *Server) put(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	opts, err := putOptions(r.Header, r.ContentLength)
	if err != nil {
		return err
	}
	// The store reserves the declared size until the put commits: count
	// it against the client's bound of pending bytes (pending.go).
	release, err := s.reservePending(r, opts.Size)
	if err != nil {
		s.writeLimited(w, r, err)
		return nil
	}
	defer release()
	body := &bodyReader{r: r.Body}
	ref, pol, err := s.claims.PutWithPolicy(r.Context(), ns, body, opts)
	if err != nil {
		if body.err != nil {
			// The body could not be read: the client sent fewer bytes
			// than its Content-Length or a broken chunk, and hung up.
			// Whatever the store made of that, it is the request's fault
			// (and the store discarded the partial object).
			s.log.InfoContext(r.Context(), "put: the request body broke off; nothing was stored", "namespace", ns, "read", body.n, "err", body.err)
			return fmt.Errorf("put to %s: %w", ns,
				invalidf("reading the request body failed after %d bytes: %v", body.n, body.err))
		}
		return headerError(err)
	}
	w.Header().Set("Location", s.claimLocation(ref.ID))
	if !pol.DigestFirstEnabled() {
		// The client's next puts here can skip hashing before they send
		// (ADR 0155).
		w.Header().Set(api.HeaderDigestFirst, "off")
	}
	writeJSON(w, http.StatusCreated, ref)
	return nil
}

// putOptions reads the put's options from the request headers; see
// docs/HTTP.md. contentLength is the request's (-1 when unknown).
func putOptions(h http.Header, contentLength int64) (claimcheck.PutOptions, error) {
	opts := claimcheck.PutOptions{ContentType: h.Get("Content-Type")}
	if contentLength > 0 {
		opts.Size = contentLength
	}
	if v, ok, err := single(h, api.HeaderDigest); err != nil {
		return opts, err
	} else if ok {
		if opts.Digest, err = api.ParseDigest(v); err != nil {
			return opts, err
		}
	}
	if v, ok, err := single(h, api.HeaderConsumers); err != nil {
		return opts, err
	} else if ok {
		if opts.Consumers, err = api.ParseConsumers(v); err != nil {
			return opts, err
		}
	}
	// List headers may come as several lines; joined with commas they
	// mean the same (RFC 9110 §5.3).
	var err error
	if opts.ConsumerNames, err = api.ParseNames(strings.Join(h.Values(api.HeaderConsumerNames), ",")); err != nil {
		return opts, err
	}
	if opts.Labels, err = api.ParseLabels(strings.Join(h.Values(api.HeaderLabels), ",")); err != nil {
		return opts, err
	}
	return opts, nil
}

// single returns the value of a header that must appear at most once.
func single(h http.Header, name string) (string, bool, error) {
	switch vs := h.Values(name); len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	default:
		return "", false, invalidf("header %s: sent %d times, at most once allowed", name, len(vs))
	}
}

// bodyReader remembers the first error reading the request body, so that
// a broken upload can be told apart from a store failure.
type bodyReader struct {
	r   io.Reader
	n   int64
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// redeem streams a claim's payload, or one range of it (Range header,
// ADR 0110). The response is chunked, with the Claimcheck-Error trailer
// declared up front: once the status line is sent, a failure can no
// longer change it, so it goes into the trailer and the client, which
// checks the trailer at the end of the body, never takes the bytes as
// good.
func (s *Server) redeem(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	rv, ranged, err := single(r.Header, api.HeaderRange)
	if err != nil {
		return err
	}
	if ranged {
		br, use, err := api.ParseRange(rv)
		if err != nil {
			return err
		}
		if use {
			return s.redeemRange(w, r, ref, rv, br)
		}
	}
	// The answer depends on these two headers (ADR 0136).
	w.Header().Add("Vary", "Accept-Encoding, TE")
	if readsTrailers(r) && acceptsEncoding(r, claimcheck.EncodingZstd) {
		e, err := s.claims.RedeemEncoded(r.Context(), ref, claimcheck.EncodingZstd)
		if err != nil {
			return err
		}
		defer func() { _ = e.Close() }() // read only
		// Stored frames go out as zstd; a payload stored as is goes out
		// as is, unhashed here: this client verifies it (ADR 0155).
		encoding := e.Encoding
		if encoding == claimcheck.EncodingIdentity {
			encoding = ""
		}
		return s.stream(w, r, ref.ID, e, e.Ref, e.ContentType, http.StatusOK, "", encoding, -1)
	}
	p, err := s.claims.Redeem(r.Context(), ref)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // read only
	return s.stream(w, r, ref.ID, p, p.Ref, p.ContentType, http.StatusOK, "", "", p.Ref.Size)
}

// acceptsEncoding reports whether the request's Accept-Encoding lists
// coding with a nonzero weight (RFC 9110 §12.5.3). A "*" does not count:
// the stored frames are sent only to a client that names zstd, which
// the server takes to decode them and verify the payload itself.
func acceptsEncoding(r *http.Request, coding string) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, item := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(item, ";")
			if !strings.EqualFold(strings.TrimSpace(name), coding) {
				continue
			}
			q, ok := strings.CutPrefix(strings.ReplaceAll(strings.TrimSpace(params), " ", ""), "q=")
			if !ok {
				return true
			}
			if w, err := strconv.ParseFloat(q, 64); err == nil && w > 0 {
				return true
			}
		}
	}
	return false
}

// redeemRange answers one range: 206 with Content-Range, or 416 with
// Content-Range: bytes */SIZE when it selects no byte.
func (s *Server) redeemRange(w http.ResponseWriter, r *http.Request, ref claimcheck.Ref, header string, br api.ByteRange) error {
	off, n := br.Offset, br.Length
	if br.None {
		// Selects nothing whatever the size: an offset past any end
		// makes the store answer its RangeError, with the size, after
		// the same checks as any redeem (unknown, gone, forbidden).
		off, n = 1<<62, -1
	}
	p, err := s.claims.RedeemRange(r.Context(), ref, off, n)
	if re, ok := errors.AsType[*claimcheck.RangeError](err); ok {
		w.Header().Set(api.HeaderContentRange, fmt.Sprintf("bytes */%d", re.Size))
		return fmt.Errorf("header Range: %q selects no byte of the %d-byte payload of claim %s: %w", clip(header), re.Size, re.ID, claimcheck.ErrRangeNotSatisfiable)
	}
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // read only
	return s.stream(w, r, ref.ID, p, p.Ref, p.ContentType, http.StatusPartialContent, api.FormatContentRange(p.Offset, p.Length, p.Ref.Size), "", p.Length)
}

// streamBuffers recycles the buffers of payload responses of up to
// streamChunk (larger ones take relayBuffers): a fresh 64 KiB per redeem
// was a quarter of the bytes the server allocated under concurrent small
// redeems, and each has to be zeroed and collected (ADR 0160). Neither
// the response writer nor body keeps the buffer past a call.
var streamBuffers = sync.Pool{New: func() any { b := make([]byte, streamChunk); return &b }}

// stream sends body (a verifying reader, or the stored frames in
// encoding) as the answer with status; a 206 carries contentRange.
// length is the number of bytes body yields when known (-1: not).
//
// A client that reads trailers gets a chunked answer with the
// Claimcheck-Error trailer. Any other (curl, wget, aria2c, a browser)
// gets Content-Length (ADR 0255): a download tool then knows a cut from
// the end, can resume with a range and split a download. The body is
// still verified as it goes; a failure part-way aborts the connection,
// so the tool sees fewer bytes than announced, never a complete file.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, body io.Reader, ref claimcheck.Ref, contentType string, status int, contentRange, encoding string, length int64) error {
	var buf []byte
	if ref.Size > streamChunk {
		bp := relayBuffers.Get().(*[]byte)
		defer relayBuffers.Put(bp)
		buf = *bp
	} else {
		bp := streamBuffers.Get().(*[]byte)
		defer streamBuffers.Put(bp)
		buf = *bp
	}
	n, rerr := fill(body, buf[:streamChunk])
	if rerr != nil && rerr != io.EOF {
		return rerr // nothing sent yet
	}
	h := w.Header()
	ct := contentType
	if ct == "" {
		ct = defaultContentType
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	// Every redeem counts as a read; no cache may answer in the store's
	// place.
	h.Set("Cache-Control", "no-store")
	h.Set(api.HeaderRef, ref.String())
	h.Set(api.HeaderSize, strconv.FormatInt(ref.Size, 10))
	h.Set(api.HeaderAcceptRanges, "bytes")
	if contentRange != "" {
		h.Set(api.HeaderContentRange, contentRange)
	}
	if encoding != "" {
		h.Set("Content-Encoding", encoding)
	}
	// holdLast: the answer's length is announced, so the body's last
	// byte is held back until the body ended without error. The bytes
	// are verified as they go, and a mismatch shows only at the end:
	// sent in full, a bad payload would be a complete download. Held
	// back, the abort leaves the client one byte short at least.
	holdLast := length >= 0 && encoding == "" && !readsTrailers(r)
	if holdLast {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	} else {
		// Declaring a trailer also keeps net/http from adding a
		// Content-Length to short responses: the body is chunked.
		h.Set("Trailer", api.TrailerError)
	}
	w.WriteHeader(status)

	sent := int64(0)
	var (
		last    [1]byte
		hasLast bool
	)
	write := func(p []byte) bool {
		if _, err := w.Write(p); err != nil {
			s.log.InfoContext(r.Context(), "redeem: client went away", "claim", id, "sent", sent, "err", err)
			return false
		}
		sent += int64(len(p))
		return true
	}
	for {
		if n > 0 {
			chunk := buf[:n]
			if holdLast {
				// More bytes came: the one held back was not the last.
				if hasLast && !write(last[:]) {
					return nil
				}
				last[0], hasLast, chunk = chunk[n-1], true, chunk[:n-1]
			}
			if len(chunk) > 0 && !write(chunk) {
				return nil
			}
		}
		switch {
		case rerr == io.EOF:
			if hasLast {
				write(last[:])
			}
			return nil
		case rerr != nil:
			err := fmt.Errorf("redeem %s: the stream failed after %d bytes: %w", id, sent, rerr)
			failSpan(r, err)
			if !readsTrailers(r) {
				// A client that did not say it reads trailers (curl -o,
				// wget, a browser) would take a properly ended chunked
				// stream as a good download. Abort the connection
				// instead: net/http closes it (HTTP/1.1: without the
				// terminating chunk; HTTP/2: RST_STREAM), so the client
				// reports a broken transfer.
				if r.Context().Err() == nil {
					s.log.ErrorContext(r.Context(), "redeem: payload stream failed part-way; the connection is aborted", "claim", id, "sent", sent, "err", rerr)
				}
				panic(http.ErrAbortHandler)
			}
			if r.Context().Err() == nil {
				s.log.ErrorContext(r.Context(), "redeem: payload stream failed part-way; the client is told in the trailer", "claim", id, "sent", sent, "err", rerr)
			}
			body, _ := s.errorBody(r, err)
			b, _ := json.Marshal(body)
			h.Set(api.TrailerError, asciiJSON(b))
			return nil
		}
		n, rerr = body.Read(buf)
	}
}

// relayBuffers recycles the buffers of payload responses: a fresh one
// costs a page fault per page on first touch.
var relayBuffers = sync.Pool{New: func() any { b := make([]byte, relayChunk); return &b }}

// fill reads into buf until it is full or the reader fails or ends.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// asciiJSON escapes the non-ASCII characters of a JSON text, so that it
// can travel as a header value unchanged.
func asciiJSON(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r < utf8.RuneSelf:
			sb.WriteByte(b[0])
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
		b = b[size:]
	}
	return sb.String()
}

// headNotAllowed refuses HEAD on a payload: a redeem counts as a read.
func (s *Server) headNotAllowed(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Allow", "GET, DELETE")
	writeJSON(w, http.StatusMethodNotAllowed, api.Error{
		Code:    api.CodeMethodNotAllowed,
		Message: "HEAD is not allowed on a payload, because a redeem counts as a read; use GET /v1/claims/{id}/meta",
	})
	return nil
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	info, err := s.claims.Stat(r.Context(), ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return invalidf("release body: %v", err)
	}
	req, err := api.ParseReleaseRequest(b)
	if err != nil {
		return err
	}
	if err := s.claims.Release(r.Context(), ref, req.Consumer); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	if err := s.claims.Delete(r.Context(), ref); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// claimRef is the claim a request names: the {id} path segment and the
// optional ns query parameter, which makes the store check that the claim
// lives in that namespace. The store trusts nothing else of a ref.
func claimRef(r *http.Request) (claimcheck.Ref, error) {
	id := r.PathValue("id")
	if !claimcheck.ValidClaimID(id) {
		return claimcheck.Ref{}, invalidf("claim id %q is malformed: want cc_ followed by 22 URL-safe base64 characters", clip(id))
	}
	ref := claimcheck.Ref{ID: id}
	if ns := r.URL.Query().Get("ns"); ns != "" {
		if err := claimcheck.ValidateNamespace(ns); err != nil {
			return claimcheck.Ref{}, fmt.Errorf("query parameter ns: %w", err)
		}
		ref.Namespace = ns
	}
	return ref, nil
}

// readsTrailers reports whether the client announced that it reads
// trailers ("TE: trailers", RFC 9110 §10.1.4): the Go client does, and
// checks Claimcheck-Error at the end of every payload. Only such a client
// gets a failure after the headers as a cleanly ended stream with the
// error in the trailer; every other client gets an aborted connection.
func readsTrailers(r *http.Request) bool {
	for _, v := range r.Header.Values("TE") {
		for _, t := range strings.Split(v, ",") {
			t, _, _ = strings.Cut(t, ";")
			if strings.EqualFold(strings.TrimSpace(t), "trailers") {
				return true
			}
		}
	}
	return false
}
