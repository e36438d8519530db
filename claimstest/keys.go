package claimstest

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// Encryption at rest, seen from the contract: crypto-shredding
// and master key rotation (both claimcheck.Admin).

// testGoneKeyDestroyed: destroying a namespace's data key makes its
// claims gone as key_destroyed for good; other namespaces are untouched,
// a new put gets a new key, and a hold keeps shredding away.
func testGoneKeyDestroyed(t *testing.T, e *env) {
	e.startWith(t, encryptedNamespaces())
	kd, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	ctx := t.Context()
	if p, err := e.c().Policy(ctx, "vault"); err != nil || p.Encryption != claimcheck.EncryptionAES256GCM || !p.Encrypted() {
		t.Fatalf("policy of an encrypted namespace: %+v, %v", p, err)
	}
	data := JSONDoc(64<<10, 40)
	ref := e.put(t, "vault", data, claimcheck.PutOptions{})
	other := e.put(t, "vault2", data, claimcheck.PutOptions{}) // another namespace: untouched
	e.wantRedeem(t, ref, data)

	if err := kd.DestroyNamespaceKey(ctx, "vault"); err != nil {
		t.Fatalf("DestroyNamespaceKey: %v", err)
	}
	_, err := e.redeem(t, ref)
	wantGone(t, "redeem after shredding", err, claimcheck.ReasonKeyDestroyed)
	e.wantFinished(t, ref, claimcheck.ReasonKeyDestroyed)
	e.wantRedeem(t, other, data)
	wantErr(t, "second destroy", kd.DestroyNamespaceKey(ctx, "vault"), claimcheck.ErrNotFound)
	wantErr(t, "destroy in a namespace that encrypted nothing", kd.DestroyNamespaceKey(ctx, "plain"), claimcheck.ErrNotFound)
	wantErr(t, "destroy in a malformed namespace", kd.DestroyNamespaceKey(ctx, "Not/A/Namespace"), claimcheck.ErrInvalidArgument)

	// A new put gets a new key.
	again := e.put(t, "vault", data, claimcheck.PutOptions{})
	e.wantRedeem(t, again, data)

	h, ok := e.c().(claimcheck.Admin)
	if !ok {
		return
	}
	// A hold keeps shredding away.
	if err := h.SetHold(ctx, again, "case 9"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "destroy under a claim hold", kd.DestroyNamespaceKey(ctx, "vault"), claimcheck.ErrHeld)
	if err := h.ClearHold(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := h.SetNamespaceHold(ctx, "vault", "audit"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "destroy under a namespace hold", kd.DestroyNamespaceKey(ctx, "vault"), claimcheck.ErrHeld)
	e.wantRedeem(t, again, data)
}

// testRewrapDataKeys: RewrapDataKeys reports the data keys by master key,
// and after a rotation moves a namespace's key to the new master key,
// changing nothing on a dry run, and leaving every payload readable.
func testRewrapDataKeys(t *testing.T, e *env) {
	e.startWith(t, encryptedNamespaces())
	kr, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	ctx := t.Context()
	data := map[string][]byte{"vault": JSONDoc(32<<10, 41), "vault2": randomBytes(3000)}
	refs := map[string]claimcheck.Ref{}
	for _, ns := range []string{"vault", "vault2"} {
		refs[ns] = e.put(t, ns, data[ns], claimcheck.PutOptions{})
	}
	rewrap := func(what string, opt claimcheck.RewrapOptions) claimcheck.RewrapReport {
		t.Helper()
		rep, err := kr.RewrapDataKeys(ctx, opt)
		if err != nil {
			t.Fatalf("%s: RewrapDataKeys(%+v): %v", what, opt, err)
		}
		if rep.DryRun != opt.DryRun || rep.Failed != 0 || len(rep.Failures) != 0 || rep.Destroyed != 0 {
			t.Fatalf("%s: report %+v", what, rep)
		}
		return rep
	}
	want := func(what string, rep claimcheck.RewrapReport, rewrapped, current int, byMaster map[string]int) {
		t.Helper()
		if rep.Rewrapped != rewrapped || rep.AlreadyCurrent != current || !maps.Equal(rep.ByMasterKey, byMaster) {
			t.Fatalf("%s: report %+v; want rewrapped %d, already current %d, by master key %v", what, rep, rewrapped, current, byMaster)
		}
	}

	// Before a rotation every key is on the current master key.
	rep := rewrap("before the rotation", claimcheck.RewrapOptions{Namespace: "vault", DryRun: true})
	a := rep.MasterKeyID
	if a == "" || rep.Pending() != 0 {
		t.Fatalf("before the rotation: %+v", rep)
	}
	want("before the rotation", rep, 0, 1, map[string]int{a: 1})
	// A namespace without a data key: nothing to do.
	want("a plain namespace", rewrap("a plain namespace", claimcheck.RewrapOptions{Namespace: "plain"}), 0, 0, map[string]int{})
	_, err := kr.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: "Bad Name"})
	wantErr(t, "rewrap of a malformed namespace", err, claimcheck.ErrInvalidArgument)

	if e.h.RotateMasterKey == nil {
		t.Skip("the harness cannot rotate the master key (no RotateMasterKey)")
	}
	e.h = e.h.RotateMasterKey(t)
	if kr, ok = e.c().(claimcheck.Admin); !ok {
		t.Fatal("the restarted implementation is no KeyRewrapper")
	}
	// The previous master key still unwraps.
	for ns, ref := range refs {
		e.wantRedeem(t, ref, data[ns])
	}

	// The dry run reports and changes nothing.
	rep = rewrap("dry run", claimcheck.RewrapOptions{Namespace: "vault", DryRun: true})
	b := rep.MasterKeyID
	if b == a || b == "" || rep.Pending() != 1 {
		t.Fatalf("dry run after the rotation: %+v; want master key other than %s, one key pending", rep, a)
	}
	want("dry run", rep, 1, 0, map[string]int{a: 1})
	want("second dry run", rewrap("second dry run", claimcheck.RewrapOptions{Namespace: "vault", DryRun: true}), 1, 0, map[string]int{a: 1})

	rep = rewrap("rewrap", claimcheck.RewrapOptions{Namespace: "vault"})
	want("rewrap", rep, 1, 0, map[string]int{b: 1})
	if rep.MasterKeyID != b || rep.Pending() != 0 {
		t.Fatalf("rewrap: %+v", rep)
	}
	want("second rewrap", rewrap("second rewrap", claimcheck.RewrapOptions{Namespace: "vault"}), 0, 1, map[string]int{b: 1})
	// Only the namespace asked for moved.
	want("the other namespace", rewrap("the other namespace", claimcheck.RewrapOptions{Namespace: "vault2", DryRun: true}), 1, 0, map[string]int{a: 1})
	// Over the whole store, where the implementation takes it (a client
	// rewraps one namespace at a time and refuses).
	if rep, err := kr.RewrapDataKeys(ctx, claimcheck.RewrapOptions{DryRun: true}); err == nil {
		want("dry run of the whole store", rep, 1, 1, map[string]int{a: 1, b: 1})
	} else if !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("dry run of the whole store: %v", err)
	}
	for ns, ref := range refs {
		e.wantRedeem(t, ref, data[ns])
	}
	// New data keys are wrapped by the new master key.
	e.put(t, "vault3", []byte("fresh"), claimcheck.PutOptions{})
	want("a namespace keyed after the rotation", rewrap("new namespace", claimcheck.RewrapOptions{Namespace: "vault3", DryRun: true}), 0, 1, map[string]int{b: 1})

	// The audit trail: one event for the key that moved, naming both
	// master keys.
	au, ok := e.c().(claimcheck.Admin)
	if !ok {
		return
	}
	for ns, n := range map[string]int{"vault": 1, "vault2": 0, "vault3": 0} {
		es, err := au.NamespaceEvents(ctx, ns, claimcheck.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, ev := range es {
			if ev.Kind == "data_key_rewrapped" {
				got++
				if !strings.Contains(ev.Detail, a) || !strings.Contains(ev.Detail, b) {
					t.Errorf("event %+v: want both master key ids", ev)
				}
			}
		}
		if got != n {
			t.Errorf("namespace %s: %d data_key_rewrapped events, want %d", ns, got, n)
		}
	}
}
