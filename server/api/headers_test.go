package api

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		bad  bool
	}{
		{in: "", want: nil},
		{in: " , ", want: nil},
		{in: "k=v", want: map[string]string{"k": "v"}},
		{in: "k=v,k2=v2", want: map[string]string{"k": "v", "k2": "v2"}},
		{in: "k=v, k2=v2 ,", want: map[string]string{"k": "v", "k2": "v2"}}, // two header lines joined
		{in: "k=", want: map[string]string{"k": ""}},
		{in: "a%2Cb=c%3Dd%26e", want: map[string]string{"a,b": "c=d&e"}},
		{in: "k=a+b%2B", want: map[string]string{"k": "a b+"}},
		{in: "k=v=w", want: map[string]string{"k": "v=w"}},
		{in: "=v", bad: true},
		{in: "k", bad: true},
		{in: "k=v,k=w", bad: true},
		{in: "k=%zz", bad: true},
		{in: "k=%ff", bad: true}, // not UTF-8
	}
	for _, tt := range tests {
		got, err := ParseLabels(tt.in)
		if tt.bad {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), HeaderLabels) {
				t.Errorf("ParseLabels(%q) = %v, %v; want an invalid-argument error naming the header", tt.in, got, err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatLabels(t *testing.T) {
	got := FormatLabels(map[string]string{"team": "video", "a,b": "x=y z"})
	if want := "a%2Cb=x%3Dy+z,team=video"; got != want {
		t.Fatalf("FormatLabels = %q, want %q", got, want)
	}
}

func TestParseNames(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "a,b,c", want: []string{"a", "b", "c"}},
		{in: " a , b", want: []string{"a", "b"}},
		{in: "billing%2Ceu", want: []string{"billing,eu"}},
		{in: "a,a", bad: true},
		{in: "%", bad: true},
		{in: "%20", want: []string{" "}},
	}
	for _, tt := range tests {
		got, err := ParseNames(tt.in)
		if tt.bad {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Errorf("ParseNames(%q) = %v, %v; want an invalid-argument error", tt.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseNames(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseConsumers(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "1": 1, " 3 ": 3, "1000": 1000} {
		if got, err := ParseConsumers(in); err != nil || got != want {
			t.Errorf("ParseConsumers(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1.5", "two", "99999999999999999999"} {
		if got, err := ParseConsumers(in); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("ParseConsumers(%q) = %d, %v; want an invalid-argument error", in, got, err)
		}
	}
}

func TestParseDigest(t *testing.T) {
	good := claimcheck.DigestOf([]byte("hello"))
	if got, err := ParseDigest(" " + good); err != nil || got != good {
		t.Errorf("ParseDigest(%q) = %q, %v", good, got, err)
	}
	for _, in := range []string{"", "sha256:", "sha256:abc", strings.ToUpper(good), "md5:" + good[7:], good + "0"} {
		if got, err := ParseDigest(in); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("ParseDigest(%q) = %q, %v; want an invalid-argument error", in, got, err)
		}
	}
}

// The fuzz tests feed the parsers arbitrary header values (they are
// untrusted input): they must never panic, must fail only with
// ErrInvalidArgument, and whatever they accept must survive a round trip
// through the matching formatter.

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"", "k=v", "k=v,k2=v2", "a%2Cb=c%3Dd", "=", "k=v,k=v", "%ff=1", " , k = v "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		labels, err := ParseLabels(s)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("ParseLabels(%q): error %v is not ErrInvalidArgument", s, err)
			}
			return
		}
		enc := FormatLabels(labels)
		if !validHeaderValue(enc) {
			t.Fatalf("FormatLabels(%v) = %q is not a valid header value", labels, enc)
		}
		again, err := ParseLabels(enc)
		if err != nil || !maps.Equal(again, labels) {
			t.Fatalf("round trip of %q: %q → %v, %v; want %v", s, enc, again, err, labels)
		}
	})
}

func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"", "a", "a,b,c", "a,a", "%2C", " x , y "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ParseNames(s)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("ParseNames(%q): error %v is not ErrInvalidArgument", s, err)
			}
			return
		}
		enc := FormatNames(names)
		if !validHeaderValue(enc) {
			t.Fatalf("FormatNames(%q) = %q is not a valid header value", names, enc)
		}
		again, err := ParseNames(enc)
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("round trip of %q: %q → %q, %v; want %q", s, enc, again, err, names)
		}
	})
}

func FuzzParseConsumers(f *testing.F) {
	for _, s := range []string{"0", "1", "-1", "+1", "18446744073709551616", " 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseConsumers(s)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("ParseConsumers(%q): error %v is not ErrInvalidArgument", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseConsumers(%q) = %d, negative", s, n)
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	f.Add(claimcheck.DigestOf(nil))
	f.Add("sha256:")
	f.Add("SHA256:00")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDigest(s)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("ParseDigest(%q): error %v is not ErrInvalidArgument", s, err)
			}
			return
		}
		if !claimcheck.ValidDigest(d) {
			t.Fatalf("ParseDigest(%q) accepted %q", s, d)
		}
	})
}

// validHeaderValue reports whether s can be sent as a header value as it
// is: visible ASCII only.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
