// Package blob is claimcheck's object storage: one small interface,
// Store, that the engine uses for every backend, with the optional
// abilities only some backends have, the wrappers that add to any store,
// and the registry that finds a backend by the scheme of its URL.
//
// Each backend is a package of its own that registers its scheme in an
// init function: blob/filestore (file://), blob/memstore (mem://),
// blob/s3store (s3://, S3 and S3-compatible services), blob/gcsstore
// (gs://, Google Cloud Storage) and blob/azurestore (azblob://, Azure Blob
// Storage); blob/allstores imports them all, and Open finds the one a URL names. The backends
// built on gocloud.dev/blob share blob/gocloudbucket, which translates
// gocloud's errors once. A new backend is one more package and one more
// import in blob/allstores.
//
// Every backend does the shared work so that the engine never sees its
// native errors: a missing object is ErrNotFound, deleting a missing
// object succeeds, and a write whose context is cancelled before Close
// leaves nothing visible. Abilities only some backends have (presigned
// URLs, batch deletes, lifecycle rules, appends, bucket CORS rules) are
// separate interfaces, gathered in one Abilities value that AbilitiesOf
// returns. blob/blobtest is the conformance suite every implementation
// runs.
//
// Wrappers add to a store without changing what it does: WithMetrics
// counts and times every operation for Prometheus, NewCounting counts
// requests for tests and benchmarks. Each carries exactly the optional
// abilities of the store it wraps, in its Abilities value.
package blob

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// ErrNotFound is returned when an object does not exist. It is also
// fs.ErrNotExist (errors.Is), so that code reading a Store through a
// narrower interface of its own (the integrations read other tools'
// buckets through one, and may not import this package) can tell a
// missing object from an outage.
var ErrNotFound error = notFoundError{}

type notFoundError struct{}

func (notFoundError) Error() string { return "blob: object not found" }

// Is makes ErrNotFound match fs.ErrNotExist.
func (notFoundError) Is(target error) bool { return target == fs.ErrNotExist }

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

// PayloadHasher is implemented by object writers that can use the
// sha256 of the object's bytes, computed by the caller while it wrote
// them, instead of hashing the bytes once more (S3 over plain HTTP signs
// the payload with it). Call it before Close, with the sum of exactly
// the bytes written: a wrong sum makes the service refuse the write, it
// never stores other bytes. A writer may ignore it.
type PayloadHasher interface {
	SetPayloadSHA256(sum []byte)
}

// KnownPayloadWriter is implemented by object writers that can send the
// bytes on as they are written when told beforehand how many there will
// be and their sha256: an S3 writer then streams them in one PutObject
// of that length, signed with that sum, instead of buffering the object
// and sending it at Close (ADR 0165). Call it before the first Write; a
// writer may decline (an object too large for one request, a writer
// already written to) and reports whether it streams. The object still
// becomes visible only when Close returns nil: the writer holds back the
// last byte until Close, and a cancelled context, or bytes that differ
// from the ones announced in number or in sha256, store nothing.
type KnownPayloadWriter interface {
	SetKnownPayload(size int64, sum []byte) (streams bool)
}

// hintPasser gives a wrapper of an object writer (the metrics, tracing
// and timeout wrappers) the optional hints of PayloadHasher and
// KnownPayloadWriter, passed on to the writer it wraps when that one
// takes them: every wrapper carries them the same way.
type hintPasser struct{ inner io.Writer }

// SetPayloadSHA256 passes the sum on (PayloadHasher).
func (h hintPasser) SetPayloadSHA256(sum []byte) {
	if ph, ok := h.inner.(PayloadHasher); ok {
		ph.SetPayloadSHA256(sum)
	}
}

// SetKnownPayload passes the announcement on (KnownPayloadWriter).
func (h hintPasser) SetKnownPayload(size int64, sum []byte) bool {
	kw, ok := h.inner.(KnownPayloadWriter)
	return ok && kw.SetKnownPayload(size, sum)
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

	// NewRangeReader opens length bytes of the object at key from offset
	// (length < 0: to the end), with the backend's own range read, so the
	// cost is the range's and not the offset's. ErrNotFound if the object
	// does not exist. A range past the end gives fewer bytes (or none),
	// not an error: the caller knows the size it expects and checks it.
	NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

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

// Appender is implemented by stores that build an object from chunks
// that arrive over many requests, each continuing where the last one
// stopped (resumable uploads). The store keeps the bytes received so far
// somewhere it owns under key: on the file system a staging file at the
// object's own path, on S3 a multipart upload of key plus, for a last
// piece shorter than a part, an object at key itself. So deleting key
// and aborting with the handle removes every byte, and nothing needs a
// listing to be found.
//
// The caller keeps the handle and the offset (the bytes stored so far)
// in its own records, which are the truth: the store never reports an
// offset of its own. Bytes a store wrote past the recorded offset (a
// crash, a refused chunk) are overwritten by the next Append.
type Appender interface {
	// BeginAppend prepares key for an object of size bytes and returns
	// the handle to keep with the row that owns key (S3: the multipart
	// upload id; files: ""). Every later call takes it.
	BeginAppend(ctx context.Context, key string, size int64) (handle string, err error)

	// Append reads r to its end (or first error) and stores its bytes
	// from offset off, which is the offset the caller recorded last. Each
	// time bytes up to some offset o are stored so that an Append at o
	// continues them, it calls durable(o), after r has been read to its
	// end or error; the caller records o before it returns nil. If durable
	// returns an error, Append stops, and the bytes past the last offset
	// durable accepted count as never written. Append returns the last
	// offset durable accepted (off if none) and the first error of r
	// (other than io.EOF), of the store or of durable. size is the
	// object's size as given to BeginAppend; bytes past it are refused.
	Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(o int64) error) (int64, error)

	// CompleteAppend turns the size bytes appended into the object at
	// key, readable like any other. The handle is spent.
	CompleteAppend(ctx context.Context, key, handle string, size int64) error

	// AbortAppend removes everything appended and any object at key.
	// Calling it again, or after CompleteAppend (then it deletes the
	// object), is not an error.
	AbortAppend(ctx context.Context, key, handle string) error
}

// CheckPresign checks PresignPut's arguments the same way for every
// backend: sha256Hex is 64 lowercase hex digits, size is not negative,
// and ttl is positive and at most maxTTL (the longest the service's
// signatures last). Errors read "blob: presign KEY: ...".
func CheckPresign(key string, size int64, sha256Hex string, ttl, maxTTL time.Duration) error {
	if sum, err := hex.DecodeString(sha256Hex); err != nil || len(sum) != 32 || strings.ToLower(sha256Hex) != sha256Hex {
		return fmt.Errorf("blob: presign %s: sha256 %q: want 64 lowercase hex digits", key, sha256Hex)
	}
	if size < 0 {
		return fmt.Errorf("blob: presign %s: size %d: must not be negative", key, size)
	}
	if ttl <= 0 || ttl > maxTTL {
		return fmt.Errorf("blob: presign %s: ttl %s: want more than 0 and at most %s", key, ttl, maxTTL)
	}
	return nil
}
