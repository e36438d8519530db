package egress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netnsEnv names the network namespace the test binary was started in by
// TestConnectCheckInNamespace; set, the test is the child that dials.
const netnsEnv = "CLAIMCHECK_EGRESS_NETNS"

// TestConnectCheckInNamespace proves that the connect-time check refuses
// before a packet leaves: the test binary runs itself again inside a
// network namespace of its own with only lo up (no route anywhere else),
// dials every refused vector there, and finds each refused as
// ErrTargetRefused (not "network is unreachable", which is what the
// namespace answers a dial nothing refused) with lo's packet counter
// unchanged.
func TestConnectCheckInNamespace(t *testing.T) {
	if name := os.Getenv(netnsEnv); name != "" {
		dialInNamespace(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: making a network namespace needs root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("skipped: the ip command (iproute2) is not installed")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "claimcheck-egress-" + hex.EncodeToString(suffix)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v\n%s", name, err, out)
		}
	})
	run("netns", "exec", name, "ip", "link", "set", "lo", "up")
	child := exec.Command(ip, "netns", "exec", name, os.Args[0], "-test.run=^TestConnectCheckInNamespace$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), netnsEnv+"="+name)
	out, err := child.CombinedOutput()
	t.Logf("inside %s:\n%s", name, out)
	if err != nil {
		t.Fatalf("the dials inside the namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestConnectCheckInNamespace") {
		t.Fatal("the child did not run the test")
	}
}

// dialInNamespace is the child: it checks that it is in a namespace
// with lo only, then dials.
func dialInNamespace(t *testing.T) {
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Fatalf("interfaces %v: want lo only, or this is not the test's namespace", ifaces)
	}
	sent := loPackets(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := 0
	for _, v := range refused {
		u, err := url.Parse(v.url)
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort(u.Hostname(), "9")
		// The whole dialer: the host as written, then Control.
		_, err = strict.Dialer(time.Second).DialContext(ctx, "tcp", addr)
		checkRefused(t, "Dialer", addr, err)
		// Control alone, as for an address a name resolved to. Numbers
		// that are no IP literal are left out: this dialer would send
		// them to DNS.
		if _, perr := netip.ParseAddr(u.Hostname()); perr == nil {
			raw := net.Dialer{Timeout: time.Second, Control: strict.control}
			_, err = raw.DialContext(ctx, "tcp", addr)
			checkRefused(t, "Control", addr, err)
		}
		dialed++
	}
	// localhost resolves (from /etc/hosts, no DNS) to loopback, which
	// Control refuses.
	raw := net.Dialer{Timeout: time.Second, Control: strict.control}
	_, err = raw.DialContext(ctx, "tcp", "localhost:9")
	checkRefused(t, "Control", "localhost:9", err)
	if after := loPackets(t); after != sent {
		t.Errorf("lo sent %d packets during the refused dials", after-sent)
	}
	// What the namespace answers a dial that nothing refused: no route.
	// (192.0.2.1 is reserved for documentation; allowed here only to
	// show that the refusals above came from the check.)
	open := Policy{AllowTargets: []Prefix{{mustPrefix("192.0.2.0/24")}}}
	_, err = open.Dialer(time.Second).DialContext(ctx, "tcp", "192.0.2.1:9")
	if !errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, ErrTargetRefused) {
		t.Errorf("an allowed dial in the namespace: %v, want network is unreachable", err)
	}
	t.Logf("%d vectors refused at connect, 0 reached", dialed)
}

func checkRefused(t *testing.T, by, addr string, err error) {
	t.Helper()
	switch {
	case errors.Is(err, ErrTargetRefused) && !errors.Is(err, syscall.ENETUNREACH):
		t.Logf("%s refused %s: %v", by, addr, err)
	case err == nil:
		t.Errorf("%s: %s connected", by, addr)
	default:
		t.Errorf("%s: %s: %v, want %v", by, addr, err, ErrTargetRefused)
	}
}

// loPackets is what lo has sent in this namespace.
func loPackets(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/lo/statistics/tx_packets")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
