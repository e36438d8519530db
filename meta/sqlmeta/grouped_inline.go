package sqlmeta

import (
	"context"
	"fmt"
	"time"
)

// Group insert of PutInlineObject (PostgreSQL, ADR 0292,
// internal/statement).
//
// Each inline put writes its row on its own, between its creation and its
// commit, both of which are grouped already: concurrent inserts of a
// namespace that queue behind one running are written by one statement of
// fixed text over arrays, so a burst of small puts costs one transaction
// for their bytes, not one each. A group whose statement fails (two puts
// of one key, which ON CONFLICT cannot update twice) leaves each insert
// to its own statement.

// inlineReq is one PutInlineObject in a group.
type inlineReq struct {
	ctx  context.Context
	key  string
	data []byte
	now  time.Time
	err  error
}

// upsertInline is the one-row insert, replacing what was at the key.
const upsertInline = `INSERT INTO inline_objects (namespace, object_key, data, size, created_at) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (namespace, object_key) DO UPDATE SET data = excluded.data, size = excluded.size, created_at = excluded.created_at`

// putInlineGrouped is putInlineAlone, alone or in a group of the key's
// namespace.
func (s *Store) putInlineGrouped(r *inlineReq) error {
	s.inlineGroups.Do(keyNamespace(r.key), r,
		func(r *inlineReq) { r.err = s.putInlineAlone(r) },
		func(rs []*inlineReq) bool { return s.putInlineGroupOnce(rs) == nil })
	return r.err
}

// putInlineAlone writes one row in one statement, without BEGIN and
// COMMIT on PostgreSQL.
func (s *Store) putInlineAlone(r *inlineReq) error {
	return s.once(r.ctx, func(q *txq) error {
		_, err := q.exec(upsertInline, keyNamespace(r.key), r.key, r.data, int64(len(r.data)), r.now.UnixNano())
		return err
	})
}

// putInlineGroupOnce writes every row of batch in one statement, run on
// the first call's context, or none of them (an error).
func (s *Store) putInlineGroupOnce(batch []*inlineReq) error {
	n := len(batch)
	namespaces, keys, data := make([]string, n), make([]string, n), make([][]byte, n)
	sizes, created := make([]int64, n), make([]int64, n)
	for i, r := range batch {
		namespaces[i], keys[i], data[i] = keyNamespace(r.key), r.key, r.data
		sizes[i], created[i] = int64(len(r.data)), r.now.UnixNano()
	}
	err := s.once(batch[0].ctx, func(q *txq) error {
		_, err := q.exec(`INSERT INTO inline_objects (namespace, object_key, data, size, created_at)
			SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BYTEA[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]))
			ON CONFLICT (namespace, object_key) DO UPDATE SET data = excluded.data, size = excluded.size, created_at = excluded.created_at`,
			namespaces, keys, data, sizes, created)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: store %d inline objects in one statement: %w", n, err)
	}
	return nil // each call's err stays nil: its row is written
}
