// Package client is the Go client of claimcheck's HTTP API (remote mode).
//
// A *Client satisfies claimcheck.Claims, like the embedded
// *engine.Store, so integrations work with either. Payloads are
// streamed both ways. Errors come back as the root package's sentinel
// errors (errors.Is(err, claimcheck.ErrNotFound) and friends work across
// the wire; a finished claim is a *claimcheck.GoneError with its reason),
// carrying the server's message.
//
// Redeemed payloads are verified on this side of the wire too: Redeem
// returns a claimcheck.Payload built from the reference the server sends,
// which checks size and sha256 as the bytes arrive, and at the end of the
// body the server's Claimcheck-Error trailer is checked, so a truncated,
// altered or server-side failed stream is never handed over as whole.
//
// Large files from unreliable networks go over tus, the resumable upload
// protocol (UploadResumable, ResumeUpload; ADR 0120): sent in chunks, each
// checked by the server, and continued from the server's offset after a
// cut connection or in another process from the saved upload URL.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// noContinueMax is the largest in-memory payload a put sends without
// waiting for 100 Continue, where digest-first is off: a refused put
// (quota, max_size) has sent at most this much for nothing.
const noContinueMax = 4 << 20

// policyTTL is how long MaybeOffload reuses a namespace's policy. Policies
// change only when the server's config does; a threshold that is stale
// for a few seconds only moves a payload between inline and offloaded.
const policyTTL = 30 * time.Second

// maxAnswer bounds the JSON answers read into memory (refs, claim info,
// errors); payloads are streamed and not bounded by it.
const maxAnswer = 1 << 20

// Client talks to a claimcheck server. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	hc     *http.Client
	apiKey string

	mu       sync.Mutex
	policies map[string]cachedPolicy
	// noDigestFirst: namespaces whose last put was answered with
	// Claimcheck-Digest-First: off, and when (ADR 0155).
	noDigestFirst map[string]time.Time
}

type cachedPolicy struct {
	policy  claimcheck.Policy
	fetched time.Time
}

var (
	_ claimcheck.Claims  = (*Client)(nil)
	_ claimcheck.Uploads = (*Client)(nil)
	_ claimcheck.Admin   = (*Client)(nil)
)

// Option configures a Client.
type Option func(*Client)

// idleConnsPerHost is how many idle connections to the server the
// default HTTP client keeps for reuse.
const idleConnsPerHost = 256

// WithHTTPClient makes the client send its requests with hc (for
// TLS settings, proxies, tracing). The default is a client with its own
// copy of http.DefaultTransport and no overall timeout, since payloads
// may take long to stream; bound single calls with their context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithAPIKey sends key as a bearer token (Authorization: Bearer KEY) with
// every request.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// New returns a client of the server at baseURL, e.g.
// "http://127.0.0.1:8080" or "https://claims.example.com/prefix/". The
// URL must be absolute http or https, without query or fragment.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: server URL %q: %v", claimcheck.ErrInvalidArgument, baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: server URL %q: want http://HOST[:PORT] or https://…", claimcheck.ErrInvalidArgument, baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: server URL %q: must not have a query, fragment or user info (use WithAPIKey for credentials)", claimcheck.ErrInvalidArgument, baseURL)
	}
	c := &Client{base: u, policies: make(map[string]cachedPolicy), noDigestFirst: make(map[string]time.Time)}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Payloads are large: bigger socket buffers mean fewer system
		// calls per megabyte (the defaults are 4 KiB).
		t.WriteBufferSize, t.ReadBufferSize = 64<<10, 64<<10
		// net/http keeps 2 idle connections per host: a program with
		// more concurrent calls than that would close the surplus after
		// each call and dial (over TLS, handshake) again for the next.
		t.MaxIdleConns = max(t.MaxIdleConns, idleConnsPerHost)
		t.MaxIdleConnsPerHost = idleConnsPerHost
		c.hc = &http.Client{Transport: t}
	}
	return c, nil
}

// Put streams body into a new claim in namespace ns. With opts.Size set,
// the body is sent with that Content-Length and must have exactly that
// many bytes; otherwise it is sent chunked. A body that fails to read
// aborts the upload, and the server stores nothing.
func (c *Client) Put(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, error) {
	op := "put to " + ns
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.Ref{}, fmt.Errorf("put: %w", err)
	}
	if opts.Size < 0 {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: size %d is negative", op, claimcheck.ErrInvalidArgument, opts.Size)
	}
	if body == nil {
		body = http.NoBody
	}
	// A namespace known never to answer a put before its body gets an
	// in-memory body without the pass that hashes it first; the digest
	// is taken as the bytes are sent instead, and checked against the
	// stored one below, so the put is still verified end to end.
	var sent *sentDigest
	if opts.Digest == "" && c.digestFirstOff(ns) {
		var inMemory bool
		if opts, inMemory = withSize(body, opts); inMemory && opts.Size > 0 {
			sent = &sentDigest{r: body, h: sha256.New()}
			body = sent
		}
	} else {
		opts = withDigest(body, opts)
	}
	if opts.Size > 0 {
		body = &exactReader{r: body, left: opts.Size, size: opts.Size}
	}
	// The tracker, not the caller's reader, is what the transport sees,
	// so it neither closes the caller's reader nor guesses a length from
	// its type.
	tracker := &bodyTracker{r: body}
	req, err := c.newRequest(ctx, http.MethodPut, tracker, "v1", "namespaces", ns, "claims")
	if err != nil {
		return claimcheck.Ref{}, err
	}
	req.ContentLength = -1 // chunked
	if opts.Size > 0 {
		req.ContentLength = opts.Size
	}
	// Lets the server refuse (too large, quota, no such namespace,
	// already stored) before the body is sent, when the transport has an
	// ExpectContinueTimeout (the default one does). A put that cannot be
	// answered "already stored" (digest-first off) and is small enough
	// that a refusal wastes little goes without: its body travels while
	// the server creates the pending claim, instead of after that and a
	// round trip (ADR 0155).
	if !(sent != nil && opts.Size <= noContinueMax) {
		req.Header.Set("Expect", "100-continue")
	}
	h := req.Header
	if opts.ContentType != "" {
		h.Set("Content-Type", opts.ContentType)
	}
	if opts.Digest != "" {
		h.Set(api.HeaderDigest, opts.Digest)
	}
	if opts.Consumers != 0 {
		h.Set(api.HeaderConsumers, strconv.Itoa(opts.Consumers))
	}
	if len(opts.ConsumerNames) > 0 {
		h.Set(api.HeaderConsumerNames, api.FormatNames(opts.ConsumerNames))
	}
	if len(opts.Labels) > 0 {
		h.Set(api.HeaderLabels, api.FormatLabels(opts.Labels))
	}
	resp, err := c.do(req, http.StatusCreated, op, "")
	if berr := tracker.finish(); err != nil && berr != nil {
		// The upload broke because the body did: that is the cause,
		// whatever the transport or the server made of it.
		return claimcheck.Ref{}, fmt.Errorf("%s: reading the payload: %w", op, berr)
	}
	if err != nil {
		return claimcheck.Ref{}, err
	}
	c.noteDigestFirst(ns, resp.Header.Get(api.HeaderDigestFirst))
	ref, err := decodeRef(resp)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w", op, err)
	}
	if sent != nil {
		if err := sent.check(ref); err != nil {
			// Stored, but not the bytes sent: nobody else has the ref
			// yet, and the claim goes at once. The stored digest is the
			// stored bytes', so a dedup onto that blob meanwhile got
			// exactly what it asked for.
			if derr := c.Delete(ctx, ref); derr != nil {
				err = errors.Join(err, fmt.Errorf("deleting the claim stored with other bytes: %w", derr))
			}
			return claimcheck.Ref{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	return ref, nil
}

// digestFirstOff reports whether puts to ns are known, for now, never to
// be answered before their body: the server said so on a put's answer,
// or the cached policy says so.
func (c *Client) digestFirstOff(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.noDigestFirst[ns]; ok && time.Since(at) < policyTTL {
		return true
	}
	p, ok := c.policies[ns]
	return ok && time.Since(p.fetched) < policyTTL && !p.policy.DigestFirstEnabled()
}

// noteDigestFirst remembers the Claimcheck-Digest-First answer of a put.
func (c *Client) noteDigestFirst(ns, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v == "off" {
		c.noDigestFirst[ns] = time.Now()
	} else {
		delete(c.noDigestFirst, ns)
	}
}

// Redeem opens the claim's payload. Only ref.ID and ref.Namespace (when
// set) are sent. The returned Payload verifies the bytes as they stream
// and checks the server's verdict at the end; it must be closed.
func (c *Client) Redeem(ctx context.Context, ref claimcheck.Ref) (*claimcheck.Payload, error) {
	req, err := c.claimRequest(ctx, http.MethodGet, ref, nil, "")
	if err != nil {
		return nil, fmt.Errorf("redeem: %w", err)
	}
	// This client reads the Claimcheck-Error trailer at the end of every
	// payload: the server may then report a failure after the headers
	// there, instead of aborting the connection.
	req.Header.Set("TE", "trailers")
	// A payload stored as zstd may come as its stored frames, which this
	// client decodes and then verifies like any payload (decode.go).
	req.Header.Set("Accept-Encoding", claimcheck.EncodingZstd)
	resp, err := c.do(req, http.StatusOK, "redeem "+ref.ID, ref.ID)
	if err != nil {
		return nil, err
	}
	got, err := claimcheck.ParseRef([]byte(resp.Header.Get(api.HeaderRef)))
	if err == nil {
		err = checkAnsweredRef(ref, got)
	}
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("redeem %s: header %s: %w", ref.ID, api.HeaderRef, err)
	}
	var body io.ReadCloser = &trailerChecker{resp: resp, id: ref.ID}
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case claimcheck.EncodingZstd:
		body = newZstdBody(body, ref.ID)
	default:
		_ = resp.Body.Close()
		return nil, fmt.Errorf("redeem %s: %w: the server answered Content-Encoding %q, which this client did not ask for", ref.ID, claimcheck.ErrUnavailable, enc)
	}
	p := claimcheck.NewPayload(got, resp.Header.Get("Content-Type"), body)
	// The server hands this client a payload stored as zstd or as is
	// without hashing it (ADRs 0136, 0155): a mismatch found here is
	// news to it. It is told the way it finds out itself.
	p.OnMismatch(func(error) { c.reportDamage(ctx, ref) })
	return p, nil
}

// reportDamage redeems ref once more on the path the server verifies
// itself (no stored form, read to the end and dropped), after this client
// found the payload it was handed altered. The server finds the same and
// marks the blob damaged (ADR 0095), so that it is never shared and the
// next put of the same bytes repairs it, as when the server had verified
// the first redeem. Only a redeem that failed verification pays for it;
// its outcome is the server's business, the caller's error is the one
// already found.
func (c *Client) reportDamage(ctx context.Context, ref claimcheck.Ref) {
	req, err := c.claimRequest(ctx, http.MethodGet, ref, nil, "")
	if err != nil {
		return
	}
	req.Header.Set("TE", "trailers")
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// Stat returns the claim's state, deadlines and counters.
func (c *Client) Stat(ctx context.Context, ref claimcheck.Ref) (claimcheck.ClaimInfo, error) {
	req, err := c.claimRequest(ctx, http.MethodGet, ref, nil, "meta")
	if err != nil {
		return claimcheck.ClaimInfo{}, fmt.Errorf("stat: %w", err)
	}
	resp, err := c.do(req, http.StatusOK, "stat "+ref.ID, ref.ID)
	if err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	var info claimcheck.ClaimInfo
	if err := decodeAnswer(resp, &info); err != nil {
		return claimcheck.ClaimInfo{}, fmt.Errorf("stat %s: %w", ref.ID, err)
	}
	return info, nil
}

// Release records that consumer has finished with the claim.
func (c *Client) Release(ctx context.Context, ref claimcheck.Ref, consumer string) error {
	var body io.Reader
	if consumer != "" {
		b, err := json.Marshal(api.ReleaseRequest{Consumer: consumer})
		if err != nil {
			return fmt.Errorf("release %s: %w", ref.ID, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.claimRequest(ctx, http.MethodPost, ref, body, "release")
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", api.ContentTypeJSON)
	}
	resp, err := c.do(req, http.StatusNoContent, "release "+ref.ID, ref.ID)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// Delete finishes the claim now.
func (c *Client) Delete(ctx context.Context, ref claimcheck.Ref) error {
	req, err := c.claimRequest(ctx, http.MethodDelete, ref, nil, "")
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	resp, err := c.do(req, http.StatusNoContent, "delete "+ref.ID, ref.ID)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// Policy returns the effective policy of namespace ns, fresh from the
// server.
func (c *Client) Policy(ctx context.Context, ns string) (claimcheck.Policy, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.Policy{}, fmt.Errorf("policy: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces", ns)
	if err != nil {
		return claimcheck.Policy{}, err
	}
	resp, err := c.do(req, http.StatusOK, "policy of "+ns, "")
	if err != nil {
		return claimcheck.Policy{}, err
	}
	var info api.NamespaceInfo
	if err := decodeAnswer(resp, &info); err != nil {
		return claimcheck.Policy{}, fmt.Errorf("policy of %s: %w", ns, err)
	}
	c.mu.Lock()
	c.policies[ns] = cachedPolicy{policy: info.Policy, fetched: time.Now()}
	c.mu.Unlock()
	return info.Policy, nil
}

// MaybeOffload stores data in a claim when it reaches the namespace's
// threshold and returns the reference; smaller data comes back inline.
// See claimcheck.MaybeOffload. The namespace's policy is reused for up to
// 30 seconds, so small payloads cost no request at all.
func (c *Client) MaybeOffload(ctx context.Context, ns string, data []byte) (claimcheck.Value, error) {
	return claimcheck.MaybeOffload(ctx, cachingPolicies{c}, ns, data)
}

// Resolve returns the bytes of v: the inline bytes, or the verified
// payload of its claim.
func (c *Client) Resolve(ctx context.Context, v claimcheck.Value) ([]byte, error) {
	return claimcheck.Resolve(ctx, c, v)
}

// cachingPolicies is the Client with Policy answered from the cache while
// it is fresh.
type cachingPolicies struct{ *Client }

func (c cachingPolicies) Policy(ctx context.Context, ns string) (claimcheck.Policy, error) {
	c.mu.Lock()
	p, ok := c.policies[ns]
	c.mu.Unlock()
	if ok && time.Since(p.fetched) < policyTTL {
		return p.policy, nil
	}
	return c.Client.Policy(ctx, ns)
}

// checkAnsweredRef compares the reference the server answered a redeem
// with to the one asked for. The payload is verified against the answered
// one, so a server (or anything between) that answers another claim's
// ref, or the asked claim's with another digest or size, would otherwise
// have other bytes verified as good: every field the caller's ref has
// must match.
func checkAnsweredRef(asked, got claimcheck.Ref) error {
	switch {
	case got.ID != asked.ID:
		return fmt.Errorf("%w: the server sent the payload of claim id %s, not %s", claimcheck.ErrChecksumMismatch, got.ID, asked.ID)
	case asked.Namespace != "" && got.Namespace != asked.Namespace:
		return fmt.Errorf("%w: the server sent claim %s of namespace %s, not %s", claimcheck.ErrChecksumMismatch, got.ID, got.Namespace, asked.Namespace)
	case got.Digest == "":
		return errors.New("the reference has no digest to verify against")
	case asked.Digest != "" && got.Digest != asked.Digest:
		return fmt.Errorf("%w: the server's reference has digest %s, the claim's is %s", claimcheck.ErrChecksumMismatch, got.Digest, asked.Digest)
	case asked.Size != 0 && got.Size != asked.Size:
		return fmt.Errorf("%w: the server's reference has size %d, the claim's is %d", claimcheck.ErrChecksumMismatch, got.Size, asked.Size)
	}
	return nil
}
