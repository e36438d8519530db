package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Listing (GET /v1/namespaces/{ns}/claims) and extension (POST
// /v1/claims/{id}/extend) on the wire; ADR 0100, ADR 0101.

// Query parameters of the listing.
const (
	QueryLabel         = "label"          // key=value, may repeat (ANDed)
	QueryState         = "state"          // pending, active or deleted
	QueryOrder         = "order"          // newest (default) or expiring
	QueryExpiresAfter  = "expires_after"  // RFC 3339, inclusive
	QueryExpiresBefore = "expires_before" // RFC 3339, exclusive
	QueryCursor        = "cursor"         // the next of the previous page
	// QueryLimit (events.go) is the page size, 1 to claimcheck.MaxListLimit.
)

// ParseListQuery reads the listing's query parameters. label may repeat;
// every other parameter may be given once; unknown ones are refused,
// naming the parameter.
func ParseListQuery(v url.Values) (claimcheck.ListOptions, error) {
	var o claimcheck.ListOptions
	for name, vals := range v {
		switch name {
		case QueryLabel:
			continue
		case QueryState, QueryOrder, QueryExpiresAfter, QueryExpiresBefore, QueryCursor, QueryLimit:
		default:
			return o, queryErr(name, "unknown parameter; known: label, state, order, expires_after, expires_before, cursor, limit")
		}
		if len(vals) != 1 {
			return o, queryErr(name, "given %d times, want once", len(vals))
		}
	}
	labels, err := claimcheck.ParseLabelSelector(v[QueryLabel])
	if err != nil {
		return o, queryErr(QueryLabel, "%v", err)
	}
	o.Labels = labels
	o.State = claimcheck.ClaimState(v.Get(QueryState))
	o.Order = claimcheck.ListOrder(v.Get(QueryOrder))
	o.Cursor = v.Get(QueryCursor)
	if s := v.Get(QueryLimit); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > claimcheck.MaxListLimit {
			return o, queryErr(QueryLimit, "%q: want 1 to %d", clip(s), claimcheck.MaxListLimit)
		}
		o.Limit = n
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{QueryExpiresAfter, &o.ExpiresAfter}, {QueryExpiresBefore, &o.ExpiresBefore}} {
		if s := v.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return o, queryErr(p.name, "%q: want an RFC 3339 time such as 2026-01-09T13:24:00Z", clip(s))
			}
			// As for since (events.go): a time Unix nanoseconds cannot
			// hold is refused, never left to overflow.
			if t.Before(minQueryTime) || t.After(maxQueryTime) {
				return o, queryErr(p.name, "%q: out of range; want a time between %s and %s", clip(s), minQueryTime.Format(time.RFC3339), maxQueryTime.Format(time.RFC3339))
			}
			*p.dst = t.UTC()
		}
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// FormatListQuery is the inverse of ParseListQuery.
func FormatListQuery(o claimcheck.ListOptions) url.Values {
	v := url.Values{}
	for k, val := range o.Labels {
		v.Add(QueryLabel, k+"="+val)
	}
	if o.State != "" {
		v.Set(QueryState, string(o.State))
	}
	if o.Order != "" {
		v.Set(QueryOrder, string(o.Order))
	}
	if !o.ExpiresAfter.IsZero() {
		v.Set(QueryExpiresAfter, o.ExpiresAfter.UTC().Format(time.RFC3339Nano))
	}
	if !o.ExpiresBefore.IsZero() {
		v.Set(QueryExpiresBefore, o.ExpiresBefore.UTC().Format(time.RFC3339Nano))
	}
	if o.Cursor != "" {
		v.Set(QueryCursor, o.Cursor)
	}
	if o.Limit > 0 {
		v.Set(QueryLimit, strconv.Itoa(o.Limit))
	}
	return v
}

// ExtendRequest is the body of POST /v1/claims/{id}/extend: exactly one
// of expires_at (RFC 3339: the new expiry) and by (a Go duration such as
// "24h", added to the current expiry).
type ExtendRequest struct {
	ExpiresAt string `json:"expires_at,omitempty"`
	By        string `json:"by,omitempty"`
}

// ParseExtendRequest reads and checks an extend body; errors name the
// field.
func ParseExtendRequest(b []byte) (claimcheck.ExtendOptions, error) {
	var (
		req  ExtendRequest
		opts claimcheck.ExtendOptions
	)
	if err := DecodeJSON(b, `extend body (want {"expires_at":"RFC 3339 time"} or {"by":"24h"})`, &req); err != nil {
		return opts, err
	}
	if req.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339Nano, req.ExpiresAt)
		if err != nil {
			return opts, invalidBody("extend body: expires_at %q: want an RFC 3339 time such as 2026-01-09T13:24:00Z", clip(req.ExpiresAt))
		}
		if t.Before(minQueryTime) || t.After(maxQueryTime) {
			return opts, invalidBody("extend body: expires_at %q: out of range; want a time before %s", clip(req.ExpiresAt), maxQueryTime.Format(time.RFC3339))
		}
		opts.ExpiresAt = t.UTC()
	}
	if req.By != "" {
		d, err := time.ParseDuration(req.By)
		if err != nil || d <= 0 {
			return opts, invalidBody("extend body: by %q: want a positive duration such as 24h", clip(req.By))
		}
		opts.By = d
	}
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	return opts, nil
}

// FormatExtendRequest is the body for opts.
func FormatExtendRequest(opts claimcheck.ExtendOptions) ([]byte, error) {
	req := ExtendRequest{}
	if !opts.ExpiresAt.IsZero() {
		req.ExpiresAt = opts.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if opts.By > 0 {
		req.By = opts.By.String()
	}
	return json.Marshal(req)
}

func invalidBody(format string, args ...any) error {
	return fmt.Errorf("%w: %s", claimcheck.ErrInvalidArgument, fmt.Sprintf(format, args...))
}
