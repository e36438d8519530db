package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Direct uploads (docs/ARCHITECTURE.md, "Direct upload"): init answers where to PUT the payload,
// the client PUTs it there (to S3 with a presigned URL, or to the data
// route below with the store's upload token in the URL), then confirms.
// See docs/HTTP.md, "Direct uploads".

// uploadTokenParam is the query parameter of the data route that holds
// the token: PUT /v1/uploads/{id}/data?token=TOKEN. The token stays out
// of the path so that what logs and error messages show of a URL (the
// path: the client's redacted) names the upload without its credential.
const uploadTokenParam = "token"

// initUpload answers POST /v1/namespaces/{ns}/uploads.
func (s *Server) initUpload(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	var body api.InitUploadRequest
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return invalidf("reading the request body failed: %v", err)
	}
	if len(raw) > maxJSONBody {
		return invalidf("request body: more than %d bytes", maxJSONBody)
	}
	if body, err = api.ParseInitUploadRequest(raw); err != nil {
		return err
	}
	keys := r.Header.Values(api.HeaderIdempotencyKey)
	if len(keys) > 1 {
		return invalidf("%s: given %d times", api.HeaderIdempotencyKey, len(keys))
	}
	req, err := body.UploadRequest(r.Header.Get(api.HeaderIdempotencyKey))
	if err != nil {
		return err
	}
	// Before the upload exists: bad forwarded headers create nothing.
	base, err := s.baseURL(r)
	if err != nil {
		return err
	}
	// The upload holds its size reserved until it is confirmed or
	// reaped: count it against the client's bound (pending.go).
	release, err := s.reservePending(r, req.Size)
	if err != nil {
		s.writeLimited(w, r, err)
		return nil
	}
	u, err := s.claims.InitUpload(r.Context(), ns, req)
	if err != nil {
		release()
		return err
	}
	if u.State != claimcheck.StatePending || !s.pending.holdUpload(u.ID, clientOf(r.Context()), req.Size, u.ConfirmBy) {
		release() // a repeated init of an upload already held, or one already finished
	}
	if u.Token != "" {
		// The store receives this upload itself: the URL is this
		// server's data route, absolute on the address the client
		// reaches us by (public_url, the trusted proxy's, or this
		// request's), so a browser can use it as it is.
		u = UploadURL(base, u)
	}
	writeJSON(w, http.StatusCreated, u)
	return nil
}

// UploadURL addresses an upload whose store receives it itself (u.Token
// set, as *engine.Store on file storage answers): URL becomes the data
// route of the server at base (scheme and host, no trailing slash) with
// the token, Method PUT. It is what InitUpload over HTTP answers; code
// that embeds the engine behind its own server uses it to hand out the
// same URLs.
func UploadURL(base string, u claimcheck.Upload) claimcheck.Upload {
	u.URL = strings.TrimSuffix(base, "/") + routePath(uploadDataRoute, u.ID) + "?" + url.Values{uploadTokenParam: {u.Token}}.Encode()
	u.Method = http.MethodPut
	u.Headers = map[string]string{"Content-Type": "application/octet-stream"}
	return u
}

// confirmUpload answers POST /v1/uploads/{id}/confirm with the ref.
func (s *Server) confirmUpload(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	ref, err := s.claims.ConfirmUpload(r.Context(), id)
	if err == nil || !errors.Is(err, claimcheck.ErrUnavailable) && r.Context().Err() == nil {
		// Confirmed, or refused for good (gone, not found, mismatch):
		// either way the store holds no reservation for it any more.
		s.pending.endUpload(id)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", s.claimLocation(ref.ID))
	writeJSON(w, http.StatusOK, ref)
	return nil
}

// uploadData answers PUT /v1/uploads/{id}/data?token=…, the upload URLs
// this server builds from the store's upload tokens. The token is the
// credential, like an S3 presigned URL: the guard asks for no API key on
// this route (targetSigned in auth.go) and applies the rate, stream and
// slow-client limits per client address instead.
func (s *Server) uploadData(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	tokens := q[uploadTokenParam]
	if len(tokens) > 1 {
		return fmt.Errorf("upload %s: %w", id, invalidf("query parameter %s: given %d times", uploadTokenParam, len(tokens)))
	}
	if len(tokens) == 0 && q.Has("sig") {
		// A URL signed by an earlier version (expires and sig in the
		// query): no longer accepted (ADR 0078), but worth saying so.
		return fmt.Errorf("upload %s: %w: this upload URL is of an earlier format that is no longer accepted; init the upload again (same idempotency key) for a fresh URL",
			id, claimcheck.ErrPermissionDenied)
	}
	body := &bodyReader{r: r.Body}
	err := s.claims.ReceiveUpload(r.Context(), id, q.Get(uploadTokenParam), r.ContentLength, body)
	if err != nil && body.err != nil {
		s.log.InfoContext(r.Context(), "upload: the request body broke off; nothing was stored", "upload", id, "read", body.n, "err", body.err)
		return fmt.Errorf("upload %s: %w", id, invalidf("reading the request body failed after %d bytes: %v", body.n, body.err))
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
