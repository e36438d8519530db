package engine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// events returns a claim's audit trail as kind/actor[/reason][/detail].
func (b *bundle) events(t *testing.T, ref claimcheck.Ref) []string {
	t.Helper()
	es, err := b.store.ClaimEvents(context.Background(), ref, claimcheck.EventQuery{})
	if err != nil {
		t.Fatalf("ClaimEvents(%s): %v", ref.ID, err)
	}
	return eventStrings(es)
}

func eventStrings(es []claimcheck.Event) []string {
	var out []string
	for _, e := range es {
		s := e.Kind + "/" + e.Actor
		if e.Reason != "" {
			s += "/" + e.Reason
		}
		if e.Detail != "" {
			s += "/" + e.Detail
		}
		out = append(out, s)
	}
	return out
}

func wantEventList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events %q, want %q", what, got, want)
	}
}

// TestAuditTrailEveryPath: every way a claim is created, read, released
// and finished leaves its event, with the actor of the request (or the
// sweeper for due work).
func TestAuditTrailEveryPath(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	as := func(actor string) context.Context { return claimcheck.WithActor(context.Background(), actor) }
	data := jsonDoc(64 << 10)

	// put, dedup put, redeem, release, expiry.
	ref, err := b.store.Put(as("key-producer"), "keep", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dup, err := b.store.Put(as("key-producer2"), "keep", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.store.Redeem(as("key-consumer"), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bytes(); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Release(as("key-consumer"), ref, "billing"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(25 * time.Hour)
	b.sweep(t)
	wantEventList(t, "released claim", b.events(t, ref),
		"created/key-producer", "redeemed/key-consumer", "first_redeemed/key-consumer", "released/key-consumer/billing", "all_released/key-consumer/billing", "deleted/sweeper/released")
	wantEventList(t, "dedup claim", b.events(t, dup), "created/key-producer2/dedup", "expired/sweeper/expired", "expired_unread/sweeper/expired")

	// delete after read: the read starts the window, the sweeper ends it.
	dar, err := b.store.Put(as("key-producer"), "dar", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.redeem(t, dar); err != nil { // no actor: ""
		t.Fatal(err)
	}
	if _, err := b.store.Stat(context.Background(), dar); err != nil { // the read receipt is written
		t.Fatal(err)
	}
	b.clock.Advance(6 * time.Minute)
	b.sweep(t)
	wantEventList(t, "delete-after-read claim", b.events(t, dar),
		"created/key-producer", "redeemed/", "first_redeemed/", "deleted/sweeper/read_retention_over")

	// explicit delete; a redeem of the deleted claim changes nothing.
	del := b.put(t, "keep", []byte("delete me"))
	if err := b.store.Delete(as("key-admin"), del); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Redeem(as("key-consumer"), del); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after delete: %v", err)
	}
	wantEventList(t, "deleted claim", b.events(t, del), "created/", "deleted/key-admin/deleted")

	// in-line finish: a redeem that finds the claim due finishes it as
	// the sweeper would.
	late := b.put(t, "keep", []byte("finished in-line"))
	b.clock.Advance(25 * time.Hour)
	if _, err := b.store.Redeem(as("key-consumer"), late); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after max_age: %v", err)
	}
	wantEventList(t, "in-line expiry", b.events(t, late), "created/", "expired/sweeper/expired", "expired_unread/sweeper/expired")

	// never confirmed: a direct upload nobody sends.
	sum := sha256.Sum256([]byte("never sent"))
	up, err := b.store.InitUpload(as("key-uploader"), "keep", claimcheck.UploadRequest{
		Size: 10, Digest: "sha256:" + hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Hour)
	b.sweep(t)
	wantEventList(t, "unconfirmed upload", b.events(t, claimcheck.Ref{ID: up.ID}), "reaped/sweeper/never_confirmed")

	// aborted: the body breaks off; the put finishes its own claim.
	b.clock.Advance(time.Second)
	_, err = b.store.Put(as("key-producer"), "keep", errReader{errors.New("connection reset")}, claimcheck.PutOptions{})
	if err == nil {
		t.Fatal("put with a failing body succeeded")
	}
	es, err := b.store.NamespaceEvents(context.Background(), "keep", claimcheck.EventQuery{Since: b.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	wantEventList(t, "aborted put", eventStrings(es), "reaped/key-producer/aborted")
}

func TestAuditEventsLookup(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "plain", []byte("hello"))
	ctx := context.Background()
	if _, err := b.store.ClaimEvents(ctx, claimcheck.Ref{ID: ref.ID, Namespace: "gz"}, claimcheck.EventQuery{}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("events with another namespace: %v, want not found", err)
	}
	if _, err := b.store.ClaimEvents(ctx, claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"}, claimcheck.EventQuery{}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("events of an unknown claim: %v, want not found", err)
	}
	if _, err := b.store.ClaimEvents(ctx, claimcheck.Ref{ID: "nope"}, claimcheck.EventQuery{}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("events of a malformed id: %v, want invalid argument", err)
	}
	for i := range 5 {
		if _, err := b.redeem(t, ref); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Duration(i+1) * time.Second)
	}
	// Paging: two at a time, after the last seq of the previous page.
	var all []claimcheck.Event
	q := claimcheck.EventQuery{Limit: 2}
	for {
		page, err := b.store.ClaimEvents(ctx, ref, q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		q.After = page[len(page)-1].Seq
	}
	if len(all) != 7 || all[0].Kind != "created" || all[2].Kind != "first_redeemed" {
		t.Fatalf("paged events: %q", eventStrings(all))
	}
	// Reads were served at +0s, +1s, +3s, +6s and +10s.
	since, err := b.store.ClaimEvents(ctx, ref, claimcheck.EventQuery{Since: t0.Add(6 * time.Second)})
	if err != nil || len(since) != 2 {
		t.Errorf("events since the fourth read: %q, %v", eventStrings(since), err)
	}
}

// TestAuditRetention: the sweeper prunes events older than
// events.retention, in pages, and keeps the newer ones.
func TestAuditRetention(t *testing.T) {
	b := setup(t, func(c *engine.Config) {
		c.Events.Retention = claimcheck.Retention(time.Hour)
		c.Sweeper.Disabled = true
	})
	old := b.put(t, "plain", []byte("old"))
	b.clock.Advance(2 * time.Hour)
	fresh := b.put(t, "plain", []byte("fresh"))
	n, err := b.store.Sweeper().PruneEvents(context.Background(), 0)
	if err != nil || n != 1 {
		t.Fatalf("PruneEvents = %d, %v; want the one old event", n, err)
	}
	wantEventList(t, "old claim", b.events(t, old))
	wantEventList(t, "fresh claim", b.events(t, fresh), "created/")
}
