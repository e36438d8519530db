package server

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server/api"
)

// Browsers (ADR 0085). Two things decide what a web page may do with
// this server, and both are here, in front of the routes:
//
//   - CORS: a page from one of CORS.AllowedOrigins may call the /v1
//     routes (preflights are answered for every method a path has, the
//     signed upload PUT included) and read the answers, Claimcheck-*
//     headers included. Any other origin gets no CORS header, so the
//     browser keeps the answer from the page.
//   - Cross-origin protection: CORS only hides answers, it does not stop
//     a "simple" request (a form post, a fetch with Content-Type
//     text/plain) from reaching the handler and doing its work. So every
//     state-changing request that a browser marks as cross-origin
//     (Sec-Fetch-Site, or Origin against Host in older browsers:
//     net/http's CrossOriginProtection) and that does not come from an
//     allowed origin is refused before any handler runs; so is a
//     cross-site redeem, since a read counts (delete_after_read). And a
//     route that takes a JSON body refuses any other Content-Type, which
//     no simple request can send.
//
// Requests without Origin or Sec-Fetch-Site (curl, the Go client, other
// servers) are not browsers' and are unaffected, except for the
// Content-Type rule.

// CORS is the http.cors section of the config.
//
//	http:
//	  cors:
//	    allowed_origins: [https://app.example.com, "https://*.example.com"]
//	    max_age: 1h
type CORS struct {
	// AllowedOrigins are the origins whose pages may use the API:
	// scheme://host[:port], or with "*." before the host's domain for
	// any of its subdomains. None by default. In the environment, one
	// comma-separated string (CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS).
	AllowedOrigins Origins `yaml:"allowed_origins"`
	// MaxAge is how long a browser may cache a preflight answer
	// (default 1h; browsers cap it, Chromium at 2h).
	MaxAge claimcheck.Duration `yaml:"max_age"`
}

// DefaultCORSMaxAge is CORS.MaxAge when unset.
const DefaultCORSMaxAge = claimcheck.Duration(time.Hour)

// Origins is a list of origins. In YAML it is a sequence, or one string
// of origins separated by commas (an origin never holds one), the form an
// environment variable gives.
type Origins []string

// UnmarshalYAML accepts a sequence of strings or a comma-separated string.
func (o *Origins) UnmarshalYAML(n *yaml.Node) error {
	*o = nil
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil
		}
		for _, s := range strings.Split(n.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*o = append(*o, s)
			}
		}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return fmt.Errorf("line %d: http.cors.allowed_origins: want a list of origins (https://app.example.com) or one comma-separated string", n.Line)
	}
	*o = list
	return nil
}

// originPattern is one parsed entry of AllowedOrigins.
type originPattern struct {
	scheme string
	// host is the host without port; with wildcard set, the domain the
	// origin's host must be a subdomain of.
	host     string
	port     string // "" for the scheme's default
	wildcard bool
}

// parseOrigin parses an AllowedOrigins entry (or an Origin header, which
// has no wildcard), lowercased and without the scheme's default port.
func parseOrigin(s string) (originPattern, error) {
	if s == "*" {
		return originPattern{}, errors.New(`"*" would let every web page act on this server; list the origins of your pages`)
	}
	u, err := url.Parse(s)
	if err != nil {
		return originPattern{}, errors.New("not a URL")
	}
	p := originPattern{scheme: strings.ToLower(u.Scheme)}
	if p.scheme != "http" && p.scheme != "https" {
		return originPattern{}, errors.New("want http:// or https://")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(s, "/") {
		return originPattern{}, errors.New("an origin is scheme://host[:port], without user, path (not even /), query or fragment")
	}
	host := strings.ToLower(u.Hostname())
	p.port = u.Port()
	if (p.scheme == "http" && p.port == "80") || (p.scheme == "https" && p.port == "443") {
		p.port = ""
	}
	if p.port != "" {
		if n, err := strconv.Atoi(p.port); err != nil || n < 1 || n > 65535 {
			return originPattern{}, errors.New("bad port")
		}
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wildcard, host = true, rest
	}
	if host == "" || strings.Contains(host, "*") {
		return originPattern{}, errors.New(`want a host, or "*." and a domain (https://*.example.com)`)
	}
	if p.wildcard && !strings.Contains(host, ".") {
		return originPattern{}, errors.New(`"*." needs a domain of at least two labels, not a top-level domain`)
	}
	p.host = host
	return p, nil
}

// String is the pattern in its normal form, as an Origin header (or S3's
// AllowedOrigin) writes it.
func (p originPattern) String() string {
	s := p.scheme + "://"
	if p.wildcard {
		s += "*."
	}
	s += p.host
	if strings.Contains(p.host, ":") {
		s = p.scheme + "://[" + p.host + "]"
	}
	if p.port != "" {
		s += ":" + p.port
	}
	return s
}

// matches reports whether the browser's origin o (no wildcard) is allowed
// by p. A wildcard matches any subdomain at any depth, never the domain
// itself.
func (p originPattern) matches(o originPattern) bool {
	if p.scheme != o.scheme || p.port != o.port {
		return false
	}
	if p.wildcard {
		return strings.HasSuffix(o.host, "."+p.host)
	}
	return p.host == o.host
}

// NormalOrigins parses the allowed origins and returns them in normal
// form (lowercase, no default port). Errors name the entry.
func (c CORS) NormalOrigins() ([]string, error) {
	out := make([]string, 0, len(c.AllowedOrigins))
	for i, s := range c.AllowedOrigins {
		p, err := parseOrigin(s)
		if err != nil {
			return nil, fmt.Errorf("%w: http.cors.allowed_origins[%d] %q: %v", claimcheck.ErrInvalidArgument, i, s, err)
		}
		out = append(out, p.String())
	}
	return out, nil
}

// Validate checks the section; errors name the field.
func (c CORS) Validate() error {
	if _, err := c.NormalOrigins(); err != nil {
		return err
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("%w: http.cors.max_age %s: not negative", claimcheck.ErrInvalidArgument, c.MaxAge)
	}
	return nil
}

// corsExposed are the response headers a page may read besides the
// CORS-safelisted ones: the ref and size of a redeem, where a new claim
// lives, when to retry, what auth wants.
var corsExposed = strings.Join([]string{api.HeaderRef, api.HeaderSize, "Claimcheck-Error", "Location", "Retry-After", "WWW-Authenticate",
	// tus (tus.go): a tus client in a page reads where the upload is and
	// how far it got.
	api.HeaderUploadOffset, api.HeaderUploadLength, api.HeaderUploadExpires, api.HeaderUploadMetadata,
	api.HeaderTusResumable, api.HeaderTusVersion, api.HeaderTusExtension, api.HeaderTusMaxSize}, ", ")

// corsAllowedHeaders are the request headers a page may send: the API's
// own, the API key, Content-Type (application/json or the payload's),
// and tus's.
var corsAllowedHeaders = strings.Join([]string{"Authorization", "Content-Type", api.HeaderDigest, api.HeaderConsumers,
	api.HeaderConsumerNames, api.HeaderLabels, api.HeaderIdempotencyKey,
	api.HeaderTusResumable, api.HeaderUploadLength, api.HeaderUploadOffset, api.HeaderUploadMetadata, api.HeaderUploadChecksum,
	api.HeaderLastEvent}, ", ")

// corsMethods are the methods a preflight may ask about.
var corsMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}

// routeOf is the table's row of each pattern.
var routeOf = func() map[string]*route {
	m := make(map[string]*route, len(routes))
	for i := range routes {
		m[routes[i].pattern] = &routes[i]
	}
	return m
}()

// browserGate is the CORS and cross-origin state of a Server.
type browserGate struct {
	origins []originPattern
	maxAge  string // seconds, for Access-Control-Max-Age
	cop     *http.CrossOriginProtection
}

func newBrowserGate(c CORS) *browserGate {
	g := &browserGate{cop: http.NewCrossOriginProtection()}
	maxAge := c.MaxAge
	if maxAge == 0 {
		maxAge = DefaultCORSMaxAge
	}
	g.maxAge = strconv.Itoa(int(time.Duration(maxAge) / time.Second))
	for _, s := range c.AllowedOrigins {
		p, err := parseOrigin(s)
		if err != nil {
			continue // Validate reports it; an entry that does not parse allows nothing
		}
		g.origins = append(g.origins, p)
		if !p.wildcard {
			// The standard check trusts the exact origins itself; the
			// wildcards, which it cannot express, are matched by allowed
			// before it runs.
			_ = g.cop.AddTrustedOrigin(p.String())
		}
	}
	return g
}

// allowed reports whether an Origin header value is an allowed origin.
func (g *browserGate) allowed(origin string) bool {
	if origin == "" || origin == "null" {
		return false
	}
	o, err := parseOrigin(origin)
	if err != nil || o.wildcard {
		return false
	}
	for _, p := range g.origins {
		if p.matches(o) {
			return true
		}
	}
	return false
}

// gate runs before the routes: it adds the CORS headers, answers
// preflights and refuses cross-origin requests that must have no effect.
// It reports whether it answered the request.
func (s *Server) gate(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		return false // probes and metrics are for machines, not pages
	}
	g := s.browser
	origin := r.Header.Get("Origin")
	allowed := g.allowed(origin)
	h := w.Header()
	if origin != "" || len(g.origins) > 0 {
		// The answer depends on Origin whenever CORS is on: a cache must
		// not hand one origin's answer (or a non-browser's) to another.
		h.Add("Vary", "Origin")
	}
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposed)
	}

	if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		return s.preflight(w, r, allowed)
	}

	_, pattern := s.mux.Handler(r)
	refuse := func(err error) bool {
		r.Pattern = pattern // counted under its route
		s.writeError(w, r, err)
		return true
	}
	if err := g.crossOrigin(r, pattern, allowed); err != nil {
		return refuse(err)
	}
	return false
}

// crossOrigin refuses a request a browser sent from a page of another
// origin that is not allowed, when the request would change something.
func (g *browserGate) crossOrigin(r *http.Request, pattern string, allowed bool) error {
	if allowed {
		return nil
	}
	refused := func() error {
		from := r.Header.Get("Origin")
		if from == "" {
			from = "another site (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
		}
		return fmt.Errorf("%w: cross-origin %s %s from %s refused: the origin is not in http.cors.allowed_origins", claimcheck.ErrPermissionDenied, r.Method, r.URL.Path, clip(from))
	}
	if rt := routeOf[pattern]; rt != nil && rt.op == auth.OpRedeem {
		// A redeem counts as a read (delete_after_read starts its window
		// on the first): a safe method for CrossOriginProtection, but not
		// for us. Only what the browser says counts: a cross-site page
		// cannot make it lie, and a same-origin page or the address bar
		// is "same-origin" or "none".
		switch r.Header.Get("Sec-Fetch-Site") {
		case "cross-site", "same-site":
			return refused()
		}
		return nil
	}
	if err := g.cop.Check(r); err != nil {
		return refused()
	}
	return nil
}

// preflightRoute is the metrics label of answered preflights.
const preflightRoute = "OPTIONS (CORS preflight)"

// preflight answers a CORS preflight: the methods the path has, the
// headers the API reads, and how long to remember it. A preflight from
// an origin that is not allowed is refused with the usual JSON error and
// no CORS header, so the browser stops there; one for a path that is no
// route is left to the mux (404 no_route). It reports whether it
// answered.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allowed bool) bool {
	var methods []string
	for _, m := range corsMethods {
		probe := *r
		probe.Method = m
		if _, p := s.mux.Handler(&probe); p != "" {
			methods = append(methods, m)
		}
	}
	if len(methods) == 0 {
		return false
	}
	r.Pattern = preflightRoute
	if !allowed {
		s.writeError(w, r, fmt.Errorf("%w: CORS preflight from origin %q: not in http.cors.allowed_origins", claimcheck.ErrPermissionDenied, clip(r.Header.Get("Origin"))))
		return true
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", corsAllowedHeaders)
	h.Set("Access-Control-Max-Age", s.browser.maxAge)
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// jsonBody requires Content-Type: application/json (parameters such as
// charset allowed) on a request with a body to a JSON route. It runs
// after authentication, like the handlers' own input checks.
func jsonBody(r *http.Request, rt route) error {
	if !rt.json || r.ContentLength == 0 {
		return nil
	}
	ct := r.Header.Values("Content-Type")
	if len(ct) == 1 {
		if mt, _, err := mime.ParseMediaType(ct[0]); err == nil && mt == api.ContentTypeJSON {
			return nil
		}
	}
	got := "none"
	if len(ct) > 0 {
		got = strconv.Quote(clip(strings.Join(ct, ", ")))
	}
	return invalidf("Content-Type: want %s for this JSON body, got %s", api.ContentTypeJSON, got)
}
