package server

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Connections per client address (http.max_conns_per_addr, ADR 0082).
// The per-request limits (rate, streams, deadlines) only start once a
// request's headers are in; a client that opens connections and sends
// nothing, or dribbles headers (slowloris), holds sockets and goroutines
// for ReadHeaderTimeout each and can open them faster than they time out.
// 20,000 such connections from one address slowed every other client,
// health checks included. So the listener counts the open connections of
// each peer address and closes, at once and before reading a byte, those
// beyond the bound; other addresses are unaffected.
//
// The count is by the TCP peer: the listener cannot read X-Forwarded-For.
// Connections from trusted_proxies are therefore not counted (a proxy
// carries everyone's connections); bound those at the proxy.

// limitListener is a net.Listener that bounds open connections per peer
// address.
type limitListener struct {
	net.Listener
	max     int
	trusted []netip.Prefix
	log     *slog.Logger

	mu sync.Mutex
	n  map[netip.Addr]int

	refused    atomic.Int64 // since the last log line
	lastLogged atomic.Int64 // unix nanos
}

func newLimitListener(ln net.Listener, max int, trusted []netip.Prefix, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: max, trusted: trusted, log: log, n: map[netip.Addr]int{}}
}

// Accept returns the next connection within the bound, closing those
// beyond it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peerAddr(c.RemoteAddr())
		if !addr.IsValid() || l.isTrusted(addr) {
			return c, nil
		}
		l.mu.Lock()
		if l.n[addr] >= l.max {
			l.mu.Unlock()
			_ = c.Close() // refused: nothing was read or written on it
			l.noteRefused(addr)
			continue
		}
		l.n[addr]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *limitListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[addr]--; l.n[addr] <= 0 {
		delete(l.n, addr)
	}
}

func (l *limitListener) isTrusted(addr netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// noteRefused logs refusals at most once a minute, with their count, so
// that a flood does not become a flood of log lines.
func (l *limitListener) noteRefused(addr netip.Addr) {
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLogged.Load()
	if now-last < int64(time.Minute) || !l.lastLogged.CompareAndSwap(last, now) {
		return
	}
	l.refused.Add(-n)
	l.log.Warn("connections refused: too many open from one client address (http.max_conns_per_addr)",
		"addr", addr.String(), "limit", l.max, "refused", n)
}

// peerAddr is the IP of a connection's peer, unmapped (an IPv4 client
// on a dual-stack socket counts as its IPv4 address).
func peerAddr(a net.Addr) netip.Addr {
	if tcp, ok := a.(*net.TCPAddr); ok {
		addr, _ := netip.AddrFromSlice(tcp.IP)
		return addr.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// countedConn gives its slot back when closed, once.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite keeps net/http's graceful close (half-close, then drain)
// working through the wrapper.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
