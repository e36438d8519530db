package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/cutbody"
)

// dropProxy forwards to the server and drops the connection of the next
// PATCH after dropAfter bytes of its body (when set): the client's
// request fails without an answer, the server sees a short body. It
// records each request's method.
type dropProxy struct {
	mu        sync.Mutex
	dropAfter int64
	methods   []string
}

func (d *dropProxy) start(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.methods = append(d.methods, r.Method)
		if r.Method == http.MethodPatch && d.dropAfter > 0 {
			r.Body = &cutbody.Body{ReadCloser: r.Body, Left: d.dropAfter}
			d.dropAfter = 0
		}
		d.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A resumable upload goes on after a dropped connection by itself; one
// whose process stopped goes on with ResumeUpload from the saved URL;
// the reference comes with the last chunk and from a later status; the
// bytes redeem equal and the quota is counted once.
func TestResumableUpload(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	dp := &dropProxy{}
	c, err := client.New(dp.start(t, b.http.URL))
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 5<<20+123)
	opts := client.ResumableOptions{ChunkSize: 1 << 20, ContentType: "video/mp4"}

	t.Run("dropped once", func(t *testing.T) {
		dp.mu.Lock()
		dp.dropAfter = 300 << 10
		dp.mu.Unlock()
		var offsets []int64
		o := opts
		o.Progress = func(off, size int64) { offsets = append(offsets, off) }
		ref, err := c.UploadResumable(ctx, "raw", bytes.NewReader(data), int64(len(data)), o)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Size != int64(len(data)) || ref.Digest != claimcheck.DigestOf(data) || ref.Namespace != "raw" {
			t.Fatalf("ref %+v", ref)
		}
		if offsets[len(offsets)-1] != int64(len(data)) {
			t.Fatalf("progress %v", offsets)
		}
		dp.mu.Lock()
		methods := dp.methods
		dp.methods = nil
		dp.mu.Unlock()
		heads := 0
		for _, m := range methods {
			if m == http.MethodHead {
				heads++
			}
		}
		if methods[0] != http.MethodPost || methods[1] != http.MethodPatch || heads != 1 {
			t.Fatalf("requests %v: want a POST, PATCHes, and one HEAD after the drop", methods)
		}
		b.redeemEqual(t, ref, data)
	})

	t.Run("resumed from the saved URL", func(t *testing.T) {
		data := randomBytes(t, 3<<20)
		cctx, cancel := context.WithCancel(ctx)
		var saved string
		o := opts
		o.Created = func(u string) error { saved = u; return nil }
		o.Progress = func(off, size int64) {
			if off >= 1<<20 {
				cancel() // the process ends after the first chunk
			}
		}
		if _, err := c.UploadResumable(cctx, "raw", bytes.NewReader(data), int64(len(data)), o); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled upload = %v", err)
		}
		st, err := c.ResumableUpload(ctx, saved)
		if err != nil || st.Offset != 1<<20 || st.Size != int64(len(data)) || st.Ref != nil || st.ExpiresAt.IsZero() ||
			st.State != claimcheck.StatePending || st.Digest != claimcheck.DigestOf(data) || st.ContentType != "video/mp4" {
			t.Fatalf("status after one chunk = %+v, %v", st, err)
		}
		o = opts
		o.Digest = claimcheck.DigestOf(data)
		ref, err := c.ResumeUpload(ctx, saved, bytes.NewReader(data), int64(len(data)), o)
		if err != nil {
			t.Fatal(err)
		}
		b.redeemEqual(t, ref, data)
		// Done: the status answers the reference, and resuming again
		// answers it without sending a byte.
		st, err = c.ResumableUpload(ctx, saved)
		if err != nil || st.Ref == nil || st.Ref.ID != ref.ID || st.State != claimcheck.StateActive || st.ID != ref.ID {
			t.Fatalf("status after completion = %+v, %v", st, err)
		}
		again, err := c.ResumeUpload(ctx, saved, bytes.NewReader(data), int64(len(data)), o)
		if err != nil || again.ID != ref.ID {
			t.Fatalf("resuming a complete upload = %+v, %v", again, err)
		}
	})

	t.Run("wrong digest", func(t *testing.T) {
		before := b.usage(t, "raw")
		o := opts
		o.Digest = claimcheck.DigestOf([]byte("other bytes"))
		_, err := c.UploadResumable(ctx, "raw", bytes.NewReader(data), int64(len(data)), o)
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("upload with a wrong digest = %v", err)
		}
		// The refused upload's claim finished: counted once, the quota
		// figures as they were.
		before.FinishedClaims++
		if after := b.usage(t, "raw"); after != before {
			t.Fatalf("usage %+v after a refused upload, was %+v", after, before)
		}
	})

	t.Run("abort", func(t *testing.T) {
		before := b.usage(t, "raw")
		up, err := c.StartResumable(ctx, "raw", claimcheck.ResumableRequest{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.usage(t, "raw"); got.ReservedBytes != before.ReservedBytes+int64(len(data)) {
			t.Fatalf("usage after start %+v, was %+v: the upload reserves its size", got, before)
		}
		if err := c.AbortResumable(ctx, up.ID); err != nil {
			t.Fatal(err)
		}
		before.FinishedClaims++ // the aborted upload's claim finished
		if after := b.usage(t, "raw"); after != before {
			t.Fatalf("usage %+v after abort, was %+v", after, before)
		}
		if _, err := c.ResumableUpload(ctx, up.ID); !errors.Is(err, claimcheck.ErrGone) {
			t.Fatalf("status of an aborted upload = %v", err)
		}

		// A URL that cannot be kept drops the upload before a byte is sent.
		o := opts
		var saved string
		o.Created = func(u string) error { saved = u; return errors.New("disk full") }
		if _, err := c.UploadResumable(ctx, "raw", bytes.NewReader(data), int64(len(data)), o); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("upload whose Created failed = %v", err)
		}
		if _, err := c.ResumableUpload(ctx, saved); !errors.Is(err, claimcheck.ErrGone) {
			t.Fatalf("status of the upload whose Created failed = %v", err)
		}
		before.FinishedClaims++ // the dropped upload's claim finished
		if after := b.usage(t, "raw"); after != before {
			t.Fatalf("usage %+v after the dropped upload, was %+v", after, before)
		}
	})

	// The contract's calls, by id: one append per request, each chunk
	// checked, the offset the server's.
	t.Run("ResumableUploads", func(t *testing.T) {
		data := randomBytes(t, 300<<10)
		up, err := c.StartResumable(ctx, "raw", claimcheck.ResumableRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
		if err != nil || !claimcheck.ValidClaimID(up.ID) || up.Offset != 0 || up.State != claimcheck.StatePending || up.ExpiresAt.IsZero() {
			t.Fatalf("start = %+v, %v", up, err)
		}
		sum := func(b []byte) claimcheck.ChunkChecksum {
			s := sha256.Sum256(b)
			return claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: s[:]}
		}
		got, err := c.AppendResumable(ctx, up.ID, 0, bytes.NewReader(data[:100<<10]), sum([]byte("other bytes")))
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) || got.Offset != 0 {
			t.Fatalf("append with a wrong chunk checksum = %+v, %v; want ErrChecksumMismatch at offset 0", got, err)
		}
		if got, err = c.AppendResumable(ctx, up.ID, 0, bytes.NewReader(data[:100<<10]), sum(data[:100<<10])); err != nil || got.Offset != 100<<10 {
			t.Fatalf("first append = %+v, %v", got, err)
		}
		if got, err = c.AppendResumable(ctx, up.ID, 0, bytes.NewReader(data[:100<<10]), claimcheck.ChunkChecksum{}); !errors.Is(err, claimcheck.ErrInvalidArgument) || got.Offset != 100<<10 {
			t.Fatalf("append at a stale offset = %+v, %v; want ErrInvalidArgument and the server's offset", got, err)
		}
		// A body of unknown length goes chunked.
		rest := io.MultiReader(bytes.NewReader(data[100<<10:200<<10]), bytes.NewReader(data[200<<10:]))
		got, err = c.AppendResumable(ctx, up.ID, 100<<10, rest, claimcheck.ChunkChecksum{})
		if err != nil || got.State != claimcheck.StateActive || got.Ref == nil || got.Ref.Digest != claimcheck.DigestOf(data) {
			t.Fatalf("last append = %+v, %v", got, err)
		}
		b.redeemEqual(t, *got.Ref, data)
	})

	t.Run("empty", func(t *testing.T) {
		ref, err := c.UploadResumable(ctx, "raw", bytes.NewReader(nil), 0, opts)
		if err != nil || ref.Size != 0 || ref.Digest != claimcheck.DigestOf(nil) {
			t.Fatalf("empty upload = %+v, %v", ref, err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		if _, err := c.UploadResumable(ctx, "Bad NS", bytes.NewReader(data), 10, opts); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("bad namespace = %v", err)
		}
		o := opts
		o.Digest = "md5:abc"
		if _, err := c.UploadResumable(ctx, "raw", bytes.NewReader(data), 10, o); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("bad digest = %v", err)
		}
		if _, err := c.ResumeUpload(ctx, "ftp://x/y", bytes.NewReader(data), 10, opts); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("bad URL = %v", err)
		}
		if _, err := c.ResumableUpload(ctx, "ftp://x/y"); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("bad URL = %v", err)
		}
	})
}

func (b *bundle) redeemEqual(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	p, err := b.client.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := io.ReadAll(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeemed %d bytes (%v), not the %d uploaded", len(got), err, len(data))
	}
}

func (b *bundle) usage(t *testing.T, ns string) claimcheck.NamespaceUsage {
	t.Helper()
	info, err := b.client.Namespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return info.Usage
}
