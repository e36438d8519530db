package server

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestStrictTablesNameRoutes: every pattern the strict tables name is a
// route of the route table, so a renamed route cannot leave its
// parameters behind (and start refusing them).
func TestStrictTablesNameRoutes(t *testing.T) {
	known := map[string]bool{}
	for _, rt := range routes {
		known[rt.pattern] = true
	}
	for pattern := range routeParams {
		if !known[pattern] {
			t.Errorf("routeParams names %q, which is not in the route table", pattern)
		}
	}
	for pattern := range routeHeaders {
		if !known[pattern] {
			t.Errorf("routeHeaders names %q, which is not in the route table", pattern)
		}
	}
	for pattern := range refusedMethods {
		if !known[pattern] {
			t.Errorf("refusedMethods names %q, which is not in the route table", pattern)
		}
	}
}

// FuzzCheckRequest: the strict check of query and headers never panics,
// refuses with ErrInvalidArgument only, and what it accepts has only the
// route's parameters, each once, and only the route's Claimcheck-*
// headers.
func FuzzCheckRequest(f *testing.F) {
	for _, s := range []struct {
		route   uint8
		query   string
		header  string
		headerV string
	}{
		{0, "", "Claimcheck-Consumers", "2"},
		{0, "consumers=3", "Claimcheck-Consumer", "5"},
		{1, "ns=a&ns=b", "", ""},
		{1, "ns=%zz", "X-Other", "1"},
		{2, "=x&&", "claimcheck-digest", "sha256:x"},
		{3, "since=2263-01-01T00:00:00Z&limit=1", "Claimcheck-Ttl", "1h"},
		{4, "token=abc&expires=1&sig=2", "", ""},
		{6, "label=a%3Db&label=c%3Dd&limit=2&limit=3", "Claimcheck-Labels", "a=b"},
		{7, "ns=orders&ns=orders", "", ""},
	} {
		f.Add(s.route, s.query, s.header, s.headerV)
	}
	f.Fuzz(func(t *testing.T, route uint8, query, header, value string) {
		rt := routes[int(route)%len(routes)]
		r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/x", nil)
		if err != nil {
			t.Skip()
		}
		r.URL.RawQuery = query
		if header != "" {
			r.Header.Add(header, value)
		}
		err = checkRequest(r, rt.pattern)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		q, perr := url.ParseQuery(query)
		if perr != nil {
			t.Fatalf("accepted malformed query %q", query)
		}
		for name, vs := range q {
			if !slices.Contains(routeParams[rt.pattern], name) || len(vs) != 1 {
				t.Fatalf("%s accepted parameter %q ×%d", rt.pattern, name, len(vs))
			}
		}
		for name := range r.Header {
			if strings.HasPrefix(name, headerPrefix) && !slices.Contains(routeHeaders[rt.pattern], name) {
				t.Fatalf("%s accepted header %q", rt.pattern, name)
			}
		}
	})
}
