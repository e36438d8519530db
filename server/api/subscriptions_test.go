package api_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzParseStreamQuery: the live stream's query and its Last-Event-ID
// header, as any client (or attacker) sends them, never panic; a refusal
// is ErrInvalidArgument naming the parameter or the header as it was
// given; an accepted start is "now", "oldest" or a non-negative id, taken
// from the header when there is one; no filter item is empty.
func FuzzParseStreamQuery(f *testing.F) {
	for _, s := range []struct{ query, header string }{
		{"", ""}, {"", "0"}, {"", "oldest"}, {"", "1767225600000000000"}, {"", "-1"}, {"", "9223372036854775808"},
		{"last_event_id=12", ""}, {"last_event_id=oldest", "14"}, {"last_event_id=x", ""}, {"", " 12"},
		{"type=created,expired&ns=orders", ""}, {"label=a=b&label=c", ""}, {"label==x", ""}, {"type=,,", ""},
		{"bogus=1", ""}, {"tenant=acme", "oldest"}, {"%zz", ""}, {"ns=%00", "0x10"},
	} {
		f.Add(s.query, s.header)
	}
	f.Fuzz(func(t *testing.T, raw, header string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		filter, from, err := api.ParseStreamQuery(v, header)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			if !namesAGivenInput(err.Error(), v, header) {
				t.Fatalf("error %q names neither a parameter of %q nor the header", err, raw)
			}
			return
		}
		if from.After < 0 || (from.Oldest && from.After != 0) {
			t.Fatalf("accepted %q / %q as %+v", raw, header, from)
		}
		if header != "" && !strings.Contains(from.Field, api.HeaderLastEvent) {
			t.Fatalf("the header %q was given, but the start came from %q", header, from.Field)
		}
		for _, item := range append(append([]string{}, filter.Types...), filter.Namespaces...) {
			if item == "" || strings.TrimSpace(item) != item {
				t.Fatalf("filter item %q from %q", item, raw)
			}
		}
	})
}

// namesAGivenInput reports whether msg names one of the query's
// parameters or the Last-Event-ID header.
func namesAGivenInput(msg string, v url.Values, header string) bool {
	if header != "" && strings.Contains(msg, api.HeaderLastEvent) {
		return true
	}
	for name := range v {
		if strings.Contains(msg, name) {
			return true
		}
	}
	return false
}
