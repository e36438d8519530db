package api

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// SubscriptionsPage is the answer to GET /v1/subscriptions; its query
// parameters are QueryCursor (the next of the page before) and
// QueryLimit (1 to claimcheck.MaxListLimit), as in the claims' listing
// (ParsePageQuery).
type SubscriptionsPage = claimcheck.SubscriptionPage

// ParsePageQuery reads the query of a listing paged by cursor and limit
// alone (GET /v1/subscriptions, GET /v1/keys); limit 0: not given.
func ParsePageQuery(v url.Values) (cursor string, limit int, err error) {
	for name, vals := range v {
		switch name {
		case QueryCursor, QueryLimit, QueryTenant:
		default:
			return "", 0, queryErr(name, "unknown parameter; known: cursor, limit, tenant")
		}
		if len(vals) != 1 {
			return "", 0, queryErr(name, "given %d times, want once", len(vals))
		}
	}
	if s := v.Get(QueryLimit); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > claimcheck.MaxListLimit {
			return "", 0, queryErr(QueryLimit, "%q: want 1 to %d", clip(s), claimcheck.MaxListLimit)
		}
		limit = n
	}
	return v.Get(QueryCursor), limit, nil
}

// Query parameters of GET /v1/events/stream: the filter of a
// subscription (type and ns repeated or comma-separated, label as
// key=value, repeated), and where to resume when the client cannot send
// a Last-Event-ID header on its first request.
const (
	QueryType        = "type"
	QueryLastEventID = "last_event_id"
	HeaderLastEvent  = "Last-Event-ID"
)

// ParseStreamQuery reads the filter and the resume point of a stream
// request; lastEventID is the header's value ("" when absent), which
// wins over the query's.
func ParseStreamQuery(v url.Values, lastEventID string) (claimcheck.EventFilter, int64, error) {
	var f claimcheck.EventFilter
	for name, vals := range v {
		switch name {
		case QueryType:
			f.Types = appendList(f.Types, vals)
		case QueryNamespace:
			f.Namespaces = appendList(f.Namespaces, vals)
		case QueryLabel:
			for _, kv := range vals {
				k, val, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return f, 0, queryErr(name, "want key=value")
				}
				if f.Labels == nil {
					f.Labels = map[string]string{}
				}
				f.Labels[k] = val
			}
		case QueryLastEventID, QueryTenant:
		default:
			return f, 0, queryErr(name, "unknown parameter; known: type, ns, label, last_event_id, tenant")
		}
	}
	from := lastEventID
	if from == "" {
		from = v.Get(QueryLastEventID)
	}
	var after int64
	if from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 {
			what := HeaderLastEvent + " header"
			if lastEventID == "" {
				what = "query parameter " + QueryLastEventID
			}
			return f, 0, fmt.Errorf("%w: %s: %q is not an event id (the id of the last event received)",
				claimcheck.ErrInvalidArgument, what, clip(from))
		}
		after = n
	}
	return f, after, nil
}

func appendList(to, vals []string) []string {
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				to = append(to, s)
			}
		}
	}
	return to
}
