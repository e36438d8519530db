package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server/api"
)

// Direct uploads (docs/ARCHITECTURE.md, "Direct upload"): init answers where to PUT the payload,
// the client PUTs it there (to S3 with a presigned URL, or to the data
// route below with a URL this server signed), then confirms. See
// docs/HTTP.md, "Direct uploads".

// uploads returns the store's upload flow, if it has one.
func (s *Server) uploads() (claimcheck.Uploads, error) {
	u, ok := s.claims.(claimcheck.Uploads)
	if !ok {
		return nil, fmt.Errorf("%w: this server's store does not offer direct uploads", claimcheck.ErrUnavailable)
	}
	return u, nil
}

// initUpload answers POST /v1/namespaces/{ns}/uploads.
func (s *Server) initUpload(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return err
	}
	up, err := s.uploads()
	if err != nil {
		return err
	}
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
	u, err := up.InitUpload(r.Context(), ns, req)
	if err != nil {
		return err
	}
	if strings.HasPrefix(u.URL, "/") {
		// A URL this server serves: absolute, on the address the client
		// reaches us by (public_url, the trusted proxy's, or this
		// request's), so a browser can use it as it is.
		u.URL = base + u.URL
	}
	writeJSON(w, http.StatusCreated, u)
	return nil
}

// confirmUpload answers POST /v1/uploads/{id}/confirm with the ref.
func (s *Server) confirmUpload(w http.ResponseWriter, r *http.Request) error {
	up, err := s.uploads()
	if err != nil {
		return err
	}
	ref, err := up.ConfirmUpload(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", s.claimLocation(ref.ID))
	writeJSON(w, http.StatusOK, ref)
	return nil
}

// uploadData answers PUT /v1/uploads/{id}/data?expires=…&sig=…, the
// upload URLs this server signs for file and memory storage. The signed
// URL is the credential, like an S3 presigned URL: the guard asks for no
// API key on this route (targetSigned in auth.go) and applies the rate,
// stream and slow-client limits per client address instead.
func (s *Server) uploadData(w http.ResponseWriter, r *http.Request) error {
	recv, ok := s.claims.(engine.UploadReceiver)
	if !ok {
		return fmt.Errorf("%w: this server's store does not receive uploads itself", claimcheck.ErrNotFound)
	}
	id := r.PathValue("id")
	body := &bodyReader{r: r.Body}
	err := recv.ReceiveUpload(r.Context(), id, r.URL.Query(), r.ContentLength, body)
	if err != nil && body.err != nil {
		s.log.Info("upload: the request body broke off; nothing was stored", "upload", id, "read", body.n, "err", body.err)
		return fmt.Errorf("upload %s: %w", id, invalidf("reading the request body failed after %d bytes: %v", body.n, body.err))
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
