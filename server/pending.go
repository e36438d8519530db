package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Pending reservations per key (http.max_pending_bytes_per_key, ADR
// 0081). A put reserves its declared size of the namespace's and the
// tenant's quota when it starts and holds it until it commits; an upload
// init holds its size until it is confirmed or reaped. A key that opens
// many slow puts (or inits uploads it never sends) can so hold its
// tenant's whole quota, and every other key of the tenant is refused
// quota_exceeded meanwhile. The bound caps the bytes one key (without
// auth: one client address, like the stream limit) may hold in such
// reservations at once on this server; a put or init that would exceed
// it is refused with 429 rate_limited, naming the setting, before it
// reserves anything. It is per process: with N replicas a key may hold
// up to N times the bound.

// clientCtx is the context key of the client the guard counted the
// request for ("key:ID" or "addr:IP").
type clientCtx struct{}

// clientOf is the request's client, as the guard counted it.
func clientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientCtx{}).(string)
	return c
}

// pendingBytes counts the bytes each client holds in reservations.
type pendingBytes struct {
	mu   sync.Mutex
	max  int64
	held map[string]int64
	// uploads are the holds of upload inits, until confirmed or past
	// their confirm deadline (then the store has reaped them).
	uploads map[string]uploadHold // by upload id
}

type uploadHold struct {
	client string
	bytes  int64
	until  time.Time
}

func newPendingBytes(max int64) *pendingBytes {
	if max <= 0 {
		return nil
	}
	return &pendingBytes{max: max, held: map[string]int64{}, uploads: map[string]uploadHold{}}
}

// reserve takes n bytes for client; ok is false (nothing taken) when
// that would exceed the bound. release gives them back, once.
func (p *pendingBytes) reserve(client string, n int64, now time.Time) (release func(), ok bool) {
	if p == nil || n <= 0 {
		return func() {}, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(now)
	if p.held[client]+n > p.max {
		return nil, false
	}
	p.held[client] += n
	var once sync.Once
	return func() { once.Do(func() { p.give(client, n) }) }, true
}

func (p *pendingBytes) give(client string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.giveLocked(client, n)
}

func (p *pendingBytes) giveLocked(client string, n int64) {
	if p.held[client] -= n; p.held[client] <= 0 {
		delete(p.held, client)
	}
}

// holdUpload keeps n bytes of client's (already reserved) as the hold of
// upload id until it is confirmed or until. A repeated init of the same
// upload (idempotency key) holds nothing more: ok is false and the
// caller gives its own reservation back.
func (p *pendingBytes) holdUpload(id, client string, n int64, until time.Time) (ok bool) {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.uploads[id]; dup {
		return false
	}
	p.uploads[id] = uploadHold{client: client, bytes: n, until: until}
	return true
}

// extendUpload moves the end of upload id's hold to until: a resumable
// upload's deadline follows its progress.
func (p *pendingBytes) extendUpload(id string, until time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.uploads[id]; ok && until.After(h.until) {
		h.until = until
		p.uploads[id] = h
	}
}

// endUpload gives back the hold of upload id (confirmed, or found gone).
func (p *pendingBytes) endUpload(id string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.uploads[id]; ok {
		delete(p.uploads, id)
		p.giveLocked(h.client, h.bytes)
	}
}

// expire gives back the holds of uploads past their confirm deadline.
func (p *pendingBytes) expire(now time.Time) {
	for id, h := range p.uploads {
		if !now.Before(h.until) {
			delete(p.uploads, id)
			p.giveLocked(h.client, h.bytes)
		}
	}
}

// reservePending takes n bytes of the request's client's bound, or
// answers why not.
func (s *Server) reservePending(r *http.Request, n int64) (func(), error) {
	release, ok := s.pending.reserve(clientOf(r.Context()), n, time.Now())
	if !ok {
		return nil, &rateLimited{
			limit: fmt.Sprintf("%d bytes would exceed the %s of puts and uploads in progress one %s may hold reserved (http.max_pending_bytes_per_key); finish or confirm those first",
				n, claimcheck.Size(s.pending.max), clientKind(clientOf(r.Context()))),
			retryAfter: time.Second,
		}
	}
	return release, nil
}

func clientKind(client string) string {
	if len(client) > 4 && client[:4] == "key:" {
		return "key"
	}
	return "client address"
}
