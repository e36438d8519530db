package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server/api"
)

// Authorisation (ADR 0060). When Config.Auth is set, every /v1 route
// needs a bearer API key, and what it may touch is decided here, before
// the handler runs, from the route's row in the route table (routes.go):
// the operation it performs and what it names (a namespace or a claim).
// A row without an operation is refused to every key, so a route added
// without one fails closed.
//
// Answers: no or a bad key is 401 unauthenticated; a role that may not do
// the operation, or a key limited to another namespace of its own tenant
// on a namespace route, is 403 permission_denied. A claim outside the
// key's tenant or namespace is 404 not_found, exactly like a claim that
// does not exist, so ids do not leak existence; so is a dead letter
// (a parked blob) outside them, and another tenant's namespace.

// target is what a route names.
type target int

const (
	targetNone        target = iota // the tenant itself (keys)
	targetNamespace                 // the {ns} path value
	targetClaim                     // the {id} path value, a claim id (or upload id, the same)
	targetList                      // a listing the handler filters (visibleNamespaces)
	targetDeadLetter                // the {id} path value, a parked blob's id
	targetDeadLetters               // the tenant and ns query parameters; the handler scopes the rest (scopeDeadLetters)
	// targetSigned: the upload token in the URL is the credential (the
	// upload PUT). The guard asks for no key, and limits the route per
	// client address, whether auth is on or not (ADR 0074).
	targetSigned
	// targetOpen: probes and metrics, outside /v1. No guard at all: no
	// key, no limits (load balancers and Prometheus hold no key).
	targetOpen
)

// keyCtx is the context key of the authenticated *auth.Key.
type keyCtx struct{}

// KeyFrom returns the API key that authenticated the request, if auth is
// on.
func KeyFrom(ctx context.Context) (auth.Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(auth.Key)
	return k, ok
}

// authenticate checks the request's bearer token. It returns the request
// with the key and the actor (the key id, for the audit trail) in its
// context.
func (s *Server) authenticate(r *http.Request) (*http.Request, auth.Key, error) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return r, auth.Key{}, fmt.Errorf("%w: this server needs an API key: send Authorization: Bearer %s…", claimcheck.ErrUnauthenticated, auth.TokenPrefix)
	}
	scheme, token, ok := strings.Cut(h[0], " ")
	if len(h) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") {
		return r, auth.Key{}, fmt.Errorf("%w: want one header Authorization: Bearer %s…", claimcheck.ErrUnauthenticated, auth.TokenPrefix)
	}
	key, err := s.auth.Authenticate(r.Context(), strings.TrimSpace(token), s.clientAddr(r))
	if err != nil {
		return r, auth.Key{}, err
	}
	ctx := context.WithValue(r.Context(), keyCtx{}, key)
	ctx = claimcheck.WithActor(ctx, key.ID)
	return r.WithContext(ctx), key, nil
}

// authorize decides whether key may perform route rt on what the request
// names.
func (s *Server) authorize(r *http.Request, rt route, key auth.Key) error {
	if rt.op == "" {
		return fmt.Errorf("%w: %s is not open to API keys", claimcheck.ErrPermissionDenied, rt.pattern)
	}
	if !key.Role.Allows(rt.op) {
		return fmt.Errorf("%w: role %s may not %s (key %s)", claimcheck.ErrPermissionDenied, key.Role, rt.op, key.ID)
	}
	switch rt.target {
	case targetNamespace:
		ns := r.PathValue("ns")
		if err := claimcheck.ValidateNamespace(ns); err != nil {
			return err
		}
		return s.authorizeNamespace(r.Context(), key, ns)
	case targetDeadLetters:
		q, err := api.ParseDeadLetterQuery(r.URL.Query())
		if err != nil {
			return err
		}
		if q.Tenant != "" && q.Tenant != key.Tenant {
			return fmt.Errorf("%w: tenant %q", claimcheck.ErrNotFound, q.Tenant)
		}
		if q.Namespace != "" {
			return s.authorizeNamespace(r.Context(), key, q.Namespace)
		}
	case targetDeadLetter:
		// Like a claim: a dead letter outside the key's reach is
		// not_found, with the very answer of an unknown id.
		id := r.PathValue("id")
		if !claimcheck.ValidBlobID(id) {
			return nil // the handler answers invalid_argument
		}
		notFound := fmt.Errorf("dead letter %s: %w: no such blob is parked (unknown, retried or collected since)", id, claimcheck.ErrNotFound)
		d, err := s.claims.DeadLetter(r.Context(), id)
		if errors.Is(err, claimcheck.ErrNotFound) {
			return notFound
		}
		if err != nil {
			return err
		}
		pol, err := s.claims.Policy(r.Context(), d.Namespace)
		if err != nil && !errors.Is(err, claimcheck.ErrNotFound) {
			return err
		}
		if err != nil || !key.Covers(pol.Tenant, d.Namespace) {
			return notFound // its namespace is another tenant's, outside the key's, or no longer configured
		}
	case targetClaim:
		id := r.PathValue("id")
		if !claimcheck.ValidClaimID(id) {
			return nil // the handler answers invalid_argument
		}
		notFound := fmt.Errorf("%w: claim %s", claimcheck.ErrNotFound, id)
		ns := r.URL.Query().Get("ns")
		if !rt.claimNS || ns == "" || claimcheck.ValidateNamespace(ns) != nil {
			var err error
			ns, err = s.namespaceOf(r.Context(), id)
			if errors.Is(err, claimcheck.ErrNotFound) {
				return notFound
			}
			if err != nil {
				return err
			}
		}
		pol, err := s.claims.Policy(r.Context(), ns)
		if errors.Is(err, claimcheck.ErrNotFound) {
			return notFound // its namespace is no longer configured
		}
		if err != nil {
			return err
		}
		if !key.Covers(pol.Tenant, ns) {
			return notFound
		}
	case targetNone:
		// Key administration and the tenant's events are for tenant-wide
		// admins: a key limited to one namespace could otherwise mint a
		// key without that limit, or read the other namespaces' keys.
		if key.Namespace != "" {
			return fmt.Errorf("%w: key %s is limited to namespace %s; keys and the tenant's events need a tenant-wide admin key", claimcheck.ErrPermissionDenied, key.ID, key.Namespace)
		}
	}
	return nil
}

// authorizeNamespace decides whether key may act in namespace ns:
// another tenant's namespace is not_found (its name does not leak), one
// of its own tenant outside the key's limit is permission_denied.
func (s *Server) authorizeNamespace(ctx context.Context, key auth.Key, ns string) error {
	pol, err := s.claims.Policy(ctx, ns)
	if err != nil {
		return err
	}
	if pol.Tenant != key.Tenant {
		return fmt.Errorf("%w: namespace %q", claimcheck.ErrNotFound, ns)
	}
	if !key.Covers(pol.Tenant, ns) {
		return fmt.Errorf("%w: key %s is limited to namespace %s", claimcheck.ErrPermissionDenied, key.ID, key.Namespace)
	}
	return nil
}

// claimNamespaces caches claim id → namespace for authorisation. A
// claim's namespace never changes and ids are never reused, so an entry
// can never be stale (unlike keys, which are never cached: a revoke must
// hold at once). Only found claims are cached. When full, the cache is
// simply emptied: it saves a lookup, it never decides anything.
type claimNamespaces struct {
	mu sync.Mutex
	m  map[string]string
}

const maxCachedClaims = 1 << 16

func (s *Server) namespaceOf(ctx context.Context, id string) (string, error) {
	c := &s.nsCache
	c.mu.Lock()
	ns, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return ns, nil
	}
	ns, err := s.claimNamespace(ctx, id)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedClaims {
		c.m = make(map[string]string)
	}
	c.m[id] = ns
	c.mu.Unlock()
	return ns, nil
}

// visibleNamespaces keeps the namespaces the request's key covers (all
// of them when auth is off): a tenant never learns another's names.
func (s *Server) visibleNamespaces(ctx context.Context, list []claimcheck.NamespaceInfo) []claimcheck.NamespaceInfo {
	key, ok := KeyFrom(ctx)
	if !ok {
		return list
	}
	var out []claimcheck.NamespaceInfo
	for _, ns := range list {
		if key.Covers(ns.Policy.Tenant, ns.Name) {
			out = append(out, ns)
		}
	}
	return out
}
