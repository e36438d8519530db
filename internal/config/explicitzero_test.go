package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// A namespace's quota fields given as 0 are unlimited even when the
// defaults set a quota, and its ttl.max_lifetime given as 0 means no
// extensions even when the defaults allow them; left out, they take the
// defaults' (ADR 0080: these zeros keep their meaning). Through a config
// file, the store, and the namespace info over HTTP; and a put larger than
// the defaults' quota goes through where it is unlimited.
func TestExplicitZerosOverrideTheDefaults(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(file, []byte(`
data: `+dir+`
defaults:
  quota: { bytes: 1KiB, claims: 5 }
  ttl: { max_lifetime: 720h }
namespaces:
  open:
    quota: { bytes: 0, claims: 0 }
    ttl: { max_lifetime: 0 }
  bytes-open:
    quota:
      bytes: 0
  inherits: {}
  empty-value:
    quota:
      bytes:
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg engine.Config
	if err := config.Load(file, nil, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Sweeper = sweep.Config{Disabled: true}
	ctx := context.Background()
	store := enginetest.Open(t, cfg)
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	defer srv.Close()

	for ns, want := range map[string]claimcheck.Quota{
		"open":        {},
		"bytes-open":  {Claims: 5},
		"inherits":    {Bytes: 1024, Claims: 5},
		"empty-value": {Bytes: 1024, Claims: 5},
		"other":       {Bytes: 1024, Claims: 5}, // not configured: the defaults
	} {
		resp, err := http.Get(srv.URL + "/v1/namespaces/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		var info claimcheck.NamespaceInfo
		err = json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s, %v", ns, resp.Status, err)
		}
		if info.Limits != want || info.Policy.Quota != want {
			t.Errorf("%s: limits %+v, policy quota %+v; want %+v", ns, info.Limits, info.Policy.Quota, want)
		}
		wantLifetime := 720 * time.Hour
		if ns == "open" {
			wantLifetime = 0
		}
		if got := info.Policy.TTL.MaxLifetime.D(); got != wantLifetime {
			t.Errorf("%s: ttl.max_lifetime %v, want %v", ns, got, wantLifetime)
		}
	}
	big := strings.NewReader(strings.Repeat("x", 4096))
	if _, err := store.Put(ctx, "open", big, claimcheck.PutOptions{}); err != nil {
		t.Errorf("a 4 KiB put where the quota is explicitly unlimited: %v", err)
	}
	_, _ = big.Seek(0, 0)
	if _, err := store.Put(ctx, "inherits", big, claimcheck.PutOptions{}); !errors.Is(err, claimcheck.ErrQuotaExceeded) {
		t.Errorf("a 4 KiB put under the defaults' 1 KiB quota: %v, want ErrQuotaExceeded", err)
	}
}

// The quota and ttl sections are still checked key by key, and for the
// explicit zeros that are refused.
func TestQuotaAndTTLStillStrict(t *testing.T) {
	for yaml, want := range map[string]string{
		"namespaces:\n  a:\n    quota: { byte: 0 }\n":  "namespaces.a.quota.byte",
		"namespaces:\n  a:\n    ttl: { maxage: 1h }\n": "namespaces.a.ttl.maxage",
		"namespaces:\n  a:\n    ttl: { max_age: 0 }\n": "namespaces.a.ttl.max_age",
	} {
		if _, err := load(t, yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %s", yaml, err, want)
		}
	}
}
