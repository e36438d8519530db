package api

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// DeadLetterPage is the body of GET /v1/dead-letters and of POST
// /v1/dead-letters/retry (the dead letters it took back). Next is the
// after parameter of the next page; it is absent when this page was the
// last. A page may be short, even empty, and still have a Next.
type DeadLetterPage = claimcheck.DeadLetterPage

// QueryNamespace is the query parameter of the dead-letter routes that
// keeps one namespace; after, limit and tenant (only the namespaces of
// that tenant) share the events routes' names, QueryAfter, QueryLimit
// and QueryTenant.
const QueryNamespace = "ns"

// ParseDeadLetterQuery reads the query parameters of GET /v1/dead-letters
// and POST /v1/dead-letters/retry. Each may be given once; unknown ones
// are refused, so a typo (nss=orders) never widens a retry to every
// namespace.
func ParseDeadLetterQuery(v url.Values) (claimcheck.DeadLetterQuery, error) {
	var q claimcheck.DeadLetterQuery
	for name, vals := range v {
		switch name {
		case QueryTenant, QueryNamespace, QueryAfter, QueryLimit:
		default:
			return q, queryErr(name, "unknown parameter; known: tenant, ns, after, limit")
		}
		if len(vals) != 1 {
			return q, queryErr(name, "given %d times, want once", len(vals))
		}
	}
	if s := v.Get(QueryTenant); s != "" {
		if err := claimcheck.ValidateTenant(s); err != nil {
			return q, queryErr(QueryTenant, "%s", reason(err))
		}
		q.Tenant = s
	}
	if s := v.Get(QueryNamespace); s != "" {
		if err := claimcheck.ValidateNamespace(s); err != nil {
			return q, queryErr(QueryNamespace, "%s", reason(err))
		}
		q.Namespace = s
	}
	if s := v.Get(QueryAfter); s != "" {
		if !claimcheck.ValidBlobID(s) {
			return q, queryErr(QueryAfter, "%q: want a blob id (b_…), the next of the previous page", clip(s))
		}
		q.After = s
	}
	if s := v.Get(QueryLimit); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > claimcheck.MaxDeadLetterPage {
			return q, queryErr(QueryLimit, "%q: want 1 to %d", clip(s), claimcheck.MaxDeadLetterPage)
		}
		q.Limit = n
	}
	return q, nil
}

// FormatDeadLetterQuery is the inverse of ParseDeadLetterQuery.
func FormatDeadLetterQuery(q claimcheck.DeadLetterQuery) url.Values {
	v := url.Values{}
	if q.Tenant != "" {
		v.Set(QueryTenant, q.Tenant)
	}
	if q.Namespace != "" {
		v.Set(QueryNamespace, q.Namespace)
	}
	if q.After != "" {
		v.Set(QueryAfter, q.After)
	}
	if q.Limit > 0 {
		v.Set(QueryLimit, strconv.Itoa(q.Limit))
	}
	return v
}

// reason is a validation error's message without its sentinel's prefix,
// for a message that names the query parameter first.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), claimcheck.ErrInvalidArgument.Error()+": ")
}
