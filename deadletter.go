package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// DeadLetter is a blob whose object delete failed sweeper.max_attempts
// times and that the sweeper parked (ADR 0055). It keeps its row and its
// object, and the sweeper no longer retries it until an operator does.
// Quota is not involved: it was given back when the blob's last claim
// finished.
type DeadLetter struct {
	BlobID     string `json:"blob_id"`
	Namespace  string `json:"namespace"`
	ObjectKey  string `json:"object_key"`
	StoredSize int64  `json:"stored_size"`
	// Attempts and LastError are those of the failed deletes.
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	ParkedAt  time.Time `json:"parked_at"`
	// DeletingSince is when the blob's collection began.
	DeletingSince time.Time `json:"deleting_since"`
}

// DeadLetterQuery selects a page of dead letters. The zero value is the
// first page of every dead letter.
type DeadLetterQuery struct {
	// Tenant keeps the dead letters of the namespaces whose policy names
	// this tenant; a namespace that is no longer configured belongs to no
	// tenant. Over HTTP with auth on, it is the API key's tenant.
	Tenant string
	// Namespace keeps the dead letters of one namespace.
	Namespace string
	// After returns only dead letters with a blob id after it: pass the
	// previous page's Next.
	After string
	// Limit is the page size (default and maximum MaxDeadLetterPage).
	Limit int
}

// MaxDeadLetterPage bounds one page of dead letters, and so one batch of
// RetryDeadLetters.
const MaxDeadLetterPage = 500

// deadLetterScan bounds the parked rows one DeadLetters call reads to
// fill a page filtered by tenant, as a multiple of the page size: a
// tenant with few dead letters among many of others' gets short pages
// (with Next set) rather than a request that reads them all.
const deadLetterScan = 10

// DeadLetterPage is a page of dead letters. Next is set when more may
// follow: pass it as the next query's After. A page can be short, even
// empty, and still have a Next (the tenant filter bounds its scan).
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	Next        string       `json:"next,omitempty"`
}

// DeadLetterQueue lists and retries dead letters. *Store and
// client.Client implement it; it is an operator's tool (on the HTTP API,
// admin keys only, each tenant's admins seeing their own namespaces').
type DeadLetterQueue interface {
	// DeadLetters returns a page of dead letters in blob id order.
	DeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error)
	// DeadLetter returns one. ErrNotFound if the blob is unknown or not
	// parked (retried or collected since).
	DeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// RetryDeadLetter puts a dead letter back in the sweeper's queue, due
	// now, with a fresh retry schedule, and returns it as it was parked.
	// ErrNotFound as for DeadLetter: a second retry finds nothing.
	RetryDeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// RetryDeadLetters retries the dead letters of the page q selects and
	// returns those it took back, with the page's Next: to retry them
	// all, call it again with After = Next until Next is empty.
	RetryDeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error)
}

var _ DeadLetterQueue = (*Store)(nil)

// check validates the query and returns its page size.
func (q DeadLetterQuery) check() (int, error) {
	if q.Tenant != "" {
		if err := ValidateTenant(q.Tenant); err != nil {
			return 0, err
		}
	}
	if q.Namespace != "" {
		if err := ValidateNamespace(q.Namespace); err != nil {
			return 0, err
		}
	}
	if q.After != "" && !ValidBlobID(q.After) {
		return 0, invalidf("after %q: want a blob id (b_ and 22 characters), the next of the previous page", q.After)
	}
	switch {
	case q.Limit < 0:
		return 0, invalidf("limit %d: must not be negative", q.Limit)
	case q.Limit == 0 || q.Limit > MaxDeadLetterPage:
		return MaxDeadLetterPage, nil
	}
	return q.Limit, nil
}

// DeadLetters returns a page of dead letters; see DeadLetterQueue. The
// namespace filter is the database's; the tenant filter is the policies'
// (the same ones API keys are checked against), applied here.
func (s *Store) DeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error) {
	limit, err := q.check()
	if err != nil {
		return DeadLetterPage{}, fmt.Errorf("dead letters: %w", err)
	}
	page := DeadLetterPage{DeadLetters: []DeadLetter{}}
	after := q.After
	for scanned := 0; scanned < deadLetterScan*limit; {
		bs, err := s.meta.DeadLetters(ctx, q.Namespace, after, limit)
		if err != nil {
			return DeadLetterPage{}, metaErr("dead letters", err)
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

// DeadLetter returns one dead letter; see DeadLetterQueue.
func (s *Store) DeadLetter(ctx context.Context, id string) (DeadLetter, error) {
	if !ValidBlobID(id) {
		return DeadLetter{}, fmt.Errorf("dead letter: %w", invalidf("blob id %q is malformed", id))
	}
	b, err := s.meta.Blob(ctx, id)
	if errors.Is(err, meta.ErrNotFound) || err == nil && b.DeadAt.IsZero() {
		return DeadLetter{}, notParked(id)
	}
	if err != nil {
		return DeadLetter{}, metaErr("dead letter "+id, err)
	}
	return deadLetterOf(b), nil
}

// RetryDeadLetter retries one dead letter; see DeadLetterQueue.
func (s *Store) RetryDeadLetter(ctx context.Context, id string) (DeadLetter, error) {
	if !ValidBlobID(id) {
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", invalidf("blob id %q is malformed", id))
	}
	back, err := s.retry(ctx, []string{id})
	if err != nil {
		return DeadLetter{}, err
	}
	if len(back) == 0 {
		return DeadLetter{}, notParked(id)
	}
	return back[0], nil
}

// RetryDeadLetters retries a page of dead letters; see DeadLetterQueue.
// Listing and retrying are two transactions; the retry is a
// compare-and-swap on parked rows, so one retried meanwhile by someone
// else is left out of the answer, not taken back twice.
func (s *Store) RetryDeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error) {
	page, err := s.DeadLetters(ctx, q)
	if err != nil {
		return DeadLetterPage{}, err
	}
	ids := make([]string, len(page.DeadLetters))
	for i, d := range page.DeadLetters {
		ids[i] = d.BlobID
	}
	back, err := s.retry(ctx, ids)
	if err != nil {
		return DeadLetterPage{}, err
	}
	return DeadLetterPage{DeadLetters: back, Next: page.Next}, nil
}

// retry is the sweeper's retry (it records the events and refreshes the
// gauge), logged with the actor.
func (s *Store) retry(ctx context.Context, ids []string) ([]DeadLetter, error) {
	out := []DeadLetter{}
	if len(ids) == 0 {
		return out, nil
	}
	back, err := s.sweeper.RetryDeadLetters(ctx, ids)
	if err != nil {
		return nil, metaErr("retry dead letters", err)
	}
	for _, b := range back {
		s.log.Info("dead letter retried: due now with a fresh retry schedule", "blob", b.ID, "namespace", b.Namespace,
			"key", b.Key, "attempts", b.Attempts, "actor", ActorFrom(ctx))
		out = append(out, deadLetterOf(b))
	}
	return out, nil
}

func notParked(id string) error {
	return fmt.Errorf("dead letter %s: %w: no such blob is parked (unknown, retried or collected since)", id, ErrNotFound)
}

func deadLetterOf(b meta.Blob) DeadLetter {
	return DeadLetter{BlobID: b.ID, Namespace: b.Namespace, ObjectKey: b.Key, StoredSize: b.StoredSize,
		Attempts: b.Attempts, LastError: b.LastError, ParkedAt: b.DeadAt.UTC(), DeletingSince: b.StateAt.UTC()}
}
