package engine

import (
	"errors"
	"path"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/claimcheck/claimcheck"
)

// FuzzNamespaceAndKey: a namespace name that validates yields object keys
// that stay under its own prefix — a clean relative path of exactly three
// elements, the namespace first, then the spread — so no name reaches another namespace's
// objects or outside the bucket prefix; every refusal is
// ErrInvalidArgument.
func FuzzNamespaceAndKey(f *testing.F) {
	for _, s := range []string{"orders", "video-processing", "a", "../etc", "a/b", "A", "a.b", "_x", "x_", "", "ns\x00", "ünï", strings.Repeat("a", 25), "..", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ns string) {
		if err := claimcheck.ValidateNamespace(ns); err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		key := objectKey(ns, newBlobID(time.Now()))
		if path.Clean(key) != key || path.IsAbs(key) || strings.Contains(key, "\\") {
			t.Fatalf("namespace %q gives the unclean key %q", ns, key)
		}
		parts := strings.Split(key, "/")
		if len(parts) != 3 || parts[0] != ns || parts[0] == "." || parts[0] == ".." || len(parts[1]) != 2 {
			t.Fatalf("namespace %q gives the key %q outside its prefix", ns, key)
		}
		for _, r := range ns {
			if r > unicode.MaxASCII || unicode.IsUpper(r) || unicode.IsSpace(r) {
				t.Fatalf("namespace %q accepted with %q", ns, r)
			}
		}
	})
}

// FuzzPutText: the put's free-text fields (content type, labels, consumer
// names) are accepted only as valid UTF-8 without control characters,
// within their limits; refusals are ErrInvalidArgument.
func FuzzPutText(f *testing.F) {
	f.Add("application/json", "k", "v", "billing")
	f.Add("text/plain\r\nX-Evil: 1", "k\n", "v\x1b[31m", "a\x00")
	f.Add("", "", "", "")
	f.Add("\xff", "ключ", "значение", "ünï")
	pol := claimcheck.BuiltinPolicy()
	f.Fuzz(func(t *testing.T, ct, key, val, name string) {
		opts := claimcheck.PutOptions{ContentType: ct, Labels: map[string]string{key: val}, ConsumerNames: []string{name}}
		_, err := checkPutOptions(&opts, pol)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		for _, s := range []string{ct, key, val, name} {
			if strings.IndexFunc(s, unicode.IsControl) >= 0 || !utf8.ValidString(s) {
				t.Fatalf("accepted %q", s)
			}
		}
		if key == "" || len(key) > maxLabelKeyLen || len(val) > maxLabelValLen || name == "" || len(name) > maxConsumerName {
			t.Fatalf("accepted a field outside its limits: %q=%q, %q", key, val, name)
		}
	})
}

// TestIDsOrderedByTime: ids compare as strings in the order of their
// creation time (to the millisecond), keep the contract's format, and
// differ within one millisecond.
func TestIDsOrderedByTime(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var prev string
	for i := range 2000 {
		now := t0.Add(time.Duration(i*37) * time.Millisecond)
		id := newClaimID(now)
		if !claimcheck.ValidClaimID(id) || !claimcheck.ValidBlobID(newBlobID(now)) {
			t.Fatalf("id %q: not a valid claim id", id)
		}
		if id <= prev {
			t.Fatalf("id %q at %v sorts before %q, created earlier", id, now, prev)
		}
		if again := newClaimID(now); again == id {
			t.Fatalf("two ids in one millisecond are equal: %q", id)
		}
		prev = id
	}
}
