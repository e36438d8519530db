package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Dialer connects only where the policy allows: the host as written is
// judged before any lookup (checkHost), and every address the dial is
// about to connect to is judged in the socket's Control function, which
// runs after the socket is made and before connect(2), so a refused
// address is never sent a packet.
type Dialer struct {
	policy Policy
	net    net.Dialer
}

// Dialer returns a dialer that keeps to p, with the connect timeout
// given.
func (p Policy) Dialer(timeout time.Duration) *Dialer {
	return &Dialer{policy: p, net: net.Dialer{Timeout: timeout, Resolver: p.Resolver, Control: p.control}}
}

// DialContext connects to address (host:port) over network, as
// net.Dialer.DialContext does, if the policy allows it.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not host:port", ErrTargetRefused, address)
	}
	port, err := ParsePort(portText)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTargetRefused, address, err)
	}
	if err := d.policy.checkHost(host, uint16(port)); err != nil {
		return nil, err
	}
	return d.net.DialContext(ctx, network, address)
}

// control is the connect-time check: address is what the socket is
// about to connect to, a resolved address and port.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	return p.CheckResolved(address)
}

// CheckResolved judges address (ip:port), an address a name resolved to
// and a connection is about to be made to; a refusal is marked resolved,
// so that Redact keeps its address from the tenant.
func (p Policy) CheckResolved(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: address %q", ErrTargetRefused, address)
	}
	if err := p.CheckAddrPort(ap); err != nil {
		if ae, ok := err.(*AddressError); ok {
			ae.Resolved = true
		}
		return err
	}
	return nil
}

// Client returns an HTTP client for requests to tenant-chosen URLs: no
// proxy from the environment (it would connect on the targets' behalf,
// unchecked), every address checked as the connection is made, and
// redirects answered as they are (a 3xx is the answer, never followed:
// following it would be a second target nobody checked at create).
func (p Policy) Client(timeout time.Duration) *http.Client {
	d := p.Dialer(timeout)
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
