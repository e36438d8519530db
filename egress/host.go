package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL checks a target URL as it is given: http or https, a host,
// no credentials, a port from 1 to 65535, and a host that is not an
// address (in any form a resolver reads as one) or a loopback name the
// policy refuses. Names are checked again at every connection (Dialer),
// where what they resolve to at that moment is known. field names the
// URL in errors ("url", "subscriptions.targets[0].url").
func (p Policy) CheckURL(field, raw string) error {
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
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if s := u.Port(); s != "" {
		n, err := ParsePort(s)
		if err != nil {
			return fmt.Errorf("%s: %q: %v", field, raw, err)
		}
		port = uint16(n)
	}
	if err := p.checkHost(host, port); err != nil {
		return fmt.Errorf("%s: %q: %w", field, raw, err)
	}
	return nil
}

// checkHost judges a host as written, before any lookup: an address in
// any form a resolver reads as one is judged as the address it denotes,
// a number that is no address is refused, and so is a loopback name the
// policy does not allow. Other names pass; their addresses are judged
// as the connection is made.
func (p Policy) checkHost(host string, port uint16) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddrPort(netip.AddrPortFrom(a, port))
	}
	// A name is the same name with its trailing dot (the root) or in
	// capitals: localhost. is localhost.
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if endsInNumber(name) {
		a, ok := parseInetAton(name)
		if !ok {
			return fmt.Errorf("%w: host %s ends in a number but is not an IPv4 address", ErrTargetRefused, host)
		}
		if err := p.CheckAddrPort(netip.AddrPortFrom(a, port)); err != nil {
			return fmt.Errorf("host %s denotes %s: %w", host, a, err)
		}
		if a.String() != name {
			return fmt.Errorf("%w: host %s is %s written another way, which not every resolver reads alike; write %s",
				ErrTargetRefused, host, a, a)
		}
		return nil
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// Names under localhost are loopback whatever DNS says (RFC
		// 6761), and resolvers answer them without asking it.
		if err := p.CheckAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)); err != nil {
			return fmt.Errorf("host %s is a loopback name: %w", host, err)
		}
	}
	return nil
}

// endsInNumber reports whether the last label of name is a number
// (decimal, or hexadecimal after 0x). No top-level domain is numeric,
// so such a host is meant as an IPv4 address, and a resolver that
// follows inet_aton reads it as one.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// parseInetAton reads s the way inet_aton does: one to four parts, each
// decimal, octal (a leading 0) or hexadecimal (0x), the last filling
// the bytes the others left (127.1 is 127.0.0.1, 2130706433 is too).
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint32
	for i, part := range parts {
		n, ok := parseAtonPart(part)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= uint32(n) << (24 - 8*i)
			continue
		}
		if bits := 8 * (5 - len(parts)); bits < 32 && n >= 1<<bits {
			return netip.Addr{}, false
		}
		v |= uint32(n)
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseAtonPart(part string) (uint64, bool) {
	base := 10
	switch {
	case strings.HasPrefix(part, "0x"):
		part, base = part[2:], 16
		if part == "" {
			return 0, true // "0x" is 0 to inet_aton
		}
	case len(part) > 1 && part[0] == '0':
		part, base = part[1:], 8
	}
	n, err := strconv.ParseUint(part, base, 32)
	return n, err == nil
}
