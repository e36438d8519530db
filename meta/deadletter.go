package meta

import (
	"context"
	"time"
)

// DeadLetterStore parks blobs whose object delete keeps failing.
//
// A failed delete is retried with a growing delay (CollectFailed). After
// the sweeper's max_attempts it parks the blob instead: the row stays in
// deleting — it still owns its object and counts as absent for dedup, and
// listings, fsck and the backstop still see it — but its collect_at is
// cleared, so it leaves the due index and no sweeper loops on it. Parking
// never touches the namespace counters: the quota was given back, exactly
// once, by the transaction that finished the blob's last claim, and a
// blob's collection has nothing left to refund.
type DeadLetterStore interface {
	// ParkBlob records the last failed delete of a deleting blob and parks
	// it: attempts+1, last error = cause, collect_at cleared, dead_at =
	// now. ErrConflict if the blob is not deleting (a concurrent run
	// finished it), ErrNotFound if there is no such blob.
	ParkBlob(ctx context.Context, id, cause string, now time.Time) error

	// DeadLetters returns up to limit parked blobs with id > afterID, in
	// id order; with ns set, only those of namespace ns.
	DeadLetters(ctx context.Context, ns, afterID string, limit int) ([]Blob, error)

	// CountDeadLetters returns the number of parked blobs.
	CountDeadLetters(ctx context.Context) (int64, error)

	// RetryDeadLetters puts parked blobs back in the due index, due now,
	// with a fresh retry schedule (attempts 0; the last error is kept for
	// the record). With all, every parked blob; otherwise those of ids
	// that are parked (others are skipped). It returns the blobs it took
	// back as they were before (their attempts, error and DeadAt).
	RetryDeadLetters(ctx context.Context, ids []string, all bool, now time.Time) ([]Blob, error)
}

// Event kinds of the dead-letter queue.
const (
	EventDeadLetter      = "dead_letter"       // a blob parked after max_attempts failed deletes
	EventDeadLetterRetry = "dead_letter_retry" // a parked blob put back in the due index
)
