package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// deadLetterScan bounds the parked rows one DeadLetters call reads to
// fill a page filtered by tenant, as a multiple of the page size: a
// tenant with few dead letters among many of others' gets short pages
// (with Next set) rather than a request that reads them all.
const deadLetterScan = 10

// DeadLetters returns a page of dead letters; see claimcheck.Admin. The
// namespace filter is the database's; the tenant filter is the policies'
// (the same ones API keys are checked against), applied here.
func (s *Store) DeadLetters(ctx context.Context, q claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error) {
	limit, err := q.Check()
	if err != nil {
		return claimcheck.DeadLetterPage{}, fmt.Errorf("dead letters: %w", err)
	}
	page := claimcheck.DeadLetterPage{DeadLetters: []claimcheck.DeadLetter{}}
	after := q.After
	for scanned := 0; scanned < deadLetterScan*limit; {
		bs, err := s.meta.DeadLetters(ctx, q.Namespace, after, limit)
		if err != nil {
			return claimcheck.DeadLetterPage{}, metaErr("dead letters", err)
		}
		scanned += len(bs)
		for _, b := range bs {
			after = b.ID
			if q.Tenant != "" && !s.inTenant(ctx, q.Tenant, b.Namespace) {
				continue
			}
			page.DeadLetters = append(page.DeadLetters, deadLetterOf(b))
			if len(page.DeadLetters) == limit {
				page.Next = after
				return page, nil
			}
		}
		if len(bs) < limit {
			return page, nil // no more parked rows
		}
	}
	page.Next = after
	return page, nil
}

// inTenant reports whether namespace ns belongs to tenant by its policy.
func (s *Store) inTenant(ctx context.Context, tenant, ns string) bool {
	pol, err := s.Policy(ctx, ns)
	return err == nil && pol.Tenant == tenant
}

// DeadLetter returns one dead letter; see claimcheck.Admin.
func (s *Store) DeadLetter(ctx context.Context, id string) (claimcheck.DeadLetter, error) {
	if !claimcheck.ValidBlobID(id) {
		return claimcheck.DeadLetter{}, fmt.Errorf("dead letter: %w", invalidf("blob id %q is malformed", id))
	}
	b, err := s.meta.Blob(ctx, id)
	if errors.Is(err, meta.ErrNotFound) || err == nil && b.DeadAt.IsZero() {
		return claimcheck.DeadLetter{}, notParked(id)
	}
	if err != nil {
		return claimcheck.DeadLetter{}, metaErr("dead letter "+id, err)
	}
	return deadLetterOf(b), nil
}

// RetryDeadLetter retries one dead letter; see claimcheck.Admin.
func (s *Store) RetryDeadLetter(ctx context.Context, id string) (claimcheck.DeadLetter, error) {
	if !claimcheck.ValidBlobID(id) {
		return claimcheck.DeadLetter{}, fmt.Errorf("retry dead letter: %w", invalidf("blob id %q is malformed", id))
	}
	back, err := s.retry(ctx, []string{id})
	if err != nil {
		return claimcheck.DeadLetter{}, err
	}
	if len(back) == 0 {
		return claimcheck.DeadLetter{}, notParked(id)
	}
	return back[0], nil
}

// RetryDeadLetters retries a page of dead letters; see claimcheck.Admin.
// Listing and retrying are two transactions; the retry is a
// compare-and-swap on parked rows, so one retried meanwhile by someone
// else is left out of the answer, not taken back twice.
func (s *Store) RetryDeadLetters(ctx context.Context, q claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error) {
	page, err := s.DeadLetters(ctx, q)
	if err != nil {
		return claimcheck.DeadLetterPage{}, err
	}
	ids := make([]string, len(page.DeadLetters))
	for i, d := range page.DeadLetters {
		ids[i] = d.BlobID
	}
	back, err := s.retry(ctx, ids)
	if err != nil {
		return claimcheck.DeadLetterPage{}, err
	}
	return claimcheck.DeadLetterPage{DeadLetters: back, Next: page.Next}, nil
}

// retry is the sweeper's retry (it records the events and refreshes the
// gauge), logged with the actor.
func (s *Store) retry(ctx context.Context, ids []string) ([]claimcheck.DeadLetter, error) {
	out := []claimcheck.DeadLetter{}
	if len(ids) == 0 {
		return out, nil
	}
	back, err := s.sweeper.RetryDeadLetters(ctx, ids)
	if err != nil {
		return nil, metaErr("retry dead letters", err)
	}
	for _, b := range back {
		s.log.InfoContext(ctx, "dead letter retried: due now with a fresh retry schedule", "blob", b.ID, "namespace", b.Namespace,
			"key", b.Key, "attempts", b.Attempts, "actor", claimcheck.ActorFrom(ctx))
		out = append(out, deadLetterOf(b))
	}
	return out, nil
}

func notParked(id string) error {
	return fmt.Errorf("dead letter %s: %w: no such blob is parked (unknown, retried or collected since)", id, claimcheck.ErrNotFound)
}

func deadLetterOf(b meta.Blob) claimcheck.DeadLetter {
	return claimcheck.DeadLetter{BlobID: b.ID, Namespace: b.Namespace, ObjectKey: b.Key, StoredSize: b.StoredSize,
		Attempts: b.Attempts, LastError: b.LastError, ParkedAt: b.DeadAt.UTC(), DeletingSince: b.StateAt.UTC()}
}
