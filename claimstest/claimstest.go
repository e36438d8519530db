// Package claimstest is the conformance suite of the claimcheck
// contract: Claims, and Uploads and Admin when the implementation
// offers them.
// Every implementation runs it from its own tests, so that a producer or
// a consumer can swap the embedded store for the HTTP client (or another
// implementation) and keep the same behaviour, errors included:
//
//	func TestConformance(t *testing.T) {
//		claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
//			... a fresh, empty implementation configured with opts.Namespaces ...
//		})
//	}
//
// The suite checks what the doc comments of the contract promise: round
// trips of put, redeem, stat, release and delete; every reason a claim
// can be gone for that the contract can reach (expired, released,
// read_retention_over, deleted, never_confirmed, key_destroyed); every
// sentinel error through errors.Is; direct uploads sent with net/http;
// resumable uploads;
// legal holds; master key rotation; MaybeOffload and Resolve. It uses the
// contract only: time moves through the harness's fake clock (nothing
// sleeps), and the few things the contract cannot do (corrupt a stored
// object, restart with another master key) are hooks of the harness. A
// subtest whose capability or hook the implementation does not offer is
// skipped, saying which.
//
// Payloads are small (at most a few hundred KiB), so that the suite stays
// cheap enough to run on every backend in CI.
package claimstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Clock is the implementation's time source, as the harness sees it:
// *clock.Fake satisfies it. It should start at a whole second, since refs
// carry seconds and the suite compares times exactly.
type Clock interface {
	Now() time.Time
	Advance(d time.Duration)
}

// Options is what a subtest needs of the implementation it gets.
type Options struct {
	// Namespaces are the namespaces the subtest uses and their policies
	// (unset fields take the built-in defaults). Every other namespace
	// must get claimcheck.BuiltinPolicy(): the defaults section of the
	// config is left alone. A policy may ask for encryption at rest; an
	// implementation that cannot encrypt skips the subtest (t.Skip).
	Namespaces map[string]claimcheck.Policy
}

// Harness is one subtest's implementation under test, with the hooks the
// suite needs beyond the contract. Only Claims and Clock are required;
// Uploads and Admin are found on Claims by type assertion.
type Harness struct {
	// Claims is the implementation under test.
	Claims claimcheck.Claims
	// Clock is the implementation's clock: the suite moves it to make
	// claims expire, windows end and uploads miss their deadline.
	Clock Clock
	// Corrupt alters the stored bytes of ref's claim (one byte of its
	// object), as rot or a tampering hand would. nil: the corruption
	// subtests skip.
	Corrupt func(t *testing.T, ref claimcheck.Ref)
	// Objects returns the keys of the objects stored for namespace ns,
	// so the suite can check that a refused put left none behind. nil:
	// those checks are skipped.
	Objects func(t *testing.T, ns string) []string
	// Sweep does the implementation's due work now (finishing due claims,
	// collecting blobs), as its background sweeper would. nil: the suite
	// relies on due work done in-line by the calls.
	Sweep func(t *testing.T)
	// Idle waits until the implementation has finished handling every
	// call made so far: a remote client can see a refused put before the
	// server has cleaned up after it. nil: calls are finished when they
	// return.
	Idle func()
	// UploadURL addresses an upload the store receives itself: an
	// embedded store on file storage answers InitUpload with a Token and
	// no URL, and the HTTP server in front of it turns the token into the
	// URL a client PUTs to (server.UploadURL). nil when every upload
	// comes with its URL (the client, S3 storage).
	UploadURL func(claimcheck.Upload) claimcheck.Upload
	// UploadsTakeAnyBytes says the upload URLs are taken with any body,
	// and only ConfirmUpload, which hashes what was stored, refuses
	// other bytes than declared (GCS signed URLs and Azure SAS URLs
	// cannot bind a sha256). The suite then checks that confirm refuses
	// them and that the client can PUT the right bytes after that.
	UploadsTakeAnyBytes bool
	// RotateMasterKey restarts the implementation over the same data and
	// the same clock with a new master key, the current one kept as a
	// previous key, and returns the restarted harness. nil: the rotation
	// subtest skips.
	RotateMasterKey func(t *testing.T) Harness
}

// Factory returns a fresh, empty implementation configured with opts. It
// is called once per subtest, by several subtests at once (they run in
// parallel); it registers its own cleanup with t.
type Factory func(t *testing.T, opts Options) Harness

// Run runs the conformance suite against the implementations open
// returns.
func Run(t *testing.T, open Factory) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"RoundTrip", testRoundTrip},
		{"Compression", testCompression},
		{"StatReleaseDelete", testStatReleaseDelete},
		{"ReleaseAnonymous", testReleaseAnonymous},
		{"LookupErrors", testLookupErrors},
		{"Policy", testPolicy},
		{"PutRefusesBadInput", testPutRefusesBadInput},
		{"TooLarge", testTooLarge},
		{"QuotaExceeded", testQuotaExceeded},
		{"ChecksumMismatch", testChecksumMismatch},
		{"MaybeOffloadResolve", testMaybeOffloadResolve},
		{"GoneExpired", testGoneExpired},
		{"GoneReleased", testGoneReleased},
		{"GoneReadRetention", testGoneReadRetention},
		{"Uploads", testUploads},
		{"UploadErrors", testUploadErrors},
		{"GoneNeverConfirmed", testGoneNeverConfirmed},
		{"Resumable", testResumable},
		{"ResumableErrors", testResumableErrors},
		{"GoneResumable", testGoneResumable},
		{"Holds", testHolds},
		{"HoldErrors", testHoldErrors},
		{"HoldKeepsDeadlines", testHoldKeepsDeadlines},
		{"GoneKeyDestroyed", testGoneKeyDestroyed},
		{"RewrapDataKeys", testRewrapDataKeys},
		{"Namespaces", testNamespaces},
		{"Events", testEvents},
		{"DeadLetters", testDeadLetters},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, &env{open: open})
		})
	}
}

// The namespaces every subtest gets. Names the suite uses but does not
// configure ("orders") run on the built-in policy.
func namespaces() map[string]claimcheck.Policy {
	yes := true
	minutes := func(m int) claimcheck.Duration { return claimcheck.Duration(time.Duration(m) * time.Minute) }
	return map[string]claimcheck.Policy{
		"plain": {Compression: claimcheck.CompressionNone},
		"gz":    {Compression: claimcheck.CompressionGzip},
		"auto":  {Compression: claimcheck.CompressionAuto},
		// Small enough that a too-large payload stays cheap.
		"small": {MaxSize: 64 << 10, Threshold: 1 << 10},
		"short": {TTL: claimcheck.TTLPolicy{MaxAge: minutes(60)}},
		// Release finishes a claim after its retention window.
		"keep": {TTL: claimcheck.TTLPolicy{RetentionAfterRead: minutes(5), GracePeriod: minutes(60)}},
		// The first read starts the redelivery window.
		"dar":      {TTL: claimcheck.TTLPolicy{DeleteAfterRead: &yes, RetentionAfterRead: minutes(5)}},
		"quota":    {Quota: claimcheck.Quota{Bytes: 1000}},
		"oneclaim": {Quota: claimcheck.Quota{Claims: 1}},
	}
}

// encryptedNamespaces are the standard ones plus namespaces encrypted at
// rest, for the subtests of the key capabilities only: an implementation
// without encryption still runs every other subtest.
func encryptedNamespaces() map[string]claimcheck.Policy {
	nss := namespaces()
	for _, ns := range []string{"vault", "vault2", "vault3"} {
		nss[ns] = claimcheck.Policy{Encryption: claimcheck.EncryptionAES256GCM}
	}
	return nss
}

// env is one subtest's harness and the helpers the subtests share.
type env struct {
	open Factory
	h    Harness
	opts Options
	hc   *http.Client
}

// start opens the subtest's implementation with the standard namespaces.
func (e *env) start(t *testing.T) { e.startWith(t, namespaces()) }

func (e *env) startWith(t *testing.T, nss map[string]claimcheck.Policy) {
	t.Helper()
	e.opts = Options{Namespaces: nss}
	e.h = e.open(t, e.opts)
	if e.h.Claims == nil || e.h.Clock == nil {
		t.Fatal("claimstest: the harness has no Claims or no Clock")
	}
	// A client of its own, so that the upload PUTs leave no idle
	// connections behind the subtest.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	e.hc = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
}

func (e *env) c() claimcheck.Claims { return e.h.Claims }
func (e *env) now() time.Time       { return e.h.Clock.Now() }
func (e *env) advance(d time.Duration) {
	e.h.Clock.Advance(d)
}

// policy is the policy the implementation must report for ns.
func (e *env) policy(ns string) claimcheck.Policy {
	return e.opts.Namespaces[ns].WithDefaults(claimcheck.BuiltinPolicy())
}

func (e *env) sweep(t *testing.T) {
	t.Helper()
	if e.h.Sweep != nil {
		e.h.Sweep(t)
	}
}

func (e *env) idle() {
	if e.h.Idle != nil {
		e.h.Idle()
	}
}

func (e *env) put(t *testing.T, ns string, data []byte, opts claimcheck.PutOptions) claimcheck.Ref {
	t.Helper()
	ref, err := e.c().Put(t.Context(), ns, bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("put %d bytes to %s: %v", len(data), ns, err)
	}
	return ref
}

func (e *env) redeem(t *testing.T, ref claimcheck.Ref) ([]byte, error) {
	t.Helper()
	p, err := e.c().Redeem(t.Context(), ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// wantRedeem fails unless ref redeems to data.
func (e *env) wantRedeem(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	got, err := e.redeem(t, ref)
	if err != nil {
		t.Fatalf("redeem %s/%s: %v", ref.Namespace, ref.ID, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("redeem %s/%s: %d bytes that differ from the %d put", ref.Namespace, ref.ID, len(got), len(data))
	}
}

func (e *env) stat(t *testing.T, ref claimcheck.Ref) claimcheck.ClaimInfo {
	t.Helper()
	info, err := e.c().Stat(t.Context(), ref)
	if err != nil {
		t.Fatalf("stat %s: %v", ref.ID, err)
	}
	return info
}

// wantNothingStored checks that ns holds no claim, no usage, no
// reservation and no object: what a refused put must leave.
func (e *env) wantNothingStored(t *testing.T, ns string) {
	t.Helper()
	e.idle()
	if nr, ok := e.c().(claimcheck.Admin); ok {
		info, err := nr.Namespace(t.Context(), ns)
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		// A refused put finishes its pending claim (aborted), which
		// counts as finished; the quota figures must all be given back.
		quota := info.Usage
		quota.FinishedClaims = 0
		if quota != (claimcheck.NamespaceUsage{}) {
			t.Errorf("namespace %s after a refused put: usage %+v, want none", ns, info.Usage)
		}
	}
	if e.h.Objects != nil {
		if objs := e.h.Objects(t, ns); len(objs) != 0 {
			t.Errorf("namespace %s after a refused put: objects %v, want none", ns, objs)
		}
	}
}

// uploads returns the implementation's upload flow or skips.
func (e *env) uploads(t *testing.T) claimcheck.Uploads {
	t.Helper()
	u, ok := e.c().(claimcheck.Uploads)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Uploads")
	}
	if e.h.UploadURL != nil {
		return addressed{u, e.h.UploadURL}
	}
	return u
}

// addressed gives every upload the URL a client would PUT to, for an
// implementation that answers tokens (Harness.UploadURL).
type addressed struct {
	claimcheck.Uploads
	address func(claimcheck.Upload) claimcheck.Upload
}

func (a addressed) InitUpload(ctx context.Context, ns string, req claimcheck.UploadRequest) (claimcheck.Upload, error) {
	u, err := a.Uploads.InitUpload(ctx, ns, req)
	if err == nil && u.Token != "" && u.URL == "" {
		u = a.address(u)
	}
	return u, err
}

// send does what a browser does with an upload: a PUT of body to the URL,
// with the headers, over plain HTTP.
func (e *env) send(t *testing.T, u claimcheck.Upload, body []byte) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), u.Method, u.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("upload request: %v", err)
	}
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT answered %s: %s", resp.Status, msg)
	}
	return nil
}

func (e *env) mustSend(t *testing.T, u claimcheck.Upload, body []byte) {
	t.Helper()
	if err := e.send(t, u, body); err != nil {
		t.Fatalf("PUT of the upload: %v", err)
	}
}

// wantGone fails unless err is a *GoneError with reason, matching ErrGone
// (and ErrExpired exactly when the reason is expired).
func wantGone(t *testing.T, what string, err error, reason claimcheck.GoneReason) {
	t.Helper()
	_ = wantGoneError(t, what, err, reason) // the check is the call
}

// wantGoneError is wantGone for a caller that looks further into the
// error: it returns the *GoneError it checked.
func wantGoneError(t *testing.T, what string, err error, reason claimcheck.GoneReason) *claimcheck.GoneError {
	t.Helper()
	gone, ok := errors.AsType[*claimcheck.GoneError](err)
	if !ok || gone.Reason != reason {
		t.Fatalf("%s: %v, want gone (%s)", what, err, reason)
	}
	if !errors.Is(err, claimcheck.ErrGone) || errors.Is(err, claimcheck.ErrExpired) != (reason == claimcheck.ReasonExpired) {
		t.Fatalf("%s: %v does not match ErrGone, and ErrExpired for expiry only", what, err)
	}
	if !claimcheck.Permanent(err) {
		t.Errorf("%s: %v is not permanent", what, err)
	}
	return gone
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}

// wantFinished checks what Stat says of a claim finished with reason.
func (e *env) wantFinished(t *testing.T, ref claimcheck.Ref, reason claimcheck.GoneReason) claimcheck.ClaimInfo {
	t.Helper()
	info := e.stat(t, ref)
	if info.State != claimcheck.StateDeleted || info.DeleteReason != reason || info.DeletedAt.IsZero() {
		t.Fatalf("stat of a claim finished as %s: state %s, reason %s, deleted at %v", reason, info.State, info.DeleteReason, info.DeletedAt)
	}
	return info
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// sameRef compares refs field by field, times by instant.
func sameRef(a, b claimcheck.Ref) bool {
	return a.ID == b.ID && a.Namespace == b.Namespace && a.Size == b.Size && a.StoredSize == b.StoredSize &&
		a.Compression == b.Compression && a.Digest == b.Digest &&
		a.CreatedAt.Equal(b.CreatedAt) && a.ExpiresAt.Equal(b.ExpiresAt)
}

// onlyReader hides the concrete type of a reader, and so its length: the
// put streams a body of unknown size.
type onlyReader struct{ io.Reader }

// JSONDoc returns a deterministic JSON document of about n bytes, shaped
// like the payloads that get offloaded (records with repeated keys and
// varied values, so it compresses); seed makes documents of one size
// differ (no dedup between them). The suites of the implementations use
// it too.
func JSONDoc(n int, seed uint64) []byte {
	r := mrand.New(mrand.NewPCG(seed, 2))
	var buf bytes.Buffer
	buf.WriteString(`{"orders":[`)
	for i := 0; buf.Len() < n; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"id":%d,"customer":%d,"note":"order %d, shipped by %s","sku":"%x"}`,
			i, r.IntN(1000), i, []string{"rail", "road", "sea", "air"}[r.IntN(4)], r.Uint64())
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// unknownID is a well-formed claim id no implementation has issued.
const unknownID = "cc_AAAAAAAAAAAAAAAAAAAAAA"

func equalLabels(a, b map[string]string) bool {
	return len(a) == len(b) && reflect.DeepEqual(a, b) || len(a) == 0 && len(b) == 0
}

func kinds(es []claimcheck.Event) []string {
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}
