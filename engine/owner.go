package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// ClaimNamespace returns the namespace of claim id, finished or not,
// without touching the claim (no in-line sweep, no read counted). The
// HTTP server asks it before any operation on a claim, to check that the
// caller's API key covers the claim's tenant and namespace; a claim that
// never existed is ErrNotFound.
func (s *Store) ClaimNamespace(ctx context.Context, id string) (string, error) {
	c, err := s.meta.Claim(ctx, id)
	if errors.Is(err, meta.ErrNotFound) {
		return "", fmt.Errorf("%w: claim %s", claimcheck.ErrNotFound, id)
	}
	if err != nil {
		return "", fmt.Errorf("%w: claim %s: %w", claimcheck.ErrUnavailable, id, err)
	}
	return c.Namespace, nil
}

// APIKeyStore is the part of the metadata store that the API keys
// (package auth) live in: the keys, and the events log their audit and
// failed-authentication events go to. It satisfies auth.Store.
type APIKeyStore interface {
	meta.KeyStore
	AppendEvents(ctx context.Context, events []meta.Event) error
}

// APIKeyStore returns the API keys of the store's database (measured and
// traced like every metadata call), for the key service of the server
// and of the offline keys commands: they share the database, not the
// whole metadata store.
func (s *Store) APIKeyStore() APIKeyStore { return s.meta }
