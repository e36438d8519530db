// Package livefill fills a claimcheck metadata store with many live
// claims quickly, for measuring the store at a size a fleet reaches
// (10^6 to 10^7 live claims) without putting each claim through the
// engine, which would take hours (docs/PERFORMANCE.md, "Latency at 10^7
// live claims").
//
// It clones one real claim: the caller puts a template claim through
// the engine or the server, and Fill copies its claims and blobs rows n
// times with fresh time-ordered ids, creation times spread evenly over a
// span ending at the template's, and expiry, due and state times shifted
// with them: by COPY on PostgreSQL, multi-row INSERTs on SQLite, in
// transactions of 20 batches. Columns
// are copied by name from the template rows, so columns the schema gains
// later are filled without changes here. The namespace's counters are
// raised by what the clones add, so quota and listings see them as live.
//
// Clones share the template's content (its digest), but each has its own
// blob row and object key and is not a dedup candidate (dedupable 0: the
// (namespace, digest) index admits one). Only a sample of clones gets an
// object, a hard link to the template's object on a file store, so that
// the sample redeems; the others have rows only. A store filled this way
// is for measurement: run it with the sweeper disabled, or its backstop
// reports the clones without objects as missing.
package livefill

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/claimcheck/claimcheck"
)

// Options say how many clones to make and where their objects go.
type Options struct {
	// N is the number of claims to add.
	N int
	// Sample is the number of clones (picked at random over the whole
	// span) that get an object and are returned for redeeming.
	Sample int
	// Span is the time the clones' creation times cover, ending at the
	// template's (default: half the template's lifetime, so every clone
	// is live for at least that long): rows are laid out as that much
	// time of steady puts would lay them out.
	Span time.Duration
	// BlobDir is the file store's root directory (file:// URL's path),
	// where the sample's objects are linked. Empty: no objects.
	BlobDir string
	// Postgres says the database is PostgreSQL ($n placeholders); else
	// SQLite.
	Postgres bool
	// Batch is the rows per INSERT (default 500).
	Batch int
	// Progress, if set, is called after each committed transaction with
	// the claims added so far.
	Progress func(done int)
	// DeferIndexes drops the secondary indexes of the claims and blobs
	// tables before filling and creates them again after, from their own
	// definitions: building an index once over sorted input is several
	// times faster than inserting 10^7 rows into indexes in random key
	// order (object keys), and gives the same indexes. Primary keys and
	// the indexes behind constraints stay. The store is unusable while it
	// runs, so it is for a store nothing else has open.
	DeferIndexes bool
}

// Fill adds opts.N clones of the template claim to db and returns the
// refs of the sample, in random order.
func Fill(ctx context.Context, db *sql.DB, template claimcheck.Ref, opts Options) (_ []claimcheck.Ref, err error) {
	lifetime := template.ExpiresAt.Sub(template.CreatedAt)
	if opts.Span <= 0 {
		opts.Span = lifetime / 2
	}
	if opts.Span >= lifetime {
		return nil, fmt.Errorf("livefill: span %s: must be shorter than the template's lifetime %s, or the oldest clones are expired", opts.Span, lifetime)
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	if opts.Sample > opts.N {
		opts.Sample = opts.N
	}
	t, err := readTemplate(ctx, db, opts.Postgres, template.ID)
	if err != nil {
		return nil, err
	}
	sample := map[int]bool{}
	for len(sample) < opts.Sample {
		sample[mrand.IntN(opts.N)] = true
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if opts.DeferIndexes {
		defs, derr := dropIndexes(ctx, conn, opts.Postgres, "claims", "blobs")
		// Whatever was dropped is created again, on every way out.
		defer func() {
			if ierr := createIndexes(ctx, conn, opts.Postgres, defs); ierr != nil && err == nil {
				err = ierr
			}
		}()
		if derr != nil {
			return nil, derr
		}
	}
	var refs []claimcheck.Ref
	step := opts.Span / time.Duration(opts.N)
	start := time.Unix(0, t.created).Add(-opts.Span)
	for lo := 0; lo < opts.N; lo += 20 * opts.Batch {
		hi := min(lo+20*opts.Batch, opts.N)
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			return nil, err
		}
		var blobs, claims [][]any
		for i := lo; i < hi; i++ {
			at := start.Add(time.Duration(i) * step)
			shift := at.UnixNano() - t.created
			bid, cid := newID("b_", at), newID("cc_", at)
			key := template.Namespace + "/" + spread(bid) + "/" + bid
			if ext := path.Ext(t.key); strings.HasPrefix(ext, ".dk_") {
				key += ext // an encrypted object names its data key
			}
			blobs = append(blobs, clone(t.blobCols, t.blobRow, shift, map[string]any{
				"id": bid, "object_key": key, "dedupable": int64(0),
			}))
			claims = append(claims, clone(t.claimCols, t.claimRow, shift, map[string]any{
				"id": cid, "blob_id": bid,
			}))
			if sample[i] {
				if err := linkObject(opts.BlobDir, t.key, key); err != nil {
					return nil, rollback(ctx, conn, err)
				}
				r := template
				r.ID, r.CreatedAt = cid, template.CreatedAt.Add(time.Duration(shift))
				r.ExpiresAt = template.ExpiresAt.Add(time.Duration(shift))
				refs = append(refs, r)
			}
			// PostgreSQL takes the whole transaction's rows by COPY; SQLite
			// a multi-row INSERT per batch.
			if (!opts.Postgres && len(claims) == opts.Batch) || i == hi-1 {
				if err := write(ctx, conn, opts.Postgres, "blobs", t.blobCols, blobs); err != nil {
					return nil, rollback(ctx, conn, err)
				}
				if err := write(ctx, conn, opts.Postgres, "claims", t.claimCols, claims); err != nil {
					return nil, rollback(ctx, conn, err)
				}
				blobs, claims = blobs[:0], claims[:0]
			}
		}
		if _, err := conn.ExecContext(ctx, Rebind(opts.Postgres, `UPDATE namespaces SET active_claims = active_claims + ?, used_bytes = used_bytes + ? WHERE name = ?`),
			int64(hi-lo), int64(hi-lo)*t.size, template.Namespace); err != nil {
			return nil, rollback(ctx, conn, fmt.Errorf("livefill: namespace counters: %w", err))
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(hi)
		}
	}
	mrand.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
	return refs, nil
}

// templateRows is the template claim's row and its blob's, as the
// clones copy them, and what Fill reads of them.
type templateRows struct {
	claimCols, blobCols []string
	claimRow, blobRow   []any
	key                 string // the blob's object key
	created             int64  // the blob's created_at, Unix nanoseconds
	size                int64  // the claim's size
}

// readTemplate reads the rows of the template claim id and of its blob,
// and checks that they have the columns Fill changes or reads.
func readTemplate(ctx context.Context, db *sql.DB, pg bool, id string) (templateRows, error) {
	var t templateRows
	var err error
	t.claimCols, t.claimRow, err = row(ctx, db, pg, "claims", id)
	if err != nil {
		return t, err
	}
	for _, name := range []string{"blob_id", "size"} {
		if indexOf(t.claimCols, name) < 0 {
			return t, fmt.Errorf("livefill: the claims table has no %s column", name)
		}
	}
	blobID, _ := t.claimRow[indexOf(t.claimCols, "blob_id")].(string)
	t.blobCols, t.blobRow, err = row(ctx, db, pg, "blobs", blobID)
	if err != nil {
		return t, err
	}
	for _, name := range []string{"object_key", "created_at", "dedupable"} {
		if indexOf(t.blobCols, name) < 0 {
			return t, fmt.Errorf("livefill: the blobs table has no %s column", name)
		}
	}
	t.key, _ = t.blobRow[indexOf(t.blobCols, "object_key")].(string)
	created, ok := t.blobRow[indexOf(t.blobCols, "created_at")].(int64)
	if !ok {
		return t, errors.New("livefill: the template blob has no created_at")
	}
	t.created = created
	t.size, _ = t.claimRow[indexOf(t.claimCols, "size")].(int64)
	return t, nil
}

// linkObject gives a sampled clone's object key the template's object,
// as a hard link under the file store's root blobDir (nothing when it is
// empty).
func linkObject(blobDir, templateKey, key string) error {
	if blobDir == "" {
		return nil
	}
	dst := filepath.Join(blobDir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return err
	}
	if err := os.Link(filepath.Join(blobDir, filepath.FromSlash(templateKey)), dst); err != nil {
		return fmt.Errorf("livefill: link the object of a sampled clone: %w", err)
	}
	return nil
}

// dropIndexes drops the secondary indexes of tables (not those of
// primary keys and constraints) and returns their definitions.
func dropIndexes(ctx context.Context, conn *sql.Conn, pg bool, tables ...string) ([]string, error) {
	in := strings.TrimSuffix(strings.Repeat("?, ", len(tables)), ", ")
	query := `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (` + in + `)`
	if pg {
		query = Rebind(true, `SELECT i.indexname, i.indexdef FROM pg_indexes i
			WHERE i.schemaname = current_schema() AND i.tablename IN (`+in+`)
			AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`)
	}
	args := make([]any, len(tables))
	for i, t := range tables {
		args[i] = t
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("livefill: list the indexes: %w", err)
	}
	var names, defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return nil, err
		}
		names, defs = append(names, name), append(defs, def)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, name := range names {
		if _, err := conn.ExecContext(ctx, `DROP INDEX `+name); err != nil {
			return defs[:i], fmt.Errorf("livefill: drop index %s: %w", name, err)
		}
	}
	return defs, nil
}

// createIndexes runs the index definitions dropIndexes returned.
func createIndexes(ctx context.Context, conn *sql.Conn, pg bool, defs []string) error {
	if pg && len(defs) > 0 {
		// A sort that fits in memory builds the index in one pass.
		if _, err := conn.ExecContext(ctx, `SET maintenance_work_mem = '1GB'`); err != nil {
			return err
		}
	}
	for _, def := range defs {
		if _, err := conn.ExecContext(ctx, def); err != nil {
			return fmt.Errorf("livefill: create the index again (%s): %w", def, err)
		}
	}
	return nil
}

// row reads the row of table whose id is id, every column.
func row(ctx context.Context, db *sql.DB, pg bool, table, id string) ([]string, []any, error) {
	rows, err := db.QueryContext(ctx, Rebind(pg, `SELECT * FROM `+table+` WHERE id = ?`), id)
	if err != nil {
		return nil, nil, fmt.Errorf("livefill: read the template's %s row: %w", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	if !rows.Next() {
		return nil, nil, fmt.Errorf("livefill: no %s row with id %s", table, id)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, nil, err
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return cols, vals, rows.Err()
}

// clone copies a template row: set replaces columns by name, and every
// set time column (*_at, Unix nanoseconds) moves by shift.
func clone(cols []string, tmpl []any, shift int64, set map[string]any) []any {
	out := make([]any, len(cols))
	for i, c := range cols {
		switch v := tmpl[i].(type) {
		case int64:
			if strings.HasSuffix(c, "_at") && v != 0 {
				out[i] = v + shift
				continue
			}
		}
		out[i] = tmpl[i]
		if s, ok := set[c]; ok {
			out[i] = s
		}
	}
	return out
}

// write adds rows to table: by COPY on PostgreSQL, else in one
// multi-row INSERT.
func write(ctx context.Context, conn *sql.Conn, pg bool, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if pg {
		err := conn.Raw(func(dc any) error {
			c, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("livefill: a PostgreSQL connection is %T, not pgx's", dc)
			}
			_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
			return err
		})
		if err != nil {
			return fmt.Errorf("livefill: copy %d %s rows: %w", len(rows), table, err)
		}
		return nil
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	args := make([]any, 0, len(rows)*len(cols))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
		args = append(args, r...)
	}
	if _, err := conn.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("livefill: insert %d %s rows: %w", len(rows), table, err)
	}
	return nil
}

// Rebind turns ? placeholders into PostgreSQL's $n when pg is set: the
// statements here, and the measurements' own, are written once for both.
func Rebind(pg bool, q string) string {
	if !pg {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func rollback(ctx context.Context, conn *sql.Conn, err error) error {
	_, _ = conn.ExecContext(ctx, "ROLLBACK")
	return err
}

func indexOf(cols []string, name string) int {
	for i, c := range cols {
		if c == name {
			return i
		}
	}
	return -1
}

// idEncoding and newID make ids of the engine's form (engine/ids.go):
// 6 bytes of creation milliseconds and 80 random bits, in base64url
// characters in ASCII order, so clones sort by time like real ids.
var idEncoding = base64.NewEncoding("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz").WithPadding(base64.NoPadding)

func newID(prefix string, at time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return prefix + idEncoding.EncodeToString(b[:])
}

// spread is the engine's spreading element of an object key (ADR 0261).
func spread(blobID string) string {
	sum := sha256.Sum256([]byte(blobID))
	return fmt.Sprintf("%02x", sum[0])
}
