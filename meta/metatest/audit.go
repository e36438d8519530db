package metatest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// The audit trail: every lifecycle change appends an event in its own
// transaction, stamped with the actor of the context (or of the read).

// claimEvents returns the kinds (with reason and actor) of a claim's events.
func (h *harness) claimEvents(id string) []string {
	h.t.Helper()
	es, err := h.s.ClaimEvents(h.ctx(), id, 0, 100)
	if err != nil {
		h.t.Fatalf("ClaimEvents(%s): %v", id, err)
	}
	var out []string
	var last int64
	for _, e := range es {
		if e.Seq <= last {
			h.t.Errorf("ClaimEvents(%s): seq %d after %d", id, e.Seq, last)
		}
		last = e.Seq
		if e.ClaimID != id || e.Namespace == "" {
			h.t.Errorf("ClaimEvents(%s): event %+v names another claim or no namespace", id, e)
		}
		out = append(out, eventString(e))
	}
	return out
}

// eventString is kind/actor[/reason][/detail].
func eventString(e meta.Event) string {
	s := e.Kind + "/" + e.Actor
	if e.Reason != "" {
		s += "/" + e.Reason
	}
	if e.Detail != "" {
		s += "/" + e.Detail
	}
	return s
}

// namespaceEvents returns the events of ns of the given kinds, as
// eventString, checking that the namespace-level ones (no claim) name no
// blob either.
func (h *harness) namespaceEvents(ns string, kinds ...string) []string {
	h.t.Helper()
	es, err := h.s.NamespaceEvents(h.ctx(), ns, time.Time{}, 0, 1000)
	if err != nil {
		h.t.Fatalf("NamespaceEvents(%s): %v", ns, err)
	}
	var out []string
	for _, e := range es {
		if e.Namespace != ns {
			h.t.Errorf("NamespaceEvents(%s): event %+v of another namespace", ns, e)
		}
		if slices.Contains(kinds, e.Kind) {
			out = append(out, eventString(e))
		}
	}
	return out
}

func wantEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: events %q, want %q", what, got, want)
	}
}

func testAuditLifecycle(t *testing.T, h *harness) {
	as := func(actor string) context.Context { return claimcheck.WithActor(h.ctx(), actor) }

	// created, redeemed, released (fan-out of two), deleted after the last
	// release.
	p := put{Consumers: 2, Retention: time.Minute}.withDefaults()
	cp := h.pending(p)
	res, err := h.s.Commit(as("producer"), h.commitParams(cp, p))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Claim.ID
	if _, err := h.s.RecordReads(h.ctx(), []meta.Read{{ClaimID: id, Namespace: "ns", At: h.now(), Actor: "reader"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a", "a", "b"} { // the repeated name changes nothing and logs nothing
		if _, err := h.s.Release(as("consumer-"+c), id, c, h.now()); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(2 * time.Minute)
	if _, err := h.s.FinishDueClaims(as(meta.ActorSweeper), h.now(), 10); err != nil {
		t.Fatal(err)
	}
	if _, done, err := h.s.FinishClaim(as("late"), id, meta.ReasonDeleted, h.now(), false); err != nil || done {
		t.Fatalf("second finish: done %v, %v", done, err)
	}
	wantEvents(t, "fan-out claim", h.claimEvents(id),
		"created/producer", "redeemed/reader", "first_redeemed/reader", "released/consumer-a/a", "released/consumer-b/b",
		"all_released/consumer-b/b", "deleted/sweeper/released")

	// Explicit delete, and a dedup hit (created with detail dedup).
	d := put{Dedup: true}.withDefaults()
	first := h.put(d)
	cp2 := h.pending(d)
	second, err := h.s.Commit(as("producer2"), h.commitParams(cp2, d))
	if err != nil || !second.DedupHit {
		t.Fatalf("dedup commit: hit %v, %v", second.DedupHit, err)
	}
	if _, _, err := h.s.FinishClaim(as("admin"), first.Claim.ID, meta.ReasonDeleted, h.now(), false); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "deleted claim", h.claimEvents(first.Claim.ID), "created/", "deleted/admin/deleted")
	wantEvents(t, "dedup claim", h.claimEvents(second.Claim.ID), "created/producer2/dedup")

	// Digest-first dedup.
	c := meta.Claim{ID: newID("c_"), Namespace: "ns", Size: d.Size, CreatedAt: h.now(),
		ExpiresAt: h.now().Add(time.Hour), DueAt: h.now().Add(time.Hour), DueReason: meta.ReasonExpired}
	_, hit, err := h.s.CommitExisting(as("producer3"), meta.CommitExistingParams{Claim: c, Digest: d.Digest, Now: h.now()})
	if err != nil || !hit {
		t.Fatalf("CommitExisting: hit %v, %v", hit, err)
	}
	h.track(c.ID, second.Blob.ID)
	wantEvents(t, "digest-first claim", h.claimEvents(c.ID), "created/producer3/dedup")

	// An upload that becomes the claim logs confirmed after created;
	// reads in two batches log first_redeemed once,
	// after the redeemed event that took the count from zero.
	up := put{}.withDefaults()
	cp3 := h.pending(up)
	params := h.commitParams(cp3, up)
	params.Confirmed = true
	confirmed, err := h.s.Commit(as("uploader"), params)
	if err != nil {
		t.Fatal(err)
	}
	cid := confirmed.Claim.ID
	for _, batch := range [][]meta.Read{
		{{ClaimID: cid, Namespace: "ns", At: h.now(), Actor: "r1"}, {ClaimID: cid, Namespace: "ns", At: h.now(), Actor: "r2"}},
		{{ClaimID: cid, Namespace: "ns", At: h.now().Add(time.Millisecond), Actor: "r3"}},
	} {
		if _, err := h.s.RecordReads(h.ctx(), batch); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents(t, "confirmed upload", h.claimEvents(cid), "created/uploader", "confirmed/uploader",
		"redeemed/r1", "first_redeemed/r1", "redeemed/r2", "redeemed/r3")

	// Expiry, never confirmed and aborted.
	exp := h.put(put{MaxAge: time.Hour})
	never := h.pending(put{UploadWithin: time.Minute})
	aborted := h.pending(put{})
	if _, _, err := h.s.FinishClaim(as("producer4"), aborted.Claim.ID, meta.ReasonAborted, h.now(), false); err != nil {
		t.Fatal(err)
	}
	// The pending claim's due reason is whatever its creator set; the
	// harness sets none, so finish it as the reaper does.
	h.clock.Advance(2 * time.Minute)
	if _, _, err := h.s.FinishClaim(as(meta.ActorSweeper), never.Claim.ID, meta.ReasonNeverConfirmed, h.now(), false); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Hour)
	if _, err := h.s.FinishDueClaims(as(meta.ActorSweeper), h.now(), 100); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "expired claim", h.claimEvents(exp.Claim.ID), "created/", "expired/sweeper/expired", "expired_unread/sweeper/expired")
	wantEvents(t, "never confirmed", h.claimEvents(never.Claim.ID), "reaped/sweeper/never_confirmed")
	wantEvents(t, "aborted", h.claimEvents(aborted.Claim.ID), "reaped/producer4/aborted")

	// Namespace listing: every event above is in "ns", in seq order.
	all, err := h.s.NamespaceEvents(h.ctx(), "ns", time.Time{}, 0, 1000)
	if err != nil || len(all) < 12 {
		t.Fatalf("NamespaceEvents = %d events, %v", len(all), err)
	}
	later, err := h.s.NamespaceEvents(h.ctx(), "ns", h.now(), 0, 1000)
	// The last sweep expired two claims (exp and the digest-first one),
	// neither of them read: each expired event has its expired_unread.
	if err != nil || len(later) != 4 || later[0].Kind != meta.EventExpired || later[1].Kind != meta.EventExpiredUnread ||
		later[2].Kind != meta.EventExpired || later[3].Kind != meta.EventExpiredUnread {
		t.Errorf("NamespaceEvents since now = %+v, %v; want the last sweep's two expiries", later, err)
	}
}

func testAuditPrune(t *testing.T, h *harness) {
	ctx := h.ctx()
	var evs []meta.Event
	for i := range 25 {
		evs = append(evs, meta.Event{At: epoch.Add(time.Duration(i) * time.Minute), Kind: "k", ClaimID: "c1", Namespace: "ns"})
	}
	if err := h.s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	cut := epoch.Add(20 * time.Minute) // 20 events are older
	total := 0
	for {
		n, err := h.s.PruneEvents(ctx, cut, 7)
		if err != nil {
			t.Fatal(err)
		}
		if n > 7 {
			t.Fatalf("PruneEvents deleted %d, more than its limit 7", n)
		}
		total += n
		if n < 7 {
			break
		}
	}
	if total != 20 {
		t.Errorf("pruned %d events, want 20", total)
	}
	left, err := h.s.ClaimEvents(ctx, "c1", 0, 100)
	if err != nil || len(left) != 5 || !left[0].At.Equal(cut) {
		t.Errorf("left after pruning: %+v, %v", left, err)
	}
}

// testAuditConcurrentAppends: writers appending at the same instant (the
// fake clock) in parallel transactions all succeed, and every event gets
// its own sequence number.
func testAuditConcurrentAppends(t *testing.T, h *harness) {
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := []meta.Event{{At: h.now(), Kind: "k", ClaimID: fmt.Sprintf("c%d", w), Detail: fmt.Sprint(i)},
					{At: h.now(), Kind: "k", ClaimID: fmt.Sprintf("c%d", w), Detail: fmt.Sprint(i)}}
				if err := h.s.AppendEvents(h.ctx(), e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for w := range writers {
		es, err := h.s.ClaimEvents(h.ctx(), fmt.Sprintf("c%d", w), 0, 1000)
		if err != nil || len(es) != 2*each {
			t.Fatalf("writer %d: %d events, %v; want %d", w, len(es), err, 2*each)
		}
		for _, e := range es {
			if seen[e.Seq] {
				t.Fatalf("seq %d given twice", e.Seq)
			}
			seen[e.Seq] = true
		}
	}
}

// testAuditHolds: setting and lifting holds are logged with their actor,
// scope and reason, in the transaction that changes the hold; a set that
// repeats the same reason and a lift of a hold that is not set change
// nothing and log nothing.
func testAuditHolds(t *testing.T, h *harness) {
	as := func(actor string) context.Context { return claimcheck.WithActor(h.ctx(), actor) }
	held := h.put(put{MaxAge: time.Hour})
	free := h.put(put{MaxAge: time.Hour})
	id := held.Claim.ID

	if err := h.s.SetClaimHold(as("admin1"), id, "case 42", h.now()); err != nil {
		t.Fatal(err)
	}
	if err := h.s.SetClaimHold(as("admin2"), id, "case 42", h.now()); err != nil { // unchanged: not logged
		t.Fatal(err)
	}
	if err := h.s.SetClaimHold(as("admin2"), id, "case 43", h.now()); err != nil { // new reason: logged
		t.Fatal(err)
	}
	// Lifting a hold that is not set changes nothing.
	if _, finished, err := h.s.ClearClaimHold(as("admin3"), free.Claim.ID, h.now()); err != nil || finished {
		t.Fatalf("ClearClaimHold(not held) = %v, %v", finished, err)
	}
	wantEvents(t, "claim without a hold", h.claimEvents(free.Claim.ID), "created/")

	if _, err := h.s.SetNamespaceHold(as("admin1"), "ns", "audit", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.SetNamespaceHold(as("admin2"), "ns", "audit", h.now()); err != nil { // unchanged
		t.Fatal(err)
	}
	if _, err := h.s.SetNamespaceHold(as("admin2"), "ns", "audit 2", h.now()); err != nil {
		t.Fatal(err)
	}
	if rs, err := h.s.ClearNamespaceHold(as("admin3"), "other", h.now()); err != nil || len(rs) != 0 { // never held
		t.Fatalf("ClearNamespaceHold(other) = %v, %v", rs, err)
	}
	if es := h.namespaceEvents("other", meta.EventHoldSet, meta.EventHoldCleared); len(es) != 0 {
		t.Errorf("lifting a namespace hold that was not set logged %q", es)
	}

	// Lifting the namespace hold finishes the overdue claim without a hold
	// of its own, as the lifting admin; the held one stays.
	h.clock.Advance(2 * time.Hour)
	rs, err := h.s.ClearNamespaceHold(as("admin4"), "ns", h.now())
	if err != nil || len(rs) != 1 || rs[0].Claim.ID != free.Claim.ID {
		t.Fatalf("ClearNamespaceHold = %v, %v; want the free claim expired", finishedIDs(rs), err)
	}
	if rs, err := h.s.ClearNamespaceHold(as("admin5"), "ns", h.now()); err != nil || len(rs) != 0 {
		t.Fatalf("second ClearNamespaceHold = %v, %v", rs, err)
	}
	wantEvents(t, "namespace holds", h.namespaceEvents("ns", meta.EventHoldSet, meta.EventHoldCleared),
		"hold_set/admin1/claim/case 42", "hold_set/admin2/claim/case 43",
		"hold_set/admin1/namespace/audit", "hold_set/admin2/namespace/audit 2",
		"hold_cleared/admin4/namespace/audit 2")
	es, err := h.s.NamespaceEvents(h.ctx(), "ns", time.Time{}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == meta.EventHoldSet && e.Reason == meta.HoldScopeNamespace && (e.ClaimID != "" || e.BlobID != "") {
			t.Errorf("namespace hold event %+v names a claim", e)
		}
		if e.Kind == meta.EventHoldSet && e.Reason == meta.HoldScopeClaim && (e.ClaimID != id || e.BlobID != held.Blob.ID) {
			t.Errorf("claim hold event %+v does not name the claim and its blob", e)
		}
	}
	wantEvents(t, "freed claim", h.claimEvents(free.Claim.ID), "created/", "expired/admin4/expired", "expired_unread/admin4/expired")

	// Lifting the claim's own hold finishes it at once: hold_cleared, then
	// the finish, both the lifting admin's. A second lift logs nothing.
	if _, finished, err := h.s.ClearClaimHold(as("admin6"), id, h.now()); err != nil || !finished {
		t.Fatalf("ClearClaimHold = %v, %v", finished, err)
	}
	if _, finished, err := h.s.ClearClaimHold(as("admin7"), id, h.now()); err != nil || finished {
		t.Fatalf("second ClearClaimHold = %v, %v", finished, err)
	}
	wantEvents(t, "held claim", h.claimEvents(id), "created/",
		"hold_set/admin1/claim/case 42", "hold_set/admin2/claim/case 43",
		"hold_cleared/admin6/claim/case 43", "expired/admin6/expired", "expired_unread/admin6/expired")
}

// testAuditKeys: creating and revoking an API key are logged with their
// actor and the key's id, tenant and role, never its hash, under the
// key's tenant (TenantEvents) and, for a key limited to a namespace, that
// namespace too. A repeated revoke logs nothing.
func testAuditKeys(t *testing.T, h *harness) {
	as := func(actor string) context.Context { return claimcheck.WithActor(h.ctx(), actor) }
	scoped := meta.APIKey{ID: "k1", Tenant: "acme", Role: "producer", Namespace: "orders", Hash: "hash-k1", CreatedAt: h.now()}
	wide := meta.APIKey{ID: "k2", Tenant: "acme", Role: "admin", Hash: "hash-k2", CreatedAt: h.now()}
	for _, k := range []meta.APIKey{scoped, wide} {
		if err := h.s.CreateKey(as("boot"), k, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A failed create (duplicate id) logs nothing: its transaction is
	// rolled back with the event.
	if err := h.s.CreateKey(as("intruder"), scoped, 0); err == nil {
		t.Fatal("CreateKey(duplicate) succeeded")
	}
	h.clock.Advance(time.Minute)
	for range 2 { // the second revoke changes nothing
		if _, err := h.s.RevokeKey(as("k2"), "k1", "acme", h.now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.s.RevokeKey(as("k2"), "k2", "", h.now()); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "scoped key", h.namespaceEvents("orders", meta.EventKeyCreated, meta.EventKeyRevoked),
		"key_created/boot/key k1; tenant acme; role producer",
		"key_revoked/k2/key k1; tenant acme; role producer")
	es, err := h.s.NamespaceEvents(h.ctx(), "orders", time.Time{}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.Contains(e.Detail, "hash-") || e.ClaimID != "" || e.BlobID != "" {
			t.Errorf("key event %+v names a hash, a claim or a blob", e)
		}
	}

	// The tenant's events have both keys, whatever their scope; another
	// tenant's have none of them.
	tenantEvents := func(tenant string, since time.Time) []string {
		t.Helper()
		es, err := h.s.TenantEvents(h.ctx(), tenant, since, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if e.Tenant != tenant {
				t.Errorf("TenantEvents(%s): event %+v of another tenant", tenant, e)
			}
			out = append(out, eventString(e)+"@"+e.Namespace)
		}
		return out
	}
	wantEvents(t, "tenant acme", tenantEvents("acme", time.Time{}),
		"key_created/boot/key k1; tenant acme; role producer@orders",
		"key_created/boot/key k2; tenant acme; role admin@",
		"key_revoked/k2/key k1; tenant acme; role producer@orders",
		"key_revoked/k2/key k2; tenant acme; role admin@")
	wantEvents(t, "tenant acme since the revokes", tenantEvents("acme", h.now()),
		"key_revoked/k2/key k1; tenant acme; role producer@orders",
		"key_revoked/k2/key k2; tenant acme; role admin@")
	wantEvents(t, "tenant beta", tenantEvents("beta", time.Time{}))
	// Claim events carry no tenant: they are read per namespace.
	h.put(put{})
	wantEvents(t, "tenant acme after a put", tenantEvents("acme", h.now()),
		"key_revoked/k2/key k1; tenant acme; role producer@orders",
		"key_revoked/k2/key k2; tenant acme; role admin@")
}
