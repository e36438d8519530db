package api_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzParseEventQuery: the events routes' query parameters never panic,
// refusals are ErrInvalidArgument, what is accepted is in range and
// survives the round trip through FormatEventQuery.
func FuzzParseEventQuery(f *testing.F) {
	for _, q := range []string{"", "after=12&limit=5", "since=2026-01-09T13:24:00Z", "limit=0", "limit=1001",
		"after=-1", "since=yesterday", "bogus=1", "limit=1&limit=2", "ns=orders", "%zz", "after=99999999999999999999",
		"since=2263-01-01T00:00:00Z", "since=1600-01-01T00:00:00Z", "since=2262-04-11T23:47:16Z", "since=9999-12-31T23:59:59.999999999Z"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := api.ParseEventQuery(v)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		if q.After < 0 || q.Limit < 0 || q.Limit > claimcheck.MaxEventPage {
			t.Fatalf("accepted %q as %+v", raw, q)
		}
		back, err := api.ParseEventQuery(api.FormatEventQuery(q))
		if err != nil || back.After != q.After || back.Limit != q.Limit || !back.Since.Equal(q.Since) {
			t.Fatalf("round trip of %+v: %+v, %v", q, back, err)
		}
	})
}

// FuzzParseReleaseRequest: the release body is nothing or one object with
// a consumer; anything else is ErrInvalidArgument, never a panic.
func FuzzParseReleaseRequest(f *testing.F) {
	for _, b := range []string{"", "  \n", `{"consumer":"billing"}`, `{"consumer":"a"}{"consumer":"b"}`, `{"other":1}`,
		`{"consumer":1}`, `[`, `null`, `{"consumer":"\u0000"}`, `{"consumer":"a\u001b[31m"}`, "{\"consumer\":\"a\nb\"}", `{"consumer":"a"}}`, `{"consumer":"a"} x`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := api.ParseReleaseRequest(b)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			if req != (api.ReleaseRequest{}) {
				t.Fatalf("a refused body returned %+v", req)
			}
		}
	})
}
