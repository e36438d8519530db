package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// Listing and extending claims (ADR 0100, ADR 0101).

// List returns a page of the claims of namespace ns; see
// claimcheck.Claims.List. A claim past its deadline that no sweep has finished
// yet is listed as it is (its DeleteAt in the past); Redeem and Stat
// would finish it.
func (s *Store) List(ctx context.Context, ns string, opts claimcheck.ListOptions) (claimcheck.ClaimPage, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list %s: %w", ns, err)
	}
	p := meta.ListParams{Namespace: ns, State: meta.ClaimState(opts.State),
		ExpiresAfter: opts.ExpiresAfter, ExpiresBefore: opts.ExpiresBefore, Limit: opts.Limit}
	if opts.Order == claimcheck.ListExpiring {
		p.Order = meta.OrderExpiring
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Labels)) {
		p.Labels = append(p.Labels, meta.Label{Key: k, Value: opts.Labels[k]})
	}
	var err error
	if p.AfterAt, p.AfterID, err = decodeCursor(opts.Cursor, opts.Order); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list %s: %w", ns, err)
	}
	s.touch()
	// A page reads at most listWindow rows of its index range, so a
	// filter that few claims match (a state, an expiry window, a second
	// label) costs a bounded read per page; such a page may be short,
	// even empty, and still have a Next.
	p.Window = max(listWindow, opts.Limit)
	found, err := s.meta.ListClaims(ctx, p)
	if err != nil {
		return claimcheck.ClaimPage{}, metaErr("list "+ns, err)
	}
	rows := found.Claims
	page := claimcheck.ClaimPage{Claims: make([]claimcheck.ClaimInfo, 0, len(rows))}
	for _, r := range rows {
		page.Claims = append(page.Claims, infoOf(r.Claim, meta.Blob{Digest: r.Digest, StoredSize: r.StoredSize, Compression: r.Compression}))
	}
	switch {
	case len(rows) == opts.Limit && len(rows) > 0:
		last := rows[len(rows)-1].Claim
		at := last.CreatedAt
		if opts.Order == claimcheck.ListExpiring {
			at = last.ExpiresAt
		}
		page.Next = encodeCursor(opts.Order, at, last.ID)
	case found.ResumeID != "":
		page.Next = encodeCursor(opts.Order, found.ResumeAt, found.ResumeID)
	}
	return page, nil
}

// listWindow is the most rows of its index range one page of a listing
// reads (meta.ListParams.Window), at least the page's limit: at about
// 2 µs a row on SQLite, a page filtered by a state no claim of a large
// namespace is in answers in tens of milliseconds instead of walking the
// namespace. A variable for tests (SetListWindow).
var listWindow = 10_000

// A cursor is opaque to callers: the order it belongs to, and the sort
// key and id of the last row of the page, base64url-encoded. A page
// continues strictly after that row, so claims created or extended
// between two pages neither repeat nor shift the rows already read.
func encodeCursor(order claimcheck.ListOrder, at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(string(order) + ":" + strconv.FormatInt(at.UnixNano(), 10) + ":" + id))
}

func decodeCursor(cursor string, order claimcheck.ListOrder) (time.Time, string, error) {
	if cursor == "" {
		return time.Time{}, "", nil
	}
	bad := invalidf("cursor %q: not the next of a listing", cursor)
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", bad
	}
	parts := strings.SplitN(string(b), ":", 3)
	if len(parts) != 3 || !claimcheck.ValidClaimID(parts[2]) {
		return time.Time{}, "", bad
	}
	if claimcheck.ListOrder(parts[0]) != order {
		return time.Time{}, "", invalidf("cursor %q: from a listing in order %s, not %s", cursor, parts[0], order)
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	return time.Unix(0, ns).UTC(), parts[2], nil
}

// Extend moves a claim's expiry later; see claimcheck.Claims.
//
// Invariants: the new expiry is at most created + the namespace's
// ttl.max_lifetime (checked here and again on the locked row); the claim's
// object outlives it under the bucket's lifecycle rules in force (the
// safety net, ADR 0020: the rule follows max_lifetime, and dedup shares
// only blobs that outlive created + max_lifetime, so this check refuses
// only claims whose blob was chosen under an older, shorter policy); and a
// claim past its deadline is finished, not revived (load finishes it; a
// hold keeps it but does not let it be extended).
func (s *Store) Extend(ctx context.Context, ref claimcheck.Ref, opts claimcheck.ExtendOptions) (claimcheck.ClaimInfo, error) {
	ctx, sp := s.startOp(ctx, spanExtend, ref.Namespace)
	v, err := s.extend(ctx, ref, opts)
	tracing.End(sp, err)
	return v, err
}

// extend is Extend inside its span (tracing.go).
func (s *Store) extend(ctx context.Context, ref claimcheck.Ref, opts claimcheck.ExtendOptions) (claimcheck.ClaimInfo, error) {
	if err := opts.Validate(); err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	if err := s.reads.sync(ctx); err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	for attempt := 0; ; attempt++ {
		c, err := s.load(ctx, "extend", ref, false)
		if err != nil {
			return claimcheck.ClaimInfo{}, err
		}
		if c.State == meta.ClaimPending {
			return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w: the claim is still being written", c.ID, claimcheck.ErrNotFound)
		}
		pol, err := s.Policy(ctx, c.Namespace)
		if err != nil {
			return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w", c.ID, err)
		}
		target := opts.ExpiresAt
		if opts.By > 0 {
			target = c.ExpiresAt.Add(opts.By)
		}
		notAfter := c.CreatedAt.Add(pol.TTL.Lifetime())
		if target.After(notAfter) {
			return claimcheck.ClaimInfo{}, lifetimeErr(c, pol, target)
		}
		b, err := s.meta.Blob(ctx, c.BlobID)
		if err != nil {
			return claimcheck.ClaimInfo{}, metaErr("extend "+c.ID, err)
		}
		if target.After(c.ExpiresAt) {
			if bound := s.dedupNotBefore(c.Namespace, target); b.CreatedAt.Before(bound) {
				return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w", c.ID, invalidf(
					"expires_at %s: the claim's object was written at %s and the bucket's lifecycle rule may expire it before then (the latest safe expiry is %s)",
					target.UTC().Format(time.RFC3339), b.CreatedAt.UTC().Format(time.RFC3339),
					s.safeExpiry(c.Namespace, b.CreatedAt).UTC().Format(time.RFC3339)))
			}
		}
		nc, err := s.meta.ExtendClaim(ctx, meta.ExtendParams{ID: c.ID, ExpiresAt: target, NotAfter: notAfter, Now: s.clock.Now()})
		var le *meta.LifetimeError
		switch {
		case err == nil:
			if nc.ExpiresAt.After(c.ExpiresAt) {
				s.log.InfoContext(ctx, "claim extended", "claim", c.ID, "namespace", c.Namespace,
					"from", c.ExpiresAt.UTC().Format(time.RFC3339), "to", nc.ExpiresAt.UTC().Format(time.RFC3339),
					"actor", claimcheck.ActorFrom(ctx))
			}
			info := infoOf(nc, b)
			info.Holds, err = s.holdsOf(ctx, nc)
			return info, err
		case errors.As(err, &le):
			return claimcheck.ClaimInfo{}, lifetimeErr(c, pol, target)
		case errors.Is(err, meta.ErrHeld):
			return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w: the claim passed its deadline (%s) and is kept only by a legal hold; a hold keeps data but does not renew it",
				c.ID, claimcheck.ErrHeld, c.DueAt.UTC().Format(time.RFC3339))
		case errors.Is(err, meta.ErrConflict) && attempt < maxCASRetries:
			// Came due or finished meanwhile: load again, which finishes
			// it and answers gone.
			continue
		default:
			return claimcheck.ClaimInfo{}, metaErr("extend "+c.ID, err)
		}
	}
}

// lifetimeErr names the limit an extension would pass, as the config
// spells it.
func lifetimeErr(c meta.Claim, pol claimcheck.Policy, target time.Time) error {
	limit := "ttl.max_lifetime " + pol.TTL.MaxLifetime.String()
	if pol.TTL.MaxLifetime == 0 {
		limit = "ttl.max_lifetime (unset, so ttl.max_age " + pol.TTL.MaxAge.String() + ")"
	}
	return fmt.Errorf("extend %s: %w", c.ID, invalidf("expires_at %s is past the claim's %s of namespace %s: it was created at %s and may expire at %s at the latest",
		target.UTC().Format(time.RFC3339), limit, c.Namespace, c.CreatedAt.UTC().Format(time.RFC3339),
		c.CreatedAt.Add(pol.TTL.Lifetime()).UTC().Format(time.RFC3339)))
}

// safeExpiry is the latest expiry an object written at written keeps under
// the bucket's rules in force for namespace ns (far future when none).
func (s *Store) safeExpiry(ns string, written time.Time) time.Time {
	// dedupNotBefore(ns, e) = e + margin - days; solve for e.
	zero := s.dedupNotBefore(ns, written)
	if zero.IsZero() {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return written.Add(written.Sub(zero))
}
