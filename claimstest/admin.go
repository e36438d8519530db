package claimstest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// The operators' interface (claimcheck.Admin): namespace usage, the
// audit trail and the dead letter queue.

// testNamespaces: a namespace reports its policy, its quota and exact
// usage, which a finished claim gives back.
func testNamespaces(t *testing.T, e *env) {
	e.start(t)
	nr, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	ctx := t.Context()
	ref := e.put(t, "quota", randomBytes(100), claimcheck.PutOptions{})
	e.put(t, "quota", randomBytes(200), claimcheck.PutOptions{})
	info, err := nr.Namespace(ctx, "quota")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "quota" || info.Retired || info.Limits != (claimcheck.Quota{Bytes: 1000}) || !reflect.DeepEqual(info.Policy, e.policy("quota")) {
		t.Fatalf("namespace quota: %+v", info)
	}
	if want := (claimcheck.NamespaceUsage{UsedBytes: 300, ActiveClaims: 2}); info.Usage != want {
		t.Fatalf("usage %+v, want %+v", info.Usage, want)
	}
	if info.Tenant == nil || info.Tenant.Name != claimcheck.DefaultTenant || info.Tenant.Usage.UsedBytes < 300 {
		t.Errorf("tenant of the namespace: %+v", info.Tenant)
	}
	if err := e.c().Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if info, err = nr.Namespace(ctx, "quota"); err != nil || info.Usage != (claimcheck.NamespaceUsage{UsedBytes: 200, ActiveClaims: 1, FinishedClaims: 1}) {
		t.Fatalf("usage after a delete: %+v, %v", info.Usage, err)
	}

	all, err := nr.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range all {
		names = append(names, n.Name)
	}
	if !slices.IsSorted(names) {
		t.Errorf("namespaces not in name order: %q", names)
	}
	for ns := range e.opts.Namespaces {
		if !slices.Contains(names, ns) {
			t.Errorf("configured namespace %s is not listed: %q", ns, names)
		}
	}
	_, err = nr.Namespace(ctx, "Not/A/Namespace")
	wantErr(t, "a malformed namespace", err, claimcheck.ErrInvalidArgument)
}

// testEvents: the audit trail of a claim and of its namespace, with
// paging and the namespace check of every claim lookup.
func testEvents(t *testing.T, e *env) {
	e.start(t)
	au, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	ctx := t.Context()
	ref := e.put(t, "plain", []byte("audited"), claimcheck.PutOptions{})
	e.wantRedeem(t, ref, []byte("audited"))
	if err := e.c().Release(ctx, ref, "billing"); err != nil {
		t.Fatal(err)
	}
	if err := e.c().Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	es, err := au.ClaimEvents(ctx, ref, claimcheck.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(es); !slices.Equal(got, []string{"created", "redeemed", "first_redeemed", "released", "all_released", "deleted"}) {
		t.Fatalf("events of the claim: %q", got)
	}
	if es[0].ClaimID != ref.ID || es[0].Namespace != "plain" || es[3].Detail != "billing" || es[5].Reason != "deleted" {
		t.Errorf("events %+v", es)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Seq <= es[i-1].Seq {
			t.Errorf("events out of order: %+v", es)
		}
	}
	page, err := au.ClaimEvents(ctx, ref, claimcheck.EventQuery{After: es[1].Seq, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != es[2].Seq {
		t.Errorf("page after the second event: %+v, %v", page, err)
	}
	_, err = au.ClaimEvents(ctx, claimcheck.Ref{ID: ref.ID, Namespace: "short"}, claimcheck.EventQuery{})
	wantErr(t, "events with the wrong namespace", err, claimcheck.ErrNotFound)
	_, err = au.ClaimEvents(ctx, ref, claimcheck.EventQuery{Limit: -1})
	wantErr(t, "events with a negative limit", err, claimcheck.ErrInvalidArgument)

	ns, err := au.NamespaceEvents(ctx, "plain", claimcheck.EventQuery{Since: e.now().Add(-time.Hour)})
	if err != nil || len(ns) != 6 {
		t.Errorf("namespace events: %+v, %v", ns, err)
	}
	if ns, err := au.NamespaceEvents(ctx, "plain", claimcheck.EventQuery{Since: e.now().Add(time.Second)}); err != nil || len(ns) != 0 {
		t.Errorf("namespace events since later: %+v, %v", ns, err)
	}
}

// testDeadLetters: a store whose deletes all worked has no dead letters,
// and the queue's lookups and queries answer the contract's errors.
// Producing a dead letter takes failing storage, which only an
// implementation's own tests can arrange.
func testDeadLetters(t *testing.T, e *env) {
	e.start(t)
	dq, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	ctx := t.Context()
	e.put(t, "orders", []byte("alive"), claimcheck.PutOptions{})
	page, err := dq.DeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || len(page.DeadLetters) != 0 || page.Next != "" {
		t.Fatalf("dead letters of a healthy store: %+v, %v", page, err)
	}
	page, err = dq.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{Namespace: "orders"})
	if err != nil || len(page.DeadLetters) != 0 {
		t.Fatalf("retry of no dead letters: %+v, %v", page, err)
	}
	const unknownBlob = "b_AAAAAAAAAAAAAAAAAAAAAA"
	_, err = dq.DeadLetter(ctx, unknownBlob)
	wantErr(t, "an unknown dead letter", err, claimcheck.ErrNotFound)
	_, err = dq.RetryDeadLetter(ctx, unknownBlob)
	wantErr(t, "retry of an unknown dead letter", err, claimcheck.ErrNotFound)
	for _, q := range []claimcheck.DeadLetterQuery{{Limit: -1}, {After: "nonsense"}, {Namespace: "Not/A/Namespace"}} {
		_, err := dq.DeadLetters(ctx, q)
		wantErr(t, "dead letters of a malformed query", err, claimcheck.ErrInvalidArgument)
	}
}
