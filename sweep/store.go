package sweep

import (
	"context"
	"time"

	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
)

// Store is what the sweeper, the backstop and the scrub need of the
// metadata store: the due work, dead letters, history pruning, the
// paged walks over blobs with their checks and repairs, and the leases,
// cursors and events those jobs keep. Its methods are those of
// meta.Store, which documents them; the engine gives its own.
type Store interface {
	// Due claims and blob collection (sweeper.go).
	OldestDue(ctx context.Context) (time.Time, error)
	FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]meta.FinishResult, error)
	BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]meta.Blob, error)
	FinishCollect(ctx context.Context, ids []string, now time.Time) error
	CollectFailed(ctx context.Context, id string, cause string, retryAt time.Time) error

	// Dead letters (deadletter.go).
	ParkBlob(ctx context.Context, id string, cause string, now time.Time) error
	CountDeadLetters(ctx context.Context) (int64, error)
	RetryDeadLetters(ctx context.Context, ids []string, all bool, now time.Time) ([]meta.Blob, error)

	// Pruning of events and history (retention.go).
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	PruneHistory(ctx context.Context, before time.Time, limit int) (meta.PruneResult, error)
	CompactHistory(ctx context.Context, before time.Time, limit int) (int, error)

	// The walks over blobs of the backstop, the scrub and Inspect, and
	// what they check and repair.
	Blob(ctx context.Context, id string) (meta.Blob, error)
	Blobs(ctx context.Context, afterID string, limit int) ([]meta.Blob, error)
	BlobsByKeys(ctx context.Context, keys []string) (map[string]meta.Blob, error)
	LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error)
	FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]meta.RefFix, error)
	QuotaDrift(ctx context.Context) ([]meta.QuotaDrift, error)
	ClearDamage(ctx context.Context, blobID, key string, now time.Time) (bool, error)
	integrity.DamageMarker
	integrity.DataKeys

	// One runner across replicas, its place, and what it did.
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	Cursor(ctx context.Context, name string) (string, error)
	SetCursor(ctx context.Context, name, value string) error
	AppendEvents(ctx context.Context, events []meta.Event) error
}
