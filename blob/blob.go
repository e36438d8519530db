// Package blob is claimcheck's object storage: a thin layer over
// gocloud.dev/blob that gives the engine one small interface for every
// backend (file, mem, S3 and S3-compatible stores, GCS, Azure).
//
// The layer does the shared work once so that the engine never sees a
// backend's native errors: a missing object is ErrNotFound, deleting a
// missing object succeeds, and a write whose context is cancelled before
// Close leaves nothing visible. Abilities only some backends have
// (presigned URLs, batch deletes, lifecycle rules) are separate interfaces
// found by type assertion. blob/blobtest is the conformance suite every
// implementation runs.
//
// Wrappers add to a store without changing what it does: WithMetrics
// counts and times every operation for Prometheus, NewCounting counts
// requests for tests and benchmarks. Each has exactly the optional
// abilities of the store it wraps, so type assertions see through it.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned when an object does not exist.
var ErrNotFound = errors.New("blob: object not found")

// Attributes describe a stored object.
type Attributes struct {
	Size    int64
	ModTime time.Time
}

// Object is one entry of a listing.
type Object struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store holds objects by key. Keys are "/"-separated paths of safe
// characters; the engine builds them as "<namespace>/<blob id>".
type Store interface {
	// NewWriter starts writing the object at key. The object becomes
	// visible only when Close returns nil; if ctx is cancelled before
	// Close, nothing is visible and Close returns an error.
	NewWriter(ctx context.Context, key string) (io.WriteCloser, error)

	// NewReader opens the object at key for reading. ErrNotFound if it
	// does not exist.
	NewReader(ctx context.Context, key string) (io.ReadCloser, error)

	// Attributes returns the object's size and modification time.
	// ErrNotFound if it does not exist.
	Attributes(ctx context.Context, key string) (Attributes, error)

	// Delete removes the object. A missing object is not an error.
	Delete(ctx context.Context, key string) error

	// List returns up to pageSize objects whose keys start with prefix, in
	// key order, after the key token (exclusive; "" starts at the
	// beginning), and the token for the next page ("" when done; a last
	// page may be empty). pageSize <= 0 lets the store choose. Only the
	// backstop and fsck list; the steady state never does.
	List(ctx context.Context, prefix, token string, pageSize int) ([]Object, string, error)

	// Close releases the store.
	Close() error
}

// BatchDeleter is implemented by stores that delete many objects in one
// request (S3 DeleteObjects takes up to 1,000 keys).
type BatchDeleter interface {
	// DeleteMany removes the objects. Missing objects are not errors. The
	// returned map holds the keys that failed, with their errors.
	DeleteMany(ctx context.Context, keys []string) (failed map[string]error, err error)
	// MaxBatch is the largest number of keys one DeleteMany call takes.
	MaxBatch() int
}

// PresignedPut is a URL a client can PUT an object to directly.
type PresignedPut struct {
	URL     string
	Method  string            // "PUT"
	Headers map[string]string // headers the client must send
	Expires time.Time
}

// Presigner is implemented by stores that can sign a direct-upload URL
// bound to the object's length and sha256.
type Presigner interface {
	PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (PresignedPut, error)
}
