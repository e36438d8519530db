package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Legal holds over the wire: the routes, the held error code mapped back
// to claimcheck.ErrHeld, and stat showing the holds.
func TestHoldsOverHTTP(t *testing.T) {
	ctx := context.Background()
	b := setup(t)
	data := jsonDoc(8 << 10)
	ref := b.put(t, "short", data, claimcheck.PutOptions{})
	other := b.put(t, "short", jsonDoc(9<<10), claimcheck.PutOptions{})

	if err := b.client.SetHold(ctx, ref, "case 42"); err != nil {
		t.Fatalf("SetHold: %v", err)
	}
	err := b.client.Delete(ctx, ref)
	if !errors.Is(err, claimcheck.ErrHeld) {
		t.Fatalf("Delete of a held claim: %v, want ErrHeld", err)
	}
	info, err := b.client.Stat(ctx, ref)
	if err != nil || len(info.Holds) != 1 || info.Holds[0].Reason != "case 42" || info.Holds[0].Scope != claimcheck.HoldScopeClaim {
		t.Fatalf("Stat = %+v, %v", info.Holds, err)
	}

	if err := b.client.SetNamespaceHold(ctx, "short", "audit"); err != nil {
		t.Fatalf("SetNamespaceHold: %v", err)
	}
	h, err := b.client.NamespaceHold(ctx, "short")
	if err != nil || h == nil || h.Reason != "audit" {
		t.Fatalf("NamespaceHold = %+v, %v", h, err)
	}
	if err := b.client.Delete(ctx, other); !errors.Is(err, claimcheck.ErrHeld) {
		t.Fatalf("Delete in a held namespace: %v, want ErrHeld", err)
	}

	b.clock.Advance(2 * time.Hour) // past max_age of "short"
	if _, err := b.store.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.redeem(ref); err != nil || string(got) != string(data) {
		t.Fatalf("redeem of a held, overdue claim: %v", err)
	}

	if err := b.client.ClearNamespaceHold(ctx, "short"); err != nil {
		t.Fatalf("ClearNamespaceHold: %v", err)
	}
	if _, err := b.redeem(other); !errors.Is(err, claimcheck.ErrExpired) {
		t.Fatalf("after the namespace hold is lifted: %v, want expired", err)
	}
	if _, err := b.redeem(ref); err != nil {
		t.Fatalf("the claim hold must still keep ref: %v", err)
	}
	if err := b.client.ClearHold(ctx, ref); err != nil {
		t.Fatalf("ClearHold: %v", err)
	}
	if _, err := b.redeem(ref); !errors.Is(err, claimcheck.ErrExpired) {
		t.Fatalf("after the last hold is lifted: %v, want expired", err)
	}
	if h, err := b.client.NamespaceHold(ctx, "short"); err != nil || h != nil {
		t.Fatalf("NamespaceHold after lift = %+v, %v", h, err)
	}
}
