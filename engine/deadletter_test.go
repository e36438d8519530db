package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/sweep"
)

// failingDeletes is a file store whose deletes fail while on, like a
// bucket whose policy forbids DeleteObject until an operator fixes it.
type failingDeletes struct {
	blob.Store
	on bool
}

func (f *failingDeletes) Delete(ctx context.Context, key string) error {
	if f.on {
		return errors.New("injected: access denied")
	}
	return f.Store.Delete(ctx, key)
}

// setupDeadLetters opens a store whose deletes fail (tenants acme: a1,
// a2; beta: b1; sweeper off, parking at the first failure) and parks one
// blob per entry of nss. It returns the dead letters' ids by namespace.
func setupDeadLetters(t *testing.T, nss ...string) (*bundle, *failingDeletes, map[string][]string) {
	t.Helper()
	ctx := context.Background()
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { files.Close() })
	fd := &failingDeletes{Store: files, on: true}
	b := setup(t, func(cfg *engine.Config) {
		cfg.BlobStore = fd
		cfg.Sweeper = sweep.Config{Disabled: true, MaxAttempts: 1}
		cfg.Tenants = map[string]claimcheck.TenantPolicy{"acme": {}, "beta": {}}
		cfg.Namespaces = map[string]claimcheck.Policy{"a1": {Tenant: "acme"}, "a2": {Tenant: "acme"}, "b1": {Tenant: "beta"}}
	})
	for i, ns := range nss {
		ref, err := b.store.Put(ctx, ns, strings.NewReader(ns+" payload "+strings.Repeat("x", i)), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(2 * time.Hour) // past the grace period
	if res, err := b.store.SweepOnce(ctx, 0); err != nil || res.DeleteFailures != len(nss) {
		t.Fatalf("sweep: %+v %v; want %d failed deletes", res, err, len(nss))
	}
	ids := map[string][]string{}
	page, err := b.store.DeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || len(page.DeadLetters) != len(nss) || page.Next != "" {
		t.Fatalf("dead letters = %+v, %v; want %d on one page", page, err, len(nss))
	}
	for _, d := range page.DeadLetters {
		ids[d.Namespace] = append(ids[d.Namespace], d.BlobID)
	}
	return b, fd, ids
}

// collect follows Next from q and returns every dead letter's id. Every
// page must respect the limit.
func collect(t *testing.T, s *engine.Store, q claimcheck.DeadLetterQuery) []string {
	t.Helper()
	var ids []string
	for range 100 {
		page, err := s.DeadLetters(context.Background(), q)
		if err != nil {
			t.Fatalf("DeadLetters(%+v): %v", q, err)
		}
		if q.Limit > 0 && len(page.DeadLetters) > q.Limit {
			t.Fatalf("page of %d with limit %d", len(page.DeadLetters), q.Limit)
		}
		for _, d := range page.DeadLetters {
			ids = append(ids, d.BlobID)
		}
		if page.Next == "" {
			return ids
		}
		q.After = page.Next
	}
	t.Fatal("DeadLetters: no end after 100 pages")
	return nil
}

// TestDeadLetterFilters: the tenant filter follows the policies, the
// namespace filter the database; pages of one, following Next, find a
// tenant's only dead letter among many of another tenant's (the scan of
// one call is bounded, so some pages are short or empty).
func TestDeadLetterFilters(t *testing.T) {
	nss := []string{"a1", "a2"}
	for range 25 {
		nss = append(nss, "b1")
	}
	b, _, ids := setupDeadLetters(t, nss...)
	acme := slices.Sorted(slices.Values(append(slices.Clone(ids["a1"]), ids["a2"]...)))
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{Tenant: "acme", Limit: 1}); !slices.Equal(got, acme) {
		t.Errorf("acme in pages of 1 = %v, want %v", got, acme)
	}
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{Tenant: "beta", Limit: 7}); !slices.Equal(got, slices.Sorted(slices.Values(ids["b1"]))) {
		t.Errorf("beta in pages of 7: %d ids, want %d", len(got), len(ids["b1"]))
	}
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{Namespace: "a2"}); !slices.Equal(got, ids["a2"]) {
		t.Errorf("namespace a2 = %v, want %v", got, ids["a2"])
	}
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{Tenant: "beta", Namespace: "a2"}); len(got) != 0 {
		t.Errorf("tenant beta, namespace a2 = %v, want none", got)
	}
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{Tenant: "nobody"}); len(got) != 0 {
		t.Errorf("tenant nobody = %v, want none", got)
	}
}

// TestDeadLetterRetry: a retried dead letter leaves the list, a second
// retry or an unknown id is not_found, a page retry answers what it took
// back, and the next sweep deletes the objects once the storage works.
func TestDeadLetterRetry(t *testing.T) {
	ctx := context.Background()
	b, fd, ids := setupDeadLetters(t, "a1", "a1", "a2", "b1")
	a2 := ids["a2"][0]
	d, err := b.store.DeadLetter(ctx, a2)
	if err != nil || d.Namespace != "a2" || d.Attempts != 1 || !strings.Contains(d.LastError, "access denied") ||
		!strings.HasPrefix(d.ObjectKey, "a2/") || d.StoredSize == 0 || d.ParkedAt.IsZero() || d.DeletingSince.IsZero() {
		t.Fatalf("DeadLetter = %+v, %v", d, err)
	}
	fd.on = false // the operator fixed the bucket's policy
	back, err := b.store.RetryDeadLetter(ctx, a2)
	if err != nil || back.BlobID != a2 || back.Attempts != 1 {
		t.Fatalf("RetryDeadLetter = %+v, %v; want it as it was parked", back, err)
	}
	for name, err := range map[string]error{
		"second retry":       second(b.store.RetryDeadLetter(ctx, a2)),
		"read after retry":   second(b.store.DeadLetter(ctx, a2)),
		"retry of unknown":   second(b.store.RetryDeadLetter(ctx, "b_AAAAAAAAAAAAAAAAAAAAAA")),
		"read of a live one": second(b.store.DeadLetter(ctx, "b_BBBBBBBBBBBBBBBBBBBBBB")),
	} {
		if !errors.Is(err, claimcheck.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}

	page, err := b.store.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{Tenant: "acme", Limit: 1})
	if err != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].Namespace != "a1" || page.Next == "" {
		t.Fatalf("RetryDeadLetters(acme, 1) = %+v, %v; want one of a1 and a next", page, err)
	}
	page, err = b.store.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{Tenant: "acme", After: page.Next})
	if err != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].Namespace != "a1" || page.Next != "" {
		t.Fatalf("RetryDeadLetters(acme, rest) = %+v, %v; want the other of a1, last", page, err)
	}
	if got := collect(t, b.store, claimcheck.DeadLetterQuery{}); !slices.Equal(got, ids["b1"]) {
		t.Errorf("left parked = %v, want beta's %v", got, ids["b1"])
	}
	if res, err := b.store.SweepOnce(ctx, 0); err != nil || res.BlobsCollected != 3 {
		t.Errorf("sweep after the retries: %+v %v; want 3 collected", res, err)
	}
}

// TestDeadLetterQueryErrors: each bad field is an ErrInvalidArgument
// naming it.
func TestDeadLetterQueryErrors(t *testing.T) {
	b, _, _ := setupDeadLetters(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q    claimcheck.DeadLetterQuery
		says string
	}{
		{claimcheck.DeadLetterQuery{Limit: -1}, "limit -1"},
		{claimcheck.DeadLetterQuery{After: "cc_x"}, `after "cc_x"`},
		{claimcheck.DeadLetterQuery{Namespace: "Bad"}, `namespace "Bad"`},
		{claimcheck.DeadLetterQuery{Tenant: "a b"}, `tenant "a b"`},
	} {
		_, err := b.store.DeadLetters(ctx, tc.q)
		if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("DeadLetters(%+v) = %v, want invalid argument saying %q", tc.q, err, tc.says)
		}
		if _, err := b.store.RetryDeadLetters(ctx, tc.q); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("RetryDeadLetters(%+v) = %v, want invalid argument", tc.q, err)
		}
	}
	for _, id := range []string{"", "b_short", "cc_AAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := b.store.RetryDeadLetter(ctx, id); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("RetryDeadLetter(%q) = %v, want invalid argument", id, err)
		}
		if _, err := b.store.DeadLetter(ctx, id); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("DeadLetter(%q) = %v, want invalid argument", id, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
