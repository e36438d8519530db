//go:build linux

package netns_test

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/internal/testkit/netns"
)

// echo accepts on ln and writes "hello" on each connection.
func echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("hello"))
		_ = c.Close()
	}
}

// reach reports whether from reaches to's listener at port within a
// short bound.
func reach(t *testing.T, from *netns.Node, to string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := from.DialContext(ctx, "tcp", to)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	return err == nil && string(b) == "hello"
}

// TestNetwork builds a bridge and two nodes, and checks every path the
// package promises: a node reaches another over the bridge; Cut drops
// only the path between the two nodes it names, Heal restores it;
// Isolate takes a node off the bridge for everyone, Rejoin puts it back;
// the end of the test leaves no namespace behind.
func TestNetwork(t *testing.T) {
	var names []string
	t.Run("paths", func(t *testing.T) {
		n := netns.New(t)
		a, err := n.AddNode("a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := n.AddNode("b")
		if err != nil {
			t.Fatal(err)
		}
		names = []string{n.Bridge.Name, a.Name, b.Name}
		out, err := a.Command("ip", "-4", "addr", "show", "dev", "eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), a.Addr.String()+"/24") {
			t.Fatalf("ip addr in %s: %v: %s; want %s", a.Name, err, out, a.Addr)
		}
		ln, err := a.Listen("tcp", net.JoinHostPort(a.Addr.String(), "7000"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go echo(ln)
		at := ln.Addr().String()
		if !reach(t, b, at) || !reach(t, n.Bridge, at) {
			t.Fatal("a node's listener is not reached over the bridge")
		}
		if err := n.Cut(a, b); err != nil {
			t.Fatal(err)
		}
		if reach(t, b, at) {
			t.Error("b reaches a after Cut(a, b)")
		}
		if !reach(t, n.Bridge, at) {
			t.Error("the bridge does not reach a after Cut(a, b): the cut is wider than the pair")
		}
		if err := n.Heal(a, b); err != nil {
			t.Fatal(err)
		}
		if !reach(t, b, at) {
			t.Error("b does not reach a after Heal")
		}
		if err := n.Isolate(a); err != nil {
			t.Fatal(err)
		}
		if reach(t, b, at) || reach(t, n.Bridge, at) {
			t.Error("a is reached while isolated")
		}
		if err := n.Rejoin(a); err != nil {
			t.Fatal(err)
		}
		if !reach(t, b, at) {
			t.Error("b does not reach a after Rejoin")
		}
	})
	for _, name := range names {
		if _, err := os.Stat("/var/run/netns/" + name); err == nil {
			t.Errorf("namespace %s is left after the test", name)
		}
	}
}
