package api

import "time"

// CreateKeyRequest is the body of POST /v1/keys. The key is made in the
// tenant of the admin key that asks.
type CreateKeyRequest struct {
	Role      string `json:"role"`                // producer, consumer or admin
	Namespace string `json:"namespace,omitempty"` // limit the key to one namespace
	Name      string `json:"name,omitempty"`      // a label for humans
}

// KeyInfo describes an API key; the secret is never part of it.
type KeyInfo struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Role      string    `json:"role"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// CreatedKey answers POST /v1/keys: the key and its token, which is shown
// this once and stored nowhere.
type CreatedKey struct {
	KeyInfo
	Token string `json:"token"`
}

// KeyList answers GET /v1/keys: a page in creation order, revoked keys
// included; Next is the cursor of the page after, absent after the last
// (QueryCursor, QueryLimit; ParsePageQuery).
type KeyList struct {
	Keys []KeyInfo `json:"keys"`
	Next string    `json:"next,omitempty"`
}
