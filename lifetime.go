package claimcheck

import (
	"strings"
	"time"
)

// Listing and extending claims (ADR 0100, ADR 0101): what an owner needs
// to keep claims exactly as long as what they belong to lives, such as a
// Temporal workflow run (integrations/temporal's keeper). Claims.List and
// Claims.Extend take these options.

// ExtendOptions say how far to extend: exactly one of ExpiresAt (the new
// expiry, idempotent) and By (added to the current expiry).
type ExtendOptions struct {
	ExpiresAt time.Time     `json:"expires_at,omitzero"`
	By        time.Duration `json:"-"`
}

// Validate checks that exactly one of the two is set, sensibly.
func (o ExtendOptions) Validate() error {
	switch {
	case o.ExpiresAt.IsZero() && o.By == 0:
		return invalidf("extend: give expires_at or by")
	case !o.ExpiresAt.IsZero() && o.By != 0:
		return invalidf("extend: give expires_at or by, not both")
	case o.By < 0:
		return invalidf("extend: by %s: must be positive", o.By)
	}
	return nil
}

// ListOrder is the order of a listing.
type ListOrder string

// The orders of a listing. Newest: by creation time, newest first (the
// default). Expiring: by expiry, soonest first, over pending and active
// claims only: what a keeper that extends claims before they expire
// reads.
const (
	ListNewest   ListOrder = "newest"
	ListExpiring ListOrder = "expiring"
)

// Listing limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// MaxListLabels bounds the label selector (the store allows 32 labels
	// per claim; a selector of more than 8 is a mistake, not a query).
	MaxListLabels = 8
)

// ListOptions filter and page a listing. Every filter given must match
// (AND).
type ListOptions struct {
	// Labels: the claim has each key with exactly this value.
	Labels map[string]string
	// State: only claims in this state ("" = any).
	State ClaimState
	// ExpiresAfter and ExpiresBefore: expiry in [after, before); zero
	// means unbounded.
	ExpiresAfter, ExpiresBefore time.Time
	// Order of the page (default ListNewest).
	Order ListOrder
	// Cursor is the Next of the previous page ("" for the first).
	Cursor string
	// Limit is the page size (default DefaultListLimit, at most
	// MaxListLimit).
	Limit int
}

// ClaimPage is one page of a listing. The ClaimInfo of a listing has no
// Holds (ask Stat for them).
type ClaimPage struct {
	Claims []ClaimInfo `json:"claims"`
	Next   string      `json:"next,omitempty"`
}

// Validate checks the options and fills in the defaults. Errors name the
// parameter as the HTTP API spells it.
func (o *ListOptions) Validate() error {
	switch o.Order {
	case "":
		o.Order = ListNewest
	case ListNewest, ListExpiring:
	default:
		return invalidf("order %q: want newest or expiring", o.Order)
	}
	switch o.State {
	case "", StatePending, StateActive, StateDeleted:
	default:
		return invalidf("state %q: want pending, active or deleted", o.State)
	}
	if o.Order == ListExpiring && o.State == StateDeleted {
		return invalidf("order expiring lists live claims: state deleted does not go with it")
	}
	switch {
	case o.Limit == 0:
		o.Limit = DefaultListLimit
	case o.Limit < 0 || o.Limit > MaxListLimit:
		return invalidf("limit %d: want 1..%d", o.Limit, MaxListLimit)
	}
	if len(o.Labels) > MaxListLabels {
		return invalidf("label: %d selectors, at most %d", len(o.Labels), MaxListLabels)
	}
	for k := range o.Labels {
		if k == "" {
			return invalidf("label: empty key")
		}
	}
	if !o.ExpiresAfter.IsZero() && !o.ExpiresBefore.IsZero() && !o.ExpiresAfter.Before(o.ExpiresBefore) {
		return invalidf("expires_after %s is not before expires_before %s",
			o.ExpiresAfter.Format(time.RFC3339), o.ExpiresBefore.Format(time.RFC3339))
	}
	return nil
}

// ParseLabelSelector parses "k=v" selectors (several are ANDed): each
// element is one key=value pair; a key given twice is an error.
func ParseLabelSelector(sel []string) (map[string]string, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(sel))
	for _, s := range sel {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, invalidf("label %q: want key=value", s)
		}
		if _, dup := out[k]; dup {
			return nil, invalidf("label %q: key %q given twice", s, k)
		}
		out[k] = v
	}
	return out, nil
}
