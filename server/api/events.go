package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck"
)

// EventsPage is the body of GET /v1/claims/{id}/events, GET
// /v1/namespaces/{ns}/events and GET /v1/events. Next is the after parameter of the next
// page; it is 0 when this page was the last. Next is a JSON string, as
// every seq is (ADR 0273); decoding takes a number too.
type EventsPage struct {
	Events []claimcheck.Event `json:"events"`
	Next   int64              `json:"next,string,omitempty"`
}

// UnmarshalJSON decodes a page whose next is a string or a number.
func (p *EventsPage) UnmarshalJSON(b []byte) error {
	type plain EventsPage // without this method
	v := struct {
		*plain
		Next json.Number `json:"next"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return claimcheck.SeqFromJSON("next", v.Next, &p.Next)
}

// Query parameters of the events routes.
const (
	QueryAfter = "after" // return events with seq > after
	QuerySince = "since" // RFC 3339 time: events at or after it
	QueryLimit = "limit" // page size, 1 to claimcheck.MaxEventPage
	// QueryTenant names the tenant of GET /v1/events: with API keys it
	// may only repeat the key's own (the default), without them it
	// defaults to claimcheck.DefaultTenant.
	QueryTenant = "tenant"
)

// ParseEventQuery reads the query parameters of the events routes. Each
// parameter may be given once; unknown parameters other than ns (the
// namespace check of claim routes) and tenant (of GET /v1/events) are
// refused, so a typo is not silently ignored.
func ParseEventQuery(v url.Values) (claimcheck.EventQuery, error) {
	var q claimcheck.EventQuery
	for name, vals := range v {
		switch name {
		case QueryAfter, QuerySince, QueryLimit, "ns", QueryTenant:
		default:
			return q, queryErr(name, "unknown parameter; known: after, since, limit, ns, tenant")
		}
		if len(vals) != 1 {
			return q, queryErr(name, "given %d times, want once", len(vals))
		}
	}
	if s := v.Get(QueryAfter); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return q, queryErr(QueryAfter, "%q: want a sequence number (a non-negative integer)", clip(s))
		}
		q.After = n
	}
	if s := v.Get(QueryLimit); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > claimcheck.MaxEventPage {
			return q, queryErr(QueryLimit, "%q: want 1 to %d", clip(s), claimcheck.MaxEventPage)
		}
		q.Limit = n
	}
	if s := v.Get(QuerySince); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, queryErr(QuerySince, "%q: want an RFC 3339 time such as 2026-01-09T13:24:00Z", clip(s))
		}
		// The store compares times as Unix nanoseconds: a time they
		// cannot hold (before 1678, after 2262) overflowed and matched
		// every event. Refuse it rather than guess.
		if t.Before(minQueryTime) || t.After(maxQueryTime) {
			return q, queryErr(QuerySince, "%q: out of range; want a time between %s and %s", clip(s), minQueryTime.Format(time.RFC3339), maxQueryTime.Format(time.RFC3339))
		}
		q.Since = t.UTC()
	}
	return q, nil
}

// FormatEventQuery is the inverse of ParseEventQuery.
func FormatEventQuery(q claimcheck.EventQuery) url.Values {
	v := url.Values{}
	if q.After > 0 {
		v.Set(QueryAfter, strconv.FormatInt(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set(QueryLimit, strconv.Itoa(q.Limit))
	}
	if !q.Since.IsZero() {
		v.Set(QuerySince, q.Since.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// The times a query may name: those Unix nanoseconds (an int64) can hold,
// to the second.
var (
	minQueryTime = time.Unix(0, math.MinInt64).UTC().Truncate(time.Second).Add(time.Second)
	maxQueryTime = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
)

func queryErr(name, format string, args ...any) error {
	return fmt.Errorf("%w: query parameter %s: %s", claimcheck.ErrInvalidArgument, name, fmt.Sprintf(format, args...))
}

// clip shortens an echoed value, so an error message stays small
// whatever the client sent.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
