package sqlmeta

import (
	"context"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// shred runs a write transaction that erases data (DestroyDataKey) so
// that no copy of it stays in the database's files once it returns (ADR
// 0096):
//
//   - SQLite: the transaction runs with secure_delete on, so the cells it
//     rewrites or frees (the wrapped key, labels, digests, their index
//     entries) are overwritten with zeros in the page instead of left in
//     free space; then a TRUNCATE checkpoint copies the new pages into the
//     database file and empties the WAL, which still held the old page
//     images. Both on the one writer connection, held for the whole
//     sequence. A checkpoint that readers keep from finishing (another
//     process with an open read transaction) is an error: the shred has
//     committed, but its erasure is not complete until a later
//     checkpoint, and the caller must say so.
//   - PostgreSQL: the old row version of data_keys is dead but still in
//     the table file until vacuum; VACUUM FULL rewrites the (tiny) table
//     into a new file and drops the old one. WAL segments, archives,
//     replicas and backups keep the old version until they are recycled:
//     rotating the master key after a shred (ADR 0075) makes those copies
//     useless, which docs/OPERATIONS.md tells operators to do.
func (s *Store) shred(ctx context.Context, fn func(q *txq) error) error {
	switch s.d {
	case sqliteDialect:
		conn, err := s.w.Conn(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }() // back to the pool; nothing is lost
		if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
			return err
		}
		// Off again afterwards: every later delete would pay for zeroing
		// freed pages, and only shredding needs it.
		// Should it fail, the connection only keeps zeroing freed pages.
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA secure_delete = OFF`) }()
		if err := s.runTx(ctx, conn, nil, nil, fn); err != nil {
			return err
		}
		var busy, frames, done int64
		if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			return fmt.Errorf("%w: committed, but the WAL checkpoint that erases old copies failed: %v", errShredIncomplete, err)
		}
		if busy != 0 {
			return fmt.Errorf("%w: committed, but readers kept the WAL checkpoint from finishing (%d of %d frames copied); old copies stay in the -wal file until the next checkpoint", errShredIncomplete, done, frames)
		}
		return nil
	case postgresDialect:
		if err := s.write(ctx, fn); err != nil {
			return err
		}
		if _, err := s.w.ExecContext(ctx, `VACUUM FULL data_keys`); err != nil {
			return fmt.Errorf("%w: committed, but VACUUM FULL data_keys failed (the old row version stays until a vacuum): %v", errShredIncomplete, err)
		}
		return nil
	}
	return s.write(ctx, fn)
}

// errShredIncomplete marks a shred that committed but could not erase
// every old copy yet.
var errShredIncomplete = meta.ErrShredIncomplete
