package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

func init() {
	testNamespaces["upquota"] = claimcheck.Policy{Quota: claimcheck.Quota{Bytes: 1000}}
}

// TestUploadOverHTTP runs the direct-upload flow the way a browser would:
// init through the API, a plain PUT of the bytes to the URL it answers,
// confirm; and the errors of each step, as sentinel errors on this side
// of the wire.
func TestUploadOverHTTP(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	data := randomBytes(t, 200<<10)
	req := claimcheck.UploadRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data), ContentType: "image/png", IdempotencyKey: "k1"}
	u, err := b.client.InitUpload(ctx, "media", req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u.URL, b.http.URL+"/v1/uploads/"+u.ID+"/data?") || u.State != claimcheck.StatePending {
		t.Fatalf("upload = %+v", u)
	}
	again, err := b.client.InitUpload(ctx, "media", req)
	if err != nil || again.ID != u.ID {
		t.Fatalf("init with the same Idempotency-Key = %+v, %v", again, err)
	}

	// Bad PUTs are refused, with the store's errors.
	altered := append([]byte(nil), data...)
	altered[0] ^= 1
	if err := b.client.SendUpload(ctx, u, bytes.NewReader(altered)); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Errorf("PUT of other bytes = %v", err)
	}
	tampered := u
	tampered.URL = strings.Replace(u.URL, "token=", "token=x", 1)
	if err := b.client.SendUpload(ctx, tampered, bytes.NewReader(data)); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("PUT to a tampered URL = %v", err)
	}
	resp, err := http.Post(b.http.URL+"/v1/uploads/"+u.ID+"/confirm", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("confirm before the PUT answered %d, want 400", resp.StatusCode)
	}
	longer := append(append([]byte(nil), data...), 1, 2, 3)
	hr, _ := http.NewRequest(http.MethodPut, u.URL, bytes.NewReader(longer))
	resp, err = http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT of more than declared answered %d, want 413", resp.StatusCode)
	}

	if err := b.client.SendUpload(ctx, u, bytes.NewReader(data)); err != nil {
		t.Fatalf("SendUpload: %v", err)
	}
	ref, err := b.client.ConfirmUpload(ctx, u.ID)
	if err != nil {
		t.Fatalf("ConfirmUpload: %v", err)
	}
	if ref.ID != u.ID || ref.Digest != req.Digest {
		t.Errorf("ref = %+v", ref)
	}
	p, err := b.client.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) || p.ContentType != "image/png" {
		t.Fatalf("redeem: %v, content type %q", err, p.ContentType)
	}

	if _, err := b.client.ConfirmUpload(ctx, "cc_AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("confirm of an unknown upload = %v", err)
	}
}

func TestUploadOverHTTPErrors(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	data := randomBytes(t, 600)
	req := claimcheck.UploadRequest{Size: 600, Digest: claimcheck.DigestOf(data)}
	u, err := b.client.InitUpload(ctx, "upquota", req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.client.InitUpload(ctx, "upquota", req)
	if !errors.Is(err, claimcheck.ErrQuotaExceeded) || !strings.Contains(err.Error(), "quota of 1000 bytes") || !strings.Contains(err.Error(), "reserved 600") {
		t.Errorf("init over quota = %v", err)
	}
	if _, err := b.client.InitUpload(ctx, "upquota", claimcheck.UploadRequest{Size: 1, Digest: "sha256:xyz"}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("init with a bad sha256 = %v", err)
	}
	if err := b.client.SendUpload(ctx, u, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Hour)
	_, err = b.client.ConfirmUpload(ctx, u.ID)
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonNeverConfirmed {
		t.Errorf("confirm after the deadline = %v, want gone (never_confirmed)", err)
	}
	// The reservation was refunded in the same step: the next init fits.
	if _, err := b.client.InitUpload(ctx, "upquota", req); err != nil {
		t.Errorf("init after the refund: %v", err)
	}
}

// TestUploadConcurrentInitsQuota checks that concurrent inits contending
// for one namespace's quota are never over-admitted.
func TestUploadConcurrentInitsQuota(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	const n = 20
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
	)
	for i := range n {
		wg.Go(func() {
			data := []byte(strings.Repeat(string(rune('a'+i)), 300))
			_, err := b.client.InitUpload(ctx, "upquota", claimcheck.UploadRequest{Size: 300, Digest: claimcheck.DigestOf(data)})
			switch {
			case err == nil:
				mu.Lock()
				admitted++
				mu.Unlock()
			case !errors.Is(err, claimcheck.ErrQuotaExceeded):
				t.Errorf("init: %v", err)
			}
		})
	}
	wg.Wait()
	if admitted != 3 {
		t.Errorf("%d of %d inits of 300 bytes admitted under a quota of 1000 bytes, want 3", admitted, n)
	}
}
