package claimcheck

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		err  bool
	}{
		{"51200", 51200, false},
		{"50KiB", 51200, false},
		{"1MiB", 1 << 20, false},
		{"5GiB", 5 << 30, false},
		{"1MB", 1000000, false},
		{"-1", 0, true},
		{"lots", 0, true},
		{"", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"90s", 90 * time.Second, false},
		{"24h", 24 * time.Hour, false},
		{"86400", 24 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"-5s", 0, true},
		{"soon", 0, true},
	} {
		got, err := ParseDuration(tc.in)
		if (err != nil) != tc.err || got.D() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestPolicyValidateNamesFieldAndValue(t *testing.T) {
	base := BuiltinPolicy()
	for _, tc := range []struct {
		name   string
		mutate func(*Policy)
		want   []string
	}{
		{"retention over max_age", func(p *Policy) {
			p.TTL.MaxAge = Duration(time.Minute)
			p.TTL.RetentionAfterRead = Duration(time.Hour)
		}, []string{"ttl.retention_after_read", "1h0m0s", "ttl.max_age", "1m0s"}},
		{"url_ttl not below confirm_within", func(p *Policy) {
			p.Uploads.URLTTL = Duration(2 * time.Hour)
		}, []string{"uploads.url_ttl", "2h0m0s", "uploads.confirm_within"}},
		{"threshold over max_size", func(p *Policy) {
			p.Threshold = 2 << 20
			p.MaxSize = 1 << 20
		}, []string{"threshold", "2.0 MiB", "max_size", "1.0 MiB"}},
		{"unknown compression", func(p *Policy) { p.Compression = "lz4" }, []string{"compression", "lz4"}},
		{"max_size too big", func(p *Policy) { p.MaxSize = MaxMaxSize + 1 }, []string{"max_size"}},
		{"negative quota", func(p *Policy) { p.Quota.Claims = -1 }, []string{"quota.claims", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.mutate(&p)
			err := p.Validate()
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Validate = %v, want ErrInvalidArgument", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("built-in policy invalid: %v", err)
	}
}

func TestValidateNamespace(t *testing.T) {
	for _, ok := range []string{"a", "video-processing", "orders_v2", "0"} {
		if err := ValidateNamespace(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a/b", "..", "a.b", strings.Repeat("x", MaxNamespaceLen+1)} {
		if err := ValidateNamespace(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%q: got %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// Namespace and tenant names are checked by hand; the check accepts
// exactly what the documented pattern does.
func FuzzValidNameMatchesPattern(f *testing.F) {
	pattern := regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$`)
	for _, s := range []string{"", "a", "-", "_a", "a_", "a-b_c9", "A", "ab/c", "a.b", "a\n", "é", "orders-eu_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), pattern.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

// In JSON a size is a plain integer; as text (a config file) it carries
// a unit, and durations are Go syntax either way.
func TestScalarEncodings(t *testing.T) {
	b, err := json.Marshal(struct {
		S Size
		D Duration
		R Retention
	}{51200, Duration(90 * time.Second), Retention(-time.Second)})
	if err != nil || string(b) != `{"S":51200,"D":"1m30s","R":"-1s"}` {
		t.Errorf("json: %s, %v", b, err)
	}
	for _, tc := range []struct {
		v    interface{ MarshalText() ([]byte, error) }
		want string
	}{{Size(51200), "50 KiB"}, {Duration(time.Hour), "1h0m0s"}, {Retention(-time.Second), "-1s"}} {
		if b, err := tc.v.MarshalText(); err != nil || string(b) != tc.want {
			t.Errorf("%#v: %q, %v; want %q", tc.v, b, err, tc.want)
		}
	}
	var s Size
	if err := s.UnmarshalText([]byte("1MiB")); err != nil || s != 1<<20 {
		t.Errorf("UnmarshalText(1MiB) = %d, %v", s, err)
	}
}
