package egress

import "net/netip"

// class is what a special-purpose block is to the policy: which switch
// of the operator's allows it, if any.
type class int

const (
	// reserved blocks are refused unless allow_targets names them.
	reserved class = iota
	// unspecified is 0.0.0.0 and ::, which connect to the host itself;
	// allow_loopback_targets allows them.
	unspecified
	// loopback is 127/8 and ::1; allow_loopback_targets allows them.
	loopback
	// private is the private, shared and unique-local ranges;
	// allow_private_targets allows them.
	private
	// linkLocal is 169.254/16 and fe80::/10 (the cloud metadata
	// services are here); allow_private_targets allows them.
	linkLocal
	// multicast is never a target: a webhook is one TCP connection.
	multicast
)

// block is one entry of the special-purpose registries.
type block struct {
	prefix netip.Prefix
	class  class
	what   string // completes "<address> is ..."
}

func b(cidr string, c class, what string) block {
	return block{prefix: netip.MustParsePrefix(cidr), class: c, what: what}
}

// special lists the blocks of IANA's IPv4 and IPv6 special-purpose
// address registries that are not globally reachable, plus multicast.
// A more specific block comes before the block that holds it, so the
// reason given is the narrowest. Blocks the registry marks globally
// reachable (192.31.196.0/24, 192.52.193.0/24, 192.175.48.0/24) are not
// listed; inside 192.0.0.0/24 and 2001::/23 the few globally reachable
// exceptions are refused with their block, a simplification no webhook
// receiver can be hurt by.
var special = []block{
	b("0.0.0.0/32", unspecified, "the unspecified address"),
	b("0.0.0.0/8", reserved, `in 0.0.0.0/8, "this network"`),
	b("10.0.0.0/8", private, "a private address (10.0.0.0/8)"),
	b("100.64.0.0/10", private, "a shared address (100.64.0.0/10, carrier-grade NAT)"),
	b("127.0.0.0/8", loopback, "a loopback address"),
	b("169.254.0.0/16", linkLocal, "a link-local address (169.254.0.0/16)"),
	b("172.16.0.0/12", private, "a private address (172.16.0.0/12)"),
	b("192.0.0.0/24", reserved, "in 192.0.0.0/24, IETF protocol assignments"),
	b("192.0.2.0/24", reserved, "in 192.0.2.0/24, reserved for documentation"),
	b("192.88.99.0/24", reserved, "in 192.88.99.0/24, the deprecated 6to4 relay anycast"),
	b("192.168.0.0/16", private, "a private address (192.168.0.0/16)"),
	b("198.18.0.0/15", reserved, "in 198.18.0.0/15, reserved for benchmarking"),
	b("198.51.100.0/24", reserved, "in 198.51.100.0/24, reserved for documentation"),
	b("203.0.113.0/24", reserved, "in 203.0.113.0/24, reserved for documentation"),
	b("224.0.0.0/4", multicast, "a multicast address"),
	b("255.255.255.255/32", reserved, "the limited broadcast address"),
	b("240.0.0.0/4", reserved, "in 240.0.0.0/4, reserved"),

	b("::/128", unspecified, "the unspecified address"),
	b("::1/128", loopback, "a loopback address"),
	b("::/96", reserved, "in ::/96, an IPv4-compatible address (deprecated), which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("::ffff:0:0:0/96", reserved, "in ::ffff:0:0:0/96, an IPv4-translated address, which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("64:ff9b::/96", reserved, "in 64:ff9b::/96, NAT64, which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("64:ff9b:1::/48", reserved, "in 64:ff9b:1::/48, local-use NAT64, which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("100::/64", reserved, "in 100::/64, discard-only"),
	b("2001::/32", reserved, "in 2001::/32, Teredo, which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("2001:db8::/32", reserved, "in 2001:db8::/32, reserved for documentation"),
	b("2001::/23", reserved, "in 2001::/23, IETF protocol assignments"),
	b("2002::/16", reserved, "in 2002::/16, 6to4, which embeds an IPv4 address; such forms are refused whatever they embed"),
	b("3fff::/20", reserved, "in 3fff::/20, reserved for documentation"),
	b("5f00::/16", reserved, "in 5f00::/16, segment routing (SRv6) SIDs"),
	b("fc00::/7", private, "a unique local address (fc00::/7)"),
	b("fe80::/10", linkLocal, "a link-local address (fe80::/10)"),
	b("fec0::/10", reserved, "in fec0::/10, site-local (deprecated)"),
	b("ff00::/8", multicast, "a multicast address"),
}

// globalUnicast6 is the only IPv6 block IANA allocates global unicast
// from; anything outside it is reserved by the IETF.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// classify returns the block a holds (a without zone, IPv4-mapped
// addresses already unmapped); ok is false for a globally routable
// unicast address.
func classify(a netip.Addr) (block, bool) {
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s, true
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return block{class: reserved, what: "outside 2000::/3, the IPv6 global unicast range"}, true
	}
	return block{}, false
}
