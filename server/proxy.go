package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/claimcheck/claimcheck"
)

// The server's own public address (ADR 0074). A few answers name a URL
// of this server: the upload URL of file and memory storage, which a
// client outside must be able to PUT to, and the Location of a new
// claim. Behind a reverse proxy the request the server sees names the
// proxy's upstream (http://10.0.0.5:8080), not the address clients use
// (https://claims.example.com, maybe under a path prefix). In order:
//
//  1. http.public_url, when set, is the answer, whatever the request says.
//  2. From a trusted proxy (http.trusted_proxies, limits.go), its
//     X-Forwarded-Proto (http or https) and X-Forwarded-Host (host[:port])
//     replace the connection's scheme and the Host header; garbage in
//     them is a 400 naming the header.
//  3. Otherwise the connection's scheme and the request's Host.
//
// The RFC 7239 Forwarded header is deliberately not read: every common
// proxy sets X-Forwarded-* (and claimcheck already reads X-Forwarded-For
// for the client address), while most of them pass a client's Forwarded
// header through untouched, so honouring it would hand the choice of
// host back to the client whenever the proxy does not overwrite it.
// X-Forwarded-Port and X-Forwarded-Prefix are not read either: put the
// port in X-Forwarded-Host, and a path prefix in public_url.

// publicURL parses Limits.PublicURL: nil when unset, otherwise an
// absolute http or https URL with a host, no user info, query or
// fragment, and its path without a trailing slash. Validate reports a
// bad value; the error names the field and the value.
func (l Limits) publicURL() (*url.URL, error) {
	if l.PublicURL == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: http.public_url %q: %s; want the URL clients reach the server by, like https://claims.example.com or https://example.com/claimcheck",
			claimcheck.ErrInvalidArgument, l.PublicURL, why)
	}
	u, err := url.Parse(l.PublicURL)
	switch {
	case err != nil:
		return nil, bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("the scheme must be http or https")
	case u.Opaque != "" || u.Host == "":
		return nil, bad("no host")
	case !validHostPort(u.Host):
		return nil, bad("the host must be HOST[:PORT]")
	case u.User != nil:
		return nil, bad("user info would be handed out to every client")
	case strings.ContainsAny(l.PublicURL, "?#"):
		return nil, bad("no query or fragment")
	}
	// Upload paths (/v1/…) are appended to it: no trailing slash, so
	// that https://example.com/claimcheck/ and …/claimcheck agree.
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

// baseURL is scheme://host[/prefix] by which the client of r reaches
// this server, for absolute URLs in answers; see the comment at the top.
func (s *Server) baseURL(r *http.Request) (string, error) {
	if s.public != nil {
		return s.public.String(), nil
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	// Whoever chooses this host receives the payload the caller PUTs
	// there, and the signed URL with it. From an untrusted peer the
	// headers are ignored: that peer may be an application relaying its
	// own users' requests (headers and all), and one of them could then
	// send the upload URL handed to another to a host of their choosing.
	// Only a proxy the operator listed sets them, overwriting whatever
	// the client sent.
	if !s.trustedAddr(remoteHost(r)) {
		return scheme + "://" + host, nil
	}
	proto, err := forwardedHeader(r, "X-Forwarded-Proto")
	if err != nil {
		return "", err
	}
	switch p := strings.ToLower(proto); p {
	case "":
	case "http", "https":
		scheme = p
	default:
		return "", invalidf("X-Forwarded-Proto %.64q from the trusted proxy: want http or https", proto)
	}
	fwdHost, err := forwardedHeader(r, "X-Forwarded-Host")
	if err != nil {
		return "", err
	}
	if fwdHost != "" {
		if !validHostPort(fwdHost) {
			return "", invalidf("X-Forwarded-Host %.64q from the trusted proxy: want HOST[:PORT]", fwdHost)
		}
		host = fwdHost
	}
	return scheme + "://" + host, nil
}

// claimLocation is the Location of claim id: a path under public_url's
// path prefix, so that a client resolving it against the URL it used
// stays behind the proxy's prefix.
func (s *Server) claimLocation(id string) string {
	prefix := ""
	if s.public != nil {
		prefix = s.public.EscapedPath()
	}
	return prefix + routePath(claimRoute, id)
}

// forwardedHeader is the value of header name ("" when absent). A proxy
// should set the header, overwriting the client's; one that appends to
// it instead leaves the client's value in the list beside its own, and
// nothing tells them apart, so several different values are refused
// rather than guessed between.
func forwardedHeader(r *http.Request, name string) (string, error) {
	val := ""
	for _, line := range r.Header.Values(name) {
		for v := range strings.SplitSeq(line, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			if val != "" && v != val {
				return "", invalidf("%s from the trusted proxy has several values (%.64q and %.64q): the proxy must set it, not append to it (or set http.public_url)", name, val, v)
			}
			val = v
		}
	}
	return val, nil
}

// validHostPort reports whether h is HOST[:PORT]: a DNS name, an IPv4
// address or a bracketed IPv6 address, then an optional port 1–65535.
func validHostPort(h string) bool {
	host, port, hasPort := h, "", false
	if rest, ok := strings.CutPrefix(h, "["); ok {
		ip, after, closed := strings.Cut(rest, "]")
		addr, err := netip.ParseAddr(ip)
		if !closed || err != nil || !addr.Is6() || addr.Zone() != "" {
			return false
		}
		if after == "" {
			return true
		}
		port, hasPort = strings.CutPrefix(after, ":")
		return hasPort && validPort(port)
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
		if !validPort(port) {
			return false
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr.Is4()
	}
	return validHostname(host)
}

func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0
}

// validHostname reports whether h is a DNS name: dot-separated labels of
// letters, digits and inner hyphens, 1–63 bytes each, 253 in all, the
// last not all digits (that would be a malformed IPv4 address).
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	digits := false
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		digits = true
		for _, c := range []byte(label) {
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				digits = false
			default:
				return false
			}
		}
	}
	return !digits
}
