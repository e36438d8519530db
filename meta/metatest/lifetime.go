package metatest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Listing and extending claims (meta.LifetimeStore): pages in a stable
// order that never repeat or skip a claim, label selectors that AND,
// extensions that move the due time in their own transaction and never
// revive, shorten or outgrow a claim.

// lifetimeTests are the listing and extension subtests; Run runs them
// with the rest.
var lifetimeTests = []struct {
	name string
	fn   func(t *testing.T, h *harness)
}{
	{"ListNewestPaging", testListNewestPaging},
	{"ListLabelSelector", testListLabelSelector},
	{"ListExpiringAndWindow", testListExpiringAndWindow},
	{"ExtendMovesDue", testExtendMovesDue},
	{"ExtendKeepsReadWindow", testExtendKeepsReadWindow},
	{"ExtendRefusals", testExtendRefusals},
	{"ExtendUnderHold", testExtendUnderHold},
}

func lbl(k, v string) meta.Label { return meta.Label{Key: k, Value: v} }

// listAll pages through a listing with limit rows a page and returns the
// ids in order, failing on a repeated id. It lists again with windows of
// 1, 2 and 5 rows (ListParams.Window: short pages that resume after the
// last row read) and fails unless they list the same claims in the same
// order.
func (h *harness) listAll(p meta.ListParams, limit int) []string {
	h.t.Helper()
	ids := h.listPages(p, limit)
	for _, w := range []int{1, 2, 5} {
		p.Window = w
		if got := h.listPages(p, limit); !slices.Equal(got, ids) {
			h.t.Fatalf("ListClaims(%+v) with a window of %d rows listed %v, without one %v", p, w, got, ids)
		}
	}
	return ids
}

// listPages pages through a listing, following the resume position of
// short pages that ended at their window.
func (h *harness) listPages(p meta.ListParams, limit int) []string {
	h.t.Helper()
	p.Limit = limit
	var ids []string
	seen := map[string]bool{}
	for range 1000 {
		page, err := h.s.ListClaims(h.ctx(), p)
		if err != nil {
			h.t.Fatalf("ListClaims(%+v): %v", p, err)
		}
		cs := page.Claims
		for _, c := range cs {
			if seen[c.ID] {
				h.t.Fatalf("ListClaims: claim %s on two pages", c.ID)
			}
			seen[c.ID] = true
			ids = append(ids, c.ID)
		}
		if len(cs) < limit {
			if page.ResumeID == "" {
				return ids
			}
			p.AfterAt, p.AfterID = page.ResumeAt, page.ResumeID
			continue
		}
		last := cs[len(cs)-1]
		p.AfterID = last.ID
		p.AfterAt = last.CreatedAt
		if p.Order == meta.OrderExpiring {
			p.AfterAt = last.ExpiresAt
		}
	}
	h.t.Fatal("ListClaims: more than 1000 pages")
	return nil
}

func testListNewestPaging(t *testing.T, h *harness) {
	var want []string
	for range 7 {
		want = append(want, h.put(put{}).Claim.ID)
		h.put(put{NS: "other"}) // another namespace: never listed
		h.clock.Advance(time.Second)
	}
	// Two claims created at the same instant: the id breaks the tie.
	a, b := h.put(put{}).Claim.ID, h.put(put{}).Claim.ID
	if a > b {
		a, b = b, a
	}
	want = append(want, a, b)
	slices.Reverse(want)
	for _, limit := range []int{1, 2, 3, 100} {
		if got := h.listAll(meta.ListParams{Namespace: "ns"}, limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %v, want newest first %v", limit, got, want)
		}
	}
	if page, err := h.s.ListClaims(h.ctx(), meta.ListParams{Namespace: "nobody", Limit: 10}); err != nil || len(page.Claims) != 0 {
		t.Fatalf("unknown namespace: %d claims, %v", len(page.Claims), err)
	}
}

func testListLabelSelector(t *testing.T, h *harness) {
	prod := h.put(put{Labels: map[string]string{"team": "a", "env": "prod"}}).Claim.ID
	h.clock.Advance(time.Second)
	dev := h.put(put{Labels: map[string]string{"team": "a", "env": "dev"}}).Claim.ID
	h.clock.Advance(time.Second)
	h.put(put{Labels: map[string]string{"team": "b", "env": "prod"}})
	h.put(put{NS: "other", Labels: map[string]string{"team": "a"}})
	h.put(put{})
	// A digest-first dedup hit inserts its claim on another path: its
	// labels must be found too.
	d := digestOf("shared")
	h.put(put{Digest: d, Dedup: true})
	h.clock.Advance(time.Second)
	ep := h.existingParams(d, 100)
	ep.Claim.Labels = map[string]string{"team": "a", "env": "dedup"}
	hit, ok := h.commitExisting(ep)
	if !ok {
		t.Fatal("CommitExisting: no hit")
	}
	// A pending claim is listed with its labels too.
	h.clock.Advance(time.Second)
	pend := h.pending(put{Labels: map[string]string{"team": "a"}}).Claim.ID

	for _, tc := range []struct {
		labels []meta.Label
		state  meta.ClaimState
		want   []string
	}{
		{[]meta.Label{lbl("team", "a")}, "", []string{pend, hit.Claim.ID, dev, prod}},
		{[]meta.Label{lbl("team", "a")}, meta.ClaimActive, []string{hit.Claim.ID, dev, prod}},
		{[]meta.Label{lbl("team", "a")}, meta.ClaimPending, []string{pend}},
		{[]meta.Label{lbl("team", "a"), lbl("env", "prod")}, "", []string{prod}},
		{[]meta.Label{lbl("env", "prod"), lbl("team", "a")}, "", []string{prod}},
		{[]meta.Label{lbl("team", "a"), lbl("env", "none")}, "", nil},
		{[]meta.Label{lbl("team", "c")}, "", nil},
	} {
		for _, limit := range []int{1, 2, 10} {
			got := h.listAll(meta.ListParams{Namespace: "ns", Labels: tc.labels, State: tc.state}, limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("labels %v state %q limit %d: listed %v, want %v", tc.labels, tc.state, limit, got, tc.want)
			}
		}
	}
	// Labels come back on the listed rows.
	page, err := h.s.ListClaims(h.ctx(), meta.ListParams{Namespace: "ns", Labels: []meta.Label{lbl("env", "prod"), lbl("team", "a")}, Limit: 5})
	cs := page.Claims
	if err != nil || len(cs) != 1 || cs[0].Labels["env"] != "prod" || cs[0].Labels["team"] != "a" {
		t.Fatalf("listed %+v, %v", cs, err)
	}
	// A finished claim keeps its labels, and is listed as deleted.
	h.finish(dev, meta.ReasonDeleted)
	if got := h.listAll(meta.ListParams{Namespace: "ns", Labels: []meta.Label{lbl("team", "a")}, State: meta.ClaimDeleted}, 10); !slices.Equal(got, []string{dev}) {
		t.Errorf("deleted claims with team=a: %v, want [%s]", got, dev)
	}
	// Its label rows go with its row when history is pruned.
	h.clock.Advance(time.Hour)
	if _, err := h.s.PruneHistory(h.ctx(), h.now(), 100); err != nil {
		t.Fatal(err)
	}
	h.forget(dev)
	if got := h.listAll(meta.ListParams{Namespace: "ns", Labels: []meta.Label{lbl("team", "a")}}, 10); slices.Contains(got, dev) {
		t.Errorf("pruned claim %s still listed: %v", dev, got)
	}
}

func testListExpiringAndWindow(t *testing.T, h *harness) {
	// Expiries 5h, 1h, 3h, 2h, 4h after epoch; a finished claim in between.
	ids := map[time.Duration]string{}
	for _, age := range []time.Duration{5, 1, 3, 2, 4} {
		ids[age] = h.put(put{MaxAge: age * time.Hour, Labels: map[string]string{"k": "v"}}).Claim.ID
	}
	gone := h.put(put{MaxAge: 150 * time.Minute}).Claim.ID
	h.finish(gone, meta.ReasonDeleted)
	want := []string{ids[1], ids[2], ids[3], ids[4], ids[5]}
	for _, limit := range []int{1, 2, 10} {
		if got := h.listAll(meta.ListParams{Namespace: "ns", Order: meta.OrderExpiring}, limit); !slices.Equal(got, want) {
			t.Fatalf("expiring, limit %d: %v, want %v", limit, got, want)
		}
		got := h.listAll(meta.ListParams{Namespace: "ns", Order: meta.OrderExpiring, Labels: []meta.Label{lbl("k", "v")}}, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("expiring with label, limit %d: %v, want %v", limit, got, want)
		}
	}
	// The window [2h, 4h): expiring order and newest first.
	p := meta.ListParams{Namespace: "ns", Order: meta.OrderExpiring, ExpiresAfter: epoch.Add(2 * time.Hour), ExpiresBefore: epoch.Add(4 * time.Hour)}
	if got := h.listAll(p, 1); !slices.Equal(got, []string{ids[2], ids[3]}) {
		t.Errorf("window, expiring: %v", got)
	}
	p.Order = meta.OrderNewest
	got := h.listAll(p, 10)
	slices.Sort(got)
	wantW := []string{ids[2], ids[3], gone}
	slices.Sort(wantW)
	if !slices.Equal(got, wantW) {
		t.Errorf("window, newest (any state): %v, want %v", got, wantW)
	}
}

func testExtendMovesDue(t *testing.T, h *harness) {
	res := h.put(put{MaxAge: time.Hour})
	id := res.Claim.ID
	h.clock.Advance(30 * time.Minute)
	notAfter := epoch.Add(10 * time.Hour)
	c, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: epoch.Add(3 * time.Hour), NotAfter: notAfter, Now: h.now()})
	if err != nil {
		t.Fatalf("ExtendClaim: %v", err)
	}
	wantTime(t, "expires", c.ExpiresAt, epoch.Add(3*time.Hour))
	wantTime(t, "due", c.DueAt, epoch.Add(3*time.Hour))
	if c.DueReason != meta.ReasonExpired {
		t.Errorf("due reason %q", c.DueReason)
	}
	// Asking for an earlier or the same expiry changes nothing.
	for _, at := range []time.Time{epoch.Add(2 * time.Hour), epoch.Add(3 * time.Hour)} {
		c, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: at, NotAfter: notAfter, Now: h.now()})
		if err != nil || !c.ExpiresAt.Equal(epoch.Add(3*time.Hour)) {
			t.Fatalf("ExtendClaim to %v: expires %v, %v; want unchanged", at, c.ExpiresAt, err)
		}
	}
	// Past the latest allowed expiry: refused, nothing changes.
	_, err = h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: notAfter.Add(time.Second), NotAfter: notAfter, Now: h.now()})
	var le *meta.LifetimeError
	if !errors.As(err, &le) || !le.NotAfter.Equal(notAfter) {
		t.Fatalf("ExtendClaim past NotAfter: %v, want a *LifetimeError", err)
	}
	// One extended event, with the old and the new expiry.
	evs, err := h.s.ClaimEvents(h.ctx(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ext []meta.Event
	for _, e := range evs {
		if e.Kind == meta.EventExtended {
			ext = append(ext, e)
		}
	}
	if len(ext) != 1 || !strings.Contains(ext[0].Detail, epoch.Add(time.Hour).Format(time.RFC3339)) ||
		!strings.Contains(ext[0].Detail, epoch.Add(3*time.Hour).Format(time.RFC3339)) {
		t.Fatalf("extended events %+v, want one naming both expiries", ext)
	}
	// The old deadline passes: nothing is due. The new one: finished as
	// expired.
	h.clock.Set(epoch.Add(2 * time.Hour))
	if rs := finishDue(t, h, 10); len(rs) != 0 {
		t.Fatalf("finished %v at the old deadline", finishedIDs(rs))
	}
	if oldest, err := h.s.OldestDue(h.ctx()); err != nil || !oldest.Equal(epoch.Add(3*time.Hour)) {
		t.Fatalf("OldestDue = %v, %v: the due index must follow the extension", oldest, err)
	}
	h.clock.Set(epoch.Add(3 * time.Hour))
	rs := finishDue(t, h, 10)
	if len(rs) != 1 || rs[0].Claim.ID != id || rs[0].Claim.DeleteReason != meta.ReasonExpired {
		t.Fatalf("at the new deadline finished %+v", rs)
	}
	// The listing by expiry follows too: nothing live is left.
	if got := h.listAll(meta.ListParams{Namespace: "ns", Order: meta.OrderExpiring}, 10); len(got) != 0 {
		t.Fatalf("expiring listing after the finish: %v", got)
	}
}

func testExtendKeepsReadWindow(t *testing.T, h *harness) {
	id := h.put(put{MaxAge: time.Hour, DeleteAfterRead: true, Retention: 10 * time.Minute}).Claim.ID
	if _, err := h.s.RecordReads(h.ctx(), []meta.Read{{ClaimID: id, Namespace: "ns", At: h.now()}}); err != nil {
		t.Fatal(err)
	}
	c, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: epoch.Add(5 * time.Hour), Now: h.now()})
	if err != nil {
		t.Fatalf("ExtendClaim: %v", err)
	}
	// The expiry moved; the redelivery window still ends the claim.
	wantTime(t, "expires", c.ExpiresAt, epoch.Add(5*time.Hour))
	wantTime(t, "due", c.DueAt, epoch.Add(10*time.Minute))
	if c.DueReason != meta.ReasonReadRetention {
		t.Errorf("due reason %q, want read retention", c.DueReason)
	}
	h.clock.Advance(10 * time.Minute)
	if rs := finishDue(t, h, 10); len(rs) != 1 || rs[0].Claim.DeleteReason != meta.ReasonReadRetention {
		t.Fatalf("finished %+v, want the read window's finish", rs)
	}
}

func testExtendRefusals(t *testing.T, h *harness) {
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: "c_nothing", ExpiresAt: epoch.Add(time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("unknown claim: %v, want ErrNotFound", err)
	}
	pend := h.pending(put{}).Claim.ID
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: pend, ExpiresAt: epoch.Add(48 * time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("pending claim: %v, want ErrConflict", err)
	}
	done := h.put(put{}).Claim.ID
	h.finish(done, meta.ReasonDeleted)
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: done, ExpiresAt: epoch.Add(48 * time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("finished claim: %v, want ErrConflict", err)
	}
	// Due but not yet finished: the caller finishes it; an extension does
	// not bring it back.
	due := h.put(put{MaxAge: time.Minute}).Claim.ID
	h.clock.Advance(time.Minute)
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: due, ExpiresAt: epoch.Add(48 * time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("due claim: %v, want ErrConflict", err)
	}
	if c := h.claim(due); !c.ExpiresAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("refused extension changed the expiry to %v", c.ExpiresAt)
	}
}

func testExtendUnderHold(t *testing.T, h *harness) {
	id := h.put(put{MaxAge: time.Hour}).Claim.ID
	if err := h.s.SetClaimHold(h.ctx(), id, "case", h.now()); err != nil {
		t.Fatal(err)
	}
	// Before its deadline a held claim may be extended: the kept deadline
	// moves, and lifting the hold does not finish it early.
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: epoch.Add(2 * time.Hour), Now: h.now()}); err != nil {
		t.Fatalf("ExtendClaim under hold: %v", err)
	}
	h.clock.Set(epoch.Add(90 * time.Minute))
	if _, _, err := h.s.ClearClaimHold(h.ctx(), id, h.now()); err != nil {
		t.Fatal(err)
	}
	h.wantActive(id)
	if err := h.s.SetClaimHold(h.ctx(), id, "case", h.now()); err != nil {
		t.Fatal(err)
	}
	// Past its deadline, kept only by the hold: refused with ErrHeld.
	h.clock.Set(epoch.Add(3 * time.Hour))
	if _, err := h.s.ExtendClaim(h.ctx(), meta.ExtendParams{ID: id, ExpiresAt: epoch.Add(5 * time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrHeld) {
		t.Fatalf("overdue held claim: %v, want ErrHeld", err)
	}
	fr, finished, err := h.s.ClearClaimHold(h.ctx(), id, h.now())
	if err != nil || !finished || fr.Claim.DeleteReason != meta.ReasonExpired {
		t.Fatalf("lift: finished=%v %+v %v", finished, fr, err)
	}
}
