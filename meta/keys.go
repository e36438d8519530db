package meta

import (
	"context"
	"time"
)

// APIKey is one row of the api_keys table: a credential of a tenant with
// one role, optionally limited to one namespace. Only a hash of the
// secret is stored; the secret itself is shown once, when it is made.
type APIKey struct {
	ID        string // public identifier, part of the token (never secret)
	Tenant    string
	Role      string // "producer", "consumer" or "admin"
	Namespace string // "" = every namespace of the tenant
	Name      string // a label for humans ("ci-uploader")
	// Hash is the hex sha256 of the token's secret part.
	Hash      string
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is valid
}

// Revoked reports whether the key has been revoked.
func (k APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// KeyStore keeps API keys. Lookups are never cached by implementations:
// a revoke must take effect on the next request.
type KeyStore interface {
	// CreateKey inserts a key. ErrConflict if the id exists.
	// ErrLimitReached if k.Tenant has limit keys not revoked already
	// (limit 0: no limit); the count and the insert are one transaction.
	CreateKey(ctx context.Context, k APIKey, limit int) error

	// Key loads a key by id, revoked or not. ErrNotFound if absent.
	Key(ctx context.Context, id string) (APIKey, error)

	// Keys lists the keys of tenant ("" = every tenant), revoked ones
	// included, in creation order.
	Keys(ctx context.Context, tenant string) ([]APIKey, error)

	// KeyPage lists up to limit keys of tenant, revoked ones included,
	// in creation order, after the key created at afterCreated with id
	// afterID (zero time and "": from the first).
	KeyPage(ctx context.Context, tenant string, afterCreated time.Time, afterID string, limit int) ([]APIKey, error)

	// RevokeKey sets revoked_at = now on the key if it belongs to tenant
	// ("" = any tenant) and is not revoked yet, and returns the key as it
	// is now. Revoking a revoked key changes nothing and is no error.
	// ErrNotFound if no such key (or it belongs to another tenant).
	RevokeKey(ctx context.Context, id, tenant string, now time.Time) (APIKey, error)
}

// Audit events of API keys (ADR 0070, "Administrative events"),
// appended by the KeyStore in the transaction that creates or revokes the
// key, with the actor of the context (the admin key's id over HTTP, "cli"
// for the offline commands). Detail is KeyEventDetail of the key, never
// its secret or hash; Namespace is the key's namespace for a key limited
// to one, else "". A revoke of a revoked key changes nothing and logs
// nothing.
const (
	EventKeyCreated = "key_created"
	EventKeyRevoked = "key_revoked"
)

// KeyEventDetail is the Detail of a key's audit events: "key ID; tenant
// T; role R", the same "key ID" phrase as the auth_failed events', so one
// search finds a key's whole history.
func KeyEventDetail(k APIKey) string {
	return "key " + k.ID + "; tenant " + k.Tenant + "; role " + k.Role
}

// EventAuthFailed is the kind of the events recorded (sampled) for failed
// authentications: Actor is the key id the token named, if it had one;
// Detail says why and from where. The secret is never recorded.
const EventAuthFailed = "auth_failed"
