package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// TargetPolicy says which addresses a subscription may reach. The zero
// value allows public addresses only: a subscription is made by a tenant's
// admin key, and a target inside the operator's network (a metadata
// service, a database, the admin port of something) would turn the
// dispatcher into a way in.
type TargetPolicy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1 (and the unspecified
	// address, which connects to them).
	AllowLoopback bool `yaml:"allow_loopback_targets"`
	// AllowPrivate allows the private ranges (10/8, 172.16/12,
	// 192.168/16, 100.64/10, fc00::/7) and link-local addresses
	// (169.254/16, fe80::/10).
	AllowPrivate bool `yaml:"allow_private_targets"`
}

// ErrTargetRefused is the answer to a target the policy does not allow.
var ErrTargetRefused = errors.New("target refused")

// checkAddr refuses an address the policy does not allow.
func (p TargetPolicy) checkAddr(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case a.IsLoopback() || a.IsUnspecified():
		if !p.AllowLoopback {
			return fmt.Errorf("%w: %s is a loopback address (allow_loopback_targets is off)", ErrTargetRefused, a)
		}
	case a.IsPrivate() || a.IsLinkLocalUnicast() || cgnat.Contains(a):
		if !p.AllowPrivate {
			return fmt.Errorf("%w: %s is a private or link-local address (allow_private_targets is off)", ErrTargetRefused, a)
		}
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is a multicast address", ErrTargetRefused, a)
	}
	return nil
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// CheckURL checks a target URL as it is given: http or https, a host,
// and, when the host is an address (or localhost), one the policy allows.
// Names are checked again at every connection (Client), where what they
// resolve to at that moment is known. field names the URL in errors.
func (p TargetPolicy) CheckURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %q is not a URL: %v", field, raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: %q: the scheme must be http or https", field, raw)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%s: %q has no host", field, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%s: %q carries credentials in the URL; a receiver authenticates deliveries by their signature", field, raw)
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		host = "127.0.0.1"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := p.checkAddr(a); err != nil {
			return fmt.Errorf("%s: %q: %w", field, raw, err)
		}
	}
	return nil
}

// dialer connects only to addresses the policy allows: each one is
// checked as the connection is made.
func (p TargetPolicy) dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: address %q", ErrTargetRefused, address)
			}
			return p.checkAddr(ap.Addr())
		},
	}
}

// Client returns the HTTP client deliveries go out on: no proxy from
// the environment (it would connect on the targets' behalf, unchecked),
// every address checked as the connection is made, redirects answered
// as they are (a 3xx is a failed delivery, never followed).
func (p TargetPolicy) Client(timeout time.Duration) *http.Client {
	d := p.dialer(timeout)
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
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
