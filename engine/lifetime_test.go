package engine_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/lifecyclesim"
	"github.com/claimcheck/claimcheck/sweep"
)

// lifeNamespaces: "life" may be extended up to a day after creation;
// "dar" deletes after read and may be extended too.
func lifeNamespaces(c *engine.Config) {
	yes := true
	c.Namespaces["life"] = claimcheck.Policy{TTL: claimcheck.TTLPolicy{
		MaxAge: claimcheck.Duration(time.Hour), MaxLifetime: claimcheck.Duration(24 * time.Hour)}}
	c.Namespaces["dar"] = claimcheck.Policy{TTL: claimcheck.TTLPolicy{
		MaxAge: claimcheck.Duration(time.Hour), MaxLifetime: claimcheck.Duration(24 * time.Hour),
		DeleteAfterRead: &yes, RetentionAfterRead: claimcheck.Duration(5 * time.Minute)}}
	c.Sweeper.Disabled = true
}

func TestExtendMovesTheDeadline(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	data := jsonDoc(10 << 10)
	ref := b.put(t, "life", data)

	b.clock.Advance(50 * time.Minute)
	info, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: 2 * time.Hour})
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !info.Ref.ExpiresAt.Equal(t0.Add(3*time.Hour)) || !info.DeleteAt.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("after extending by 2h: expires %v, delete_at %v; want both at +3h", info.Ref.ExpiresAt, info.DeleteAt)
	}
	// An earlier expiry changes nothing; the same one neither.
	if info, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{ExpiresAt: t0.Add(2 * time.Hour)}); err != nil || !info.Ref.ExpiresAt.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("Extend to an earlier time: %v, %v", info.Ref.ExpiresAt, err)
	}
	// Past max_lifetime: refused, naming the limit as the config spells it.
	_, err = b.store.Extend(ctx, ref, claimcheck.ExtendOptions{ExpiresAt: t0.Add(25 * time.Hour)})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl.max_lifetime 24h0m0s") {
		t.Fatalf("Extend past max_lifetime: %v", err)
	}

	// The original deadline passes: the sweeper leaves it, a redeem reads it.
	b.clock.Set(t0.Add(2 * time.Hour))
	if res := b.sweep(t); res.ClaimsFinished != 0 {
		t.Fatalf("sweep at the old deadline finished %d claims", res.ClaimsFinished)
	}
	b.wantAlive(t, ref, data)
	// The new deadline: finished as expired, and no longer extendable.
	b.clock.Set(t0.Add(3 * time.Hour))
	if res := b.sweep(t); res.ClaimsFinished != 1 {
		t.Fatalf("sweep at the new deadline finished %d claims", res.ClaimsFinished)
	}
	_, err = b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Hour})
	wantGone(t, err, claimcheck.ReasonExpired)

	if evs := b.events(t, ref); !slices.Contains(evs, "extended//expires_at 2026-03-01T13:00:00Z -> 2026-03-01T15:00:00Z") {
		t.Fatalf("events %v: want an extended event", evs)
	}
}

func TestExtendErrors(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	// Without max_lifetime a claim cannot outlive max_age.
	ref := b.put(t, "short", jsonDoc(1<<10))
	_, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Minute})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl.max_lifetime (unset, so ttl.max_age 1h0m0s)") {
		t.Fatalf("Extend without max_lifetime: %v", err)
	}
	for _, opts := range []claimcheck.ExtendOptions{{}, {By: -time.Hour}, {By: time.Hour, ExpiresAt: t0.Add(time.Hour)}} {
		if _, err := b.store.Extend(ctx, ref, opts); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("Extend(%+v): %v, want invalid argument", opts, err)
		}
	}
	if _, err := b.store.Extend(ctx, claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"}, claimcheck.ExtendOptions{By: time.Minute}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("unknown claim: %v", err)
	}
	// Deleted: gone.
	life := b.put(t, "life", jsonDoc(1<<10))
	if err := b.store.Delete(ctx, life); err != nil {
		t.Fatal(err)
	}
	_, err = b.store.Extend(ctx, life, claimcheck.ExtendOptions{By: time.Minute})
	wantGone(t, err, claimcheck.ReasonDeleted)
}

// TestExtendKeepsTheReadWindow: delete_after_read's redelivery window
// still ends the claim after its first read; the extension moves only
// the expiry.
func TestExtendKeepsTheReadWindow(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	ref := b.put(t, "dar", jsonDoc(1<<10))
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatal(err)
	}
	info, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: 5 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Ref.ExpiresAt.Equal(t0.Add(6*time.Hour)) || !info.DeleteAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("expires %v delete_at %v: want the expiry moved and the read window kept", info.Ref.ExpiresAt, info.DeleteAt)
	}
	b.clock.Advance(5 * time.Minute)
	_, err = b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonReadRetention)
}

// TestExtendUnderHold: a held claim before its deadline may be extended;
// past it, kept only by the hold, it may not (a hold keeps, it does not
// renew).
func TestExtendUnderHold(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	ref := b.put(t, "life", jsonDoc(1<<10))
	if err := b.store.SetHold(ctx, ref, "case 7"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Hour}); err != nil {
		t.Fatalf("Extend under hold: %v", err)
	}
	b.clock.Set(t0.Add(3 * time.Hour))
	if _, err := b.store.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Hour}); !errors.Is(err, claimcheck.ErrHeld) {
		t.Fatalf("Extend of an overdue held claim: %v, want held", err)
	}
	if err := b.store.ClearHold(ctx, ref); err != nil {
		t.Fatal(err)
	}
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonExpired)
}

// TestLifecycleRuleFollowsMaxLifetime: the safety net's bucket rule counts
// max_lifetime, and dedup shares only blobs that outlive every expiry an
// extension may give the new claim; so a strict lifecycle pass never
// deletes the object of a claim extended to its limit.
func TestLifecycleRuleFollowsMaxLifetime(t *testing.T) {
	fc := clock.NewFake(t0)
	sim := lifecyclesim.New(t, fc)
	ttl := claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(48 * time.Hour), MaxLifetime: claimcheck.Duration(240 * time.Hour),
		GracePeriod: claimcheck.Duration(time.Hour)}
	s := enginetest.Open(t, engine.Config{
		Clock: fc, BlobStore: sim,
		Namespaces: map[string]claimcheck.Policy{"lc": {TTL: ttl, Compression: claimcheck.CompressionNone}},
		Sweeper:    sweep.Config{Disabled: true},
	})
	ctx := context.Background()
	// ceil(240h + 1h grace + 1h margin) = 11 days, not max_age's 3.
	rules, _ := sim.LifecycleRules(ctx)
	if i := slices.IndexFunc(rules, func(r blob.LifecycleRule) bool { return strings.HasSuffix(r.ID, ":ns:lc") }); i < 0 || rules[i].ExpireDays != 11 {
		t.Fatalf("rules = %+v, want claimcheck:<store id>:ns:lc after 11 days", rules)
	}
	data := bytes.Repeat([]byte("x"), 4096)
	put := func() claimcheck.Ref {
		ref, err := s.Put(ctx, "lc", bytes.NewReader(data), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	first := put()
	fc.Advance(36 * time.Hour)
	// Within max_age of the first object, but a claim made now may be
	// extended to day 11.5, past the first object's day 11: not shared.
	second := put()
	if n := sim.Written(); n != 3 {
		t.Fatalf("%d objects written, want 2 and the owner marker: dedup must not share an object the rule expires before the new claim's max_lifetime", n)
	}
	for _, ref := range []claimcheck.Ref{first, second} {
		if _, err := s.Extend(ctx, ref, claimcheck.ExtendOptions{ExpiresAt: ref.CreatedAt.Add(240 * time.Hour)}); err != nil {
			t.Fatalf("Extend %s to its max_lifetime: %v", ref.ID, err)
		}
	}
	// Run the strictest lifecycle pass just before each deadline.
	for _, ref := range []claimcheck.Ref{first, second} {
		fc.Set(ref.CreatedAt.Add(240*time.Hour - time.Minute))
		sim.Expire(t)
		p, err := s.Redeem(ctx, ref)
		if err != nil {
			t.Fatalf("extended claim %s a minute before its deadline: %v", ref.ID, err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("extended claim %s: %d bytes, %v", ref.ID, len(got), err)
		}
	}
}

// TestListReadsABoundedWindowPerPage: a page reads at most the listing's
// window of rows, so a filter that matches none of them answers a short
// (here empty) page with a Next that continues after the last row read,
// and following Next lists exactly what one unbounded walk would. Before,
// a page of a state no claim was in read the whole namespace.
func TestListReadsABoundedWindowPerPage(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	var refs []claimcheck.Ref
	for i := range 7 {
		ref, err := b.store.Put(ctx, "life", bytes.NewReader(jsonDoc(1<<10+i)), claimcheck.PutOptions{
			Labels: map[string]string{"run": []string{"a", "b", "b"}[i%3]}})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		b.clock.Advance(time.Minute)
	}
	defer engine.SetListWindow(engine.SetListWindow(2))
	page, err := b.store.List(ctx, "life", claimcheck.ListOptions{State: "deleted", Limit: 2})
	if err != nil || len(page.Claims) != 0 || page.Next == "" {
		t.Fatalf("state=deleted, none deleted, a window of 2 of 7 claims: %d claims, next %q, %v; want an empty page and a next", len(page.Claims), page.Next, err)
	}
	list := func(opts claimcheck.ListOptions) (ids []string, pages int) {
		t.Helper()
		for {
			page, err := b.store.List(ctx, "life", opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, c := range page.Claims {
				ids = append(ids, c.Ref.ID)
			}
			if page.Next == "" {
				return ids, pages
			}
			opts.Cursor = page.Next
		}
	}
	if ids, pages := list(claimcheck.ListOptions{State: "deleted", Limit: 2}); len(ids) != 0 || pages != 4 {
		t.Fatalf("state=deleted: %v in %d pages; want none in 4 pages of at most 2 rows read", ids, pages)
	}
	got, _ := list(claimcheck.ListOptions{State: "active", Labels: map[string]string{"run": "a"}, Limit: 1})
	if want := []string{refs[6].ID, refs[3].ID, refs[0].ID}; !slices.Equal(got, want) {
		t.Fatalf("run=a, active: %v, want newest first %v", got, want)
	}
}

func TestListPagesAndFilters(t *testing.T) {
	b := setup(t, lifeNamespaces)
	ctx := context.Background()
	var refs []claimcheck.Ref
	for i := range 5 {
		ref, err := b.store.Put(ctx, "life", bytes.NewReader(jsonDoc(1<<10+i)), claimcheck.PutOptions{
			Labels: map[string]string{"run": []string{"a", "b"}[i%2], "n": string(rune('0' + i))}})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		b.clock.Advance(time.Minute)
	}
	var got []string
	opts := claimcheck.ListOptions{Labels: map[string]string{"run": "a"}, Limit: 2}
	for {
		page, err := b.store.List(ctx, "life", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Claims {
			if c.Ref.Digest == "" || c.Ref.Namespace != "life" || c.Labels["run"] != "a" {
				t.Fatalf("listed %+v", c)
			}
			got = append(got, c.Ref.ID)
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	if want := []string{refs[4].ID, refs[2].ID, refs[0].ID}; !slices.Equal(got, want) {
		t.Fatalf("run=a: %v, want newest first %v", got, want)
	}
	// A cursor is bound to its order; garbage is refused.
	page, err := b.store.List(ctx, "life", claimcheck.ListOptions{Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatal(page, err)
	}
	if _, err := b.store.List(ctx, "life", claimcheck.ListOptions{Cursor: page.Next, Order: claimcheck.ListExpiring}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("cursor of another order: %v", err)
	}
	for _, bad := range []claimcheck.ListOptions{{Cursor: "!!"}, {Limit: 1001}, {Order: "oldest"}, {State: "gone"}} {
		if _, err := b.store.List(ctx, "life", bad); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("List(%+v): %v, want invalid argument", bad, err)
		}
	}
}
