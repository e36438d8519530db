//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Network is a bridge namespace and the node namespaces joined to it.
type Network struct {
	prefix string       // every namespace name starts with it
	subnet netip.Prefix // the /24 of every address
	// Bridge is the namespace of the bridge itself; it has the subnet's
	// first address, on the bridge.
	Bridge *Node
	mu     sync.Mutex
	nodes  []*Node
}

// Node is one namespace of a Network.
type Node struct {
	// Name is the namespace's name (`ip netns exec NAME ...`).
	Name string
	// Addr is the node's address on the bridge.
	Addr netip.Addr
	// port is the node's veth end in the bridge namespace ("" for the
	// bridge itself).
	port string
	net  *Network
}

// networks numbers the networks of this process, for their names and
// subnets.
var networks atomic.Int32

// Available says why namespaces cannot be made here (nil: they can):
// not root, or no `ip netns`.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command (iproute2) is not installed")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns does not work here: %v: %s", err, out)
	}
	return nil
}

// New makes the bridge namespace of a new network, or skips the test
// when namespaces cannot be made (Available). Everything the network
// holds is removed when the test ends.
func New(tb testing.TB) *Network {
	tb.Helper()
	if err := Available(); err != nil {
		tb.Skipf("skipping: %v", err)
	}
	seq := networks.Add(1)
	n := &Network{
		prefix: fmt.Sprintf("cc%d-%d-", os.Getpid(), seq),
		subnet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, byte(seq), 0}), 24),
	}
	tb.Cleanup(func() {
		if err := n.Remove(); err != nil {
			tb.Errorf("remove network namespaces: %v", err)
		}
	})
	br := &Node{Name: n.prefix + "br", Addr: n.subnet.Addr().Next(), net: n}
	n.Bridge = br
	n.nodes = append(n.nodes, br)
	steps := [][]string{
		{"netns", "add", br.Name},
		{"-n", br.Name, "link", "set", "lo", "up"},
		{"-n", br.Name, "link", "add", "br0", "type", "bridge"},
		{"-n", br.Name, "addr", "add", br.prefixed(), "dev", "br0"},
		{"-n", br.Name, "link", "set", "br0", "up"},
	}
	if err := runAll(steps); err != nil {
		tb.Fatalf("netns: make the bridge: %v", err)
	}
	return n
}

// prefixed is the node's address with the subnet's length.
func (n *Node) prefixed() string {
	return netip.PrefixFrom(n.Addr, n.net.subnet.Bits()).String()
}

// AddNode makes a node namespace named after role, joined to the bridge
// by a veth pair, with the next address of the subnet on its eth0.
func (n *Network) AddNode(role string) (*Node, error) {
	n.mu.Lock()
	idx := len(n.nodes)
	addr := n.nodes[idx-1].Addr.Next()
	node := &Node{Name: n.prefix + role, Addr: addr, port: fmt.Sprintf("v%d", idx), net: n}
	n.nodes = append(n.nodes, node)
	n.mu.Unlock()
	steps := [][]string{
		{"netns", "add", node.Name},
		{"-n", node.Name, "link", "set", "lo", "up"},
		// Both ends are made inside their namespaces: no name of the
		// host's is ever used or taken.
		{"link", "add", node.port, "netns", n.Bridge.Name, "type", "veth", "peer", "name", "eth0", "netns", node.Name},
		{"-n", n.Bridge.Name, "link", "set", node.port, "master", "br0", "up"},
		{"-n", node.Name, "addr", "add", node.prefixed(), "dev", "eth0"},
		{"-n", node.Name, "link", "set", "eth0", "up"},
	}
	if err := runAll(steps); err != nil {
		return nil, fmt.Errorf("netns: add node %s: %w", role, err)
	}
	return node, nil
}

// Command returns a command that runs name with args inside the node's
// namespace. `ip netns exec` execs the program itself, so the command's
// process is the program's (a kill reaches it).
func (n *Node) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Isolate takes the node off the bridge (its veth end there down): no
// packet reaches it or leaves it, and its processes go on.
func (n *Network) Isolate(node *Node) error {
	return ip("-n", n.Bridge.Name, "link", "set", node.port, "down")
}

// Rejoin puts an isolated node back on the bridge.
func (n *Network) Rejoin(node *Node) error {
	return ip("-n", n.Bridge.Name, "link", "set", node.port, "up")
}

// Cut drops every packet between a and b, both ways, with a blackhole
// route for the other's address in each namespace: an open connection
// stalls (no reset is sent), a new one fails at once. Every other path
// of both stays up.
func (n *Network) Cut(a, b *Node) error {
	return errors.Join(blackhole("add", a, b), blackhole("add", b, a))
}

// Heal removes the routes of Cut.
func (n *Network) Heal(a, b *Node) error {
	return errors.Join(blackhole("del", a, b), blackhole("del", b, a))
}

func blackhole(verb string, in, to *Node) error {
	return ip("-n", in.Name, "route", verb, "blackhole", to.Addr.String()+"/32")
}

// Remove deletes every namespace of the network (their veth pairs go
// with them). Processes still running inside keep their namespace alive
// until they end; stop them first.
func (n *Network) Remove() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for i := len(n.nodes) - 1; i >= 0; i-- {
		name := n.nodes[i].Name
		if _, err := os.Stat("/var/run/netns/" + name); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := ip("netns", "del", name); err != nil {
			errs = append(errs, err)
		}
	}
	n.nodes = nil
	return errors.Join(errs...)
}

// DialContext connects from inside the node's namespace: the socket is
// made on a thread that has entered it, so the test process reaches
// addresses that exist only in the network.
func (n *Node) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.enter(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens inside the node's namespace.
func (n *Node) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.enter(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// enter runs f on a thread in the node's namespace. A socket keeps the
// namespace it was made in, so what f opens works after the thread has
// returned to the process's own namespace. A thread that cannot return
// stays locked, and ends with its goroutine.
func (n *Node) enter(f func() error) error {
	runtime.LockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = own.Close() }()
	target, err := os.Open("/var/run/netns/" + n.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = target.Close() }()
	if err := setns(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: enter %s: %w", n.Name, err)
	}
	ferr := f()
	if err := setns(own); err != nil {
		return errors.Join(ferr, fmt.Errorf("netns: leave %s: %w", n.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

func runAll(steps [][]string) error {
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// ip runs the ip command and returns its output as the error when it
// fails.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
