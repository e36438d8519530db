package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestStrictRequests: unknown and repeated query parameters, unknown
// Claimcheck-* headers, trailing JSON, missing required fields, control
// characters in consumer names and times out of range are refused with
// 400 naming what was wrong, on every route; nothing is changed by a
// refused request.
func TestStrictRequests(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("payload"))
	claim := "/v1/claims/" + ref.ID
	digest := strings.TrimPrefix(claimcheck.DigestOf([]byte("x")), "sha256:")
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		naming                   string // the message names this
	}{
		{"header typo on put", "PUT", "/v1/namespaces/orders/claims", "x", []string{"Claimcheck-Consumer", "5"}, "Claimcheck-Consumer"},
		{"unknown header on put", "PUT", "/v1/namespaces/orders/claims", "x", []string{"Claimcheck-Ttl", "1h"}, "Claimcheck-Ttl"},
		{"put header on redeem", "GET", claim, "", []string{"Claimcheck-Consumers", "2"}, "Claimcheck-Consumers"},
		{"unknown header on release", "POST", claim + "/release", "", []string{"Claimcheck-Consumer", "billing"}, "Claimcheck-Consumer"},
		{"unknown query on put", "PUT", "/v1/namespaces/orders/claims?consumers=3", "x", nil, "query parameter consumers: unknown"},
		{"unknown query on redeem", "GET", claim + "?namespace=orders", "", nil, "query parameter namespace: unknown"},
		{"unknown query on stat", "GET", claim + "/meta?verbose=1", "", nil, "query parameter verbose: unknown"},
		{"unknown query on delete", "DELETE", claim + "?force=true", "", nil, "query parameter force: unknown"},
		{"unknown query on namespaces", "GET", "/v1/namespaces?all=1", "", nil, "query parameter all: unknown"},
		{"unknown query on upload init", "POST", "/v1/namespaces/orders/uploads?size=1", `{"size":1,"sha256":"` + digest + `"}`, nil, "query parameter size: unknown"},
		{"repeated ns on redeem", "GET", claim + "?ns=orders&ns=other", "", nil, "ns: given 2 times"},
		{"repeated ns on release", "POST", claim + "/release?ns=orders&ns=orders", "", nil, "ns: given 2 times"},
		{"repeated ns on delete", "DELETE", claim + "?ns=orders&ns=x", "", nil, "ns: given 2 times"},
		{"malformed query", "GET", claim + "?ns=%zz", "", nil, "malformed"},
		{"empty parameter name", "GET", claim + "?=orders", "", nil, "query parameter : unknown"},
		{"upload init with trailing object", "POST", "/v1/namespaces/orders/uploads", `{"size":1,"sha256":"` + digest + `"}{"size":2}`, nil, "found more data"},
		{"upload init with trailing garbage", "POST", "/v1/namespaces/orders/uploads", `{"size":1,"sha256":"` + digest + `"} x`, nil, "trailing data"},
		{"upload init without size", "POST", "/v1/namespaces/orders/uploads", `{"sha256":"` + digest + `"}`, nil, `"size" is required`},
		{"upload init without sha256", "POST", "/v1/namespaces/orders/uploads", `{"size":1}`, nil, `"sha256" is required`},
		{"upload init with a negative size", "POST", "/v1/namespaces/orders/uploads", `{"size":-1,"sha256":"` + digest + `"}`, nil, `"size": must not be negative`},
		{"upload init with a string size", "POST", "/v1/namespaces/orders/uploads", `{"size":"1","sha256":"` + digest + `"}`, nil, `field "size": want a number`},
		{"release with a control character", "POST", claim + "/release", `{"consumer":"bill\u001bing"}`, nil, "control character"},
		{"release with a newline", "POST", claim + "/release", `{"consumer":"a\nb"}`, nil, "control character"},
		{"release with trailing data", "POST", claim + "/release", `{"consumer":"a"}}`, nil, "trailing data"},
		{"hold with trailing data", "PUT", claim + "/hold", `{"reason":"x"} {}`, nil, "found more data"},
		{"since past 2262", "GET", claim + "/events?since=2263-01-01T00:00:00Z", "", nil, "since"},
		{"since before 1678", "GET", "/v1/namespaces/orders/events?since=1600-01-01T00:00:00Z", "", nil, "out of range"},
		{"since past 2262 on the tenant", "GET", "/v1/events?since=9999-12-31T23:59:59Z", "", nil, "out of range"},
		{"listing expires_before past 2262", "GET", "/v1/namespaces/orders/claims?expires_before=2263-01-01T00:00:00Z", "", nil, "expires_before"},
		{"listing expires_after before 1678", "GET", "/v1/namespaces/orders/claims?expires_after=1000-01-01T00:00:00Z", "", nil, "out of range"},
		{"listing with a repeated limit", "GET", "/v1/namespaces/orders/claims?limit=1&limit=2", "", nil, "limit: given 2 times"},
		{"listing with an unknown parameter", "GET", "/v1/namespaces/orders/claims?labels=a%3Db", "", nil, "query parameter labels: unknown"},
		{"extend with trailing data", "POST", claim + "/extend", `{"by":"1h"}{"by":"2h"}`, nil, "found more data"},
		{"extend past 2262", "POST", claim + "/extend", `{"expires_at":"2300-01-01T00:00:00Z"}`, nil, "out of range"},
		{"extend with an unknown parameter", "POST", claim + "/extend?by=1h", `{"by":"1h"}`, nil, "query parameter by: unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			header := tc.header
			if tc.body != "" {
				body = strings.NewReader(tc.body)
				if tc.method != "PUT" || !strings.Contains(tc.path, "/claims") || strings.Contains(tc.path, "/hold") {
					header = append([]string{"Content-Type", api.ContentTypeJSON}, header...)
				}
			}
			resp, data := b.do(t, tc.method, tc.path, body, header...)
			e := wantError(t, resp, data, http.StatusBadRequest, api.CodeInvalidArgument)
			if !strings.Contains(e.Message, tc.naming) {
				t.Errorf("message %q does not name %q", e.Message, tc.naming)
			}
		})
	}
	// Nothing was stored, released, deleted or read by the refusals.
	info, err := b.store.Stat(context.Background(), ref)
	if err != nil || info.Reads != 0 || info.State != claimcheck.StateActive || len(info.ReleasedBy) != 0 {
		t.Errorf("the claim after refused requests: %+v, %v", info, err)
	}
	if got, err := b.meta.Namespace(context.Background(), "orders"); err != nil || got.ActiveClaims != 1 || got.PendingClaims != 0 {
		t.Errorf("namespace after refused requests: %+v, %v", got, err)
	}
}

// TestStrictRequestsAccept: what the strict checks must let through.
func TestStrictRequestsAccept(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("payload"), api.HeaderConsumers, "2", api.HeaderLabels, "a=b")
	claim := "/v1/claims/" + ref.ID
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
	}{
		{"stat with ns", "GET", claim + "/meta?ns=orders", "", nil, 200},
		{"listing with repeated labels", "GET", "/v1/namespaces/orders/claims?label=a%3Db&label=c%3Dd&limit=5", "", nil, 200},
		{"non-Claimcheck headers", "GET", claim + "/meta", "", []string{"X-Request-Id", "1", "Claimcheckish", "x"}, 200},
		{"events at the edge of the range", "GET", claim + "/events?since=2262-01-01T00:00:00Z&limit=5", "", nil, 200},
		{"release with a unicode name", "POST", claim + "/release?ns=orders", `{"consumer":"fakturering-ø"}`, nil, 204},
		{"release with trailing white space", "POST", claim + "/release", "{\"consumer\":\"b\"}\n\t ", nil, 204},
		{"upload init of an empty payload", "POST", "/v1/namespaces/orders/uploads", `{"size":0,"sha256":"` + strings.TrimPrefix(claimcheck.DigestOf(nil), "sha256:") + `"}`, nil, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			header := tc.header
			if tc.body != "" {
				body = strings.NewReader(tc.body)
				header = append([]string{"Content-Type", api.ContentTypeJSON}, header...)
			}
			resp, data := b.do(t, tc.method, tc.path, body, header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s = %s %s, want %d", tc.method, tc.path, resp.Status, data, tc.status)
			}
		})
	}
}

// TestMethodNotAllowedListsRealMethods: a 405's Allow header lists the
// methods that work on the path, never HEAD on a payload (which answers
// 405 itself).
func TestMethodNotAllowedListsRealMethods(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("payload"))
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"POST", "/v1/claims/" + ref.ID, "GET, DELETE"},
		{"PATCH", "/v1/claims/" + ref.ID, "GET, DELETE"},
		{"HEAD", "/v1/claims/" + ref.ID, "GET, DELETE"},
		{"POST", "/v1/namespaces/orders/claims", "GET, HEAD, PUT"}, // the listing and the put
		{"DELETE", "/v1/claims/" + ref.ID + "/meta", "GET, HEAD"},
		{"GET", "/v1/claims/" + ref.ID + "/release", "POST"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, data := b.do(t, tc.method, tc.path, nil)
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("%s = %s %s", tc.method, resp.Status, data)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if tc.method != "HEAD" && !strings.Contains(string(data), tc.allow) {
				t.Errorf("message %s does not list %q", data, tc.allow)
			}
			// Every method the answer offers works (answers something
			// other than 405). GET stands for HEAD, which net/http
			// answers with the GET handler; the methods that change the
			// claim are not tried.
			for m := range strings.SplitSeq(tc.allow, ", ") {
				if m != "GET" {
					continue
				}
				if r, _ := b.do(t, m, tc.path, nil); r.StatusCode == http.StatusMethodNotAllowed {
					t.Errorf("Allow offers %s, which answers 405", m)
				}
			}
		})
	}
}
