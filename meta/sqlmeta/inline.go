package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Inline objects (meta.InlineObjectStore, migration 0066, ADR 0292): the
// bytes of small payloads in rows keyed like objects.

// storeInlineBytesAsTheyAre keeps inline_objects.data out of PostgreSQL's
// compression (STORAGE EXTERNAL): the bytes come compressed, or
// encrypted, or chosen stored as they are because they do not shrink, so
// compressing them again costs CPU on every write and saves nothing.
// Rows over the TOAST threshold still move out of line; SQLite has no
// such setting.
func storeInlineBytesAsTheyAre(q *txq) error {
	if !q.d.writableCTEs { // PostgreSQL's syntax
		return nil
	}
	_, err := q.exec(`ALTER TABLE inline_objects ALTER COLUMN data SET STORAGE EXTERNAL`)
	return err
}

// keyNamespace is the namespace of an object key: its first segment.
func keyNamespace(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// PutInlineObject stores data at key; see meta.InlineObjectStore.
func (s *Store) PutInlineObject(ctx context.Context, key string, data []byte, now time.Time) error {
	if data == nil {
		data = []byte{} // an empty object: a value, not NULL
	}
	var err error
	if s.d.writableCTEs {
		err = s.putInlineGrouped(&inlineReq{ctx: ctx, key: key, data: data, now: now})
	} else {
		err = s.write(ctx, func(q *txq) error {
			_, err := q.exec(upsertInline, keyNamespace(key), key, data, int64(len(data)), now.UnixNano())
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("sqlmeta: store inline object %s: %w", key, err)
	}
	return nil
}

// InlineObjectBytes returns the bytes at key; see meta.InlineObjectStore.
func (s *Store) InlineObjectBytes(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT data FROM inline_objects WHERE namespace = ? AND object_key = ?`, keyNamespace(key), key).Scan(&data)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlmeta: inline object %s: %w", key, meta.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: read inline object %s: %w", key, err)
	}
	return data, nil
}

// InlineObjectAttributes describes the object at key; see
// meta.InlineObjectStore.
func (s *Store) InlineObjectAttributes(ctx context.Context, key string) (meta.InlineObject, error) {
	var o meta.InlineObject
	err := s.read(ctx, func(q *txq) error {
		var err error
		o, err = scanInlineObject(q.queryRow(`SELECT object_key, size, created_at FROM inline_objects
			WHERE namespace = ? AND object_key = ?`, keyNamespace(key), key))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return meta.InlineObject{}, fmt.Errorf("sqlmeta: inline object %s: %w", key, meta.ErrNotFound)
	}
	if err != nil {
		return meta.InlineObject{}, fmt.Errorf("sqlmeta: inline object %s: %w", key, err)
	}
	return o, nil
}

// DeleteInlineObjects deletes the objects at keys; see
// meta.InlineObjectStore.
func (s *Store) DeleteInlineObjects(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		for _, key := range keys {
			if _, err := q.exec(`DELETE FROM inline_objects WHERE namespace = ? AND object_key = ?`, keyNamespace(key), key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: delete %d inline objects: %w", len(keys), err)
	}
	return nil
}

// ListInlineObjects lists objects by key prefix; see
// meta.InlineObjectStore. The prefix is compared as a substring, not
// with LIKE, whose case rules differ between the dialects; keys compare
// byte by byte, as object stores list them (PostgreSQL's collation of
// the database may order otherwise; SQLite's default already does).
func (s *Store) ListInlineObjects(ctx context.Context, prefix, after string, limit int) ([]meta.InlineObject, error) {
	bytewise := ""
	if s.d.writableCTEs { // PostgreSQL
		bytewise = ` COLLATE "C"`
	}
	var out []meta.InlineObject
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanInlineObject, `SELECT object_key, size, created_at FROM inline_objects
			WHERE substr(object_key, 1, ?) = ? AND object_key`+bytewise+` > ? ORDER BY object_key`+bytewise+` LIMIT ?`,
			len(prefix), prefix, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list inline objects: %w", err)
	}
	return out, nil
}

func scanInlineObject(row scanner) (meta.InlineObject, error) {
	var (
		o       meta.InlineObject
		created int64
	)
	if err := row.Scan(&o.Key, &o.Size, &created); err != nil {
		return meta.InlineObject{}, err
	}
	o.CreatedAt = time.Unix(0, created).UTC()
	return o, nil
}
