package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
)

// strictCases are config mistakes and what their error must say: the
// key path as written, the line or the variable, and never a Go type
// name. A typo under defaults: is refused exactly like one under
// namespaces:.
var strictCases = []struct {
	name string
	yaml string
	env  []string
	want []string
}{
	{"defaults typo", "defaults:\n  treshold: 1MiB\n", nil, []string{"defaults.treshold: unknown key", "line 2", "threshold"}},
	{"defaults ttl typo", "defaults:\n  ttl:\n    max_agee: 1h\n", nil, []string{"defaults.ttl.max_agee: unknown key", "line 3", "max_age"}},
	{"defaults ttl flow typo", "defaults: {ttl: {delete_afer_read: true}}\n", nil, []string{"defaults.ttl.delete_afer_read: unknown key", "line 1"}},
	{"defaults uploads typo", "defaults:\n  uploads:\n    confirm_witin: 1h\n", nil, []string{"defaults.uploads.confirm_witin: unknown key", "line 3", "confirm_within"}},
	{"defaults quota typo", "defaults:\n  quota: {byte: 1GiB}\n", nil, []string{"defaults.quota.byte: unknown key", "line 2", "bytes, claims"}},
	{"namespace typo", "namespaces:\n  a:\n    treshold: 1MiB\n", nil, []string{"namespaces.a.treshold: unknown key", "line 3"}},
	{"tenant typo", "tenants:\n  acme: {qouta: {bytes: 1}}\n", nil, []string{"tenants.acme.qouta: unknown key", "line 2"}},
	{"top-level typo", "sweeper:\n  max_lagg: 1m\n", nil, []string{"sweeper.max_lagg: unknown key", "line 2"}},
	{"negative quota", "defaults:\n  quota:\n    bytes: -1\n", nil, []string{"defaults.quota.bytes: must not be negative", `"-1"`, "line 3"}},
	{"bad size", "defaults:\n  max_size: huge\n", nil, []string{"defaults.max_size: want a byte count", `"huge"`, "line 2"}},
	{"bad duration", "namespaces:\n  a: {ttl: {max_age: forever}}\n", nil, []string{"namespaces.a.ttl.max_age: want Go syntax", `"forever"`}},
	{"bad bool", "defaults:\n  dedup: maybe\n", nil, []string{"defaults.dedup: want true or false", `"maybe"`, "line 2"}},
	{"bad int", "sweeper: {page_size: lots}\n", nil, []string{"sweeper.page_size: want an integer", "line 1"}},
	{"mapping where a value goes", "defaults:\n  threshold: {a: 1}\n", nil, []string{"defaults.threshold:", "line 2"}},
	{"list where a mapping goes", "namespaces: [a, b]\n", nil, []string{"namespaces: want a mapping", "line 1"}},
	{"max_age 0", "defaults:\n  ttl: {max_age: 0}\n", nil, []string{"defaults.ttl.max_age: an explicit 0 is not allowed", "leave the key out", "line 2"}},
	{"max_age 0s in a namespace", "namespaces:\n  a: {ttl: {max_age: 0s}}\n", nil, []string{"namespaces.a.ttl.max_age: an explicit 0s", "line 2"}},
	{"threshold 0", "defaults: {threshold: 0}\n", nil, []string{"defaults.threshold: an explicit 0"}},
	{"confirm_within 0", "defaults: {uploads: {confirm_within: 0}}\n", nil, []string{"defaults.uploads.confirm_within: an explicit 0"}},
	{"defaults neither policy nor boolean", "defaults: maybe\n", nil, []string{"defaults: want a policy or true/false", `"maybe"`, "line 1"}},
	{"merge key typo", "base: &b {treshold: 1MiB}\n", nil, []string{"base: unknown key"}},
	{"merged typo", "namespaces:\n  a: &a {threshold: 1MiB}\n  b:\n    <<: *a\n    tresh: 2\n", nil, []string{"namespaces.b.tresh: unknown key", "line 5"}},

	// From the environment: the variable is named, no line is.
	{"unknown variable", "", []string{"CLAIMCHECK_DEFAULTS__TRESHOLD=1MiB"}, []string{"environment CLAIMCHECK_DEFAULTS__TRESHOLD: defaults.treshold: unknown key"}},
	{"unknown top-level variable", "", []string{"CLAIMCHECK_LISTN=0.0.0.0:80"}, []string{"environment CLAIMCHECK_LISTN: listn: unknown key"}},
	{"invalid variable beside a file", "data: ./x\ndefaults:\n  threshold: 1MiB\n", []string{"CLAIMCHECK_DEFAULTS__THRESHOLD=lots"}, []string{"environment CLAIMCHECK_DEFAULTS__THRESHOLD: defaults.threshold: want a byte count", `"lots"`}},
	{"variable holding a flow mapping", "data: ./x\n", []string{"CLAIMCHECK_DEFAULTS__TTL={max_agee: 1h}"}, []string{"environment CLAIMCHECK_DEFAULTS__TTL: defaults.ttl.max_agee: unknown key"}},
	{"variable max_age 0", "", []string{"CLAIMCHECK_DEFAULTS__TTL__MAX_AGE=0"}, []string{"environment CLAIMCHECK_DEFAULTS__TTL__MAX_AGE: defaults.ttl.max_age: an explicit 0"}},
	{"empty level", "", []string{"CLAIMCHECK_DEFAULTS____TTL=1"}, []string{"environment CLAIMCHECK_DEFAULTS____TTL", "empty level"}},
	{"bare prefix", "", []string{"CLAIMCHECK_=1"}, []string{"environment CLAIMCHECK_:", "empty level"}},
}

func TestStrictConfig(t *testing.T) {
	for _, tc := range strictCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, tc.env...)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, goName := range []string{"claimcheck.", "engine.", "not found in type", "cannot unmarshal", "!!"} {
				if strings.Contains(msg, goName) {
					t.Errorf("error %q names Go types (%q)", msg, goName)
				}
			}
			if tc.env != nil && strings.Contains(msg, "line ") {
				t.Errorf("error %q from a variable names a line of the file", msg)
			}
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Errorf("error %v is not ErrInvalidArgument", err)
			}
		})
	}
}

// TestStrictConfigAccepts: what the strict check must leave alone.
func TestStrictConfigAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		env  []string
	}{
		{"sample", sample, nil},
		{"defaults off", "defaults: false\nnamespaces: {a: {}}\n", nil},
		{"defaults on", "defaults: true\n", nil},
		{"empty values", "defaults:\n  ttl:\n    max_age:\n", nil},
		{"anchors and merges", "namespaces:\n  a: &a {threshold: 1MiB, ttl: {max_age: 2h}}\n  b:\n    <<: *a\n    max_size: 1GiB\n", nil},
		{"variables of other programs", "", []string{"CLAIMCHECK_SERVER=http://x", "CLAIMCHECK_API_KEY=k", "CLAIMCHECK_TEST_SERVICES=0", "CLAIMCHECK_THRESHOLD_BYTES=1", "CLAIMCHECK_BENCH_CLAIMS=3", "CLAIMCHECK_GC_STRESS_OPS=9", "OTHER=1"}},
		{"sequences and comma lists", "previous_master_keys: [a, b]\n", []string{"CLAIMCHECK_MASTER_KEY=x"}},
		{"comma list from the environment", "", []string{"CLAIMCHECK_PREVIOUS_MASTER_KEYS=a,b"}},
		{"case and dashes in variables", "namespaces:\n  video-processing: {}\n", []string{"CLAIMCHECK_NAMESPACES__VIDEO_PROCESSING__TTL__MAX_AGE=2h"}},
		{"negative retention", "history: {retention: -1s}\nevents: {retention: -1s}\n", nil},
		{"sweeper durations", "sweeper: {idle_grace: 5m, backstop_interval: -1s}\n", nil},
		{"digest_first off", "defaults: {digest_first: true}\nnamespaces: {hr: {digest_first: false}}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := load(t, tc.yaml, tc.env...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDefaultsNodeShape: the check looks into the defaults section, and
// the section still decodes into the policy.
func TestDefaultsNodeShape(t *testing.T) {
	var cfg engine.Config
	err := config.Decode([]byte("defaults:\n  ttl:\n    delete_after_read: true\n"), nil, &cfg)
	if err != nil || !cfg.Defaults.Policy.DeletesAfterRead() {
		t.Fatalf("defaults policy decoded wrong: %v %+v", err, cfg.Defaults)
	}
}
