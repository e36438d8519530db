package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/config"

	"gopkg.in/yaml.v3"
)

// Decoded from YAML, a quota field or ttl.max_lifetime given as 0 is the
// namespace's own and beats the base; left out, the base's value is taken.
// The sections stay strict.
func TestGivenZerosBeatTheBase(t *testing.T) {
	base := claimcheck.BuiltinPolicy()
	base.Quota = claimcheck.Quota{Bytes: 1024, Claims: 5}
	base.TTL.MaxLifetime = claimcheck.Duration(720 * time.Hour)
	for doc, want := range map[string]struct {
		quota    claimcheck.Quota
		lifetime time.Duration
	}{
		"quota: {bytes: 0, claims: 0}\nttl: {max_lifetime: 0}\n": {claimcheck.Quota{}, 0},
		"quota: {claims: 0}\nttl: {max_age: 1h}\n":               {claimcheck.Quota{Bytes: 1024}, 720 * time.Hour},
		"threshold: 1KiB\n": {claimcheck.Quota{Bytes: 1024, Claims: 5}, 720 * time.Hour},
	} {
		var p claimcheck.Policy
		if err := config.Decode([]byte(doc), nil, &p); err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		got := p.WithDefaults(base)
		if got.Quota != want.quota || got.TTL.MaxLifetime.D() != want.lifetime {
			t.Errorf("%q: quota %+v, max_lifetime %v; want %+v, %v", doc, got.Quota, got.TTL.MaxLifetime, want.quota, want.lifetime)
		}
	}
	for _, doc := range []string{"quota: {byte: 1}\n", "ttl: {maxage: 1h}\n"} {
		var p claimcheck.Policy
		if err := config.Decode([]byte(doc), nil, &p); err == nil {
			t.Errorf("%q: decoded without an error", doc)
		}
	}
}

// yaml.v3 decodes and encodes the contract's sizes and durations through
// their text form: a policy written out reads back the same.
func TestPolicyYAMLRoundTrip(t *testing.T) {
	p := claimcheck.BuiltinPolicy()
	out, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "threshold: 50 KiB\n") || !strings.Contains(string(out), "max_age: 24h0m0s\n") {
		t.Errorf("written as:\n%s", out)
	}
	var back claimcheck.Policy
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back.Threshold != p.Threshold || back.TTL.MaxAge != p.TTL.MaxAge || back.Uploads != p.Uploads {
		t.Errorf("read back %+v, want %+v", back, p)
	}
}

// A quota or ttl section reached through an anchor or a merge key counts
// what it gives, 0 included; a key given beside the merge wins over the
// merged one, whole.
func TestGivenZerosThroughMerges(t *testing.T) {
	const doc = `
defaults:
  quota: {bytes: 1KiB, claims: 5}
  ttl: {max_lifetime: 720h}
base: &base
  quota: {bytes: 0}
  ttl: {max_lifetime: 0}
quotas:
  - &q {claims: 0}
namespaces:
  merged: {<<: *base}
  beside: {<<: *base, quota: {claims: 0}}
  aliased: {quota: *q}
  plain: {}
`
	var c struct {
		Defaults   claimcheck.Policy            `yaml:"defaults"`
		Base       any                          `yaml:"base"`
		Quotas     any                          `yaml:"quotas"`
		Namespaces map[string]claimcheck.Policy `yaml:"namespaces"`
	}
	if err := config.Decode([]byte(doc), nil, &c); err != nil {
		t.Fatal(err)
	}
	base := c.Defaults.WithDefaults(claimcheck.BuiltinPolicy())
	for ns, want := range map[string]struct {
		quota    claimcheck.Quota
		lifetime time.Duration
	}{
		"merged":  {claimcheck.Quota{Claims: 5}, 0},
		"beside":  {claimcheck.Quota{Bytes: 1024}, 0},
		"aliased": {claimcheck.Quota{Bytes: 1024}, 720 * time.Hour},
		"plain":   {claimcheck.Quota{Bytes: 1024, Claims: 5}, 720 * time.Hour},
	} {
		got := c.Namespaces[ns].WithDefaults(base)
		if got.Quota != want.quota || got.TTL.MaxLifetime.D() != want.lifetime {
			t.Errorf("%s: quota %+v, max_lifetime %v; want %+v, %v", ns, got.Quota, got.TTL.MaxLifetime, want.quota, want.lifetime)
		}
	}
}
