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

// FormatPageQuery is the query ParsePageQuery reads: cursor and limit,
// each left out when not given ("" and 0).
func FormatPageQuery(cursor string, limit int) url.Values {
	v := url.Values{}
	if cursor != "" {
		v.Set(QueryCursor, cursor)
	}
	if limit > 0 {
		v.Set(QueryLimit, strconv.Itoa(limit))
	}
	return v
}

// Query parameters of GET /v1/events/stream: the filter of a
// subscription (type and ns repeated or comma-separated, label as
// key=value, repeated), and where to resume when the client cannot send
// a Last-Event-ID header on its first request: the id of the last
// event received, or "oldest" (StreamOldest).
const (
	QueryType        = "type"
	QueryLastEventID = "last_event_id"
	HeaderLastEvent  = "Last-Event-ID"
)

// StreamOldest is the resume point (Last-Event-ID or last_event_id)
// that starts a stream at the oldest event retained (ADR 0273).
const StreamOldest = "oldest"

// StreamShutdown is the event type of a stream's last message when the
// server shuts down: it carries no event and no id, with a retry hint;
// the client reconnects with Last-Event-ID (ADR 0273).
const StreamShutdown = "shutdown"

// StreamFrom is where a stream request asks to begin: after the event
// with seq After, or at the oldest event retained, or (neither, or an
// After of 0) from now. Field names how the client gave it, as errors
// about it say it.
type StreamFrom struct {
	After  int64
	Oldest bool
	Field  string
}

// ParseStreamQuery reads the filter and the resume point of a stream
// request; lastEventID is the header's value ("" when absent), which
// wins over the query's.
func ParseStreamQuery(v url.Values, lastEventID string) (claimcheck.EventFilter, StreamFrom, error) {
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
					return f, StreamFrom{}, queryErr(name, "want key=value")
				}
				if f.Labels == nil {
					f.Labels = map[string]string{}
				}
				f.Labels[k] = val
			}
		case QueryLastEventID, QueryTenant:
		default:
			return f, StreamFrom{}, queryErr(name, "unknown parameter; known: type, ns, label, last_event_id, tenant")
		}
	}
	from := StreamFrom{Field: HeaderLastEvent + " header"}
	given := lastEventID
	if given == "" {
		given, from.Field = v.Get(QueryLastEventID), "query parameter "+QueryLastEventID
	}
	switch given {
	case "":
		from.Field = ""
	case StreamOldest:
		from.Oldest = true
	default:
		n, err := strconv.ParseInt(given, 10, 64)
		if err != nil || n < 0 {
			return f, StreamFrom{}, fmt.Errorf("%w: %s: %q is not an event id (the id of the last event received, or %s)",
				claimcheck.ErrInvalidArgument, from.Field, clip(given), StreamOldest)
		}
		from.After = n
	}
	return f, from, nil
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
