package claimstest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Direct uploads (claimcheck.Uploads): init, a plain HTTP PUT of the
// bytes to the URL, confirm.

// testUploads runs the happy path: the upload's description, an
// idempotent init, the PUT, a confirm after the URL expired, an
// idempotent confirm.
func testUploads(t *testing.T, e *env) {
	e.start(t)
	up := e.uploads(t)
	ctx := t.Context()
	data := randomBytes(48 << 10)
	req := claimcheck.UploadRequest{
		Size: int64(len(data)), Digest: claimcheck.DigestOf(data), ContentType: "image/png",
		Labels: map[string]string{"from": "browser"}, Consumers: 2, IdempotencyKey: "k1",
	}
	start := e.now()
	u, err := up.InitUpload(ctx, "orders", req)
	if err != nil {
		t.Fatalf("InitUpload: %v", err)
	}
	if !claimcheck.ValidClaimID(u.ID) || u.Namespace != "orders" || u.State != claimcheck.StatePending ||
		u.Size != req.Size || u.Digest != req.Digest || u.URL == "" || u.Method != http.MethodPut {
		t.Fatalf("upload = %+v", u)
	}
	wantTime(t, "confirm by (+ confirm_within)", u.ConfirmBy, start.Add(claimcheck.DefaultConfirmWithin.D()))
	wantTime(t, "URL expires at (+ url_ttl)", u.ExpiresAt, start.Add(claimcheck.DefaultURLTTL.D()))

	// The pending claim is not redeemable yet.
	_, err = e.c().Redeem(ctx, claimcheck.Ref{ID: u.ID})
	wantErr(t, "redeem of a pending upload", err, claimcheck.ErrNotFound)
	_, err = up.ConfirmUpload(ctx, u.ID)
	wantErr(t, "confirm before the PUT", err, claimcheck.ErrInvalidArgument)

	e.advance(time.Minute)
	again, err := up.InitUpload(ctx, "orders", req)
	if err != nil || again.ID != u.ID || again.State != claimcheck.StatePending || again.URL == "" {
		t.Fatalf("init with the same idempotency key = %+v, %v; want the same upload", again, err)
	}
	wantTime(t, "confirm by of the repeated init", again.ConfirmBy, u.ConfirmBy)
	other := req
	other.Size++
	_, err = up.InitUpload(ctx, "orders", other)
	wantErr(t, "init with the same key and another size", err, claimcheck.ErrInvalidArgument)

	// Other bytes than declared are refused by whoever takes the PUT.
	altered := append([]byte(nil), data...)
	altered[len(altered)/2] ^= 1
	if e.h.UploadsTakeAnyBytes {
		// The storage takes them; confirm hashes them, refuses them and
		// deletes them, so that the right bytes can be sent next.
		e.mustSend(t, u, altered)
		_, err = up.ConfirmUpload(ctx, u.ID)
		wantErr(t, "confirm after a PUT of other bytes", err, claimcheck.ErrChecksumMismatch)
	} else if err := e.send(t, u, altered); err == nil {
		t.Fatal("a PUT of other bytes than declared was taken")
	}
	_, err = up.ConfirmUpload(ctx, u.ID)
	wantErr(t, "confirm after a refused PUT", err, claimcheck.ErrInvalidArgument)

	e.mustSend(t, u, data)
	e.advance(20 * time.Minute) // past the URL's expiry: confirm does not need it
	ref, err := up.ConfirmUpload(ctx, u.ID)
	if err != nil {
		t.Fatalf("ConfirmUpload: %v", err)
	}
	if ref.ID != u.ID || ref.Namespace != "orders" || ref.Size != req.Size || ref.Digest != req.Digest {
		t.Errorf("ref = %+v", ref)
	}
	wantTime(t, "expires_at (init + max_age)", ref.ExpiresAt, start.Add(claimcheck.DefaultMaxAge.D()))
	p, err := e.c().Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Bytes()
	if err != nil || string(got) != string(data) || p.ContentType != "image/png" {
		t.Fatalf("redeem: %d bytes, %v, content type %q", len(got), err, p.ContentType)
	}
	if info := e.stat(t, ref); info.Consumers != 2 || info.Labels["from"] != "browser" || info.State != claimcheck.StateActive {
		t.Errorf("stat of the confirmed upload: %+v", info)
	}
	// Confirm is idempotent: a retry after a lost answer gets the ref.
	if again, err := up.ConfirmUpload(ctx, u.ID); err != nil || !sameRef(again, ref) {
		t.Errorf("second confirm = %+v, %v; want %+v", again, err, ref)
	}
	// An init with the key of a confirmed upload describes it, URL-less.
	if done, err := up.InitUpload(ctx, "orders", req); err != nil || done.ID != u.ID || done.State != claimcheck.StateActive || done.URL != "" {
		t.Errorf("init with the key of a confirmed upload = %+v, %v", done, err)
	}
	// A PUT after confirm never changes the claim: a URL served by the
	// store no longer takes bytes; a presigned one only ever writes these
	// very bytes (its checksum is signed).
	_ = e.send(t, u, data)
	e.wantRedeem(t, ref, data)

	_, err = up.ConfirmUpload(ctx, unknownID)
	wantErr(t, "confirm of an unknown upload", err, claimcheck.ErrNotFound)
	_, err = up.ConfirmUpload(ctx, "nonsense")
	wantErr(t, "confirm of a malformed id", err, claimcheck.ErrInvalidArgument)
}

// testUploadErrors: the errors of init, as sentinel errors.
func testUploadErrors(t *testing.T, e *env) {
	e.start(t)
	up := e.uploads(t)
	ctx := t.Context()
	data := randomBytes(600)
	req := claimcheck.UploadRequest{Size: 600, Digest: claimcheck.DigestOf(data)}
	if _, err := up.InitUpload(ctx, "quota", req); err != nil {
		t.Fatal(err)
	}
	// The reservation counts against the quota before any byte arrives.
	_, err := up.InitUpload(ctx, "quota", claimcheck.UploadRequest{Size: 600, Digest: claimcheck.DigestOf(randomBytes(600))})
	wantErr(t, "init over the quota", err, claimcheck.ErrQuotaExceeded)
	if !strings.Contains(err.Error(), "1000") {
		t.Errorf("error %q does not name the limit", err)
	}
	if nr, ok := e.c().(claimcheck.Admin); ok {
		info, err := nr.Namespace(ctx, "quota")
		if err != nil || info.Usage.ReservedBytes != 600 || info.Usage.PendingClaims != 1 || info.Usage.UsedBytes != 0 {
			t.Errorf("usage with one pending upload: %+v, %v", info.Usage, err)
		}
	}
	_, err = up.InitUpload(ctx, "small", claimcheck.UploadRequest{Size: 1 << 20, Digest: claimcheck.DigestOf(nil)})
	wantErr(t, "init over max_size", err, claimcheck.ErrTooLarge)
	for _, bad := range []claimcheck.UploadRequest{
		{Size: 1, Digest: "sha256:xyz"},
		{Size: 1},
		{Size: -1, Digest: claimcheck.DigestOf(nil)},
		{Size: 1, Digest: claimcheck.DigestOf(nil), Consumers: -1},
	} {
		_, err := up.InitUpload(ctx, "orders", bad)
		wantErr(t, fmt.Sprintf("init of %+v", bad), err, claimcheck.ErrInvalidArgument)
	}
	_, err = up.InitUpload(ctx, "Not/A/Namespace", req)
	wantErr(t, "init in a malformed namespace", err, claimcheck.ErrInvalidArgument)
}

// testGoneNeverConfirmed: an upload not confirmed by its deadline is gone
// as never_confirmed, even when its bytes arrived, and its reservation is
// given back.
func testGoneNeverConfirmed(t *testing.T, e *env) {
	e.start(t)
	up := e.uploads(t)
	ctx := t.Context()
	data := randomBytes(600)
	req := claimcheck.UploadRequest{Size: 600, Digest: claimcheck.DigestOf(data)}
	u, err := up.InitUpload(ctx, "quota", req)
	if err != nil {
		t.Fatal(err)
	}
	e.mustSend(t, u, data)
	never, err := up.InitUpload(ctx, "orders", claimcheck.UploadRequest{Size: 3, Digest: claimcheck.DigestOf([]byte("abc"))})
	if err != nil {
		t.Fatal(err)
	}
	e.advance(claimcheck.DefaultConfirmWithin.D())
	_, err = up.ConfirmUpload(ctx, u.ID)
	wantGone(t, "confirm after the deadline", err, claimcheck.ReasonNeverConfirmed)
	// The reservation was refunded in the same step: the next init fits.
	if _, err := up.InitUpload(ctx, "quota", req); err != nil {
		t.Errorf("init after the refund: %v", err)
	}
	e.sweep(t)
	for _, id := range []string{u.ID, never.ID} {
		_, err := e.c().Redeem(ctx, claimcheck.Ref{ID: id})
		wantGone(t, "redeem of an upload never confirmed", err, claimcheck.ReasonNeverConfirmed)
		e.wantFinished(t, claimcheck.Ref{ID: id}, claimcheck.ReasonNeverConfirmed)
	}
	_, err = up.ConfirmUpload(ctx, never.ID)
	wantGone(t, "confirm of a reaped upload", err, claimcheck.ReasonNeverConfirmed)
}
