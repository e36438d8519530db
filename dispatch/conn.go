package dispatch

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/claimcheck/claimcheck/egress"
)

// Deliveries go out on HTTP/1.1 connections the dispatcher keeps itself,
// one request at a time on each, written straight from a reused buffer
// and answered through http.ReadResponse. A lane posts its events one
// after another and waits for each answer before the next (a claim's
// events in order), so it never needs more than one connection, and
// net/http's Transport would only add its reader and writer goroutines
// and their hand-offs to every event: on the machine that serves the
// puts, that was most of a delivery's CPU. What the Transport gave that
// matters here is kept: every address is checked as the connection is
// made (the policy's dialer), nothing is proxied, a 3xx is an answer and
// never followed, a response that says Connection: close (or is not read
// to its end) closes the connection, and a kept connection the receiver
// closed while idle is retried once on a new one (a delivery is at least
// once: sending it again is allowed, losing it is not).

// maxIdlePerOrigin bounds the kept connections to one receiver: the
// lanes of its subscriptions.
const maxIdlePerOrigin = 16

// idleTimeout closes a kept connection not used for this long.
const idleTimeout = 90 * time.Second

// maxDrain is how much of a response body is read so the connection can
// be kept; a longer body closes it.
const maxDrain = 64 << 10

// poster sends deliveries and keeps idle connections by origin.
type poster struct {
	timeout time.Duration
	dialer  *egress.Dialer

	mu   sync.Mutex
	idle map[string][]*hconn // by scheme://host:port
}

type hconn struct {
	nc   net.Conn
	br   *bufio.Reader
	used time.Time
}

func newPoster(p egress.Policy, timeout time.Duration) *poster {
	return &poster{timeout: timeout, dialer: p.Dialer(timeout), idle: map[string][]*hconn{}}
}

// target is a subscription URL made ready for requests.
type target struct {
	origin  string // scheme://host:port, the key of kept connections
	tls     bool
	addr    string // host:port to dial
	server  string // TLS server name
	reqHead []byte // "POST <path> HTTP/1.1\r\nHost: <host>\r\nUser-Agent: ...\r\n"
}

func newTarget(raw string) (*target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q: want an http or https URL with a host", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	head := make([]byte, 0, 128)
	head = append(head, "POST "...)
	head = append(head, u.RequestURI()...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, u.Host...)
	head = append(head, "\r\nUser-Agent: claimcheck-dispatch\r\n"...)
	return &target{origin: u.Scheme + "://" + addr, tls: u.Scheme == "https", addr: addr, server: u.Hostname(), reqHead: head}, nil
}

// answer is a receiver's status line.
type answer struct {
	code   int
	status string // "204 No Content"
}

// post sends req (a whole request: t.reqHead, the headers, the blank
// line and the body) and returns the receiver's answer.
func (p *poster) post(ctx context.Context, t *target, req []byte) (answer, error) {
	c, reused := p.get(t.origin)
	if c != nil {
		a, err := p.exchange(ctx, c, t, req)
		if err == nil || !reused || !stale(err) || ctx.Err() != nil {
			return a, err
		}
		// The receiver closed the kept connection before this request
		// reached it (or before it answered): once more on a new one.
	}
	nc, err := p.dial(ctx, t)
	if err != nil {
		return answer{}, err
	}
	return p.exchange(ctx, &hconn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}, t, req)
}

// errNoAnswer marks a request that got no byte of an answer.
var errNoAnswer = errors.New("no answer")

// stale reports whether err is a kept connection that the receiver had
// closed: no answer, the connection ended or was reset (not a timeout:
// a slow receiver is not asked twice at once).
func stale(err error) bool {
	return errors.Is(err, errNoAnswer) &&
		(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

func (p *poster) exchange(ctx context.Context, c *hconn, t *target, req []byte) (answer, error) {
	// Wall time, not the injected clock: the deadline is the socket's,
	// which the operating system keeps.
	_ = c.nc.SetDeadline(time.Now().Add(p.timeout))
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.nc.Write(req); err != nil {
		_ = c.nc.Close()
		return answer{}, fmt.Errorf("%s: %w: %w", t.origin, errNoAnswer, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		_ = c.nc.Close()
		return answer{}, fmt.Errorf("%s: %w: %w", t.origin, errNoAnswer, err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	// An informational answer (103 Early Hints, say) comes before the
	// real one, which is read next, as net/http does.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(c.br, nil)
	}
	if err != nil {
		_ = c.nc.Close()
		return answer{}, fmt.Errorf("%s: reading the answer: %w", t.origin, err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain+1))
	_ = resp.Body.Close()
	a := answer{code: resp.StatusCode, status: resp.Status}
	if err != nil || n > maxDrain || resp.Close || ctx.Err() != nil {
		_ = c.nc.Close()
		return a, nil
	}
	p.put(t.origin, c)
	return a, nil
}

func (p *poster) dial(ctx context.Context, t *target) (net.Conn, error) {
	nc, err := p.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.origin, err)
	}
	if !t.tls {
		return nc, nil
	}
	tc := tls.Client(nc, &tls.Config{ServerName: t.server, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	hctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("%s: %w", t.origin, err)
	}
	return tc, nil
}

// get takes a kept connection to origin, the most recently used first;
// nil when there is none.
func (p *poster) get(origin string) (*hconn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := p.idle[origin]
	for len(cs) > 0 {
		c := cs[len(cs)-1]
		cs = cs[:len(cs)-1]
		p.idle[origin] = cs
		// Wall time: how long the connection sat idle on the socket,
		// which the receiver's own idle timeout measures the same way.
		if time.Since(c.used) < idleTimeout {
			return c, true
		}
		_ = c.nc.Close()
	}
	return nil, false
}

func (p *poster) put(origin string, c *hconn) {
	c.used = time.Now() // wall time, for the idle check above
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle[origin]) >= maxIdlePerOrigin {
		_ = c.nc.Close()
		return
	}
	p.idle[origin] = append(p.idle[origin], c)
}

// closeIdle closes every kept connection.
func (p *poster) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for origin, cs := range p.idle {
		for _, c := range cs {
			_ = c.nc.Close()
		}
		delete(p.idle, origin)
	}
}

// request writes a whole delivery into buf (reused): the target's
// request line and Host, the content type, the signature headers, the
// length and the body.
func (t *target) request(buf []byte, contentType string, id []byte, at int64, signature, body []byte) []byte {
	buf = append(buf[:0], t.reqHead...)
	buf = append(buf, "Content-Type: "...)
	buf = append(buf, contentType...)
	buf = append(buf, "\r\nContent-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n"+HeaderID+": "...)
	buf = append(buf, id...)
	buf = append(buf, "\r\n"+HeaderTimestamp+": "...)
	buf = strconv.AppendInt(buf, at, 10)
	buf = append(buf, "\r\n"+HeaderSignature+": "...)
	buf = append(buf, signature...)
	buf = append(buf, "\r\n\r\n"...)
	return append(buf, body...)
}
