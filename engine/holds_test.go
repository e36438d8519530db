package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// A legal hold blocks every deletion path until it is lifted (ADR 0065).
// Each subtest is one path; the claim is held while it runs and must still
// be redeemable, with its object, afterwards.

func (b *bundle) wantAlive(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	got, err := b.redeem(t, ref)
	if err != nil {
		t.Fatalf("redeem of a held claim: %v", err)
	}
	if string(got) != string(data) {
		t.Fatal("held claim came back altered")
	}
}

func TestHoldBlocksEveryDeletionPath(t *testing.T) {
	ctx := context.Background()
	paths := []struct {
		name   string
		ns     string
		nsHold bool                                              // hold the namespace instead of the claim
		act    func(t *testing.T, b *bundle, ref claimcheck.Ref) // the deletion attempt
		reason claimcheck.GoneReason                             // what the claim finishes with once lifted
	}{
		{"expiry", "keep", false, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			b.clock.Advance(25 * time.Hour)
			b.sweep(t)
		}, claimcheck.ReasonExpired},
		{"release", "keep", false, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			if err := b.store.Release(ctx, ref, "billing"); err != nil {
				t.Fatalf("release: %v", err)
			}
			b.clock.Advance(10 * time.Minute)
			b.sweep(t)
			// An ack after the deadline is accepted while held.
			if err := b.store.Release(ctx, ref, "billing"); err != nil {
				t.Fatalf("second release: %v", err)
			}
		}, claimcheck.ReasonReleased},
		{"delete_after_read", "dar", false, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			if _, err := b.redeem(t, ref); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(10 * time.Minute)
			b.sweep(t)
		}, claimcheck.ReasonReadRetention},
		{"explicit delete", "keep", false, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			err := b.store.Delete(ctx, ref)
			if !errors.Is(err, claimcheck.ErrHeld) {
				t.Fatalf("delete of a held claim: %v, want ErrHeld", err)
			}
		}, ""},
		{"gc", "keep", false, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			b.clock.Advance(2 * time.Hour)
			b.sweep(t)
			if _, err := b.store.Sweeper().Backstop().Run(ctx, 0); err != nil {
				t.Fatalf("backstop: %v", err)
			}
			b.sweep(t)
		}, ""},
		{"namespace hold: expiry and delete", "keep", true, func(t *testing.T, b *bundle, ref claimcheck.Ref) {
			b.clock.Advance(25 * time.Hour)
			b.sweep(t)
			if err := b.store.Delete(ctx, ref); !errors.Is(err, claimcheck.ErrHeld) {
				t.Fatalf("delete in a held namespace: %v, want ErrHeld", err)
			}
		}, claimcheck.ReasonExpired},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			b := setup(t, lifecycleNamespaces)
			data := jsonDoc(64 << 10)
			ref := b.put(t, p.ns, data)
			if p.nsHold {
				if err := b.store.SetNamespaceHold(ctx, p.ns, "audit 7"); err != nil {
					t.Fatal(err)
				}
			} else if err := b.store.SetHold(ctx, ref, "case 42"); err != nil {
				t.Fatal(err)
			}
			info, err := b.store.Stat(ctx, ref)
			if err != nil || len(info.Holds) != 1 || info.State != claimcheck.StateActive {
				t.Fatalf("stat of a held claim: %+v, %v", info, err)
			}
			if want := map[bool]string{false: "claim", true: "namespace"}[p.nsHold]; info.Holds[0].Scope != want {
				t.Fatalf("hold scope %q, want %q", info.Holds[0].Scope, want)
			}

			p.act(t, b, ref)
			b.wantAlive(t, ref, data)
			if len(b.objects(t)) != 1 {
				t.Fatalf("objects under a hold: %v", b.objects(t))
			}

			if p.nsHold {
				err = b.store.ClearNamespaceHold(ctx, p.ns)
			} else {
				err = b.store.ClearHold(ctx, ref)
			}
			if err != nil {
				t.Fatalf("lift: %v", err)
			}
			if p.reason == "" {
				// Not overdue: the claim lives on; an explicit delete now works.
				if err := b.store.Delete(ctx, ref); err != nil {
					t.Fatalf("delete after the lift: %v", err)
				}
				p.reason = claimcheck.ReasonDeleted
			}
			_, err = b.redeem(t, ref)
			wantGone(t, err, p.reason)
		})
	}
}

// TestHoldAuditEvents: setting and lifting holds through the Store leave
// hold_set and hold_cleared events with the acting key, the scope as the
// reason and the hold's reason as the detail (ADR 0070). A set that
// repeats the reason and a lift of a hold that is not set change nothing
// and log nothing.
func TestHoldAuditEvents(t *testing.T) {
	b := setup(t, lifecycleNamespaces)
	as := func(actor string) context.Context { return claimcheck.WithActor(context.Background(), actor) }
	holdEvents := func(ns string) []string {
		t.Helper()
		es, err := b.store.NamespaceEvents(context.Background(), ns, claimcheck.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range eventStrings(es) {
			if strings.HasPrefix(e, "hold_") {
				out = append(out, e)
			}
		}
		return out
	}
	ref := b.put(t, "keep", jsonDoc(1024))
	steps := []struct {
		what string
		err  error
	}{
		{"set", b.store.SetHold(as("key-legal"), ref, "case 42")},
		{"set again", b.store.SetHold(as("key-legal2"), ref, "case 42")},
		{"new reason", b.store.SetHold(as("key-legal2"), ref, "case 43")},
		{"lift", b.store.ClearHold(as("key-admin"), ref)},
		{"lift again", b.store.ClearHold(as("key-admin2"), ref)},
		{"namespace set", b.store.SetNamespaceHold(as("key-legal"), "keep", "audit 7")},
		{"namespace lift", b.store.ClearNamespaceHold(as("key-admin"), "keep")},
		{"namespace lift again", b.store.ClearNamespaceHold(as("key-admin2"), "keep")},
		{"lift of a namespace never held", b.store.ClearNamespaceHold(as("key-admin"), "dar")},
	}
	for _, s := range steps {
		if s.err != nil {
			t.Fatalf("%s: %v", s.what, s.err)
		}
	}
	wantEventList(t, "claim", b.events(t, ref), "created/",
		"hold_set/key-legal/claim/case 42", "hold_set/key-legal2/claim/case 43", "hold_cleared/key-admin/claim/case 43")
	wantEventList(t, "namespace keep", holdEvents("keep"),
		"hold_set/key-legal/claim/case 42", "hold_set/key-legal2/claim/case 43", "hold_cleared/key-admin/claim/case 43",
		"hold_set/key-legal/namespace/audit 7", "hold_cleared/key-admin/namespace/audit 7")
	wantEventList(t, "namespace dar", holdEvents("dar"))
}
