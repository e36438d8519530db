package claimstest

import (
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// The reasons a claim is gone for that only need the Claims interface
// and the clock. Deleted is in testStatReleaseDelete, never_confirmed
// with the uploads, key_destroyed with the key capabilities.

// testGoneExpired: a claim is redeemable until max_age, and expired from
// then on, with or without a sweep.
func testGoneExpired(t *testing.T, e *env) {
	e.start(t)
	data := []byte("brief")
	ref := e.put(t, "short", data, claimcheck.PutOptions{})
	swept := e.put(t, "short", []byte("brief, swept"), claimcheck.PutOptions{})
	start := e.now()
	e.advance(59 * time.Minute)
	e.wantRedeem(t, ref, data)
	e.advance(time.Minute)
	e.sweep(t)
	for _, r := range []claimcheck.Ref{ref, swept} {
		_, err := e.redeem(t, r)
		gone := wantGoneError(t, "redeem at max_age", err, claimcheck.ReasonExpired)
		wantTime(t, "expired at", gone.At, start.Add(time.Hour))
		e.wantFinished(t, r, claimcheck.ReasonExpired)
	}
	if info := e.stat(t, swept); info.Reads != 0 {
		t.Errorf("a claim never read: reads %d", info.Reads)
	}
	// Nothing brings an expired claim back.
	wantGone(t, "release after expiry", e.c().Release(t.Context(), ref, ""), claimcheck.ReasonExpired)
	if err := e.c().Delete(t.Context(), ref); err != nil {
		t.Errorf("delete of an expired claim: %v, want nil", err)
	}
	e.wantFinished(t, ref, claimcheck.ReasonExpired)
}

// testGoneReleased: once every consumer released a claim it lives on for
// retention_after_read (redelivery), then it is gone as released; a
// repeated ack stays idempotent.
func testGoneReleased(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	data := JSONDoc(4<<10, 20)
	ref := e.put(t, "keep", data, claimcheck.PutOptions{ConsumerNames: []string{"billing", "mailer"}})
	for _, c := range []string{"billing", "mailer"} {
		e.advance(time.Minute)
		if err := e.c().Release(ctx, ref, c); err != nil {
			t.Fatalf("release %s: %v", c, err)
		}
	}
	released := e.now()
	wantTime(t, "delete_at after the last release", e.stat(t, ref).DeleteAt, released.Add(5*time.Minute))
	e.advance(5*time.Minute - time.Second)
	e.wantRedeem(t, ref, data)
	e.advance(time.Second)
	_, err := e.redeem(t, ref)
	gone := wantGoneError(t, "redeem after the retention window", err, claimcheck.ReasonReleased)
	wantTime(t, "released at", gone.At, released.Add(5*time.Minute))
	info := e.wantFinished(t, ref, claimcheck.ReasonReleased)
	if info.Releases != 2 {
		t.Errorf("releases of the finished claim: %d", info.Releases)
	}
	if err := e.c().Release(ctx, ref, "billing"); err != nil {
		t.Errorf("a repeated release of a released claim: %v, want nil", err)
	}
}

// testGoneReadRetention: with delete_after_read, the first read opens a
// redelivery window that later reads do not extend; then the claim is
// gone as read_retention_over.
func testGoneReadRetention(t *testing.T, e *env) {
	e.start(t)
	data := JSONDoc(4<<10, 21)
	ref := e.put(t, "dar", data, claimcheck.PutOptions{})
	e.advance(time.Minute)
	first := e.now()
	e.wantRedeem(t, ref, data)
	wantTime(t, "delete_at after the first read", e.stat(t, ref).DeleteAt, first.Add(5*time.Minute))
	e.advance(5*time.Minute - time.Second) // a redelivery inside the window
	e.wantRedeem(t, ref, data)
	info := e.stat(t, ref)
	wantTime(t, "delete_at after a later read", info.DeleteAt, first.Add(5*time.Minute))
	if info.Reads != 2 {
		t.Errorf("reads %d, want 2", info.Reads)
	}
	e.advance(time.Second)
	_, err := e.redeem(t, ref)
	wantGone(t, "redeem after the window", err, claimcheck.ReasonReadRetention)
	e.wantFinished(t, ref, claimcheck.ReasonReadRetention)

	// An unread claim is not affected by the window: it expires.
	unread := e.put(t, "dar", []byte("never read"), claimcheck.PutOptions{})
	e.advance(claimcheck.DefaultMaxAge.D())
	e.sweep(t)
	e.wantFinished(t, unread, claimcheck.ReasonExpired)
}
