package claimstest

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Resumable uploads (claimcheck.Uploads): start, appends at the
// offset, completion on the last byte, abort, reaping.

// resumable returns the implementation's resumable uploads or skips.
func (e *env) resumable(t *testing.T) claimcheck.Uploads {
	t.Helper()
	ru, ok := e.c().(claimcheck.Uploads)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Uploads")
	}
	return ru
}

func chunkSum(data []byte) claimcheck.ChunkChecksum {
	s := sha256.Sum256(data)
	return claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: s[:]}
}

// testResumable sends a payload in chunks, one refused for its checksum
// and one from a wrong offset, and redeems what the last one committed;
// the deadline follows the progress.
func testResumable(t *testing.T, e *env) {
	e.start(t)
	ru := e.resumable(t)
	ctx := t.Context()
	data := randomBytes(200 << 10)
	start := e.now()
	u, err := ru.StartResumable(ctx, "plain", claimcheck.ResumableRequest{
		Size: int64(len(data)), Digest: claimcheck.DigestOf(data), ContentType: "video/mp4",
	})
	if err != nil {
		t.Fatalf("StartResumable: %v", err)
	}
	if !claimcheck.ValidClaimID(u.ID) || u.Namespace != "plain" || u.State != claimcheck.StatePending ||
		u.Size != int64(len(data)) || u.Offset != 0 || u.Ref != nil {
		t.Fatalf("started upload = %+v", u)
	}
	wantTime(t, "expires at (+ confirm_within)", u.ExpiresAt, start.Add(claimcheck.DefaultConfirmWithin.D()))
	// The pending claim is not redeemable.
	_, err = e.c().Redeem(ctx, claimcheck.Ref{ID: u.ID})
	wantErr(t, "redeem of a pending upload", err, claimcheck.ErrNotFound)

	e.advance(10 * time.Minute)
	first := data[:64<<10]
	got, err := ru.AppendResumable(ctx, u.ID, 0, bytes.NewReader(first), chunkSum(first))
	if err != nil || got.Offset != int64(len(first)) || got.State != claimcheck.StatePending {
		t.Fatalf("first append = %+v, %v", got, err)
	}
	wantTime(t, "expires at after progress", got.ExpiresAt, e.now().Add(claimcheck.DefaultConfirmWithin.D()))

	second := data[64<<10 : 128<<10]
	_, err = ru.AppendResumable(ctx, u.ID, int64(len(first)), bytes.NewReader(second), chunkSum(first))
	wantErr(t, "append with another chunk's checksum", err, claimcheck.ErrChecksumMismatch)
	_, err = ru.AppendResumable(ctx, u.ID, 0, bytes.NewReader(second), claimcheck.ChunkChecksum{})
	wantErr(t, "append at a stale offset", err, claimcheck.ErrInvalidArgument)
	e.idle()
	st, err := ru.ResumableUpload(ctx, u.ID)
	if err != nil || st.Offset != int64(len(first)) {
		t.Fatalf("upload after refused appends = %+v, %v; want offset %d", st, err, len(first))
	}

	if _, err := ru.AppendResumable(ctx, u.ID, st.Offset, bytes.NewReader(second), claimcheck.ChunkChecksum{}); err != nil {
		t.Fatalf("second append: %v", err)
	}
	rest := data[128<<10:]
	done, err := ru.AppendResumable(ctx, u.ID, 128<<10, bytes.NewReader(rest), chunkSum(rest))
	if err != nil || done.Ref == nil || done.State != claimcheck.StateActive || done.Offset != int64(len(data)) {
		t.Fatalf("last append = %+v, %v; want the committed claim", done, err)
	}
	ref := *done.Ref
	if ref.ID != u.ID || ref.Namespace != "plain" || ref.Size != int64(len(data)) || ref.Digest != claimcheck.DigestOf(data) {
		t.Errorf("ref = %+v", ref)
	}
	e.wantRedeem(t, ref, data)
	if info := e.stat(t, ref); info.ContentType != "video/mp4" {
		t.Errorf("content type %q, want the one declared", info.ContentType)
	}
	again, err := ru.ResumableUpload(ctx, u.ID)
	if err != nil || again.Ref == nil || *again.Ref != ref {
		t.Errorf("upload after completion = %+v, %v; want the same ref", again, err)
	}
	_, err = ru.AppendResumable(ctx, u.ID, int64(len(data)), bytes.NewReader([]byte("x")), claimcheck.ChunkChecksum{})
	if err == nil {
		t.Error("an append to a completed upload was taken")
	}
}

// testResumableErrors: the start is refused like a put; a payload of
// another sha256 than declared is refused on its last byte and leaves
// nothing; an abort drops the upload and its reservation; unknown ids are
// not found.
func testResumableErrors(t *testing.T, e *env) {
	e.start(t)
	ru := e.resumable(t)
	ctx := t.Context()
	_, err := ru.StartResumable(ctx, "small", claimcheck.ResumableRequest{Size: 65<<10 + 1})
	wantErr(t, "start past max_size", err, claimcheck.ErrTooLarge)
	_, err = ru.StartResumable(ctx, "quota", claimcheck.ResumableRequest{Size: 1001})
	wantErr(t, "start past the quota", err, claimcheck.ErrQuotaExceeded)
	_, err = ru.ResumableUpload(ctx, "cc_AAAAAAAAAAAAAAAAAAAAAA")
	wantErr(t, "unknown upload", err, claimcheck.ErrNotFound)

	data := randomBytes(900)
	u, err := ru.StartResumable(ctx, "quota", claimcheck.ResumableRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf([]byte("other"))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ru.AppendResumable(ctx, u.ID, 0, bytes.NewReader(data), claimcheck.ChunkChecksum{})
	wantErr(t, "completing a payload of another sha256", err, claimcheck.ErrChecksumMismatch)
	_, err = ru.ResumableUpload(ctx, u.ID)
	wantErr(t, "the refused upload", err, claimcheck.ErrGone)
	e.wantNothingStored(t, "quota")

	u, err = ru.StartResumable(ctx, "quota", claimcheck.ResumableRequest{Size: int64(len(data))})
	if err != nil {
		t.Fatalf("start after the refund: %v", err)
	}
	if _, err := ru.AppendResumable(ctx, u.ID, 0, bytes.NewReader(data[:100]), claimcheck.ChunkChecksum{}); err != nil {
		t.Fatal(err)
	}
	if err := ru.AbortResumable(ctx, u.ID); err != nil {
		t.Fatalf("AbortResumable: %v", err)
	}
	_, err = ru.AppendResumable(ctx, u.ID, 100, bytes.NewReader(data[100:]), claimcheck.ChunkChecksum{})
	wantErr(t, "append after abort", err, claimcheck.ErrGone)
	if err := ru.AbortResumable(ctx, u.ID); err != nil {
		t.Errorf("second abort = %v, want nil", err)
	}
	e.wantNothingStored(t, "quota")
}

// testGoneResumable: an upload that gets no byte for confirm_within is
// reaped like an unconfirmed direct upload, its reservation refunded.
func testGoneResumable(t *testing.T, e *env) {
	e.start(t)
	ru := e.resumable(t)
	ctx := t.Context()
	data := randomBytes(500)
	u, err := ru.StartResumable(ctx, "quota", claimcheck.ResumableRequest{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ru.AppendResumable(ctx, u.ID, 0, bytes.NewReader(data[:200]), claimcheck.ChunkChecksum{}); err != nil {
		t.Fatal(err)
	}
	e.advance(claimcheck.DefaultConfirmWithin.D() + time.Second)
	e.sweep(t)
	_, err = ru.AppendResumable(ctx, u.ID, 200, bytes.NewReader(data[200:]), claimcheck.ChunkChecksum{})
	wantErr(t, "append after the deadline", err, claimcheck.ErrGone)
	e.wantNothingStored(t, "quota")
}
