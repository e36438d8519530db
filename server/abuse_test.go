package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestFailedAuthDoesNotLockOutValidKeys: a client that keeps failing to
// authenticate from 127.0.0.1 is limited (429 once over its budget), and
// a valid key from the very same address still gets its 201 every time.
// Bounded: 3 × the failure burst of requests.
func TestFailedAuthDoesNotLockOutValidKeys(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	good := b.key(t, "acme", auth.RoleProducer, "")
	bogus := "cck_aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43) // well-formed, unknown
	const attempts = 60                                        // 3 × the burst of 20
	limited := 0
	for i := range attempts {
		token := bogus
		switch i % 3 {
		case 1:
			token = "not-a-token"
		case 2:
			token = ""
		}
		resp, body := b.do(t, token, http.MethodGet, "/v1/namespaces/a1", nil)
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			// Within the budget (which refills at one a second, so a
			// 401 may come back later: only the count is asserted).
		case http.StatusTooManyRequests:
			limited++
			if codeOf(body) != api.CodeRateLimited || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "failed authentications") {
				t.Fatalf("attempt %d: 429 %s, Retry-After %q", i, body, resp.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("attempt %d with %q: %s %s", i, token, resp.Status, body)
		}
		// Meanwhile the good key, from the same address, is served.
		if i%5 == 0 || limited > 0 {
			resp, body := b.do(t, good, http.MethodPut, "/v1/namespaces/a1/claims", strings.NewReader("payload"))
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("after %d failures (%d limited), the valid key got %s %s", i+1, limited, resp.Status, body)
			}
		}
	}
	if limited == 0 {
		t.Fatalf("%d failed authentications from one address were never limited", attempts)
	}
}
