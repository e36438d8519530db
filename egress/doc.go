// Package egress is the one outbound address policy of the server: every
// connection claimcheck makes to a URL a tenant chose (a subscription's
// target) or an operator configured for the same purpose goes through a
// Policy, checked twice.
//
// The invariant: the server only ever connects to globally routable
// unicast addresses, unless the operator allowed more
// (allow_loopback_targets, allow_private_targets, allow_targets with
// allow_ports). "Globally routable" is read from IANA's IPv4 and IPv6
// special-purpose address registries (ranges.go): a block the registry
// lists is refused, and in IPv6 so is everything outside 2000::/3.
//
// The two checks:
//
//   - at create, CheckURL judges the URL as written: scheme, port
//     (1 to 65535), credentials, and a host that is an address in any
//     form a resolver would read as one (dotted decimal, IPv6, and the
//     inet_aton forms 127.1, 0, 2130706433, 0x7f000001, 0177.0.0.1), or
//     the name localhost (trailing dot or not);
//   - at connect, Dialer judges the host the same way before any lookup,
//     and then every address the name resolved to in the dialer's Control
//     function, after the socket exists and before it connects, so a
//     name that resolves somewhere else later (DNS rebinding) is refused
//     before a packet is sent to it.
//
// IPv6 forms that embed an IPv4 address: an IPv4-mapped address
// (::ffff:a.b.c.d) is the IPv4 address on a dual-stack socket and is
// judged as that address. Every other embedding form (IPv4-compatible
// ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96 and
// 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is refused whatever
// it embeds: where it leads depends on translators and relays on the
// path, which the server cannot see.
//
// What a tenant is shown never carries an address a name resolved to
// (Redact): a refusal at connect says the name resolved outside the
// allowed ranges, and other connection errors lose their addresses, so
// a subscription's last error is no oracle into the operator's DNS. The
// operator's log keeps the detail.
package egress
