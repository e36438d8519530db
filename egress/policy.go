package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Policy says which addresses the server may connect to for a URL a
// tenant chose. The zero value allows globally routable unicast only: a
// subscription is made by a tenant's admin key, and a target inside the
// operator's network (a metadata service, a database, the admin port of
// something) would turn the server into a way in.
//
// It is embedded in the subscriptions section of the config, so its
// keys sit there (subscriptions.allow_loopback_targets and so on).
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1, and the unspecified
	// address (0.0.0.0, ::), which connects to them.
	AllowLoopback bool `yaml:"allow_loopback_targets"`
	// AllowPrivate allows the private ranges (10/8, 172.16/12,
	// 192.168/16, 100.64/10, fc00::/7) and link-local addresses
	// (169.254/16, fe80::/10).
	AllowPrivate bool `yaml:"allow_private_targets"`
	// AllowTargets are further ranges the operator's receivers are in
	// (a CIDR, or one address), allowed although the special-purpose
	// registries list them; multicast stays refused.
	AllowTargets []Prefix `yaml:"allow_targets"`
	// AllowPorts, when given, are the only ports the ranges of
	// AllowTargets may be reached on (a receiver's port, and not the
	// database beside it); empty, any port. Public addresses, and what
	// the two switches above allow, may be reached on any port.
	AllowPorts []Port `yaml:"allow_ports"`
	// Resolver, when not nil, looks names up at connect instead of the
	// system's resolver (tests give one that answers what they need).
	Resolver *net.Resolver `yaml:"-"`
}

// ErrTargetRefused is the answer to a target the policy does not allow.
var ErrTargetRefused = errors.New("target refused")

// AddressError is the refusal of an address: one written in a URL, or
// one a name resolved to as the connection was about to be made. Its
// text names the address, for the operator; Redact takes it out of what
// a tenant sees.
type AddressError struct {
	Addr   netip.Addr
	Port   uint16
	Reason string // "is a loopback address (allow_loopback_targets is off)"
	// Resolved marks an address a name resolved to (the connect-time
	// check), which a tenant is not shown (Redact).
	Resolved bool
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrTargetRefused, e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrTargetRefused) hold.
func (e *AddressError) Is(target error) bool { return target == ErrTargetRefused }

// CheckAddrPort refuses a connection to ap that the policy does not
// allow: the connect-time check (Dialer's Control), and the create-time
// check of a URL whose host is an address.
func (p Policy) CheckAddrPort(ap netip.AddrPort) error {
	a := ap.Addr().WithZone("")
	if a.Is4In6() {
		// The IPv4 address itself, as a dual-stack socket would reach it.
		a = a.Unmap()
	}
	refuse := func(format string, args ...any) error {
		return &AddressError{Addr: ap.Addr(), Port: ap.Port(), Reason: fmt.Sprintf(format, args...)}
	}
	if ap.Port() == 0 {
		return refuse("port 0 is not a port to connect to")
	}
	s, isSpecial := classify(a)
	if !isSpecial {
		return nil
	}
	switch {
	case s.class == multicast:
		return refuse("is %s", s.what)
	case (s.class == loopback || s.class == unspecified) && p.AllowLoopback:
		return nil
	case (s.class == private || s.class == linkLocal) && p.AllowPrivate:
		return nil
	}
	if p.allowedTarget(a) {
		if p.allowedPort(ap.Port()) {
			return nil
		}
		return refuse("is in allow_targets, but port %d is not in allow_ports", ap.Port())
	}
	switch s.class {
	case loopback, unspecified:
		return refuse("is %s (allow_loopback_targets is off)", s.what)
	case private, linkLocal:
		return refuse("is %s (allow_private_targets is off)", s.what)
	}
	return refuse("is %s; not globally routable unicast (allow_targets does not hold it)", s.what)
}

func (p Policy) allowedTarget(a netip.Addr) bool {
	for _, t := range p.AllowTargets {
		if t.Prefix.Contains(a) {
			return true
		}
	}
	return false
}

func (p Policy) allowedPort(port uint16) bool {
	return len(p.AllowPorts) == 0 || slices.Contains(p.AllowPorts, Port(port))
}

// Prefix is an entry of allow_targets: a CIDR (10.1.0.0/16, fd00::/8)
// or one address (10.1.2.3, taken as its /32 or /128).
type Prefix struct{ netip.Prefix }

// ParsePrefix reads an entry of allow_targets.
func ParsePrefix(s string) (Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		if p != p.Masked() {
			return Prefix{}, fmt.Errorf("%q has bits set past its length; the block is %s", s, p.Masked())
		}
		return Prefix{p.Masked()}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return Prefix{}, fmt.Errorf("%q is neither a CIDR (10.1.0.0/16) nor an address", s)
	}
	return Prefix{netip.PrefixFrom(a, a.BitLen())}, nil
}

// UnmarshalYAML reads the entry from the config file (a yaml.Unmarshaler,
// so that the config's strict check reports what is wrong with it).
func (p *Prefix) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a CIDR (10.1.0.0/16) or an address")
	}
	v, err := ParsePrefix(n.Value)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalText writes the entry as it is read.
func (p Prefix) MarshalText() ([]byte, error) { return p.Prefix.MarshalText() }

// Port is an entry of allow_ports, from 1 to 65535.
type Port uint16

// ParsePort reads a port number, from 1 to 65535.
func ParsePort(s string) (Port, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s is not a number from 1 to 65535", s)
	}
	return Port(n), nil
}

// UnmarshalYAML reads the entry from the config file.
func (p *Port) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a port number from 1 to 65535")
	}
	v, err := ParsePort(n.Value)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
