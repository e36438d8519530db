package claimcheck

import "time"

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

// DeadLetterPage is a page of dead letters. Next is set when more may
// follow: pass it as the next query's After. A page can be short, even
// empty, and still have a Next (the tenant filter bounds its scan).
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	Next        string       `json:"next,omitempty"`
}

// Check validates the query and returns its page size.
func (q DeadLetterQuery) Check() (int, error) {
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
