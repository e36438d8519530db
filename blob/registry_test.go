package blob

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestOpenRefusesQueryThatDoesNotParse: a storage URL parameter with a
// bad %-escape is an error, not a parameter dropped on the way to the
// backend (which would then use its default, e.g. another endpoint).
// The error leaves the query out, since it may carry credentials.
func TestOpenRefusesQueryThatDoesNotParse(t *testing.T) {
	var opened bool
	Register("querytest", func(_ context.Context, u *url.URL) (Store, error) {
		opened = true
		return nil, errors.New("opened")
	})
	_, err := Open(t.Context(), "querytest://bucket?secret=s3cr3t&endpoint=%zz")
	if err == nil || opened || !strings.Contains(err.Error(), "query does not parse") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("opened %v, err %v", opened, err)
	}
}
