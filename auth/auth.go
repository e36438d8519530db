// Package auth is claimcheck's API key authentication and authorisation:
// keys that belong to a tenant, carry one role and may be limited to one
// namespace, and the rule of which role may do what.
//
// A token is "cck_" + key id + "_" + secret. The id is public (it names
// the key in listings, logs and audit events); the secret is 256 random
// bits, shown once when the key is made and stored only as its sha256.
// A fast hash is enough because the secret is random and long: there is
// nothing to guess, so no slow password hash is needed (ADR 0060).
//
// Every Authenticate reads the key's row: there is no cache that could
// outlive a revoke.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
)

// TokenPrefix starts every token, so that secret scanners and people can
// recognise a leaked claimcheck key.
const TokenPrefix = "cck_"

// Role is what a key may do.
type Role string

// The roles. See Allows for what each may do.
const (
	RoleProducer Role = "producer"
	RoleConsumer Role = "consumer"
	RoleAdmin    Role = "admin"
)

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleProducer, RoleConsumer, RoleAdmin:
		return r, nil
	}
	return "", fmt.Errorf("%w: role %q: want producer, consumer or admin", claimcheck.ErrInvalidArgument, s)
}

// Op is an operation of the API, as far as permissions go.
type Op string

// The operations.
const (
	OpPut       Op = "put"
	OpRedeem    Op = "redeem"
	OpStat      Op = "stat"
	OpRelease   Op = "release"
	OpDelete    Op = "delete"
	OpNamespace Op = "namespace" // read a namespace's policy and usage
	OpList      Op = "list"      // list a namespace's claims (ADR 0100)
	OpExtend    Op = "extend"    // move a claim's expiry later (ADR 0101)
	OpKeys      Op = "keys"      // create, list and revoke keys
	OpAdmin     Op = "admin"     // anything else an operator does (gc, holds, …)
)

// permissions is the one table of who may do what (ADR 0060).
// Producers delete as well as put: a publisher whose message never went
// out deletes the claim it made (ADR 0040). Every role may stat a claim
// and read its namespace's policy: neither hands out payload bytes, and
// MaybeOffload needs the threshold. Producers own the lifetime of what
// they put: they list their namespace's claims and extend them (a
// Temporal keeper runs with a producer key); consumers do neither.
var permissions = map[Role][]Op{
	RoleProducer: {OpPut, OpStat, OpRelease, OpDelete, OpNamespace, OpList, OpExtend},
	RoleConsumer: {OpRedeem, OpStat, OpRelease, OpNamespace},
	RoleAdmin:    {OpPut, OpRedeem, OpStat, OpRelease, OpDelete, OpNamespace, OpList, OpExtend, OpKeys, OpAdmin},
}

// Allows reports whether role r may perform op.
func (r Role) Allows(op Op) bool {
	for _, o := range permissions[r] {
		if o == op {
			return true
		}
	}
	return false
}

// Key is an authenticated key: who is acting.
type Key struct {
	ID        string
	Tenant    string
	Role      Role
	Namespace string // "" = every namespace of the tenant
	Name      string
	CreatedAt time.Time
	RevokedAt time.Time
}

// Covers reports whether the key may act in namespace ns of tenant.
// Whether the role allows the operation is Role.Allows's question.
func (k Key) Covers(tenant, ns string) bool {
	return k.Tenant == tenant && (k.Namespace == "" || k.Namespace == ns)
}

func keyOf(m meta.APIKey) Key {
	return Key{ID: m.ID, Tenant: m.Tenant, Role: Role(m.Role), Namespace: m.Namespace, Name: m.Name,
		CreatedAt: m.CreatedAt, RevokedAt: m.RevokedAt}
}

// EventAuthFailed is the kind of the events recorded for failed
// authentications.
const EventAuthFailed = meta.EventAuthFailed

// Failure-event sampling: a flood of bad tokens must not fill the events
// table. Up to failureBurst events are written at once, then one per
// failureEvery; the ones in between are counted and the count is written
// with the next recorded event.
const (
	failureEvery = time.Second
	failureBurst = 20
)

// Store is what the key service needs of the metadata store: the keys,
// and the events log its sampled auth_failed events go to. meta.Store
// has both.
type Store interface {
	meta.KeyStore
	AppendEvents(ctx context.Context, events []meta.Event) error
}

// Service makes, checks, lists and revokes keys.
type Service struct {
	store Store
	clock clock.Clock

	mu         sync.Mutex
	sampler    *rate.Limiter
	suppressed int64
}

// New returns a Service over the metadata store m (its keys and its
// events log). clk is the time source (nil: the wall clock).
func New(m Store, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{store: m, clock: clk, sampler: rate.NewLimiter(rate.Every(failureEvery), failureBurst)}
}

// CreateParams describe a new key.
type CreateParams struct {
	Tenant    string
	Role      Role
	Namespace string // optional
	Name      string // optional label
	// Limit bounds the keys of Tenant not revoked: a create past it is
	// refused quota_exceeded, naming LimitKey (ADR 0270). 0: no limit
	// (the operator's offline `claimcheck keys create`).
	Limit    int
	LimitKey string
}

// maxKeyName bounds the label of a key.
const maxKeyName = 100

// Create makes a key and returns it with its token. The token is not
// stored anywhere: this is the only time it is seen.
func (s *Service) Create(ctx context.Context, p CreateParams) (Key, string, error) {
	if err := claimcheck.ValidateTenant(p.Tenant); err != nil {
		return Key{}, "", err
	}
	if _, err := ParseRole(string(p.Role)); err != nil {
		return Key{}, "", err
	}
	if p.Namespace != "" {
		if err := claimcheck.ValidateNamespace(p.Namespace); err != nil {
			return Key{}, "", err
		}
	}
	if len(p.Name) > maxKeyName || strings.ContainsFunc(p.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Key{}, "", fmt.Errorf("%w: key name: at most %d characters, no control characters", claimcheck.ErrInvalidArgument, maxKeyName)
	}
	idBytes := make([]byte, 10) // 80 bits: ids are public, they only must not collide
	secret := make([]byte, 32)  // 256 bits
	rand.Read(idBytes)
	rand.Read(secret)
	id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(idBytes))
	sec := base64.RawURLEncoding.EncodeToString(secret)
	m := meta.APIKey{ID: id, Tenant: p.Tenant, Role: string(p.Role), Namespace: p.Namespace, Name: p.Name,
		Hash: hashSecret(sec), CreatedAt: s.clock.Now().UTC()}
	if err := s.store.CreateKey(ctx, m, p.Limit); err != nil {
		if errors.Is(err, meta.ErrLimitReached) {
			return Key{}, "", fmt.Errorf("create key: %w: the tenant has %d keys not revoked, its limit (%s); revoke one first",
				claimcheck.ErrQuotaExceeded, p.Limit, p.LimitKey)
		}
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	return keyOf(m), TokenPrefix + id + "_" + sec, nil
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// ParseToken splits a token into key id and secret. ok is false for
// anything that is not shaped like a token.
func ParseToken(token string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(token, TokenPrefix)
	if !found {
		return "", "", false
	}
	// The id is base32 (no '_'); the secret is base64url and may hold '_'.
	id, secret, found = strings.Cut(rest, "_")
	if !found || len(id) != 16 || len(secret) != 43 {
		return "", "", false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", "", false
		}
	}
	return id, secret, true
}

// Authenticate checks a bearer token and returns its key. Every failure
// is ErrUnauthenticated (the message never says whether the id exists)
// and is recorded, sampled, in the events log; the event names the key
// id if the token had one, never the secret. remote describes the caller
// (its address) for that event.
func (s *Service) Authenticate(ctx context.Context, token, remote string) (Key, error) {
	id, secret, ok := ParseToken(token)
	if !ok {
		s.recordFailure(ctx, "", "", remote, "malformed token")
		return Key{}, fmt.Errorf("%w: the API key is malformed (want %s…)", claimcheck.ErrUnauthenticated, TokenPrefix)
	}
	m, err := s.store.Key(ctx, id)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		s.recordFailure(ctx, id, "", remote, "unknown key")
		return Key{}, fmt.Errorf("%w: the API key is not valid", claimcheck.ErrUnauthenticated)
	case err != nil:
		return Key{}, fmt.Errorf("%w: checking the API key: %w", claimcheck.ErrUnavailable, err)
	}
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(m.Hash)) != 1 {
		s.recordFailure(ctx, id, m.Tenant, remote, "wrong secret")
		return Key{}, fmt.Errorf("%w: the API key is not valid", claimcheck.ErrUnauthenticated)
	}
	if m.Revoked() {
		s.recordFailure(ctx, id, m.Tenant, remote, "revoked key")
		return Key{}, fmt.Errorf("%w: the API key %s was revoked", claimcheck.ErrUnauthenticated, id)
	}
	return keyOf(m), nil
}

// recordFailure writes an auth_failed event unless the sampler says too
// many were written lately; then it only counts. Failing to write is
// not the request's problem: the answer is 401 either way. tenant is the
// tenant of the key the token named, when that key exists: the event is
// then one of the tenant's (TenantEvents), so its admins see attempts on
// their keys.
func (s *Service) recordFailure(ctx context.Context, id, tenant, remote, why string) {
	now := s.clock.Now()
	s.mu.Lock()
	if !s.sampler.AllowN(now, 1) {
		s.suppressed++
		s.mu.Unlock()
		return
	}
	skipped := s.suppressed
	s.suppressed = 0
	s.mu.Unlock()
	detail := why
	if id != "" {
		detail += "; key " + id
	}
	if remote != "" {
		detail += "; from " + remote
	}
	if skipped > 0 {
		detail += fmt.Sprintf("; %d earlier failures not recorded (sampling)", skipped)
	}
	// Actor is the key the token claimed to be: unverified, but what an
	// auditor searching a key's history wants to find.
	_ = s.store.AppendEvents(context.WithoutCancel(ctx), []meta.Event{{At: now.UTC(), Kind: EventAuthFailed, Actor: id, Tenant: tenant, Detail: detail}})
}

// List returns the keys of tenant ("" = every tenant), revoked included.
func (s *Service) List(ctx context.Context, tenant string) ([]Key, error) {
	ms, err := s.store.Keys(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	out := make([]Key, len(ms))
	for i, m := range ms {
		out[i] = keyOf(m)
	}
	return out, nil
}

// Page lists up to limit keys of tenant (revoked ones included) in
// creation order, after cursor ("" from the first); next is the cursor
// of the page after, "" after the last. A cursor is the creation time in
// Unix nanoseconds and the id of the last key of a page.
func (s *Service) Page(ctx context.Context, tenant, cursor string, limit int) (keys []Key, next string, err error) {
	var at time.Time
	var after string
	if cursor != "" {
		ns, id, ok := strings.Cut(cursor, ".")
		n, perr := strconv.ParseInt(ns, 10, 64)
		if !ok || perr != nil || n < 0 {
			return nil, "", fmt.Errorf("%w: cursor %q: not the next of a page of keys", claimcheck.ErrInvalidArgument, cursor)
		}
		at, after = time.Unix(0, n), id
	}
	ms, err := s.store.KeyPage(ctx, tenant, at, after, limit+1) // one more tells whether there is a next page
	if err != nil {
		return nil, "", fmt.Errorf("list keys: %w", err)
	}
	for i, m := range ms {
		if i == limit {
			last := ms[limit-1]
			next = strconv.FormatInt(last.CreatedAt.UnixNano(), 10) + "." + last.ID
			break
		}
		keys = append(keys, keyOf(m))
	}
	return keys, next, nil
}

// Revoke revokes key id of tenant ("" = any tenant). It takes effect on
// the next request. ErrNotFound if the key does not exist in tenant.
func (s *Service) Revoke(ctx context.Context, id, tenant string) (Key, error) {
	m, err := s.store.RevokeKey(ctx, id, tenant, s.clock.Now().UTC())
	if errors.Is(err, meta.ErrNotFound) {
		return Key{}, fmt.Errorf("%w: no key %q", claimcheck.ErrNotFound, id)
	}
	if err != nil {
		return Key{}, fmt.Errorf("revoke key %s: %w", id, err)
	}
	return keyOf(m), nil
}
