package engine

import (
	"context"

	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/meta"
)

// SetSeekTableRead sets how much of the end of a zstd stream a ranged
// read fetches first, so that a test can exercise a seek table longer
// than that without gigabytes of payload. It returns the old value.
func SetSeekTableRead(n int64) int64 { return storedform.SetSeekTableRead(n) }

// SetAfterObjectWrite sets the hook every put of s runs after its object
// is written and before its commit (nil: none).
func (s *Store) SetAfterObjectWrite(h func(ctx context.Context) error) { s.hooks.afterObjectWrite = h }

// SetListWindow sets how many rows of its index range one page of a
// listing reads, so that a test sees short pages without putting ten
// thousand claims. It returns the old value.
func SetListWindow(n int) int {
	old := listWindow
	listWindow = n
	return old
}

// InlineObjects lists the inline objects (inline.go) whose keys start
// with prefix, as the metadata store holds them.
func (s *Store) InlineObjects(ctx context.Context, prefix string) ([]meta.InlineObject, error) {
	return s.meta.ListInlineObjects(ctx, prefix, "", 1000)
}

// OverwriteInlineObject replaces the bytes of the inline object at key,
// as damage to the metadata database would.
func (s *Store) OverwriteInlineObject(ctx context.Context, key string, data []byte) error {
	return s.meta.PutInlineObject(ctx, key, data, s.clock.Now())
}
