package sqlmeta

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// Redeems read in groups (PostgreSQL, ADR 0160, internal/statement).
//
// Every redeem reads its claim and blob in one statement
// (ClaimWithBlob); under concurrent redeems that is one statement, with
// its whole fixed cost on both sides, per redeem. Redeems that come
// while such a read runs are read together, by id, in the next
// statement. The answer is as current as the call's own statement would
// have been: the group's statement starts after every call of it came.
// An id the group's statement finds no row for (no such claim, or no
// row of its blob) is read on its own, which answers which.

// readReq is one ClaimWithBlob in a group.
type readReq struct {
	ctx context.Context
	id  string
	c   meta.Claim
	b   meta.Blob
	ok  bool
	err error
}

// readKey spreads reads over readShards groups, so that reads of
// different claims still run side by side on the pool, as they did one
// statement each. Reads that name their namespace (meta.WithNamespace)
// are grouped with reads of the same namespace only, so that the
// group's statement names it too, and it is read on the one context.
type readKey struct {
	shard int
	ns    string
}

const readShards = 4

func (s *Store) claimWithBlobGrouped(ctx context.Context, id string) (meta.Claim, meta.Blob, bool, error) {
	r := &readReq{ctx: ctx, id: id}
	key := readKey{ns: meta.NamespaceFrom(ctx)}
	if id != "" {
		key.shard = int(id[len(id)-1]) % readShards
	}
	s.readGroups.Do(key, r,
		func(r *readReq) { r.c, r.b, r.ok, r.err = s.claimWithBlob(r.ctx, r.id) },
		func(rs []*readReq) bool { return s.readGroupOnce(rs) == nil })
	return r.c, r.b, r.ok, r.err
}

// readGroupOnce reads every claim of batch with its blob in one
// statement on the first call's context. It answers the calls whose
// rows it found and reports an error if any is left (those run alone).
func (s *Store) readGroupOnce(batch []*readReq) error {
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	type found struct {
		c meta.Claim
		b meta.Blob
	}
	rows := map[string]found{}
	err := s.read(batch[0].ctx, func(q *txq) error {
		clear(rows)
		in, args := q.inNamespace("namespace", ids)
		rs, err := q.query(`SELECT c.*, b.* FROM (SELECT `+claimColumns+`, `+q.d.releasesOf+` AS released
				FROM claims WHERE id = ANY(CAST(? AS TEXT[]))`+in+`) c
			JOIN (SELECT `+blobColumns+` FROM blobs) b ON b.id = c.blob_id AND b.namespace = c.namespace`, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				released sql.NullString
				bs       blobScan
			)
			c, err := scanClaim(extraColumns{rs, append([]any{&released}, bs.dest()...)})
			if err != nil {
				return err
			}
			if c.ReleasedBy, err = releases(c.ID, released); err != nil {
				return err
			}
			rows[c.ID] = found{c, bs.blob()}
		}
		return rs.Err()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: load %d claims with blobs: %w", len(batch), err)
	}
	missing := 0
	for _, r := range batch {
		if f, ok := rows[r.id]; ok {
			r.c, r.b, r.ok = f.c, f.b, true
		} else {
			missing++
		}
	}
	if missing > 0 {
		// statement.Groups runs every call alone then; the found ones are read
		// again, which only costs the rare group with an unknown id.
		return fmt.Errorf("sqlmeta: %d of %d claims not found with a blob", missing, len(batch))
	}
	return nil
}
