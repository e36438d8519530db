package meta

import (
	"context"
	"time"
)

// InlineObject describes an object whose bytes live in a row of the
// metadata database instead of the object store (engine/inline.go, ADR
// 0292).
type InlineObject struct {
	Key       string
	Size      int64
	CreatedAt time.Time
}

// InlineObjectStore keeps small objects in the metadata database, by
// object key. The rows are objects, not claims: a blob row owns one by
// its key exactly as it owns an object in the bucket, and the sweeper
// deletes it by key when it collects the blob. The key's first segment
// is its namespace, the rows' distribution key.
type InlineObjectStore interface {
	// PutInlineObject stores data at key, replacing what was there, in
	// one transaction.
	PutInlineObject(ctx context.Context, key string, data []byte, now time.Time) error

	// InlineObjectBytes returns the bytes at key. ErrNotFound if there is
	// no object at key.
	InlineObjectBytes(ctx context.Context, key string) ([]byte, error)

	// InlineObjectAttributes describes the object at key without its
	// bytes. ErrNotFound if there is none.
	InlineObjectAttributes(ctx context.Context, key string) (InlineObject, error)

	// DeleteInlineObjects deletes the objects at keys; missing ones are
	// not an error.
	DeleteInlineObjects(ctx context.Context, keys []string) error

	// ListInlineObjects returns up to limit objects whose keys start with
	// prefix and sort after after, in key order (byte by byte).
	ListInlineObjects(ctx context.Context, prefix, after string, limit int) ([]InlineObject, error)
}
