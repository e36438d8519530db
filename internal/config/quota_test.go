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

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// A namespace's quota fields given as 0 are unlimited even when the
// defaults set a quota; left out, they take the defaults' (ADR 0080, the
// quota fields keep 0 as "unlimited"). Through a config file, the store,
// and the namespace info over HTTP; and a put larger than the defaults'
// quota goes through where it is unlimited.
func TestExplicitZeroQuotaIsUnlimited(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(file, []byte(`
data: `+dir+`
defaults:
  quota: { bytes: 1KiB, claims: 5 }
namespaces:
  open:
    quota: { bytes: 0, claims: 0 }
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
	store, err := engine.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
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
	}
	big := strings.NewReader(strings.Repeat("x", 4096))
	if _, err := store.Put(ctx, "open", big, claimcheck.PutOptions{}); err != nil {
		t.Errorf("a 4 KiB put where the quota is explicitly unlimited: %v", err)
	}
	big.Seek(0, 0)
	if _, err := store.Put(ctx, "inherits", big, claimcheck.PutOptions{}); !errors.Is(err, claimcheck.ErrQuotaExceeded) {
		t.Errorf("a 4 KiB put under the defaults' 1 KiB quota: %v, want ErrQuotaExceeded", err)
	}
}

// A quota section is checked key by key like any other.
func TestQuotaUnknownKey(t *testing.T) {
	_, err := load(t, "namespaces:\n  a:\n    quota: { byte: 0 }\n")
	if err == nil || !strings.Contains(err.Error(), "namespaces.a.quota.byte") {
		t.Fatalf("a misspelt quota key: %v, want an error naming namespaces.a.quota.byte", err)
	}
}
