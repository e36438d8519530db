package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/server/api"
)

// Two replicas serving one upload (tuslock.go, ADR 0185): two servers,
// each over a store of its own, on one PostgreSQL database and one MinIO
// bucket, as `claimcheck serve` replicas are. The requests of one upload
// reach both, and the lock in the database orders them.

// setupTusReplicas returns two replicas over one backend, and the
// database for direct checks. wrapA wraps the first one's handler, and
// storageB rewrites the second one's storage URL, if set.
func setupTusReplicas(t *testing.T, wrapA func(http.Handler) http.Handler, storageB func(string) string) (a, b *tusBundle, db *sql.DB) {
	t.Helper()
	testsvc.Require(t)
	tb := tusBackend{clock: clock.NewFake(time.Now().UTC().Truncate(time.Second))}
	tb.dsn, db = testsvc.Postgres(t)
	tb.storage, tb.s3, tb.bucket = testsvc.S3(t)
	a = tb.open(t, t.TempDir(), wrapA)
	if storageB != nil {
		tb.storage = storageB(tb.storage)
	}
	return a, tb.open(t, t.TempDir(), nil), db
}

// tailHold is a proxy in front of the S3 service that holds the first
// plain PUT of an object in namespace ns (what an S3 append writes as
// the tail after its last whole part, blob/s3append.go) until release
// is closed.
type tailHold struct {
	held    chan struct{} // closed when the PUT arrived
	release chan struct{}
	once    sync.Once
}

// through returns storage, an s3:// URL, with its endpoint replaced by a
// proxy that holds the tail.
func (h *tailHold) through(t *testing.T, storage, ns string) string {
	t.Helper()
	u, err := url.Parse(storage)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	target, err := url.Parse(q.Get("endpoint"))
	if err != nil {
		t.Fatal(err)
	}
	// The Host the client signed (the proxy's) is the one that reaches
	// the service.
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Get("x-id") == "PutObject" && strings.Contains(r.URL.Path, "/"+ns+"/") {
			first := false
			h.once.Do(func() { first = true; close(h.held) })
			if first {
				<-h.release
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	q.Set("endpoint", srv.URL)
	u.RawQuery = q.Encode()
	return u.String()
}

// releaseRequested reports when a lease in db has a release request.
func releaseRequested(t *testing.T, db *sql.DB) <-chan struct{} {
	requested := make(chan struct{})
	ctx := t.Context()
	go func() {
		for {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM leases WHERE release_requested <> 0`).Scan(&n); err == nil && n > 0 {
				close(requested)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return requested
}

// on is upload URL loc (of any replica) on replica b.
func (b *tusBundle) on(loc string) string {
	return b.http.URL + loc[strings.Index(loc, "/v1/tus/"):]
}

// refOf is the Claimcheck-Ref an answer carries, or nil.
func refOf(t *testing.T, resp *http.Response) *claimcheck.Ref {
	t.Helper()
	raw := resp.Header.Get(api.HeaderRef)
	if raw == "" {
		return nil
	}
	var ref claimcheck.Ref
	if err := json.Unmarshal([]byte(raw), &ref); err != nil {
		t.Fatalf("Claimcheck-Ref %q: %v", raw, err)
	}
	return &ref
}

// finishUpload does what a tus client does after requests whose outcome
// it does not trust: HEAD, and PATCH the rest from the offset answered
// until the upload is complete. It returns the claim's ref.
func finishUpload(t *testing.T, b *tusBundle, loc string, data []byte) claimcheck.Ref {
	t.Helper()
	for range 3 {
		n, resp := b.offset(t, b.on(loc))
		if n < 0 {
			t.Fatalf("HEAD: %s", resp.Status)
		}
		if n == len(data) {
			ref := refOf(t, resp)
			if ref == nil {
				t.Fatal("HEAD of a complete upload answered no ref")
			}
			return *ref
		}
		resp, body := b.patch(t, b.on(loc), n, data[n:])
		if resp.StatusCode != http.StatusNoContent {
			t.Logf("PATCH of the rest at %d: %s %s", n, resp.Status, body)
		}
	}
	t.Fatal("the upload did not complete")
	return claimcheck.Ref{}
}

// TestTusReplicasSameChunk is the race of ADR 0115: the last chunk of an
// upload (after a whole S3 part, so the object is parts and a tail) sent
// to both replicas at the same offset. Replica B's append is caught in
// the act, its tail write held on the way to S3, while replica A gets
// the same chunk. Without a lock the replicas share, A completes the
// upload and B's tail then overwrites the completed object, which the
// claim would find damaged. With it, A waits for B's append and asks it
// to let go; B completes the upload, A's PATCH is refused at its offset,
// and the claim redeems the bytes sent, on both replicas.
func TestTusReplicasSameChunk(t *testing.T) {
	hold := &tailHold{held: make(chan struct{}), release: make(chan struct{})}
	a, b, db := setupTusReplicas(t, nil, func(s string) string { return hold.through(t, s, "raw") })
	data := tusData(t, 5<<20+64<<10)
	cut := 5 << 20
	loc := a.create(t, "raw", len(data), tusMetadata("sha256", sha256Hex(data)))
	if resp, body := a.patch(t, loc, 0, data[:cut]); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("first chunk: %s %s", resp.Status, body)
	}
	requested := releaseRequested(t, db)

	resps := make([]*http.Response, 2)
	var wg sync.WaitGroup
	wg.Go(func() { resps[1], _ = b.patch(t, b.on(loc), cut, data[cut:]) })
	select {
	case <-hold.held:
	case <-time.After(30 * time.Second):
		t.Fatal("replica B's append never wrote its tail")
	}
	aDone := make(chan struct{})
	wg.Go(func() {
		defer close(aDone)
		resps[0], _ = a.patch(t, loc, cut, data[cut:])
	})
	// B's tail goes on once A's PATCH has either finished (nothing
	// stopped it) or is waiting for B to let go.
	select {
	case <-aDone:
	case <-requested:
	case <-time.After(30 * time.Second):
		t.Fatal("replica A's PATCH neither ended nor waited for the upload")
	}
	close(hold.release)
	wg.Wait()

	completed := 0
	for i, resp := range resps {
		if resp.StatusCode == http.StatusNoContent && refOf(t, resp) != nil {
			completed++
		} else if resp.StatusCode < 400 {
			t.Errorf("replica %d answered %s without completing the upload", i, resp.Status)
		}
	}
	if completed != 1 {
		t.Errorf("%d PATCHes completed the upload, want exactly 1", completed)
	}
	ref := finishUpload(t, b, loc, data)
	for i, resp := range resps {
		if got := refOf(t, resp); got != nil && got.String() != ref.String() {
			t.Errorf("replica %d answered ref %s, the upload's is %s", i, got, ref)
		}
	}
	if c, err := a.meta.Claim(context.Background(), ref.ID); err != nil {
		t.Fatal(err)
	} else if blob, err := a.meta.Blob(context.Background(), c.BlobID); err != nil || !blob.DamagedAt.IsZero() {
		t.Fatalf("the claim's blob %+v, %v; want it undamaged", blob, err)
	}
	for _, r := range []*tusBundle{a, b} {
		p, err := r.store.Redeem(context.Background(), ref)
		if err != nil {
			t.Fatalf("redeem: %v", err)
		}
		got, err := io.ReadAll(p)
		p.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the claim redeems other bytes than were sent (%d bytes, %v)", len(got), err)
		}
	}
}

// stallingPatches wraps a handler: the first body read of a PATCH with
// bytes in it is reported on read, once. tusd reads a PATCH's body only
// once it holds the upload's lock.
func stallingPatches(read chan<- struct{}) func(http.Handler) http.Handler {
	var once sync.Once
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch {
				r.Body = &reportingBody{ReadCloser: r.Body, first: func() { once.Do(func() { close(read) }) }}
			}
			next.ServeHTTP(w, r)
		})
	}
}

type reportingBody struct {
	io.ReadCloser
	first func()
}

func (b *reportingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.first()
	}
	return n, err
}

// TestTusReplicasStalledPatch: a PATCH on replica A stalls mid-body (its
// client sends half and then nothing), holding the upload's lock. A
// client that resumes on replica B gets through: its HEAD asks A's
// request to let go, A's request ends with what it stored, and B's HEAD
// and PATCH complete the upload with the right bytes, while A's body is
// still open.
func TestTusReplicasStalledPatch(t *testing.T) {
	read := make(chan struct{})
	a, b, _ := setupTusReplicas(t, stallingPatches(read), nil)
	data := tusData(t, 128<<10)
	loc := a.create(t, "raw", len(data), tusMetadata("sha256", sha256Hex(data)))

	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest(http.MethodPatch, loc, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", "0")
	stalled := make(chan *http.Response, 1)
	go func() {
		resp, err := a.http.Client().Do(req)
		if err != nil {
			t.Errorf("the stalled PATCH: %v", err)
			stalled <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body) // drained only: the test reads the status
		resp.Body.Close()
		stalled <- resp
	}()
	half := len(data) / 2
	go func() { _, _ = pw.Write(data[:half]) }() // then nothing more until the test ends, which fails the write
	select {
	case <-read:
	case <-time.After(30 * time.Second):
		t.Fatal("replica A never read the stalled PATCH's body")
	}

	// A holds the lock and waits for bytes. B's HEAD waits for the lock
	// and gets it once A's request let go.
	n, resp := b.offset(t, b.on(loc))
	if n < 0 || n > half {
		t.Fatalf("HEAD on B while A's PATCH stalls: %s, offset %d; want an answer within the %d bytes sent", resp.Status, n, half)
	}
	select {
	case resp := <-stalled:
		if resp != nil && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("the interrupted PATCH answered %s, want 400", resp.Status)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's stalled PATCH did not end after B's request took the upload over")
	}
	resp, body := b.patch(t, b.on(loc), n, data[n:])
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PATCH of the rest on B at %d: %s %s", n, resp.Status, body)
	}
	ref := refOf(t, resp)
	if ref == nil {
		t.Fatal("the PATCH that completed the upload answered no ref")
	}
	for _, r := range []*tusBundle{a, b} {
		if got := r.redeem(t, *ref); !bytes.Equal(got, data) {
			t.Fatal("the claim redeems other bytes than were sent")
		}
	}
	pw.CloseWithError(errors.New("the test is over"))
}
