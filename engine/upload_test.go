package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// Tests of direct uploads (init → PUT → confirm) on the embedded store:
// real SQLite and files, a fake clock, the sweeper driven by hand. The
// flows run on S3 too (MinIO, when TEST_S3_URL is set), where the URL is
// a presigned one sent with plain HTTP.

var upT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// upBundle is one test's store and what the test created in it.
type upBundle struct {
	t     testing.TB
	s     *Store
	clock *clock.Fake
	s3    bool

	mu  sync.Mutex
	ids map[string]bool // every claim the test created, for the drift check

	// opened receives (without blocking) when the store opens an object
	// for reading: confirm is hashing the upload.
	opened chan struct{}
}

// readSignal is the store's blob.Store with a signal on NewReader, so a
// test can let a concurrent actor go at the moment confirm reads.
type readSignal struct {
	blob.Store
	opened chan struct{}
}

func (r *readSignal) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	select {
	case r.opened <- struct{}{}:
	default:
	}
	return r.Store.NewReader(ctx, key)
}

// presigningReadSignal keeps the S3 store's presigning visible through
// the wrapper.
type presigningReadSignal struct {
	*readSignal
	blob.Presigner
}

// uploadBackends runs fn on SQLite and files, and, when the services are
// configured, on S3 (MinIO) storage and on PostgreSQL metadata.
func uploadBackends(t *testing.T, fn func(t *testing.T, b *upBundle)) {
	t.Run("file", func(t *testing.T) { fn(t, setupUploads(t, false)) })
	t.Run("s3", func(t *testing.T) { fn(t, setupUploads(t, true)) })
	t.Run("postgres", func(t *testing.T) {
		dsn, _ := testsvc.Postgres(t)
		fn(t, setupUploads(t, false, func(c *Config) { c.Metadata = dsn }))
	})
}

func setupUploads(t testing.TB, s3 bool, mutate ...func(*Config)) *upBundle {
	t.Helper()
	fc := clock.NewFake(upT0)
	cfg := Config{
		Data:  t.TempDir(),
		Clock: fc,
		Namespaces: map[string]claimcheck.Policy{
			"up":    {},
			"long":  {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(30 * 24 * time.Hour)}},
			"quota": {Quota: claimcheck.Quota{Bytes: 1000}},
			"tiny":  {MaxSize: 1 << 10, Threshold: 1 << 10},
		},
		Sweeper: sweep.Config{Disabled: true},
		Logger:  slog.New(slog.DiscardHandler),
	}
	if s3 {
		cfg.Storage, _, _ = testsvc.S3(t)
	}
	for _, m := range mutate {
		m(&cfg)
	}
	bs, err := blob.Open(context.Background(), cfg.WithDefaults().Storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	opened := make(chan struct{}, 1)
	sig := &readSignal{Store: bs, opened: opened}
	cfg.BlobStore = sig
	if p, ok := bs.(blob.Presigner); ok {
		cfg.BlobStore = &presigningReadSignal{readSignal: sig, Presigner: p}
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &upBundle{t: t, s: s, clock: fc, s3: s3, opened: opened}
	t.Cleanup(func() {
		if !t.Failed() {
			b.checkNoDrift()
			assertNoQuotaDrift(t, s) // over every namespace, not only what the test tracked
		}
		s.Close()
	})
	return b
}

func (b *upBundle) track(id string) {
	b.mu.Lock()
	if b.ids == nil {
		b.ids = map[string]bool{}
	}
	b.ids[id] = true
	b.mu.Unlock()
}

// checkNoDrift checks that the quota counters of every namespace equal
// the sums over the claims the test created: reservations of pending
// claims, sizes of active ones. A refund done twice or never shows here.
func (b *upBundle) checkNoDrift() {
	b.t.Helper()
	ctx := context.Background()
	type counters struct{ used, reserved, active, pending int64 }
	want := map[string]counters{}
	for id := range b.ids {
		c, err := b.s.meta.Claim(ctx, id)
		if err != nil {
			b.t.Errorf("drift check: claim %s: %v", id, err)
			continue
		}
		w := want[c.Namespace]
		switch c.State {
		case meta.ClaimPending:
			w.reserved += c.ReservedBytes
			w.pending++
		case meta.ClaimActive:
			w.used += c.Size
			w.active++
		}
		want[c.Namespace] = w
	}
	for ns, w := range want {
		n, err := b.s.meta.Namespace(ctx, ns)
		if err != nil {
			b.t.Fatal(err)
		}
		if got := (counters{n.UsedBytes, n.ReservedBytes, n.ActiveClaims, n.PendingClaims}); got != w {
			b.t.Errorf("quota drift in %s: counters %+v, live claims sum to %+v", ns, got, w)
		}
	}
}

func randData(t testing.TB, n int) []byte {
	d := make([]byte, n)
	rand.Read(d)
	return d
}

func (b *upBundle) init(ns string, data []byte, key string) (claimcheck.Upload, error) {
	u, err := b.s.InitUpload(context.Background(), ns, claimcheck.UploadRequest{
		Size: int64(len(data)), Digest: claimcheck.DigestOf(data), ContentType: "application/x-test", IdempotencyKey: key,
	})
	if err == nil {
		b.track(u.ID)
	}
	return u, err
}

func (b *upBundle) mustInit(ns string, data []byte) claimcheck.Upload {
	b.t.Helper()
	u, err := b.init(ns, data, "")
	if err != nil {
		b.t.Fatalf("InitUpload: %v", err)
	}
	return u
}

// send does what the client does with the upload: a PUT of body. An
// upload the store receives itself (a token, no URL) goes straight to
// ReceiveUpload (the HTTP layer is tested in package server); presigned
// S3 URLs go over HTTP.
func (b *upBundle) send(u claimcheck.Upload, body []byte) error {
	ctx := context.Background()
	if u.URL == "" {
		return b.s.ReceiveUpload(ctx, u.ID, u.Token, int64(len(body)), bytes.NewReader(body))
	}
	req, err := http.NewRequestWithContext(ctx, u.Method, u.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT answered %s: %s", resp.Status, msg)
	}
	return nil
}

func (b *upBundle) mustSend(u claimcheck.Upload, body []byte) {
	b.t.Helper()
	if err := b.send(u, body); err != nil {
		b.t.Fatalf("PUT: %v", err)
	}
}

func (b *upBundle) sweep() {
	b.t.Helper()
	for range 2 { // finish due claims, then collect the blobs they let go
		if _, err := b.s.SweepOnce(context.Background(), 0); err != nil {
			b.t.Fatalf("SweepOnce: %v", err)
		}
	}
}

func (b *upBundle) objectExists(key string) bool {
	b.t.Helper()
	_, err := b.s.blobs.Attributes(context.Background(), key)
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		b.t.Fatal(err)
	}
	return err == nil
}

func (b *upBundle) key(id string) string {
	b.t.Helper()
	up, err := b.s.meta.Upload(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return up.Key
}

func wantGone(t testing.TB, err error, reason claimcheck.GoneReason) {
	t.Helper()
	var g *claimcheck.GoneError
	if !errors.As(err, &g) || g.Reason != reason {
		t.Fatalf("err = %v, want gone (%s)", err, reason)
	}
}

func TestUploadHappyPath(t *testing.T) {
	uploadBackends(t, func(t *testing.T, b *upBundle) {
		ctx := context.Background()
		data := randData(t, 300<<10)
		u := b.mustInit("up", data)
		// S3 presigns a request; files get a token the server puts in a
		// URL of its own.
		sendable := u.URL != "" && u.Method == http.MethodPut && u.Token == ""
		if !b.s3 {
			sendable = u.URL == "" && u.Token != ""
		}
		if u.State != claimcheck.StatePending || !sendable || u.Size != int64(len(data)) {
			t.Fatalf("upload = %+v", u)
		}
		if want := upT0.Add(15 * time.Minute); !u.ExpiresAt.Equal(want) && !b.s3 {
			t.Errorf("URL expires at %s, want %s (url_ttl)", u.ExpiresAt, want)
		}
		if want := upT0.Add(time.Hour); !u.ConfirmBy.Equal(want) {
			t.Errorf("confirm by %s, want %s (confirm_within)", u.ConfirmBy, want)
		}
		b.mustSend(u, data)
		b.clock.Advance(20 * time.Minute) // past the URL's expiry: confirm does not need it
		ref, err := b.s.ConfirmUpload(ctx, u.ID)
		if err != nil {
			t.Fatalf("ConfirmUpload: %v", err)
		}
		if ref.ID != u.ID || ref.Size != int64(len(data)) || ref.Digest != claimcheck.DigestOf(data) || ref.Compression != "none" {
			t.Errorf("ref = %+v", ref)
		}
		p, err := b.s.Redeem(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Bytes()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("redeem: %d bytes, %v", len(got), err)
		}
		if p.ContentType != "application/x-test" {
			t.Errorf("content type %q", p.ContentType)
		}
		// Confirm is idempotent: a retry after a lost answer gets the ref.
		again, err := b.s.ConfirmUpload(ctx, u.ID)
		if err != nil || again != ref {
			t.Errorf("second confirm = %+v, %v", again, err)
		}
		// The confirmed upload logged created then confirmed, once: the
		// repeated confirm changed nothing.
		es, err := b.s.ClaimEvents(ctx, ref, claimcheck.EventQuery{})
		var kinds []string
		for _, e := range es {
			if e.Kind == "created" || e.Kind == "confirmed" {
				kinds = append(kinds, e.Kind)
			}
		}
		if err != nil || !slices.Equal(kinds, []string{"created", "confirmed"}) {
			t.Errorf("events of the confirmed upload: %q, %v", kinds, err)
		}
		// The upload no longer takes bytes. (A presigned S3 URL stays
		// valid until it expires, but it only ever writes these very
		// bytes: the checksum is signed.)
		if err := b.send(u, data); err == nil && !b.s3 {
			t.Error("PUT after confirm succeeded")
		}
		if n := counterValue(t, b.s.metrics.uploadsStarted.WithLabelValues("up")); n != 1 {
			t.Errorf("uploads started = %v", n)
		}
		if n := counterValue(t, b.s.metrics.uploadsConfirmed.WithLabelValues("up")); n != 1 {
			t.Errorf("uploads confirmed = %v", n)
		}
	})
}

func TestUploadNeverPut(t *testing.T) {
	uploadBackends(t, func(t *testing.T, b *upBundle) {
		u := b.mustInit("up", randData(t, 1000))
		if _, err := b.s.ConfirmUpload(context.Background(), u.ID); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "nothing has been uploaded") {
			t.Fatalf("confirm before PUT = %v", err)
		}
		b.clock.Advance(time.Hour)
		b.sweep()
		_, err := b.s.ConfirmUpload(context.Background(), u.ID)
		wantGone(t, err, claimcheck.ReasonNeverConfirmed)
		if n, _ := b.s.meta.Namespace(context.Background(), "up"); n.ReservedBytes != 0 || n.PendingClaims != 0 {
			t.Errorf("after reaping: %+v", n)
		}
	})
}

func TestUploadPutNeverConfirmed(t *testing.T) {
	uploadBackends(t, func(t *testing.T, b *upBundle) {
		data := randData(t, 5000)
		u := b.mustInit("up", data)
		b.mustSend(u, data)
		key := b.key(u.ID)
		if !b.objectExists(key) {
			t.Fatal("uploaded object missing")
		}
		if n, _ := b.s.meta.Namespace(context.Background(), "up"); n.ReservedBytes != 5000 {
			t.Fatalf("reserved while pending = %d", n.ReservedBytes)
		}
		b.clock.Advance(time.Hour - time.Second)
		b.sweep()
		if !b.objectExists(key) {
			t.Fatal("object deleted before the confirm deadline")
		}
		b.clock.Advance(time.Second)
		b.sweep()
		if b.objectExists(key) {
			t.Error("the reaper left the uploaded object")
		}
		c, err := b.s.meta.Claim(context.Background(), u.ID)
		if err != nil || c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonNeverConfirmed {
			t.Fatalf("claim = %+v, %v", c, err)
		}
		if n, _ := b.s.meta.Namespace(context.Background(), "up"); n.ReservedBytes != 0 || n.UsedBytes != 0 {
			t.Errorf("after reaping: %+v", n)
		}
		_, err = b.s.ConfirmUpload(context.Background(), u.ID)
		wantGone(t, err, claimcheck.ReasonNeverConfirmed)
	})
}

func TestUploadConfirmAfterDeadlineWithoutSweep(t *testing.T) {
	b := setupUploads(t, false)
	data := randData(t, 100)
	u := b.mustInit("up", data)
	b.mustSend(u, data)
	b.clock.Advance(time.Hour)
	// Nobody swept: confirm finishes the due claim itself and answers gone.
	_, err := b.s.ConfirmUpload(context.Background(), u.ID)
	wantGone(t, err, claimcheck.ReasonNeverConfirmed)
}

// TestUploadConfirmRacesReaper runs confirm and the reaper at the same
// time, many times over: exactly one of them wins each upload, and the
// reservation is refunded or turned into usage exactly once (the drift
// check at the end).
func TestUploadConfirmRacesReaper(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 25
	}
	uploadBackends(t, func(t *testing.T, b *upBundle) {
		ctx := context.Background()
		confirmed, reaped := 0, 0
		var keys []string
		for i := range rounds {
			data := randData(t, 2000+i)
			u := b.mustInit("long", data)
			b.mustSend(u, data)
			keys = append(keys, b.key(u.ID))
			b.clock.Advance(time.Hour - time.Nanosecond)
			var (
				wg         sync.WaitGroup
				ref        claimcheck.Ref
				confirmErr error
			)
			select {
			case <-b.opened: // left over from the previous round
			default:
			}
			confirmDone := make(chan struct{})
			wg.Go(func() {
				defer close(confirmDone)
				ref, confirmErr = b.s.ConfirmUpload(ctx, u.ID)
			})
			wg.Go(func() {
				// Every other round the reaper goes once confirm reads
				// the object, so it races confirm's commit; otherwise at
				// once, racing confirm's load.
				if i%2 == 0 {
					select {
					case <-b.opened:
					case <-confirmDone:
					}
				}
				b.clock.Advance(time.Nanosecond) // the deadline passes now
				if _, err := b.s.SweepOnce(ctx, 0); err != nil {
					t.Errorf("sweep: %v", err)
				}
			})
			wg.Wait()
			c, err := b.s.meta.Claim(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case confirmErr == nil:
				confirmed++
				if c.State != meta.ClaimActive || ref.ID != u.ID {
					t.Fatalf("round %d: confirm won, but the claim is %s (%s)", i, c.State, c.DeleteReason)
				}
			case errors.Is(confirmErr, claimcheck.ErrGone):
				reaped++
				wantGone(t, confirmErr, claimcheck.ReasonNeverConfirmed)
				if c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonNeverConfirmed {
					t.Fatalf("round %d: confirm lost, but the claim is %s", i, c.State)
				}
			default:
				t.Fatalf("round %d: confirm: %v", i, confirmErr)
			}
		}
		b.sweep()
		// Every reaped upload's object is gone, every confirmed one's is
		// there.
		objects := 0
		for _, k := range keys {
			if b.objectExists(k) {
				objects++
			}
		}
		if objects != confirmed {
			t.Errorf("%d objects left for %d confirmed uploads", objects, confirmed)
		}
		n, _ := b.s.meta.Namespace(ctx, "long")
		if n.ReservedBytes != 0 || n.ActiveClaims != int64(confirmed) || n.PendingClaims != 0 {
			t.Errorf("namespace after the races: %+v (confirmed %d)", n, confirmed)
		}
		t.Logf("%d rounds: confirm won %d, reaper won %d", rounds, confirmed, reaped)
	})
}

func TestUploadTokenRejected(t *testing.T) {
	b := setupUploads(t, false)
	data := randData(t, 1000)
	u := b.mustInit("up", data)
	key := b.key(u.ID)
	// The engine answers a token, never an HTTP request: URLs are the
	// server's business.
	if u.Token == "" || u.URL != "" || u.Method != "" || u.Headers != nil {
		t.Fatalf("file storage answered %+v; want a token and no URL", u)
	}
	field := func(i int, v string) claimcheck.Upload {
		f := strings.Split(u.Token, ".")
		f[i] = v
		bad := u
		bad.Token = strings.Join(f, ".")
		return bad
	}
	sig := strings.Split(u.Token, ".")[3]
	other := b.mustInit("up", data)
	elsewhere := setupUploads(t, false) // another store: another key
	foreign := elsewhere.mustInit("up", data)
	cases := map[string]struct {
		up   claimcheck.Upload
		says string
	}{
		"signature altered":      {field(3, strings.Repeat("A", len(sig))), "signature does not match"},
		"expiry extended":        {field(2, fmt.Sprint(upT0.Add(50*time.Minute).Unix())), "signature does not match"},
		"upload id changed":      {field(1, other.ID), "signature does not match"},
		"another version":        {field(0, "u2"), "malformed"},
		"no token":               {claimcheck.Upload{ID: u.ID}, "no upload token"},
		"not a token":            {claimcheck.Upload{ID: u.ID, Token: "garbage"}, "malformed"},
		"oversized token":        {claimcheck.Upload{ID: u.ID, Token: u.Token + strings.Repeat("A", 300)}, "malformed"},
		"another upload's token": {claimcheck.Upload{ID: u.ID, Token: other.Token}, "is for upload " + other.ID + ", not " + u.ID},
		"another store's token":  {claimcheck.Upload{ID: foreign.ID, Token: foreign.Token}, "issued by another store"},
	}
	for name, tc := range cases {
		err := b.send(tc.up, data)
		if !errors.Is(err, claimcheck.ErrPermissionDenied) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: PUT = %v, want permission denied saying %q", name, err, tc.says)
		}
		if err != nil && strings.Contains(err.Error(), sig) {
			t.Errorf("%s: the refusal quotes the token's signature: %v", name, err)
		}
	}
	b.clock.Advance(15 * time.Minute) // url_ttl
	err := b.send(u, data)
	if !errors.Is(err, claimcheck.ErrPermissionDenied) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("PUT with an expired token = %v", err)
	}
	if b.objectExists(key) {
		t.Error("a rejected PUT wrote the object")
	}
	// A fresh token for the same upload: init again with the key (below
	// in TestUploadIdempotencyKey); here the reaper takes it.
	b.clock.Advance(time.Hour)
	b.sweep()
}

// TestUploadTokenAcceptedByReplica: the token's key lives in the
// metadata database, so another store on the same database (a replica
// behind the same load balancer) accepts what this one issued.
func TestUploadTokenAcceptedByReplica(t *testing.T) {
	b := setupUploads(t, false)
	ctx := context.Background()
	data := randData(t, 2000)
	u := b.mustInit("up", data)
	replica, err := Open(ctx, Config{
		Data: t.TempDir(), Clock: b.clock, MetaStore: b.s.meta, BlobStore: b.s.blobs,
		Namespaces: map[string]claimcheck.Policy{"up": {}},
		Sweeper:    sweep.Config{Disabled: true}, Logger: slog.New(slog.DiscardHandler),
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	if err := replica.ReceiveUpload(ctx, u.ID, u.Token, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatalf("PUT to a replica: %v", err)
	}
	if _, err := b.s.ConfirmUpload(ctx, u.ID); err != nil {
		t.Fatalf("confirm on the first store after a PUT to the replica: %v", err)
	}
}

func TestUploadBadBodies(t *testing.T) {
	b := setupUploads(t, false)
	ctx := context.Background()
	data := randData(t, 4096)
	u := b.mustInit("up", data)
	key := b.key(u.ID)
	receive := func(body []byte, contentLength int64) error {
		return b.s.ReceiveUpload(ctx, u.ID, u.Token, contentLength, bytes.NewReader(body))
	}
	longer := append(append([]byte(nil), data...), 'x')
	altered := append([]byte(nil), data...)
	altered[100] ^= 1
	for _, tc := range []struct {
		name          string
		body          []byte
		contentLength int64
		want          error
	}{
		{"larger than declared", longer, int64(len(longer)), claimcheck.ErrTooLarge},
		{"larger, streamed without length", longer, -1, claimcheck.ErrTooLarge},
		{"shorter than declared", data[:4000], 4000, claimcheck.ErrInvalidArgument},
		{"other bytes", altered, int64(len(altered)), claimcheck.ErrChecksumMismatch},
	} {
		if err := receive(tc.body, tc.contentLength); !errors.Is(err, tc.want) {
			t.Errorf("%s: PUT = %v, want %v", tc.name, err, tc.want)
		}
		if b.objectExists(key) {
			t.Fatalf("%s: a refused PUT left an object", tc.name)
		}
	}
	if err := receive(data, -1); err != nil {
		t.Fatalf("good PUT after bad ones: %v", err)
	}
	if _, err := b.s.ConfirmUpload(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
}

// TestUploadMismatchOnConfirm writes the object around the URL (as a
// backend that does not check checksums would let a client do): confirm
// refuses, names both values, and keeps the reservation for a retry.
func TestUploadMismatchOnConfirm(t *testing.T) {
	b := setupUploads(t, false)
	ctx := context.Background()
	data := randData(t, 2048)
	u := b.mustInit("up", data)
	write := func(body []byte) {
		w, err := b.s.blobs.NewWriter(ctx, b.key(u.ID))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(data[:2000])
	_, err := b.s.ConfirmUpload(ctx, u.ID)
	if !errors.Is(err, claimcheck.ErrChecksumMismatch) || !strings.Contains(err.Error(), "has 2000 bytes, 2048 were declared") {
		t.Fatalf("confirm of a short object = %v", err)
	}
	other := randData(t, 2048)
	write(other)
	_, err = b.s.ConfirmUpload(ctx, u.ID)
	if !errors.Is(err, claimcheck.ErrChecksumMismatch) || !strings.Contains(err.Error(), claimcheck.DigestOf(other)) || !strings.Contains(err.Error(), claimcheck.DigestOf(data)) {
		t.Fatalf("confirm of other bytes = %v", err)
	}
	if n, _ := b.s.meta.Namespace(ctx, "up"); n.ReservedBytes != 2048 || n.PendingClaims != 1 {
		t.Errorf("after failed confirms: %+v; the reservation must stay", n)
	}
	b.mustSend(u, data)
	if _, err := b.s.ConfirmUpload(ctx, u.ID); err != nil {
		t.Fatalf("confirm after a good PUT: %v", err)
	}
}

func TestUploadIdempotencyKey(t *testing.T) {
	b := setupUploads(t, false)
	ctx := context.Background()
	data := randData(t, 700)
	first, err := b.init("up", data, "order-17")
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(20 * time.Minute) // the first URL has expired
	again, err := b.init("up", data, "order-17")
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || again.URL+again.Token == first.URL+first.Token || !again.ExpiresAt.After(first.ExpiresAt) {
		t.Errorf("same key: %+v, first %+v; want the same upload with a fresh URL or token", again, first)
	}
	if _, err := b.init("up", randData(t, 700), "order-17"); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("same key, other digest = %v, want invalid argument", err)
	}
	if other, err := b.init("up", data, "order-18"); err != nil || other.ID == first.ID {
		t.Errorf("another key = %+v, %v", other, err)
	}
	if _, err := b.init("up", data, "bad key"); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("key with a space = %v", err)
	}
	b.mustSend(again, data)
	if _, err := b.s.ConfirmUpload(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	done, err := b.init("up", data, "order-17")
	if err != nil || done.ID != first.ID || done.State != claimcheck.StateActive || done.URL != "" || done.Token != "" {
		t.Errorf("same key after confirm = %+v, %v", done, err)
	}
	if n := counterValue(t, b.s.metrics.uploadsStarted.WithLabelValues("up")); n != 2 {
		t.Errorf("uploads started = %v, want 2 (order-17 once, order-18)", n)
	}
	b.clock.Advance(time.Hour)
	b.sweep()
}

func TestUploadIdempotencyConcurrent(t *testing.T) {
	b := setupUploads(t, false)
	data := randData(t, 100)
	ids := make([]string, 10)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			u, err := b.init("up", data, "same")
			if err != nil {
				t.Errorf("init: %v", err)
			}
			ids[i] = u.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent inits with one key got different uploads: %v", ids)
		}
	}
	if n, _ := b.s.meta.Namespace(context.Background(), "up"); n.ReservedBytes != 100 || n.PendingClaims != 1 {
		t.Errorf("after concurrent inits: %+v; the losers must refund", n)
	}
}

func TestUploadOverQuota(t *testing.T) {
	b := setupUploads(t, false)
	ok := b.mustInit("quota", randData(t, 600))
	_, err := b.init("quota", randData(t, 600), "")
	if !errors.Is(err, claimcheck.ErrQuotaExceeded) {
		t.Fatalf("init over quota = %v", err)
	}
	for _, want := range []string{"quota of 1000 bytes", "reserved 600", "requested 600"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := b.init("tiny", randData(t, 2048), ""); !errors.Is(err, claimcheck.ErrTooLarge) {
		t.Errorf("init over max_size = %v", err)
	}
	if _, err := b.s.InitUpload(context.Background(), "up", claimcheck.UploadRequest{Size: 10}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("init without a digest = %v", err)
	}
	// The reaper refunds the reservation, and then it fits.
	b.clock.Advance(time.Hour)
	b.sweep()
	if _, err := b.init("quota", randData(t, 600), ""); err != nil {
		t.Errorf("init after the refund: %v", err)
	}
	_ = ok
}

// TestUploadDedup confirms an upload of bytes the namespace already
// holds: the claim shares the existing blob and the uploaded object is
// collected.
func TestUploadDedup(t *testing.T) {
	b := setupUploads(t, false)
	ctx := context.Background()
	data := randData(t, 3000)
	first, err := b.s.Put(ctx, "up", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.track(first.ID)
	u := b.mustInit("up", data)
	b.mustSend(u, data)
	key := b.key(u.ID)
	ref, err := b.s.ConfirmUpload(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Compression != first.Compression || ref.StoredSize != first.StoredSize {
		t.Errorf("deduplicated ref = %+v, first %+v", ref, first)
	}
	b.sweep()
	if b.objectExists(key) {
		t.Error("the uploaded object of a dedup hit was not collected")
	}
	p, err := b.s.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem: %v", err)
	}
}

func counterValue(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}
