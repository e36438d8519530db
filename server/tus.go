package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tus/tusd/v2/pkg/handler"
	expslog "golang.org/x/exp/slog"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Resumable uploads over the tus protocol (docs/HTTP.md, "Resumable
// uploads (tus)"; ADR 0115). tusd's handler speaks the protocol; this
// file mounts its methods on rows of the route table (so the guard,
// auth, limits and strict checks apply as to every route) and gives it
// a data store over the store's resumable uploads (claimcheck.Uploads),
// in which
// every upload is a pending claim. tusd keeps no state of its own: no
// .info files, no storage of its own; its lock on an upload is the
// store's (tuslock.go).
//
// What tusd does not do is added around it: the checksum extension
// (Upload-Checksum, checked by the store as a chunk streams), the
// expiration extension (Upload-Expires), the claim's reference on the
// answer that completes an upload (Claimcheck-Ref), the Location on the
// server's public URL, and claimcheck's JSON errors for what the store
// refuses.

// tusExtensions are the extensions served: tusd's handler does
// creation (with a first chunk on the creation request too:
// creation-with-upload) and termination, the data store does checksum and
// expiration.
const tusExtensions = "creation,creation-with-upload,termination,expiration,checksum"

// newTus builds tusd's handler over the store. Its lock on an upload is
// tusLocker: tusd's in-process one plus the store's shared lock, so the
// requests of one upload may reach any replica (ADR 0185).
func (s *Server) newTus() *handler.UnroutedHandler {
	composer := handler.NewStoreComposer()
	store := tusStore{ru: s.claims, log: s.log}
	composer.UseCore(store)
	composer.UseTerminater(store)
	composer.UseLocker(newTusLocker(s.claims))
	read := time.Duration(s.limits.ReadTimeout)
	if read <= 0 {
		read = time.Duration(DefaultReadTimeout)
	}
	h, err := handler.NewUnroutedHandler(handler.Config{
		StoreComposer:        composer,
		BasePath:             "/v1/tus/",
		DisableDownload:      true,
		DisableConcatenation: true,
		// CORS is the server's (cors.go), for every route alike.
		Cors: &handler.CorsConfig{Disable: true},
		// Its per-read deadline is the server's own read timeout.
		NetworkTimeout: read,
		// What matters of its log reaches the data store's errors,
		// which the server logs; its per-request lines are noise.
		Logger: expslog.New(expslog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		// Only an invalid base path or a missing store fails, and both
		// are fixed here.
		panic(fmt.Sprintf("server: tus handler: %v", err))
	}
	return h
}

// tusExchange is what one tus request learns from the store, for the
// headers tusd does not write.
type tusExchange struct {
	ns       string // the namespace of a creation
	deleting bool   // a termination: an upload finished already is no error
	// appending is a PATCH with a body: bytes for a completed upload are
	// refused (tusd would answer 204 and drop them).
	appending bool
	checksum  claimcheck.ChunkChecksum
	upload    claimcheck.ResumableUpload
	known     bool // upload is set
	failed    bool // the store refused the chunk that was to complete the upload
}

type tusExchangeKey struct{}

func exchangeOf(ctx context.Context) *tusExchange {
	ex, _ := ctx.Value(tusExchangeKey{}).(*tusExchange)
	if ex == nil {
		return &tusExchange{} // a request that did not pass serveTus
	}
	return ex
}

// tusWriter adds the exchange's headers to tusd's answer when it is
// written: where the upload lives (Location on the server's public URL),
// until when it waits (Upload-Expires) and, once complete, its claim
// (Claimcheck-Ref).
//
// tusd's own refusals (a wrong offset, a bad header) are plain text
// ("ERR_MISMATCHED_OFFSET: mismatched offset"); they are held back and
// answered as claimcheck's JSON error, so that every answer of the API
// has one form. The store's refusals are JSON already (tusError).
type tusWriter struct {
	http.ResponseWriter
	ex       *tusExchange
	location string // the public URL of /v1/tus/, to which the id is appended
	wrote    bool

	plainStatus int          // a plain-text refusal held back: its status
	plain       bytes.Buffer // and its text
}

func (w *tusWriter) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && w.plainStatus == 0 && !w.wrote {
		w.plainStatus = status
		return
	}
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		h.Set(api.HeaderTusResumable, api.TusVersion)
		if w.ex.known {
			u := w.ex.upload
			if h.Get("Location") != "" {
				h.Set("Location", w.location+u.ID)
			}
			if u.State == claimcheck.StatePending && !u.ExpiresAt.IsZero() && status < 300 {
				h.Set(api.HeaderUploadExpires, u.ExpiresAt.UTC().Format(http.TimeFormat))
			}
			if u.Ref != nil && status < 300 {
				h.Set(api.HeaderRef, u.Ref.String())
			}
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *tusWriter) Write(p []byte) (int, error) {
	if w.plainStatus != 0 {
		if w.plain.Len() < 1<<10 {
			w.plain.Write(p)
		}
		return len(p), nil
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// finish answers a refusal of tusd's held back, as JSON.
func (w *tusWriter) finish() {
	if w.plainStatus == 0 {
		return
	}
	status := w.plainStatus
	msg := strings.TrimSpace(w.plain.String())
	if msg == "" {
		msg = http.StatusText(status)
	}
	code := api.CodeInvalidArgument
	switch status {
	case http.StatusNotFound:
		code = api.CodeNotFound
	case http.StatusGone:
		code = api.CodeGone
	case http.StatusRequestEntityTooLarge:
		code = api.CodeTooLarge
	case http.StatusForbidden:
		code = api.CodePermissionDenied
	case http.StatusServiceUnavailable, http.StatusNotImplemented:
		code = api.CodeUnavailable
	case http.StatusConflict:
		msg += fmt.Sprintf(" (%s is not the upload's offset: ask with HEAD and continue from its %s)", api.HeaderUploadOffset, api.HeaderUploadOffset)
	case http.StatusLocked:
		msg += " (another request is writing to this upload)"
	default:
		if status >= 500 {
			code = api.CodeInternal
		}
	}
	w.plainStatus = 0
	w.Header().Del("Content-Length")
	writeJSON(w, status, api.Error{Code: code, Message: msg})
}

// Unwrap lets http.ResponseController (tusd's read deadlines) reach the
// connection.
func (w *tusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveTus hands the request to one of tusd's methods, with the checks
// of its middleware that apply (the protocol version) and the exchange
// the data store fills in.
func (s *Server) serveTus(w http.ResponseWriter, r *http.Request, ns string, serve func(http.ResponseWriter, *http.Request)) error {
	if r.Method != http.MethodHead {
		if v := r.Header.Get(api.HeaderTusResumable); v != api.TusVersion {
			w.Header().Set(api.HeaderTusVersion, api.TusVersion)
			w.Header().Set(api.HeaderTusResumable, api.TusVersion)
			writeJSON(w, http.StatusPreconditionFailed, api.Error{Code: api.CodeInvalidArgument,
				Message: fmt.Sprintf("%s: %q; this server speaks tus %s (send %s: %s)", api.HeaderTusResumable, clip(v), api.TusVersion, api.HeaderTusResumable, api.TusVersion)})
			return nil
		}
	}
	ex := &tusExchange{ns: ns, deleting: r.Method == http.MethodDelete,
		appending: r.Method == http.MethodPatch && r.ContentLength != 0}
	if v := r.Header.Values(api.HeaderUploadChecksum); len(v) > 0 {
		c, err := parseUploadChecksum(v)
		if err != nil {
			return err
		}
		ex.checksum = c
	}
	base, err := s.baseURL(r)
	if err != nil {
		return err
	}
	tw := &tusWriter{ResponseWriter: w, ex: ex, location: strings.TrimSuffix(base, "/") + "/v1/tus/"}
	r = r.WithContext(context.WithValue(r.Context(), tusExchangeKey{}, ex))
	if id := r.PathValue("id"); id != "" {
		// tusd's handler is meant to be mounted under a stripped
		// prefix: it takes the whole path as the upload id.
		u := *r.URL
		u.Path, u.RawPath = id, ""
		r.URL = &u
	}
	serve(tw, r)
	tw.finish()
	if ex.known && ex.upload.State != claimcheck.StatePending {
		s.pending.endUpload(ex.upload.ID) // completed or gone: no reservation left
	}
	return nil
}

// tusCreate answers POST /v1/namespaces/{ns}/tus: a new upload.
func (s *Server) tusCreate(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	// Extensions not served are refused by name rather than ignored.
	for _, h := range []string{api.HeaderUploadDeferLength, api.HeaderUploadConcat} {
		if r.Header.Get(h) != "" {
			return invalidf("%s: deferred lengths and concatenation are not served; send %s with the payload's length", h, api.HeaderUploadLength)
		}
	}
	// The upload holds its size reserved until it completes or is
	// reaped: count it against the client's bound (pending.go).
	size, _ := strconv.ParseInt(r.Header.Get(api.HeaderUploadLength), 10, 64)
	release, err := s.reservePending(r, size)
	if err != nil {
		s.writeLimited(w, r, err)
		return nil
	}
	var ex *tusExchange
	err = s.serveTus(w, r, ns, func(w http.ResponseWriter, r *http.Request) {
		ex = exchangeOf(r.Context())
		s.tus.PostFile(w, r)
	})
	if ex == nil || !ex.known || ex.upload.State != claimcheck.StatePending ||
		!s.pending.holdUpload(ex.upload.ID, clientOf(r.Context()), size, ex.upload.ExpiresAt) {
		release()
	}
	return err
}

// tusHead answers HEAD /v1/tus/{id}: how far the upload got.
func (s *Server) tusHead(w http.ResponseWriter, r *http.Request) error {
	return s.serveTus(w, r, "", func(w http.ResponseWriter, r *http.Request) { s.tus.HeadFile(w, r) })
}

// tusPatch answers PATCH /v1/tus/{id}: a chunk.
func (s *Server) tusPatch(w http.ResponseWriter, r *http.Request) error {
	return s.serveTus(w, r, "", func(w http.ResponseWriter, r *http.Request) {
		s.tus.PatchFile(w, r)
		if ex := exchangeOf(r.Context()); ex.known && ex.upload.State == claimcheck.StatePending {
			s.pending.extendUpload(ex.upload.ID, ex.upload.ExpiresAt)
		}
	})
}

// tusDelete answers DELETE /v1/tus/{id}: termination.
func (s *Server) tusDelete(w http.ResponseWriter, r *http.Request) error {
	return s.serveTus(w, r, "", func(w http.ResponseWriter, r *http.Request) { s.tus.DelFile(w, r) })
}

// tusOptions answers OPTIONS /v1/namespaces/{ns}/tus: tus discovery,
// with the namespace's max_size as the largest upload. (A browser's
// CORS preflight never gets here: cors.go answers it.)
func (s *Server) tusOptions(w http.ResponseWriter, r *http.Request) error {
	pol, err := s.claims.Policy(r.Context(), r.PathValue("ns"))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set(api.HeaderTusResumable, api.TusVersion)
	h.Set(api.HeaderTusVersion, api.TusVersion)
	h.Set(api.HeaderTusExtension, tusExtensions)
	h.Set(api.HeaderTusMaxSize, strconv.FormatInt(int64(pol.MaxSize), 10))
	h.Set(api.HeaderTusChecksumAlgo, strings.Join(claimcheck.ChunkAlgorithms, ","))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// parseUploadChecksum parses Upload-Checksum: "<algorithm> <base64 of
// the digest>".
func parseUploadChecksum(values []string) (claimcheck.ChunkChecksum, error) {
	if len(values) > 1 {
		return claimcheck.ChunkChecksum{}, invalidf("%s: given %d times", api.HeaderUploadChecksum, len(values))
	}
	alg, sum, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok {
		return claimcheck.ChunkChecksum{}, invalidf("%s %q: want \"<algorithm> <base64 digest>\", e.g. \"sha256 47DEQpj8…\"", api.HeaderUploadChecksum, clip(values[0]))
	}
	if !slices.Contains(claimcheck.ChunkAlgorithms, alg) {
		return claimcheck.ChunkChecksum{}, invalidf("%s: algorithm %q is not supported; use one of %s", api.HeaderUploadChecksum, clip(alg), strings.Join(claimcheck.ChunkAlgorithms, ", "))
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sum))
	if err != nil {
		return claimcheck.ChunkChecksum{}, invalidf("%s: the %s digest is not base64: %v", api.HeaderUploadChecksum, alg, err)
	}
	return claimcheck.ChunkChecksum{Algorithm: alg, Sum: b}, nil
}

// tusStore is tusd's data store over the store's resumable uploads: tusd
// asks, the store answers, and every state lives in the store's rows.
type tusStore struct {
	ru  claimcheck.Uploads
	log *slog.Logger
}

var (
	_ handler.DataStore           = tusStore{}
	_ handler.TerminaterDataStore = tusStore{}
)

// tusUpload is one upload as tusd sees it.
type tusUpload struct {
	tusStore
	u claimcheck.ResumableUpload
}

// NewUpload implements handler.DataStore: StartResumable with the
// declared length and what the metadata says.
func (ts tusStore) NewUpload(ctx context.Context, info handler.FileInfo) (handler.Upload, error) {
	ex := exchangeOf(ctx)
	req := claimcheck.ResumableRequest{Size: info.Size, ContentType: metadataContentType(info.MetaData)}
	if v, ok := info.MetaData["sha256"]; ok {
		d, err := metadataDigest(v)
		if err != nil {
			return nil, ts.tusError(ctx, err, "")
		}
		req.Digest = d
	}
	u, err := ts.ru.StartResumable(ctx, ex.ns, req)
	if err != nil {
		return nil, ts.tusError(ctx, err, api.HeaderUploadLength)
	}
	ex.upload, ex.known = u, true
	return &tusUpload{tusStore: ts, u: u}, nil
}

// metadataContentType is the payload's type from the metadata: tus
// clients name it differently (Uppy and tus-js-client send filetype or
// type).
func metadataContentType(m handler.MetaData) string {
	for _, k := range []string{"content_type", "filetype", "type"} {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// metadataDigest turns the sha256 metadata (lowercase hex) into the
// store's form, refusing what is not one (claimcheck.ValidDigest).
func metadataDigest(v string) (string, error) {
	if !claimcheck.ValidDigest("sha256:" + v) {
		return "", invalidf("%s: sha256 %q: want the payload's sha256 as 64 lowercase hex digits", api.HeaderUploadMetadata, clip(v))
	}
	return "sha256:" + v, nil
}

// GetUpload implements handler.DataStore. A pending upload whose bytes
// all arrived is completed by the store here (resumable.go), so a
// client that asks after a lost answer gets the claim.
func (ts tusStore) GetUpload(ctx context.Context, id string) (handler.Upload, error) {
	ex := exchangeOf(ctx)
	u, err := ts.ru.ResumableUpload(ctx, id)
	if ex.deleting && errors.Is(err, claimcheck.ErrGone) {
		// Terminating an upload that is finished already (reaped, or
		// terminated by a request whose answer was lost) succeeds, as
		// deleting a deleted claim does: AbortResumable says so.
		return &tusUpload{tusStore: ts, u: claimcheck.ResumableUpload{ID: id, State: claimcheck.StateDeleted}}, nil
	}
	if err != nil {
		return nil, ts.tusError(ctx, err, "")
	}
	ex.upload, ex.known = u, true
	if ex.appending && u.State == claimcheck.StateActive {
		return nil, ts.tusError(ctx, invalidf("upload %s is complete: nothing more can be appended", id), "")
	}
	return &tusUpload{tusStore: ts, u: u}, nil
}

// AsTerminatableUpload implements handler.TerminaterDataStore.
func (ts tusStore) AsTerminatableUpload(u handler.Upload) handler.TerminatableUpload {
	return u.(*tusUpload)
}

// GetInfo implements handler.Upload. The metadata answered is what the
// store kept of it (sha256 and the content type); names of files are
// not kept.
func (u *tusUpload) GetInfo(ctx context.Context) (handler.FileInfo, error) {
	m := handler.MetaData{}
	if u.u.Digest != "" {
		m["sha256"] = strings.TrimPrefix(u.u.Digest, "sha256:")
	}
	if u.u.ContentType != "" {
		m["content_type"] = u.u.ContentType
	}
	return handler.FileInfo{ID: u.u.ID, Size: u.u.Size, Offset: u.u.Offset, MetaData: m}, nil
}

// WriteChunk implements handler.Upload: AppendResumable with the
// request's Upload-Checksum. The chunk that stores the last byte
// completes the upload in the store, so FinishUpload has nothing left
// to do.
func (u *tusUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	ex := exchangeOf(ctx)
	got, err := u.ru.AppendResumable(ctx, u.u.ID, offset, src, ex.checksum)
	if got.ID != "" {
		u.u = got
		ex.upload, ex.known = got, true
	}
	n := max(0, got.Offset-offset)
	if err != nil {
		if got.Offset == u.u.Size {
			// The last chunk arrived but the payload was refused: the
			// upload is gone, and tusd must not try to finish it.
			ex.failed, n = true, 0
		}
		return n, u.tusError(ctx, err, api.HeaderUploadChecksum)
	}
	return n, nil
}

// FinishUpload implements handler.Upload. It completes an upload tusd
// sees complete without a chunk: an empty one, at its creation.
func (u *tusUpload) FinishUpload(ctx context.Context) error {
	ex := exchangeOf(ctx)
	if ex.failed || u.u.Ref != nil {
		return nil
	}
	got, err := u.ru.AppendResumable(ctx, u.u.ID, u.u.Size, strings.NewReader(""), claimcheck.ChunkChecksum{})
	if err != nil {
		return u.tusError(ctx, err, api.HeaderUploadChecksum)
	}
	u.u = got
	ex.upload, ex.known = got, true
	return nil
}

// GetReader implements handler.Upload; downloads are redeems, not tus.
func (u *tusUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return nil, handler.ErrNotImplemented
}

// Terminate implements handler.TerminatableUpload: the upload is
// finished now, its bytes removed and its reservation refunded.
func (u *tusUpload) Terminate(ctx context.Context) error {
	if err := u.ru.AbortResumable(ctx, u.u.ID); err != nil {
		return u.tusError(ctx, err, "")
	}
	ex := exchangeOf(ctx)
	u.u.State = claimcheck.StateDeleted
	ex.upload, ex.known = u.u, true
	return nil
}

// tusError turns a store error into tusd's error type, whose answer
// tusd writes as it is: claimcheck's JSON error, with the status of
// claimcheck's table, but 460 (tus's Checksum Mismatch) for a checksum
// mismatch. header names what the client sent that the error is about,
// prefixed to the message when it is not there already.
func (ts tusStore) tusError(ctx context.Context, err error, header string) error {
	body, status, ok := api.ErrorOf(err)
	switch {
	case ok && status >= http.StatusInternalServerError:
		ts.log.WarnContext(ctx, "tus request failed", "status", status, "err", err)
	case !ok && ctx.Err() != nil:
		ts.log.InfoContext(ctx, "tus request abandoned by the client", "err", err)
		body, status = api.Error{Code: api.CodeCanceled, Message: err.Error()}, api.StatusClientClosedRequest
	case !ok:
		ts.log.ErrorContext(ctx, "internal error", "err", err)
		body, status = api.Internal()
	}
	switch {
	case errors.Is(err, claimcheck.ErrChecksumMismatch):
		status = api.StatusChecksumMismatch
		if strings.Contains(body.Message, "declared") {
			header = api.HeaderUploadMetadata + " sha256"
		}
	case errors.Is(err, claimcheck.ErrTooLarge), errors.Is(err, claimcheck.ErrQuotaExceeded):
	default:
		header = ""
	}
	if header != "" && !strings.Contains(body.Message, header) {
		body.Message = header + ": " + body.Message
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("server: marshal %T: %v", body, err)) // our own type: always marshals
	}
	return handler.Error{
		ErrorCode: body.Code,
		Message:   body.Message,
		HTTPResponse: handler.HTTPResponse{
			StatusCode: status,
			Body:       string(b) + "\n",
			Header:     tusErrorHeader(status, b),
		},
	}
}

// tusErrorHeader is the header of a tus error answer. A gone upload's
// answer also carries its error in Claimcheck-Error (the JSON of the
// body, with the reason), for HEAD /v1/tus/{id}, whose answer has no
// body: a client polling an upload learns why it ended (key_destroyed,
// never_confirmed, aborted).
func tusErrorHeader(status int, body []byte) handler.HTTPHeader {
	h := handler.HTTPHeader{"Content-Type": api.ContentTypeJSON}
	if status == http.StatusGone {
		h[api.TrailerError] = string(body)
	}
	return h
}
