package egress_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/egress"
	"github.com/claimcheck/claimcheck/internal/config"
)

// TestConfigKeys decodes the policy's keys as the server's config loader
// does, and finds a bad value named by its key.
func TestConfigKeys(t *testing.T) {
	type file struct {
		Subscriptions struct {
			egress.Policy `yaml:",inline"`
		} `yaml:"subscriptions"`
	}
	var f file
	doc := "subscriptions:\n  allow_loopback_targets: true\n  allow_targets: [10.1.0.0/16, 192.0.2.7]\n  allow_ports: [9000, 8443]\n"
	if err := config.Decode([]byte(doc), nil, &f); err != nil {
		t.Fatal(err)
	}
	p := f.Subscriptions.Policy
	if !p.AllowLoopback || len(p.AllowTargets) != 2 || p.AllowTargets[1].Prefix != netip.MustParsePrefix("192.0.2.7/32") ||
		len(p.AllowPorts) != 2 || p.AllowPorts[1] != 8443 {
		t.Fatalf("decoded %+v", p)
	}
	if err := p.CheckURL("url", "http://10.1.9.9:8443/"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct{ doc, says string }{
		{"subscriptions:\n  allow_ports: [181810000]\n", "subscriptions.allow_ports"},
		{"subscriptions:\n  allow_ports: [0]\n", "from 1 to 65535"},
		{"subscriptions:\n  allow_targets: [10.1.0.1/16]\n", "subscriptions.allow_targets"},
		{"subscriptions:\n  allow_targets: [intranet]\n", "neither a CIDR"},
	} {
		var f file
		err := config.Decode([]byte(tc.doc), nil, &f)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want it to say %q", tc.doc, err, tc.says)
		}
	}
}
