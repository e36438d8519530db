package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
)

const sample = `
data: /var/lib/claimcheck
defaults:
  threshold: 1MiB
  ttl:
    max_age: 86400       # seconds, the older form
namespaces:
  video-processing:
    max_size: 5GiB
    compression: gzip
    dedup: false
    ttl:
      max_age: 24h
      delete_after_read: true
      retention_after_read: 5m
      grace_period: 1h
    uploads:
      url_ttl: 15m
      confirm_within: 1h
    quota: { bytes: 100GiB, claims: 1000000 }
  small: {}
`

func load(t *testing.T, yaml string, env ...string) (engine.Config, error) {
	t.Helper()
	var cfg engine.Config
	err := config.Decode([]byte(yaml), env, &cfg)
	return cfg, err
}

func TestDecodeAndResolvePolicies(t *testing.T) {
	cfg, err := load(t, sample)
	if err != nil {
		t.Fatal(err)
	}
	pols, def, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	vp := pols["video-processing"]
	if vp.MaxSize != 5<<30 || vp.Compression != claimcheck.CompressionGzip || vp.DedupEnabled() ||
		!vp.DeletesAfterRead() || vp.TTL.RetentionAfterRead.D() != 5*time.Minute || vp.Quota.Bytes != 100<<30 || vp.Quota.Claims != 1000000 {
		t.Errorf("video-processing policy decoded wrong: %+v", vp)
	}
	if vp.Threshold != 1<<20 {
		t.Errorf("unset threshold must come from the defaults section: %v", vp.Threshold)
	}
	small := pols["small"]
	if small.TTL.MaxAge.D() != 24*time.Hour || small.Compression != claimcheck.CompressionZstd || !small.DedupEnabled() {
		t.Errorf("small must inherit defaults and built-ins: %+v", small)
	}
	if def == nil || def.Threshold != 1<<20 {
		t.Errorf("defaults policy: %+v", def)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	cfg, err := load(t, sample,
		"CLAIMCHECK_NAMESPACES__VIDEO_PROCESSING__TTL__MAX_AGE=48h",
		"CLAIMCHECK_DEFAULTS__THRESHOLD=2MiB",
		"CLAIMCHECK_NAMESPACES__NEWNS__COMPRESSION=none",
		"CLAIMCHECK_DATA=/elsewhere",
		"CLAIMCHECK_SERVER=http://ignored:1", // a CLI variable, not config
		"OTHER=1",
	)
	if err != nil {
		t.Fatal(err)
	}
	pols, def, err := cfg.Policies()
	if err != nil {
		t.Fatal(err)
	}
	if got := pols["video-processing"].TTL.MaxAge.D(); got != 48*time.Hour {
		t.Errorf("env override of max_age: %v", got)
	}
	if def.Threshold != 2<<20 {
		t.Errorf("env override of defaults.threshold: %v", def.Threshold)
	}
	if pols["newns"].Compression != claimcheck.CompressionNone {
		t.Errorf("env-created namespace: %+v", pols["newns"])
	}
	if cfg.Data != "/elsewhere" {
		t.Errorf("data: %q", cfg.Data)
	}
}

func TestDefaultsSwitchedOff(t *testing.T) {
	cfg, err := load(t, "defaults: false\nnamespaces:\n  only: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	pols, def, err := cfg.Policies()
	if err != nil || def != nil || len(pols) != 1 {
		t.Fatalf("pols=%v def=%v err=%v", pols, def, err)
	}
	cfg, err = load(t, "", "CLAIMCHECK_DEFAULTS=false")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.Policies(); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("no namespace and no defaults must be refused, got %v", err)
	}
}

func TestBadConfigIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "namespaces:\n  a:\n    treshold: 1MiB\n", []string{"treshold"}},
		{"bad size", "defaults:\n  max_size: huge\n", []string{"huge", "line 2"}},
		{"bad duration", "defaults:\n  ttl:\n    max_age: forever\n", []string{"forever"}},
		{"retention over max_age", "namespaces:\n  a:\n    ttl: {max_age: 1m, retention_after_read: 1h}\n",
			[]string{"namespaces.a.ttl.retention_after_read: ", "1h0m0s", "ttl.max_age 1m0s"}},
		{"bad namespace name", "namespaces:\n  Bad/Name: {}\n", []string{"Bad/Name"}},
		{"not a mapping", "- a\n- b\n", []string{"mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, tc.yaml)
			if err == nil {
				_, _, err = cfg.Policies()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg engine.Config
	if err := config.Load(path, nil, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "/var/lib/claimcheck" {
		t.Fatalf("data = %q", cfg.Data)
	}
	if err := config.Load(filepath.Join(t.TempDir(), "missing.yaml"), nil, &cfg); err == nil {
		t.Fatal("missing file accepted")
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(sample), "CLAIMCHECK_DEFAULTS__THRESHOLD=2MiB")
	f.Add([]byte("defaults: false"), "")
	f.Add([]byte("namespaces: {a: {ttl: {max_age: 1}}}"), "CLAIMCHECK_NAMESPACES__A=x")
	// The strict check's cases: typos under defaults, explicit zeros,
	// bad values and unknown or invalid variables.
	for _, tc := range strictCases {
		f.Add([]byte(tc.yaml), strings.Join(tc.env, "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var cfg engine.Config
		if err := config.Decode(data, strings.Split(env, "\n"), &cfg); err != nil {
			return
		}
		pols, _, err := cfg.Policies()
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("policy error %v is not ErrInvalidArgument", err)
			}
			return
		}
		for name, p := range pols {
			if p.Validate() != nil || claimcheck.ValidateNamespace(name) != nil {
				t.Fatalf("accepted an invalid policy %q: %+v", name, p)
			}
		}
	})
}

func TestHistoryRetention(t *testing.T) {
	cfg, err := load(t, "history: {retention: 168h}\n")
	if err != nil || cfg.History.Retention.D() != 168*time.Hour {
		t.Fatalf("history.retention from the file: %v, %v", cfg.History.Retention, err)
	}
	cfg, err = load(t, "history: {retention: 168h}\n", "CLAIMCHECK_HISTORY__RETENTION=-1s")
	if err != nil || cfg.History.Retention.D() != -time.Second {
		t.Fatalf("history.retention from the environment: %v, %v", cfg.History.Retention, err)
	}
	if _, err := load(t, "history: {retention: soon}\n"); err == nil || !strings.Contains(err.Error(), `"soon"`) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad history.retention must be named by value and line: %v", err)
	}
	if _, err := load(t, "history: {retention: -soon}\n"); err == nil || !strings.Contains(err.Error(), `"-soon"`) {
		t.Errorf("a bad negative history.retention must be named as written: %v", err)
	}
	// events.retention takes the same form: negative keeps the events.
	if cfg, err = load(t, "events: {retention: -1s}\n"); err != nil || cfg.Events.Retention.D() != -time.Second {
		t.Errorf("events.retention -1s: %v, %v", cfg.Events.Retention, err)
	}
}
