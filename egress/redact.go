package egress

import (
	"errors"
	"net"
	"strings"
)

// RefusedText is what a tenant is told of a connection refused because
// the name resolved to an address the policy does not allow: the
// address itself would let a tenant read the operator's DNS (what
// internal names resolve to) through a subscription's last error.
const RefusedText = "target refused: the name resolved to an address outside the allowed ranges"

// Redact returns err as a tenant may see it: a refusal of a resolved
// address says RefusedText, and the addresses of connection and lookup
// errors (the resolved peer, the server's own address, the DNS server)
// are taken out. The result wraps err, so errors.Is and errors.As still
// see everything; the operator's log takes err itself.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{text: redactedText(err), err: err}
}

type redacted struct {
	text string
	err  error
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.err }

func redactedText(err error) string {
	s := err.Error()
	// The outermost connection error first: its text holds the others'.
	var op *net.OpError
	if errors.As(err, &op) {
		s = strings.Replace(s, op.Error(), opText(op), 1)
	}
	var ae *AddressError
	if errors.As(err, &ae) && ae.Resolved {
		s = strings.Replace(s, ae.Error(), RefusedText, 1)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		s = strings.Replace(s, dns.Error(), dnsText(dns), 1)
	}
	return s
}

// opText is a net.OpError without its addresses: "dial tcp: connect:
// connection refused".
func opText(op *net.OpError) string {
	if op.Err == nil {
		return op.Op + " " + op.Net
	}
	return op.Op + " " + op.Net + ": " + redactedText(op.Err)
}

// dnsText is a net.DNSError without the server asked.
func dnsText(e *net.DNSError) string {
	s := "lookup " + e.Name + ": " + e.Err
	if e.IsTimeout {
		s += " (timeout)"
	}
	return s
}
