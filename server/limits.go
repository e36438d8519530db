package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
)

// Limits protect the server from slow, greedy or hostile clients (ADR
// 0061), and say how it sits behind a reverse proxy (TrustedProxies,
// PublicURL; ADR 0074). It is the `http:` section of the config file.
// In server.New and Serve a zero field means "no limit" (tests and
// embedders decide); `claimcheck serve` starts from WithDefaults, and a
// negative value switches a limit off there.
//
// Body sizes are the namespaces' max_size (the store refuses a put whose
// Content-Length is over it before reading the body, and stops reading
// at the limit otherwise), so they are not repeated here.
type Limits struct {
	// MaxHeaderBytes bounds the request line and headers (default 64KiB).
	MaxHeaderBytes claimcheck.Size `yaml:"max_header_bytes"`
	// ReadHeaderTimeout bounds how long a client may take to send its
	// headers (default 10s; slowloris).
	ReadHeaderTimeout claimcheck.Duration `yaml:"read_header_timeout"`
	// ReadTimeout is the longest pause while reading a request body
	// (default 1m). It is renewed on every read, so a long upload at any
	// steady speed is fine; a client that stops sending is cut off.
	ReadTimeout claimcheck.Duration `yaml:"read_timeout"`
	// WriteTimeout is the longest pause while writing a response (default
	// 1m), renewed on every write, so a long download is never cut off
	// while the client keeps reading.
	WriteTimeout claimcheck.Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections unused this long
	// (default 2m).
	IdleTimeout claimcheck.Duration `yaml:"idle_timeout"`
	// MaxStreamsPerKey bounds the payload streams (puts, redeems,
	// uploads) one API key (or, without auth, one client address) has
	// open at once (default 64). PUTs to signed upload URLs carry no key
	// and count per client address.
	MaxStreamsPerKey int `yaml:"max_streams_per_key"`
	// MaxEventStreamsPerTenant bounds the live event streams (GET
	// /v1/events/stream) one tenant has open at once on this server
	// process (default 16; eventstreams.go, ADR 0270): each polls the
	// metadata store while it is open.
	MaxEventStreamsPerTenant int `yaml:"max_event_streams_per_tenant"`
	// MaxAPIKeysPerTenant bounds the keys not revoked a tenant's admin
	// may have made over POST /v1/keys (default 1000; keys.go, ADR 0270);
	// the operator's `claimcheck keys create` is not bounded.
	MaxAPIKeysPerTenant int `yaml:"max_api_keys_per_tenant"`
	// RateLimit is the requests per second one key (or client address;
	// always the address for PUTs to signed upload URLs) may make on /v1
	// on average, with bursts of RateBurst (defaults 1000 and 2000: they
	// stop a runaway client, they do not shape normal traffic). With auth
	// off and RateLimit unset there is no per-address rate limit
	// (WithAuthDefaults, ADR 0262): an address is not an identity, and
	// one producer host or a NAT in front of many would be held below
	// what the server can do.
	RateLimit float64 `yaml:"rate_limit"`
	RateBurst int     `yaml:"rate_burst"`
	// MaxConnsPerAddr bounds the connections one client address (the
	// TCP peer) may have open at once (default 256); beyond it, new
	// connections from that address are closed at once, before a byte is
	// read (conns.go, ADR 0082). Connections from TrustedProxies are not
	// counted. ServeWith applies it (it needs the listener).
	MaxConnsPerAddr int `yaml:"max_conns_per_addr"`
	// MaxPendingBytesPerKey bounds the bytes one key (without auth: one
	// client address) may hold reserved at once in puts in progress and
	// upload inits not yet confirmed (default 16GiB; pending.go, ADR
	// 0081), so slow or abandoned transfers of one key cannot hold its
	// tenant's whole quota. Per server process.
	MaxPendingBytesPerKey claimcheck.Size `yaml:"max_pending_bytes_per_key"`
	// TrustedProxies are the addresses (CIDR prefixes or single IPs) of
	// reverse proxies in front of the server. For a request from one of
	// them, the client address used for per-address limits and in
	// auth_failed events is taken from X-Forwarded-For (the right-most
	// entry that is not itself a trusted proxy), and without PublicURL
	// the upload URLs follow their X-Forwarded-Proto and X-Forwarded-Host
	// (proxy.go). Empty: the headers are ignored, since anyone could send
	// them.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// PublicURL is the URL clients reach the server by when that is not
	// the address it listens on: https://claims.example.com, or with the
	// proxy's path prefix https://example.com/claimcheck. The upload URLs
	// the server serves itself are built from it (proxy.go). Empty: from
	// the request, honouring X-Forwarded-Proto and X-Forwarded-Host from
	// TrustedProxies.
	PublicURL string `yaml:"public_url"`
	// CORS says which web pages may use the API from a browser (cors.go,
	// ADR 0085). None by default.
	CORS CORS `yaml:"cors"`
}

// trustedPrefixes parses TrustedProxies; Validate reports bad entries.
func (l Limits) trustedPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range l.TrustedProxies {
		pre, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%w: http.trusted_proxies %q: want an IP address or a CIDR prefix", claimcheck.ErrInvalidArgument, p)
			}
			pre = netip.PrefixFrom(addr, addr.BitLen())
		}
		out = append(out, pre.Masked())
	}
	return out, nil
}

// The defaults of `claimcheck serve`.
const (
	DefaultMaxHeaderBytes        claimcheck.Size     = 64 << 10
	DefaultReadHeaderTimeout     claimcheck.Duration = claimcheck.Duration(10 * time.Second)
	DefaultReadTimeout           claimcheck.Duration = claimcheck.Duration(time.Minute)
	DefaultWriteTimeout          claimcheck.Duration = claimcheck.Duration(time.Minute)
	DefaultIdleTimeout           claimcheck.Duration = claimcheck.Duration(2 * time.Minute)
	DefaultMaxStreamsPerKey                          = 64
	DefaultRateLimit                                 = 1000.0
	DefaultRateBurst                                 = 2000
	DefaultMaxConnsPerAddr                           = 256
	DefaultMaxPendingBytesPerKey claimcheck.Size     = 16 << 30
)

// WithAuthDefaults is WithDefaults for a server whose auth is on or off:
// with auth off, a RateLimit left unset means no rate limit (ADR 0262),
// since requests are then counted per client address; a RateLimit the
// operator set applies either way.
func (l Limits) WithAuthDefaults(authOn bool) Limits {
	if !authOn && l.RateLimit == 0 {
		l.RateLimit = -1
	}
	return l.WithDefaults()
}

// WithDefaults fills the zero fields with the defaults and turns negative
// ones (switched off) into zero.
func (l Limits) WithDefaults() Limits {
	num := func(v, d float64) float64 {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return d
		}
		return v
	}
	l.MaxHeaderBytes = claimcheck.Size(num(float64(l.MaxHeaderBytes), float64(DefaultMaxHeaderBytes)))
	l.ReadHeaderTimeout = claimcheck.Duration(num(float64(l.ReadHeaderTimeout), float64(DefaultReadHeaderTimeout)))
	l.ReadTimeout = claimcheck.Duration(num(float64(l.ReadTimeout), float64(DefaultReadTimeout)))
	l.WriteTimeout = claimcheck.Duration(num(float64(l.WriteTimeout), float64(DefaultWriteTimeout)))
	l.IdleTimeout = claimcheck.Duration(num(float64(l.IdleTimeout), float64(DefaultIdleTimeout)))
	l.MaxStreamsPerKey = int(num(float64(l.MaxStreamsPerKey), DefaultMaxStreamsPerKey))
	l.MaxEventStreamsPerTenant = int(num(float64(l.MaxEventStreamsPerTenant), DefaultMaxEventStreamsPerTenant))
	l.MaxAPIKeysPerTenant = int(num(float64(l.MaxAPIKeysPerTenant), DefaultMaxAPIKeysPerTenant))
	l.RateLimit = num(l.RateLimit, DefaultRateLimit)
	l.RateBurst = int(num(float64(l.RateBurst), DefaultRateBurst))
	l.MaxConnsPerAddr = int(num(float64(l.MaxConnsPerAddr), DefaultMaxConnsPerAddr))
	l.MaxPendingBytesPerKey = claimcheck.Size(num(float64(l.MaxPendingBytesPerKey), float64(DefaultMaxPendingBytesPerKey)))
	return l
}

// Validate checks limits after WithDefaults; errors name the field.
func (l Limits) Validate() error {
	if l.MaxHeaderBytes != 0 && l.MaxHeaderBytes < 4<<10 {
		return fmt.Errorf("%w: http.max_header_bytes %s: at least 4KiB", claimcheck.ErrInvalidArgument, l.MaxHeaderBytes)
	}
	if _, err := l.trustedPrefixes(); err != nil {
		return err
	}
	if _, err := l.publicURL(); err != nil {
		return err
	}
	if err := l.CORS.Validate(); err != nil {
		return err
	}
	if math.IsNaN(l.RateLimit) || math.IsInf(l.RateLimit, 0) {
		return fmt.Errorf("%w: http.rate_limit %v: must be a number (requests per second; -1: off)", claimcheck.ErrInvalidArgument, l.RateLimit)
	}
	if l.RateLimit > 0 && l.RateBurst < 1 {
		return fmt.Errorf("%w: http.rate_burst %d: at least 1 when rate_limit is set", claimcheck.ErrInvalidArgument, l.RateBurst)
	}
	return nil
}

// maxTracked bounds the per-client limiter maps; beyond it, clients whose
// bucket is full again (idle) are forgotten.
const maxTracked = 10000

// limiters is a token bucket per client (key id or address).
type limiters struct {
	mu    sync.Mutex
	limit rate.Limit
	burst int
	m     map[string]*rate.Limiter
}

func newLimiters(perSecond float64, burst int) *limiters {
	if perSecond <= 0 {
		return nil
	}
	return &limiters{limit: rate.Limit(perSecond), burst: max(burst, 1), m: make(map[string]*rate.Limiter)}
}

// take spends one token of client's bucket. It returns 0 when the request
// may go ahead, else how long until a token is there (nothing spent).
func (l *limiters) take(client string, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[client]
	if lim == nil {
		if len(l.m) >= maxTracked {
			for k, v := range l.m {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.m, k)
				}
			}
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.m[client] = lim
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// streams counts the open payload streams per client.
type streams struct {
	mu  sync.Mutex
	max int
	n   map[string]int
}

// acquire takes a stream slot; ok is false when client has max open.
func (s *streams) acquire(client string) (release func(), ok bool) {
	if s == nil || s.max <= 0 {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[client] >= s.max {
		return nil, false
	}
	s.n[client]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n[client]--; s.n[client] <= 0 {
			delete(s.n, client)
		}
	}, true
}

// streamOp reports whether op moves a payload.
func streamOp(op auth.Op) bool { return op == auth.OpPut || op == auth.OpRedeem }

// rateLimited is a refused request with the time after which a retry may
// succeed.
type rateLimited struct {
	limit      string
	retryAfter time.Duration
}

func (e *rateLimited) Error() string {
	return fmt.Sprintf("%s: %s; retry after %s", claimcheck.ErrRateLimited, e.limit, e.retryAfter.Round(time.Second))
}

func (e *rateLimited) Is(target error) bool { return target == claimcheck.ErrRateLimited }

// retryAfterSeconds is the Retry-After value of d: whole seconds, at
// least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Max(1, math.Ceil(d.Seconds()))), 10)
}

// writeLimited answers a rate_limited error with its Retry-After.
func (s *Server) writeLimited(w http.ResponseWriter, r *http.Request, err error) {
	if rl, ok := errors.AsType[*rateLimited](err); ok {
		w.Header().Set("Retry-After", retryAfterSeconds(rl.retryAfter))
	}
	s.writeError(w, r, err)
}

// progressBody renews the connection's read deadline before every read
// of the request body, so ReadTimeout bounds a pause, not the upload. At
// the end of the body it clears the deadline: net/http then reads the
// connection in the background to notice a client hang-up, and a stale
// deadline there would cancel the request while the store commits.
type progressBody struct {
	io.ReadCloser
	rc *http.ResponseController
	d  time.Duration
}

func (b *progressBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.d))
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	// After a timeout the deadline stays in the past: net/http reads the
	// rest of an unread body before it answers, and must fail at once
	// rather than wait for a client that stopped sending.
	return n, err
}

// progressWriter renews the connection's write deadline before every
// write of the response, so WriteTimeout bounds a stalled reader, never
// a long download.
type progressWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *progressWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *progressWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	_ = w.rc.Flush()
}

// guard runs the checks every /v1 request passes before its handler:
// authentication and authorisation (when auth is on; a signed route
// needs neither), the per-client rate limit, the per-client stream limit
// and the slow-client deadlines. It returns the request to hand on and a
// cleanup, or false after it has answered the request itself.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, rt route) (http.ResponseWriter, *http.Request, func(), bool) {
	now := time.Now()
	client, per := "addr:"+s.clientAddr(r), "client address"
	// A signed route (the upload PUT) has no key to count by: it is
	// limited per address even with auth on, so a leaked or replayed
	// upload URL cannot open unbounded streams or requests.
	if s.auth != nil && rt.target != targetSigned {
		// Addresses that keep failing to authenticate are limited on
		// the failure path only: a request with a valid key is never
		// refused for what others from its address did (several
		// clients share an address behind NAT or a proxy). Over the
		// budget, a request without a well-formed token is refused
		// before it costs anything; a well-formed token is still
		// checked (one lookup by key id), and only if it fails is the
		// answer 429 instead of 401.
		over := s.authFailures.peek(client, now)
		if over > 0 && !wellFormedToken(r) {
			s.writeLimited(w, r, &rateLimited{limit: "too many failed authentications from this address", retryAfter: over})
			return w, r, nil, false
		}
		r2, key, err := s.authenticate(r)
		if err != nil {
			if errors.Is(err, claimcheck.ErrUnauthenticated) {
				s.authFailures.take(client, now)
				if over > 0 {
					s.writeLimited(w, r, &rateLimited{limit: "too many failed authentications from this address", retryAfter: over})
					return w, r, nil, false
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="claimcheck"`)
			}
			s.writeError(w, r, err)
			return w, r, nil, false
		}
		r = r2
		client, per = "key:"+key.ID, "key"
		if err := s.authorize(r, rt, key); err != nil {
			s.writeError(w, r, err)
			return w, r, nil, false
		}
	}
	if wait := s.rate.take(client, now); wait > 0 {
		s.writeLimited(w, r, &rateLimited{
			limit:      fmt.Sprintf("rate limit of %g requests/s (burst %d) per %s exceeded (http.rate_limit)", s.limits.RateLimit, s.limits.RateBurst, per),
			retryAfter: wait,
		})
		return w, r, nil, false
	}
	// The handlers that reserve quota count it for the same client
	// (pending.go).
	r = r.WithContext(context.WithValue(r.Context(), clientCtx{}, client))
	done := func() {}
	if streamOp(rt.op) {
		release, ok := s.streams.acquire(client)
		if !ok {
			s.writeLimited(w, r, &rateLimited{
				limit:      fmt.Sprintf("%d payload streams open at once per %s (http.max_streams_per_key)", s.limits.MaxStreamsPerKey, per),
				retryAfter: time.Second,
			})
			return w, r, nil, false
		}
		done = release
	}
	if d := time.Duration(s.limits.ReadTimeout); d > 0 && r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		// The wrapped body goes on a shallow copy of the request. net/http
		// looks at the type of its own request's body to tell that a
		// client sent "Expect: 100-continue" and is still waiting: then a
		// handler that answers without reading (a digest-first dedup hit,
		// a refusal) is sent at once and the connection closed. Seeing a
		// body of another type, it would instead read the body before
		// answering, and the client would only send it after its own
		// expect timeout: every dedup hit would cost that timeout.
		r = r.WithContext(r.Context())
		r.Body = &progressBody{ReadCloser: r.Body, rc: rc, d: d}
		release := done
		done = func() {
			// net/http reads what the handler left of the body before
			// it answers (to keep the connection); bound that too. It
			// resets the deadline itself before the next request.
			_ = rc.SetReadDeadline(time.Now().Add(d))
			release()
		}
	}
	if d := time.Duration(s.limits.WriteTimeout); d > 0 {
		rc := http.NewResponseController(w)
		w = &progressWriter{ResponseWriter: w, rc: rc, d: d}
		release := done
		done = func() {
			// No stale deadline may reach the next request on this
			// connection (net/http only resets it with a server-wide
			// WriteTimeout, which would cut long downloads).
			_ = rc.SetWriteDeadline(time.Time{})
			release()
		}
	}
	return w, r, done, true
}

// clientAddr is the address of the client: the connection's peer, or,
// when that is a trusted proxy, the right-most X-Forwarded-For entry that
// is not a trusted proxy.
func (s *Server) clientAddr(r *http.Request) string {
	host := remoteHost(r)
	if len(s.trusted) == 0 || !s.trustedAddr(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		if _, err := netip.ParseAddr(hop); err != nil {
			return host // garbage: trust nothing further left
		}
		if !s.trustedAddr(hop) {
			return hop
		}
	}
	return host
}

func (s *Server) trustedAddr(host string) bool {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range s.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// remoteHost is the connection's peer address without the port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// peek reports how long until client's bucket has a token, spending
// nothing.
func (l *limiters) peek(client string, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[client]
	if lim == nil || lim.TokensAt(now) >= 1 {
		return 0
	}
	return time.Duration((1 - lim.TokensAt(now)) / float64(l.limit) * float64(time.Second))
}

// wellFormedToken reports whether r carries one Authorization header
// with a bearer token shaped like an API key: only such a request can
// authenticate, so only it is worth a lookup from an address over its
// failure budget.
func wellFormedToken(r *http.Request) bool {
	h := r.Header.Values("Authorization")
	if len(h) != 1 {
		return false
	}
	scheme, token, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	_, _, ok = auth.ParseToken(strings.TrimSpace(token))
	return ok
}
