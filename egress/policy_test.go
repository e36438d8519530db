package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// vector is a target URL and what the policy must say of it.
type vector struct {
	url    string
	policy Policy
	ok     bool
	says   string // in the refusal
}

func allow(cidrs []string, ports ...Port) Policy {
	var p Policy
	for _, c := range cidrs {
		v, err := ParsePrefix(c)
		if err != nil {
			panic(err)
		}
		p.AllowTargets = append(p.AllowTargets, v)
	}
	p.AllowPorts = ports
	return p
}

var strict Policy

// refused are the URLs the default policy refuses at create and at
// connect; the namespace test dials their hosts.
var refused = []vector{
	// IPv6 forms that embed an IPv4 address, refused whatever they embed.
	{url: "http://[64:ff9b::a9fe:a9fe]/", says: "64:ff9b::/96, NAT64"},
	{url: "http://[64:ff9b::10.0.0.1]/", says: "64:ff9b::/96, NAT64"},
	{url: "http://[64:ff9b:1::a00:1]/", says: "64:ff9b:1::/48"},
	{url: "http://[2002:a9fe:a9fe::1]/", says: "2002::/16, 6to4"},
	{url: "http://[::ffff:0:127.0.0.1]/", says: "::ffff:0:0:0/96, an IPv4-translated address"},
	{url: "http://[::127.0.0.1]/", says: "::/96, an IPv4-compatible address"},
	{url: "http://[2001::1]/", says: "2001::/32, Teredo"},
	// IPv4-mapped: judged as the IPv4 address.
	{url: "http://[::ffff:127.0.0.1]/", says: "a loopback address"},
	{url: "http://[::ffff:169.254.169.254]/", says: "link-local"},
	// The special-purpose registries.
	{url: "http://[fec0::1]/", says: "fec0::/10, site-local"},
	{url: "http://0.1.2.3/", says: `0.0.0.0/8, "this network"`},
	{url: "http://192.0.2.1/", says: "192.0.2.0/24, reserved for documentation"},
	{url: "http://198.18.0.1/", says: "198.18.0.0/15, reserved for benchmarking"},
	{url: "http://240.0.0.1/", says: "240.0.0.0/4, reserved"},
	{url: "http://255.255.255.255/", says: "the limited broadcast address"},
	{url: "http://192.0.0.1/", says: "192.0.0.0/24"},
	{url: "http://192.88.99.1/", says: "192.88.99.0/24"},
	{url: "http://198.51.100.7/", says: "198.51.100.0/24"},
	{url: "http://203.0.113.7/", says: "203.0.113.0/24"},
	{url: "http://100.64.0.1/", says: "allow_private_targets is off"},
	{url: "http://10.0.0.1/", says: "allow_private_targets is off"},
	{url: "http://172.16.0.1/", says: "allow_private_targets is off"},
	{url: "http://192.168.1.1/", says: "allow_private_targets is off"},
	{url: "http://169.254.169.254/latest/meta-data", says: "link-local address (169.254.0.0/16)"},
	{url: "http://127.0.0.1/", says: "127.0.0.1 is a loopback address (allow_loopback_targets is off)"},
	{url: "http://[::1]/", says: "::1 is a loopback address"},
	{url: "http://0.0.0.0/", says: "0.0.0.0 is the unspecified address"},
	{url: "http://[::]/", says: ":: is the unspecified address"},
	{url: "http://224.0.0.1/", says: "a multicast address"},
	{url: "http://[ff02::1]/", says: "a multicast address"},
	{url: "http://[fc00::1]/", says: "unique local address"},
	{url: "http://[fe80::1%25eth0]/", says: "link-local address (fe80::/10)"},
	{url: "http://[100::1]/", says: "100::/64, discard-only"},
	{url: "http://[2001:db8::1]/", says: "2001:db8::/32"},
	{url: "http://[2001:2::1]/", says: "2001::/23"},
	{url: "http://[3fff::1]/", says: "3fff::/20"},
	{url: "http://[5f00::1]/", says: "5f00::/16"},
	{url: "http://[4000::1]/", says: "outside 2000::/3"},
	// Names and numbers as a resolver reads them.
	{url: "http://localhost.:8080/", says: "host localhost. is a loopback name"},
	{url: "http://LocalHost/", says: "loopback name"},
	{url: "http://api.localhost/", says: "loopback name"},
	{url: "http://127.1/", says: "host 127.1 denotes 127.0.0.1"},
	{url: "http://0/", says: "host 0 denotes 0.0.0.0: target refused: 0.0.0.0 is the unspecified address"},
	{url: "http://2130706433/", says: "denotes 127.0.0.1"},
	{url: "http://0x7f000001/", says: "denotes 127.0.0.1"},
	{url: "http://0177.0.0.1/", says: "denotes 127.0.0.1"},
	{url: "http://127.0.0.1./", says: "denotes 127.0.0.1"},
	{url: "http://0x08080808/", says: "is 8.8.8.8 written another way"},
	{url: "http://1.2.3.4.5/", says: "ends in a number but is not an IPv4 address"},
	{url: "http://256.1.1.1/", says: "ends in a number"},
	{url: "http://08.1.1.1/", says: "ends in a number"},
	{url: "http://example.com.0x/", says: "ends in a number"},
}

var others = []vector{
	// Ports.
	{url: "http://hooks.example.com:181810000/", says: "port 181810000 is not a number from 1 to 65535"},
	{url: "http://hooks.example.com:0/", says: "port 0 is not a number from 1 to 65535"},
	{url: "http://8.8.8.8:0/", says: "port 0"},
	// Public addresses and names (checked, never connected to).
	{url: "http://8.8.8.8/", ok: true},
	{url: "http://8.8.8.8./", ok: true},
	{url: "https://[2606:4700::1]:8443/hook", ok: true},
	{url: "http://[::ffff:8.8.8.8]/", ok: true},
	{url: "https://hooks.example.com/claimcheck", ok: true},
	{url: "https://127.0.0.1.example.com/", ok: true}, // a name: judged at connect
	{url: "http://8.8.8.8:65535/", ok: true},
	// The operator's switches and ranges.
	{url: "http://127.0.0.1:8080/", policy: Policy{AllowLoopback: true}, ok: true},
	{url: "http://localhost.:8080/", policy: Policy{AllowLoopback: true}, ok: true},
	{url: "http://0.0.0.0:8080/", policy: Policy{AllowLoopback: true}, ok: true},
	{url: "http://127.1/", policy: Policy{AllowLoopback: true}, says: "is 127.0.0.1 written another way"},
	{url: "http://169.254.169.254/", policy: Policy{AllowPrivate: true}, ok: true},
	{url: "http://[fc00::1]/", policy: Policy{AllowPrivate: true}, ok: true},
	{url: "http://[fec0::1]/", policy: Policy{AllowPrivate: true}, says: "fec0::/10"},
	{url: "http://127.0.0.1/", policy: Policy{AllowPrivate: true}, says: "allow_loopback_targets is off"},
	{url: "http://10.1.2.3:9000/", policy: allow([]string{"10.1.0.0/16"}), ok: true},
	{url: "http://10.2.0.1/", policy: allow([]string{"10.1.0.0/16"}), says: "allow_private_targets is off"},
	{url: "http://10.1.2.3:9000/", policy: allow([]string{"10.1.0.0/16"}, 9000), ok: true},
	{url: "http://10.1.2.3:5432/", policy: allow([]string{"10.1.0.0/16"}, 9000), says: "is in allow_targets, but port 5432 is not in allow_ports"},
	{url: "http://8.8.8.8:5432/", policy: allow([]string{"10.1.0.0/16"}, 9000), ok: true},
	{url: "http://192.0.2.1/", policy: allow([]string{"192.0.2.1"}), ok: true},
	{url: "http://192.0.2.2/", policy: allow([]string{"192.0.2.1"}), says: "192.0.2.0/24"},
	{url: "http://[64:ff9b::a00:1]/", policy: allow([]string{"10.0.0.0/8"}), says: "64:ff9b::/96"},
	{url: "http://[64:ff9b::a00:1]/", policy: allow([]string{"64:ff9b::/96"}), ok: true},
	{url: "http://224.0.0.1/", policy: allow([]string{"224.0.0.0/4"}), says: "a multicast address"},
}

func TestCheckURL(t *testing.T) {
	for _, v := range append(refused, others...) {
		err := v.policy.CheckURL("url", v.url)
		switch {
		case v.ok && err != nil:
			t.Errorf("%s: refused: %v", v.url, err)
		case !v.ok && err == nil:
			t.Errorf("%s: accepted", v.url)
		case !v.ok && !strings.HasPrefix(err.Error(), fmt.Sprintf("url: %q: ", v.url)):
			t.Errorf("%s: %q does not name the field and the URL", v.url, err)
		case !v.ok && !strings.Contains(err.Error(), v.says):
			t.Errorf("%s: %q, want it to say %q", v.url, err, v.says)
		}
	}
	for _, raw := range []string{"ftp://example.com/x", "http:///nohost", "http://user:pw@example.com/", "http://[::1/"} {
		if err := strict.CheckURL("url", raw); err == nil || !strings.HasPrefix(err.Error(), "url: ") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestConnectCheck runs every vector through the connect-time checks:
// the host as the dialer is given it (refused before any lookup or
// socket; the context is cancelled, so nothing allowed is dialed), and
// an address literal as Control sees it once resolved.
func TestConnectCheck(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, v := range append(refused, others...) {
		u, err := url.Parse(v.url)
		if err != nil {
			t.Fatal(err)
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		addr := net.JoinHostPort(u.Hostname(), port)
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && port != "181810000" {
			err := v.policy.CheckResolved(net.JoinHostPort(a.String(), port))
			if v.ok != (err == nil) {
				t.Errorf("%s: Control says %v, want allowed %v", addr, err, v.ok)
			} else if err != nil && (!errors.Is(err, ErrTargetRefused) || !strings.Contains(err.Error(), v.says) && !strings.Contains(v.says, "denotes")) {
				t.Errorf("%s: Control says %q, want %v saying %q", addr, err, ErrTargetRefused, v.says)
			}
		}
		if v.ok {
			continue // never dialed
		}
		_, err = v.policy.Dialer(0).DialContext(cancelled, "tcp", addr)
		if !errors.Is(err, ErrTargetRefused) {
			t.Errorf("%s: the dialer says %v, want %v", addr, err, ErrTargetRefused)
		}
	}
}

func TestConfigValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.1.0.0/16", "10.1.0.0/16"}, {"10.1.2.3", "10.1.2.3/32"}, {"fd00::/8", "fd00::/8"}, {"::1", "::1/128"},
	} {
		p, err := ParsePrefix(tc.in)
		if err != nil || p.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.in, p, err, tc.want)
		}
	}
	for _, bad := range []string{"10.1.0.1/16", "example.com", "10.0.0.0/33", "fe80::1%eth0"} {
		if _, err := ParsePrefix(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	for _, bad := range []string{"0", "65536", "181810000", "-1", "http"} {
		if _, err := ParsePort(bad); err == nil || !strings.Contains(err.Error(), "from 1 to 65535") {
			t.Errorf("port %s: %v", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	refusal := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},
		Err: &AddressError{Addr: netip.MustParseAddr("127.0.0.1"), Port: 9, Reason: "is a loopback address", Resolved: true}}
	reset := &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 40000},
		Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 443}, Err: errors.New("connection reset by peer")}
	lookup := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "receiver.test", Server: "10.0.0.53:53", Err: "no such host", IsNotFound: true}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("http://receiver.test:9: %w", refusal), "http://receiver.test:9: dial tcp: " + RefusedText},
		{fmt.Errorf("https://receiver.test: %w", reset), "https://receiver.test: read tcp: connection reset by peer"},
		{fmt.Errorf("https://receiver.test: %w", lookup), "https://receiver.test: dial tcp: lookup receiver.test: no such host"},
		{errors.New("503 Service Unavailable"), "503 Service Unavailable"},
	} {
		got := Redact(tc.err)
		if got.Error() != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("Redact(%q) does not wrap it", tc.err)
		}
	}
	if !errors.Is(Redact(refusal), ErrTargetRefused) {
		t.Error("a redacted refusal is not ErrTargetRefused")
	}
	// A refusal of what the tenant wrote is shown as it is.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := strict.Dialer(0).DialContext(cancelled, "tcp", "127.1:9")
	if got := Redact(err).Error(); !strings.Contains(got, "host 127.1 denotes 127.0.0.1") {
		t.Errorf("a refused literal, redacted: %q", got)
	}
}

// BenchmarkCheckResolved is the connect-time check of one address (a
// public one: the whole table is walked).
func BenchmarkCheckResolved(b *testing.B) {
	for b.Loop() {
		if err := strict.CheckResolved("[2606:4700::1]:443"); err != nil {
			b.Fatal(err)
		}
	}
}
