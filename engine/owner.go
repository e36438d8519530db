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

// MetaStore returns the store's metadata store, for the components that
// share its database: API keys (package auth) and operator commands.
func (s *Store) MetaStore() meta.Store { return s.meta }
