package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck/server/api"
)

// Strict requests. A parameter or header the API does not know is a
// mistake, most often a typo ("Claimcheck-Consumer: 5" made a claim with
// one consumer; "?ns=a&ns=b" checked one of the two namespaces), and a
// mistake answered with success is the worst kind. So every /v1 request
// is checked, before its handler runs, against the one table below:
//
//   - each query parameter must be one the route knows, given once, and
//     the query must be well-formed (a pair the URL decoder would drop,
//     like "%zz", is refused instead of ignored);
//   - each Claimcheck-* request header must be one the route reads.
//
// A route missing from the table takes no parameters and no Claimcheck-*
// headers, so a route added later fails closed.

// routeParams are the query parameters each /v1 route reads.
var routeParams = map[string][]string{
	"GET /v1/claims/{id}":            {"ns"},
	"HEAD /v1/claims/{id}":           {"ns"},
	"GET /v1/claims/{id}/meta":       {"ns"},
	"POST /v1/claims/{id}/release":   {"ns"},
	"POST /v1/claims/{id}/extend":    {"ns"},
	"GET /v1/namespaces/{ns}/claims": {api.QueryLabel, api.QueryState, api.QueryOrder, api.QueryExpiresAfter, api.QueryExpiresBefore, api.QueryCursor, api.QueryLimit},
	"DELETE /v1/claims/{id}":         {"ns"},
	"PUT /v1/claims/{id}/hold":       {"ns"},
	"DELETE /v1/claims/{id}/hold":    {"ns"},
	"DELETE /v1/namespaces/{ns}/key": {"confirm"},
	// expires and sig: the earlier URL format, which the handler explains.
	uploadDataRoute:                       {uploadTokenParam, "expires", "sig"},
	"GET /v1/claims/{id}/events":          {api.QueryAfter, api.QuerySince, api.QueryLimit, "ns"},
	"GET /v1/namespaces/{ns}/events":      {api.QueryAfter, api.QuerySince, api.QueryLimit},
	"GET /v1/events":                      {api.QueryAfter, api.QuerySince, api.QueryLimit, api.QueryTenant},
	"GET /v1/dead-letters":                {api.QueryTenant, api.QueryNamespace, api.QueryAfter, api.QueryLimit},
	"POST /v1/dead-letters/retry":         {api.QueryTenant, api.QueryNamespace, api.QueryAfter, api.QueryLimit},
	"POST /v1/namespaces/{ns}/key/rewrap": {api.QueryDryRun},
	"GET /v1/events/stream":               {api.QueryType, api.QueryNamespace, api.QueryLabel, api.QueryLastEventID, api.QueryTenant},
	"POST /v1/subscriptions":              {api.QueryTenant},
	"GET /v1/subscriptions":               {api.QueryTenant, api.QueryCursor, api.QueryLimit},
	"GET /v1/keys":                        {api.QueryCursor, api.QueryLimit},
	"GET /v1/namespaces":                  {api.QueryCursor, api.QueryLimit},
	"DELETE /v1/subscriptions/{id}":       {api.QueryTenant},
	"POST /v1/subscriptions/{id}/resume":  {api.QueryTenant},
	"GET /v1/subscriptions/{id}/attempts": {api.QueryTenant, api.QueryCursor, api.QueryLimit},
	"POST /v1/subscriptions/{id}/retry":   {api.QueryTenant},
	"POST /v1/subscriptions/{id}/replay":  {api.QueryTenant, api.QuerySince},
}

// repeatable are the parameters a route takes more than once (the
// listing's label selectors, ANDed).
var repeatable = map[string][]string{
	"GET /v1/namespaces/{ns}/claims": {api.QueryLabel},
	"GET /v1/events/stream":          {api.QueryType, api.QueryNamespace, api.QueryLabel},
}

// routeHeaders are the Claimcheck-* request headers each route reads.
var routeHeaders = map[string][]string{
	"PUT /v1/namespaces/{ns}/claims": {api.HeaderDigest, api.HeaderConsumers, api.HeaderConsumerNames, api.HeaderLabels},
}

// headerPrefix starts the API's own headers (canonical form).
const headerPrefix = "Claimcheck-"

// checkRequest refuses query parameters and Claimcheck-* headers the
// route of pattern does not know, and repeated parameters.
func checkRequest(r *http.Request, pattern string) error {
	known := routeParams[pattern]
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalidf("query %q: malformed: %v", clip(r.URL.RawQuery), err)
	}
	for _, name := range sortedKeys(q) {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return invalidf("query parameter %s: unknown parameter; %s takes none", clip(name), pattern)
			}
			return invalidf("query parameter %s: unknown parameter; known: %s", clip(name), strings.Join(known, ", "))
		}
		if n := len(q[name]); n != 1 && !slices.Contains(repeatable[pattern], name) {
			return invalidf("query parameter %s: given %d times, want once", name, n)
		}
	}
	headers := routeHeaders[pattern]
	for _, name := range sortedKeys(r.Header) {
		if !strings.HasPrefix(name, headerPrefix) || slices.Contains(headers, name) {
			continue
		}
		if len(headers) == 0 {
			return invalidf("header %s: unknown request header; %s reads no Claimcheck-* header", clip(name), pattern)
		}
		return invalidf("header %s: unknown request header; known: %s", clip(name), strings.Join(headers, ", "))
	}
	return nil
}

// sortedKeys makes the first refusal the same on every try.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// refusedMethods are methods a route pattern registers only to refuse
// them (HEAD on a payload: a redeem counts as a read). A 405 answer must
// not offer them in its Allow header.
var refusedMethods = map[string]bool{
	"HEAD /v1/claims/{id}": true,
}

// probeMethods are the methods a 405's Allow header may list.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed lists the methods that really work on r's path: those the mux
// routes to a handler (GET patterns also take HEAD), minus the ones a
// route registers only to refuse.
func (s *Server) allowed(r *http.Request) string {
	var out []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && !refusedMethods[pattern] {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}
