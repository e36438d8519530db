package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
)

// Inline objects (ADR 0292): a namespace that sets inline_below keeps
// the bytes of a put of at most that many declared bytes in a row of the
// metadata database instead of an object in the bucket. Only the object
// key says where the bytes are: <namespace>/inline/<blob id> (with the
// data key's id after a dot when encrypted), a form objectKey never
// makes (its second segment is two hex digits). Every step of the
// pipeline, the sweeper and the scrub read, write and delete through
// inlineStore, which routes those keys to the rows and every other key
// to the bucket, so the bytes are compressed, encrypted, verified,
// deduplicated, collected and shredded exactly as objects are, and a
// staging blob row owns an inline object before its row exists as it
// owns an object before its first byte.

// inlineSegment is the second segment of an inline object's key.
const inlineSegment = "inline"

// inlineObjectKey is where the bytes of an inline blob live.
func inlineObjectKey(ns, blobID string) string {
	return namespacePrefix(ns) + inlineSegment + "/" + blobID
}

// isInlineKey reports whether key names an inline object.
func isInlineKey(key string) bool {
	_, rest, _ := strings.Cut(key, "/")
	return strings.HasPrefix(rest, inlineSegment+"/")
}

// putsInline reports whether a put declaring size bytes is stored
// inline under pol. A put that declares no size goes to the bucket: its
// size is known only once its bytes are.
func putsInline(pol claimcheck.Policy, size int64) bool {
	return size > 0 && size <= int64(pol.InlineBelow)
}

// maxInlineObject bounds what an inline object's writer buffers: the
// largest inline_below, with room for the encryption framing and a
// compressor's worst case.
const maxInlineObject = 2 * int64(claimcheck.MaxInlineBelow)

// inlineStore is the object store the engine uses: inline keys go to
// rows of the metadata database, every other key to objects. The
// bucket's abilities (presigning, appends, lifecycle and CORS rules) are
// for objects only: direct and resumable uploads never stage an inline
// key (stage), and the rules scope to namespace prefixes of the bucket.
type inlineStore struct {
	objects   blob.Store
	rows      meta.InlineObjectStore
	clock     clock.Clock
	abilities blob.Abilities
}

func newInlineStore(objects blob.Store, rows meta.InlineObjectStore, c clock.Clock) *inlineStore {
	s := &inlineStore{objects: objects, rows: rows, clock: c, abilities: blob.AbilitiesOf(objects)}
	if s.abilities.BatchDeleter != nil {
		s.abilities.BatchDeleter = inlineBatch{s, s.abilities.BatchDeleter}
	}
	return s
}

// Abilities are the bucket's, its batch deletes taking inline keys too.
func (s *inlineStore) Abilities() blob.Abilities { return s.abilities }

func (s *inlineStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	if !isInlineKey(key) {
		return s.objects.NewWriter(ctx, key)
	}
	return &inlineWriter{ctx: ctx, key: key, s: s}, nil
}

func (s *inlineStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if !isInlineKey(key) {
		return s.objects.NewReader(ctx, key)
	}
	return s.readRows(ctx, key, 0, -1)
}

func (s *inlineStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if !isInlineKey(key) {
		return s.objects.NewRangeReader(ctx, key, offset, length)
	}
	return s.readRows(ctx, key, offset, length)
}

// readRows reads length bytes (< 0: to the end) from offset of the
// inline object at key.
func (s *inlineStore) readRows(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	data, err := s.rows.InlineObjectBytes(ctx, key)
	if err != nil {
		return nil, inlineErr(err)
	}
	data = data[min(offset, int64(len(data))):]
	if length >= 0 && length < int64(len(data)) {
		data = data[:length]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (s *inlineStore) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	if !isInlineKey(key) {
		return s.objects.Attributes(ctx, key)
	}
	o, err := s.rows.InlineObjectAttributes(ctx, key)
	if err != nil {
		return blob.Attributes{}, inlineErr(err)
	}
	return blob.Attributes{Size: o.Size, ModTime: o.CreatedAt}, nil
}

func (s *inlineStore) Delete(ctx context.Context, key string) error {
	if !isInlineKey(key) {
		return s.objects.Delete(ctx, key)
	}
	return s.rows.DeleteInlineObjects(ctx, []string{key})
}

// List merges the bucket's listing with the rows' in key order (the
// backstop and fsck see both), the token the last key of the page before,
// as for every store: each side's first pageSize keys after the token
// hold the merged page's.
func (s *inlineStore) List(ctx context.Context, prefix, token string, pageSize int) ([]blob.Object, string, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	objs, next, err := s.objects.List(ctx, prefix, token, pageSize)
	missing := errors.Is(err, blob.ErrNotFound) // the file backend's directory is not there yet
	if err != nil && !missing {
		return nil, "", err
	}
	rows, err := s.rows.ListInlineObjects(ctx, prefix, token, pageSize+1)
	if err != nil {
		return nil, "", err
	}
	if missing && len(rows) == 0 {
		return nil, "", blob.ErrNotFound
	}
	more := next != "" || len(rows) > pageSize
	for _, r := range rows {
		objs = append(objs, blob.Object{Key: r.Key, Size: r.Size, ModTime: r.CreatedAt})
	}
	slices.SortFunc(objs, func(a, b blob.Object) int { return strings.Compare(a.Key, b.Key) })
	if len(objs) > pageSize {
		objs, more = objs[:pageSize], true
	}
	if !more || len(objs) == 0 {
		return objs, "", nil
	}
	return objs, objs[len(objs)-1].Key, nil
}

// Close does nothing: the engine closes the bucket and the metadata
// store it opened.
func (s *inlineStore) Close() error { return nil }

// inlineErr makes a missing row the store's ErrNotFound.
func inlineErr(err error) error {
	if errors.Is(err, meta.ErrNotFound) {
		return blob.ErrNotFound
	}
	return err
}

// inlineWriter buffers an inline object and stores it at Close, in one
// transaction: nothing exists at the key before, and a write whose
// context ended before Close stores nothing.
type inlineWriter struct {
	ctx context.Context
	key string
	s   *inlineStore
	buf bytes.Buffer
}

func (w *inlineWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len()+len(p)) > maxInlineObject {
		return 0, fmt.Errorf("inline object %s: more than %d bytes", w.key, maxInlineObject)
	}
	return w.buf.Write(p)
}

func (w *inlineWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.s.rows.PutInlineObject(w.ctx, w.key, w.buf.Bytes(), w.s.clock.Now())
}

// inlineBatch is the bucket's batch delete taking inline keys too: they
// are deleted from the rows in one transaction, the rest in the
// bucket's batches.
type inlineBatch struct {
	s    *inlineStore
	next blob.BatchDeleter
}

func (b inlineBatch) MaxBatch() int { return b.next.MaxBatch() }

func (b inlineBatch) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	var rows, objects []string
	for _, k := range keys {
		if isInlineKey(k) {
			rows = append(rows, k)
		} else {
			objects = append(objects, k)
		}
	}
	if err := b.s.rows.DeleteInlineObjects(ctx, rows); err != nil {
		failed := make(map[string]error, len(rows))
		for _, k := range rows {
			failed[k] = err
		}
		if len(objects) > 0 {
			more, err := b.next.DeleteMany(ctx, objects)
			for k, e := range more {
				failed[k] = e
			}
			return failed, err
		}
		return failed, nil
	}
	if len(objects) == 0 {
		return nil, nil
	}
	return b.next.DeleteMany(ctx, objects)
}
