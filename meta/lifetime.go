package meta

import (
	"context"
	"time"
)

// Listing and extending claims (ADR 0100, ADR 0101).

// EventExtended records an extension: Detail is "expires_at OLD -> NEW"
// (RFC 3339), written in the transaction that moves the expiry.
const EventExtended = "extended"

// ListOrder is the order of ListClaims.
type ListOrder int

// Orders: newest first by (created_at, id), or soonest expiry first by
// (expires_at, id) over live (pending and active) claims.
const (
	OrderNewest ListOrder = iota
	OrderExpiring
)

// Label is one key=value pair of a label selector.
type Label struct{ Key, Value string }

// ListParams select a page of a namespace's claims. Every filter given
// must match.
type ListParams struct {
	Namespace string
	Labels    []Label    // each must match exactly
	State     ClaimState // "" = any
	// ExpiresAfter (inclusive) and ExpiresBefore (exclusive); zero =
	// unbounded.
	ExpiresAfter, ExpiresBefore time.Time
	Order                       ListOrder
	// After is the position of the last row of the previous page: its
	// created_at (OrderNewest) or expires_at (OrderExpiring) and id; the
	// page continues strictly after it. Zero AfterID: the first page.
	AfterAt time.Time
	AfterID string
	Limit   int
	// Window, when above 0, bounds the rows of the index range one page
	// reads: a filter the index does not hold (a state, an expiry
	// window, a further label) is checked on at most Window rows, so a
	// filter that few claims match costs a bounded read per page, not a
	// walk of the whole namespace. A page that read Window rows before
	// it had Limit claims ends short, and ListPage.Resume* say where
	// the next one continues.
	Window int
}

// ListPage is a page of ListClaims: its claims, and, when the page ended
// at its Window with fewer than Limit claims, the position of the last
// row it read (its created_at or expires_at, by the order, and id), after
// which the next page continues. ResumeID is empty when the range ended.
type ListPage struct {
	Claims   []ListedClaim
	ResumeAt time.Time
	ResumeID string
}

// ListedClaim is a claim of a listing with what its reference needs of
// its blob (read in the same query: a listing costs one statement).
type ListedClaim struct {
	Claim
	Digest      string // "" while pending
	StoredSize  int64
	Compression string
}

// ExtendParams move a claim's expiry.
type ExtendParams struct {
	ID        string
	ExpiresAt time.Time // the new expiry; at or before the current one changes nothing
	// NotAfter is the latest expiry allowed (created + max_lifetime), a
	// bound the transaction checks again on the locked row.
	NotAfter time.Time
	Now      time.Time
}

// LifetimeStore lists and extends claims. Part of Store.
type LifetimeStore interface {
	// ListClaims returns up to p.Limit claims of p.Namespace matching the
	// filters, in p.Order, after p.AfterAt/AfterID. It is answered from
	// indexes: the claim_labels index when there is a label selector,
	// else the claims index of the order; never a scan of every claim.
	// ReleasedBy is not filled. With p.Window it reads at most that many
	// rows of the range (see ListParams.Window).
	ListClaims(ctx context.Context, p ListParams) (ListPage, error)

	// ExtendClaim moves an active claim's expiry to p.ExpiresAt in one
	// transaction, with an extended event: expires_at = p.ExpiresAt, and
	// the due time with it when the claim is due for expiry (a due time
	// set by a read window or by releases stays). An expiry at or before
	// the current one changes nothing and returns the claim as it is.
	// ErrNotFound if absent; ErrConflict if the claim is not active, or
	// is due at p.Now and not held (the caller finishes it first); ErrHeld
	// if it is due at p.Now and kept only by a hold (an extension does not
	// revive a claim past its deadline); *LifetimeError past p.NotAfter.
	ExtendClaim(ctx context.Context, p ExtendParams) (Claim, error)
}

// LifetimeError: an extension would pass the claim's latest allowed
// expiry.
type LifetimeError struct {
	ID       string
	NotAfter time.Time
	Asked    time.Time
}

func (e *LifetimeError) Error() string {
	return "claim " + e.ID + ": expiry " + e.Asked.UTC().Format(time.RFC3339) +
		" is after the latest allowed, " + e.NotAfter.UTC().Format(time.RFC3339)
}
