package api_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzParseDeadLetterQuery: the dead-letter routes' query parameters
// never panic, refusals are ErrInvalidArgument, what is accepted is valid
// and survives the round trip through FormatDeadLetterQuery.
func FuzzParseDeadLetterQuery(f *testing.F) {
	for _, q := range []string{"", "tenant=acme&ns=orders&after=b_AAAAAAAAAAAAAAAAAAAAAA&limit=5", "limit=0", "limit=501",
		"after=cc_AAAAAAAAAAAAAAAAAAAAAA", "ns=Orders", "tenant=", "nss=orders", "ns=a&ns=b", "%zz", "limit=99999999999999999999"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := api.ParseDeadLetterQuery(v)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		if q.Limit < 0 || q.Limit > claimcheck.MaxDeadLetterPage || (q.After != "" && !claimcheck.ValidBlobID(q.After)) ||
			(q.Namespace != "" && claimcheck.ValidateNamespace(q.Namespace) != nil) || (q.Tenant != "" && claimcheck.ValidateTenant(q.Tenant) != nil) {
			t.Fatalf("accepted %q as %+v", raw, q)
		}
		back, err := api.ParseDeadLetterQuery(api.FormatDeadLetterQuery(q))
		if err != nil || back != q {
			t.Fatalf("round trip of %+v: %+v, %v", q, back, err)
		}
	})
}
