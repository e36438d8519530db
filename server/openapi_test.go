package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// The contract check: docs/openapi.yaml is not a description that may
// drift from the server, it is checked on every request the server's tests
// send. setup and setupAuthWith put checkContract in front of the server,
// so that most tests of this package exercise the document as a side
// effect of testing the handlers:
//
//   - a request the document allows is validated (path, query, headers,
//     security, JSON bodies), and the answer must be a status the document
//     lists for the operation, with the headers it marks required and, for
//     JSON answers, a body that matches the schema — where the test copy of
//     the schemas refuses unknown fields (closeSchemas), so a field added
//     to a handler but not to the document fails;
//   - a request the document does not allow (tests send many on purpose)
//     must be refused by the server with a 4xx that the document lists;
//   - a request to a path or method outside the document must get the
//     server's no_route or method_not_allowed error.
//
// Payload bytes (put and upload bodies, redeem answers) are never buffered:
// their headers and status are checked, their bytes pass through.

// contractDocPath is the document, relative to this package.
const contractDocPath = "../docs/openapi.yaml"

// maxCheckedJSON bounds what the check buffers of a JSON body. The API's
// JSON bodies are far smaller (64 KiB requests; pages of at most 1000
// events); a larger one is left unchecked rather than held.
const maxCheckedJSON = 4 << 20

var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// loadContract loads the document once per test binary, with closed
// schemas (see closeSchemas) and without servers, so that the router
// matches the paths of a test server on any port.
func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		raw, err := os.ReadFile(contractDocPath)
		if err != nil {
			contract.err = err
			return
		}
		var tree map[string]any
		if err := yaml.Unmarshal(raw, &tree); err != nil {
			contract.err = fmt.Errorf("%s: %w", contractDocPath, err)
			return
		}
		if comps, ok := tree["components"].(map[string]any); ok {
			closeSchemas(comps["schemas"])
		}
		delete(tree, "servers")
		closed, err := json.Marshal(tree)
		if err != nil {
			contract.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(closed)
		if err != nil {
			contract.err = fmt.Errorf("%s: %w", contractDocPath, err)
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			contract.err = fmt.Errorf("%s is not a valid OpenAPI document: %w", contractDocPath, err)
			return
		}
		router, err := legacy.NewRouter(doc)
		if err != nil {
			contract.err = err
			return
		}
		contract.doc, contract.router = doc, router
	})
	return contract.doc, contract.router, contract.err
}

// closeSchemas adds additionalProperties: false to every object schema
// that lists properties and says nothing about others. The document
// itself stays open, because clients must ignore fields a newer server
// adds; the server's tests are where an undocumented field must fail.
func closeSchemas(node any) {
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n["properties"]; ok {
			if _, set := n["additionalProperties"]; !set {
				n["additionalProperties"] = false
			}
		}
		for _, v := range n {
			closeSchemas(v)
		}
	case []any:
		for _, v := range n {
			closeSchemas(v)
		}
	}
}

// checkContract wraps the server's handler. auth says whether the server
// requires API keys: then a request without a bearer token is outside the
// document, otherwise the token is optional. Violations fail t.
func checkContract(t testing.TB, auth bool, next http.Handler) http.Handler {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		// Benchmarks measure the server (BenchmarkAuthOverhead compares
		// it with an unwrapped one), not the check.
		return next
	}
	_, router, err := loadContract()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return &contractCheck{t: t, auth: auth, router: router, next: next}
}

type contractCheck struct {
	t      testing.TB
	auth   bool
	router routers.Router
	next   http.Handler
}

func (c *contractCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	what := r.Method + " " + r.URL.Path
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		// A CORS preflight is the browser's question about a route, not a
		// route: OpenAPI has no place for it, docs/HTTP.md describes it.
		c.next.ServeHTTP(w, r)
		return
	}
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		// Not a route of the document: the server must say so with
		// its own errors, never serve it.
		rec := &contractRecorder{ResponseWriter: w, buffer: func(int, http.Header) bool { return true }}
		c.next.ServeHTTP(rec, r)
		status := rec.finalStatus()
		var e struct{ Code string }
		// A body that is not an error has no code: the default case below
		// reports it.
		_ = json.Unmarshal(rec.body.Bytes(), &e)
		switch {
		case status == http.StatusNotFound && e.Code == "no_route",
			status == http.StatusMethodNotAllowed && e.Code == "method_not_allowed":
		default:
			c.t.Errorf("openapi: %s is not in docs/openapi.yaml (%v), but the server answered %d %q", what, err, status, e.Code)
		}
		return
	}

	// The request is validated after the server answered, with the JSON
	// body as the server read it: reading it first would block on a
	// client that stalls on purpose (the server's deadlines cut those
	// off) and would change when the server sees the bytes.
	jsonBody := hasJSON(route.Operation.RequestBody)
	var tee *teeBody
	if jsonBody && r.Body != nil {
		tee = &teeBody{ReadCloser: r.Body}
		r.Body = tee
	}
	rec := &contractRecorder{ResponseWriter: w, buffer: func(status int, h http.Header) bool {
		return isJSON(h.Get("Content-Type")) && jsonResponse(route.Operation, status)
	}}
	c.next.ServeHTTP(rec, r)
	status := rec.finalStatus()

	vr := r.Clone(context.WithoutCancel(r.Context()))
	vr.Body = http.NoBody
	in := &openapi3filter.RequestValidationInput{
		Request: vr, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			ExcludeRequestBody: !jsonBody,
			AuthenticationFunc: c.authenticate,
		},
	}
	if jsonBody {
		switch {
		case tee != nil && tee.eof && !tee.over:
			vr.Body = io.NopCloser(bytes.NewReader(tee.buf.Bytes()))
		case tee != nil && tee.n > 0:
			// The server stopped reading part-way (a body over its
			// limit, a stalled or broken one): the body cannot be judged,
			// the rest of the request still is.
			in.Options.ExcludeRequestBody = true
		}
	}
	reqErr := openapi3filter.ValidateRequest(vr.Context(), in)

	if reqErr != nil && (status < 400 || status >= 500) {
		c.t.Errorf("openapi: %s breaks docs/openapi.yaml (%v), yet the server answered %d instead of refusing it", what, reqErr, status)
	}
	if r.Method == http.MethodHead {
		return // kin-openapi does not check HEAD answers; nor does a client read them
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 rec.Header().Clone(),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   !rec.buffered || rec.over,
		},
	}
	if rec.buffered && !rec.over {
		out.SetBodyBytes(rec.body.Bytes())
	}
	if err := openapi3filter.ValidateResponse(vr.Context(), out); err != nil {
		c.t.Errorf("openapi: %s answered %d, which docs/openapi.yaml does not allow: %v\nbody: %.500s", what, status, err, rec.body.Bytes())
		return
	}
	if !rec.buffered && status != http.StatusNoContent {
		// The body was not checked; its media type still must be one the
		// document lists.
		if resp := route.Operation.Responses.Status(status); resp != nil && resp.Value != nil && len(resp.Value.Content) > 0 {
			if ct := rec.Header().Get("Content-Type"); resp.Value.Content.Get(ct) == nil {
				c.t.Errorf("openapi: %s answered %d with Content-Type %q, which docs/openapi.yaml does not list", what, status, ct)
			}
		}
	}
}

// teeBody keeps a bounded copy of a JSON request body as the server reads
// it.
type teeBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	n    int64
	eof  bool
	over bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.buf.Len()+n > maxCheckedJSON {
		b.over = true
	} else {
		b.buf.Write(p[:n])
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// authenticate is the security check of the document: a bearer token,
// required when the server has auth on. Whether the token is valid is the
// server's business; the document only says how it is sent.
func (c *contractCheck) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !c.auth {
		return nil
	}
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// hasJSON reports whether a request body is described as JSON.
func hasJSON(body *openapi3.RequestBodyRef) bool {
	return body != nil && body.Value != nil && body.Value.Content.Get("application/json") != nil &&
		body.Value.Content["*/*"] == nil
}

// jsonResponse reports whether the document describes the operation's
// answer with status as a JSON body. A payload answer (any media type,
// JSON included) is not.
func jsonResponse(op *openapi3.Operation, status int) bool {
	resp := op.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		return true // undocumented: buffered for the error message
	}
	_, ok := resp.Value.Content["application/json"]
	return ok
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// contractRecorder passes the answer through and keeps its status and,
// for JSON answers, a bounded copy of the body.
type contractRecorder struct {
	http.ResponseWriter
	buffer   func(status int, h http.Header) bool
	status   int
	buffered bool
	over     bool
	body     bytes.Buffer
}

func (w *contractRecorder) WriteHeader(code int) {
	if code < 200 {
		w.ResponseWriter.WriteHeader(code) // 1xx: informational, not the answer
		return
	}
	if w.status == 0 {
		w.status = code
		w.buffered = w.buffer(code, w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *contractRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.buffered && !w.over {
		if w.body.Len()+len(p) > maxCheckedJSON {
			w.over = true
		} else {
			w.body.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *contractRecorder) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush() // http.Flusher has no error to return
}

// Unwrap lets http.ResponseController reach the connection (the server
// renews its read and write deadlines through it).
func (w *contractRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *contractRecorder) finalStatus() int {
	if w.status == 0 {
		return http.StatusOK // nothing written: net/http answers 200
	}
	return w.status
}

// recordingTB collects what the contract check reports, so that a test
// can check the check.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// TestContractCatchesDrift runs the contract check in front of handlers
// that drift from docs/openapi.yaml in the ways a real handler could, and
// in front of ones that keep to it: the first must be reported, the
// second not. Without this, a check that silently validated nothing would
// pass every other test.
func TestContractCatchesDrift(t *testing.T) {
	const id = "cc_8ydDXrWudIIkHqL50bxe7w"
	ref := `{"type":"claim_check_ref","v":1,"id":"` + id + `","ns":"orders","size":2,"stored_size":2,"compression":"none",` +
		`"digest":"sha256:bb61d65271b6d8fb78a3d2fb4ace1b440802152801c70f4398f110c23c8c34b8","created_at":1795499244,"expires_at":1795585644}`
	info := `{"ref":` + ref + `,"state":"active","reads":0,"releases":0,"consumers":1}`
	answer := func(status int, body string, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // whatever was sent, the answer is the same
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			if body != "" && w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body) // the client under test reports what arrived
		}
	}
	payload := answer(http.StatusOK, "not JSON at all", "Content-Type", "application/json",
		"Claimcheck-Ref", ref, "Claimcheck-Size", "2", "Accept-Ranges", "bytes", "Trailer", "Claimcheck-Error", "Cache-Control", "no-store")
	for _, tc := range []struct {
		name, method, path, body string
		h                        http.HandlerFunc
		drift                    bool
	}{
		{"meta as documented", "GET", "/v1/claims/" + id + "/meta", "", answer(200, info), false},
		{"payload bytes are not parsed", "GET", "/v1/claims/" + id, "", payload, false},
		{"error as documented", "GET", "/v1/claims/" + id, "", answer(404, `{"code":"not_found","message":"no"}`), false},
		{"invalid request refused", "GET", "/v1/claims/bad", "", answer(400, `{"code":"invalid_argument","message":"bad id"}`), false},
		{"unknown route refused", "GET", "/v1/nowhere", "", answer(404, `{"code":"no_route","message":"no route"}`), false},
		{"undocumented field", "GET", "/v1/claims/" + id + "/meta", "", answer(200, strings.TrimSuffix(info, "}")+`,"surprise":1}`), true},
		{"missing required field", "GET", "/v1/claims/" + id + "/meta", "", answer(200, `{"ref":`+ref+`,"state":"active"}`), true},
		{"wrong error code for the status", "GET", "/v1/claims/" + id, "", answer(404, `{"code":"gone","message":"no"}`), true},
		{"undocumented status", "GET", "/v1/claims/" + id + "/meta", "", answer(http.StatusTeapot, `{"code":"internal","message":"?"}`), true},
		{"missing required header", "PUT", "/v1/namespaces/orders/claims", "xx", answer(201, ref), true},
		{"payload without its ref header", "GET", "/v1/claims/" + id, "", answer(200, "xx", "Content-Type", "text/plain", "Trailer", "Claimcheck-Error", "Cache-Control", "no-store"), true},
		{"invalid request served", "GET", "/v1/claims/bad/meta", "", answer(200, info), true},
		{"invalid JSON body served", "POST", "/v1/claims/" + id + "/release", `{"consumer":5}`, answer(204, ""), true},
		{"unknown route served", "GET", "/v1/nowhere", "", answer(200, `{}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &recordingTB{TB: t}
			h := checkContract(rt, false, tc.h)
			req := httptestRequest(tc.method, tc.path, tc.body)
			h.ServeHTTP(newDiscardWriter(), req)
			got := rt.reported()
			if tc.drift && len(got) == 0 {
				t.Errorf("the drift was not reported")
			}
			if !tc.drift && len(got) > 0 {
				t.Errorf("reported without a drift: %v", got)
			}
		})
	}
}

func httptestRequest(method, path, body string) *http.Request {
	r, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	if body == "" {
		r.Body = http.NoBody
	}
	return r
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func newDiscardWriter() *discardWriter               { return &discardWriter{h: http.Header{}} }
func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// TestOpenAPIErrorCodes: the error codes and gone reasons of
// docs/openapi.yaml are the API's. Every code of docs/HTTP.md's error
// table is in the Error schema (and nothing else is), the server answers
// it with the table's status (api.StatusOf), and the document's error
// response for that status may carry it; the gone reasons are the
// contract's list.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	httpDoc, err := os.ReadFile("../docs/HTTP.md")
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|").FindAllStringSubmatch(string(httpDoc), -1) {
		table[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(table) < 12 {
		t.Fatalf("found %d codes in docs/HTTP.md's error table; has its format changed?", len(table))
	}
	schemas := doc.Components.Schemas
	var codes []string
	for _, v := range schemas["Error"].Value.Properties["code"].Value.Enum {
		codes = append(codes, v.(string))
	}
	if got, want := slices.Sorted(slices.Values(codes)), slices.Sorted(maps.Keys(table)); !slices.Equal(got, want) {
		t.Errorf("docs/openapi.yaml's error codes %v, docs/HTTP.md's %v", got, want)
	}
	// The codes each error response allows, by status.
	allowed := map[int][]string{}
	for name, resp := range doc.Components.Responses {
		mt := resp.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || !strings.Contains(mt.Schema.Ref, "/Error") {
			continue
		}
		// The keywords next to the $ref narrow the code; kin-openapi
		// keeps them in allOf, next to the Error schema's own list.
		narrowed := allOfValues(mt.Schema.Value.AllOf, "code")
		if len(narrowed) == 0 {
			t.Errorf("docs/openapi.yaml: response %s does not say which codes it carries", name)
		}
		var cs []string
		for _, s := range narrowed {
			if s.Const != nil {
				cs = append(cs, s.Const.(string))
			}
			for _, e := range s.Enum {
				cs = append(cs, e.(string))
			}
		}
		for _, status := range statusesOf(doc, name) {
			allowed[status] = append(allowed[status], cs...)
		}
	}
	for code, status := range table {
		if got := api.StatusOf(code); got != status {
			t.Errorf("code %s: docs/HTTP.md says %d, the server answers %d", code, status, got)
		}
		if !slices.Contains(allowed[status], code) {
			t.Errorf("code %s (%d): no error response of docs/openapi.yaml for %d allows it (allowed: %v)", code, status, status, allowed[status])
		}
	}
	var reasons []claimcheck.GoneReason
	for _, v := range schemas["GoneReason"].Value.Enum {
		reasons = append(reasons, claimcheck.GoneReason(v.(string)))
	}
	if !slices.Equal(reasons, claimcheck.GoneReasons) {
		t.Errorf("docs/openapi.yaml's gone reasons %v, the contract's %v", reasons, claimcheck.GoneReasons)
	}
}

// allOfValues returns the schemas of property prop in allOf (kin-openapi
// moves the keywords next to a $ref there).
func allOfValues(all openapi3.SchemaRefs, prop string) []*openapi3.Schema {
	var out []*openapi3.Schema
	for _, s := range all {
		if p := s.Value.Properties[prop]; p != nil && p.Value != nil {
			out = append(out, p.Value)
		}
	}
	return out
}

// statusesOf returns the statuses under which operations use the
// components response name.
func statusesOf(doc *openapi3.T, name string) []int {
	var out []int
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				if strings.HasSuffix(resp.Ref, "/"+name) {
					n, _ := strconv.Atoi(status)
					if !slices.Contains(out, n) {
						out = append(out, n)
					}
				}
			}
		}
	}
	return out
}

// TestHoldAndShreddingRoutesOverHTTP calls, through the contract check,
// the two routes no other test of this package sends over HTTP (their
// behaviour is the engine's tests'): a namespace's hold, read while absent
// and present, and crypto-shredding, refused while held and unconfirmed.
func TestHoldAndShreddingRoutesOverHTTP(t *testing.T) {
	b := setupAuthWith(t, server.Limits{}, func(cfg *engine.Config) {
		p := cfg.Namespaces["a2"]
		p.Encryption = "aes-256-gcm"
		cfg.Namespaces["a2"] = p
	})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	ref := b.claim(t, "a2")

	resp, body := b.do(t, admin, http.MethodGet, "/v1/namespaces/a2/hold", nil)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"hold":null}` {
		t.Fatalf("hold before: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, admin, http.MethodPut, "/v1/namespaces/a2/hold", strings.NewReader(`{"reason":"audit"}`),
		"Content-Type", api.ContentTypeJSON)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("set hold: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, admin, http.MethodGet, "/v1/namespaces/a2/hold", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"reason":"audit"`) {
		t.Fatalf("hold after: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, admin, http.MethodDelete, "/v1/namespaces/a2/key?confirm=a2", nil)
	if resp.StatusCode != http.StatusConflict || codeOf(body) != "held" {
		t.Fatalf("destroy while held: %s %s", resp.Status, body)
	}
	b.do(t, admin, http.MethodDelete, "/v1/namespaces/a2/hold", nil)
	resp, body = b.do(t, admin, http.MethodDelete, "/v1/namespaces/a2/key", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("destroy without confirm: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, admin, http.MethodDelete, "/v1/namespaces/a2/key?confirm=a2", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("destroy: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, admin, http.MethodGet, "/v1/claims/"+ref.ID, nil)
	if resp.StatusCode != http.StatusGone || !strings.Contains(string(body), `"reason":"key_destroyed"`) {
		t.Fatalf("redeem after shredding: %s %s", resp.Status, body)
	}
}
