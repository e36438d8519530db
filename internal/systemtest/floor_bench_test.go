package systemtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// putFloor is the least a claim-check store on PostgreSQL and S3 can do
// for one put and one redeem, run in this process against the same
// PostgreSQL and MinIO as the server it is compared with: the storage
// calls, one sha256 of the bytes on each side, and the fewest statements
// a claim needs. It keeps nothing else of claimcheck (no quota, no
// dedup, no events, no read receipts, no compression, no HTTP hop).
//
// With intent, a put writes its row before the object and marks it live
// after (two commits): the object is owned before its first byte exists,
// the promise claimcheck keeps. Without, one row after the object (one
// commit): what a store that leaves a crash's objects unowned could do.
// Inline, the bytes go into the one row and MinIO is not called: the
// floor under inline_below (ADR 0292), for payloads up to inlineFloorMax.
type putFloor struct {
	name   string
	db     *sql.DB
	s3c    *s3.Client
	bucket string
	intent bool
	inline bool
	seq    atomic.Int64
}

// inlineFloorMax is the largest payload the inline floor runs for.
const inlineFloorMax = 64 << 10

// floorsFor are the floors that run for payloads of size bytes.
func floorsFor(floors []*putFloor, size int) []*putFloor {
	var out []*putFloor
	for _, f := range floors {
		if !f.inline || size <= inlineFloorMax {
			out = append(out, f)
		}
	}
	return out
}

// newPutFloors makes both floors on a PostgreSQL schema of their own and
// the bucket of the MinIO baseline.
func newPutFloors(b *testing.B, s3c *s3.Client, bucket string) []*putFloor {
	_, db := testsvc.Postgres(b)
	_, err := db.Exec(`CREATE TABLE floor_claims (
		id         BIGINT PRIMARY KEY,
		object_key TEXT NOT NULL,
		digest     TEXT NOT NULL DEFAULT '',
		size       BIGINT NOT NULL,
		state      TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		data       BYTEA
	)`)
	if err == nil {
		_, err = db.Exec(`ALTER TABLE floor_claims ALTER COLUMN data SET STORAGE EXTERNAL`)
	}
	if err != nil {
		b.Fatal(err)
	}
	one := &putFloor{name: "floor-1commit", db: db, s3c: s3c, bucket: bucket}
	two := &putFloor{name: "floor-intent", db: db, s3c: s3c, bucket: bucket, intent: true}
	two.seq.Store(1 << 40) // one table, ids apart
	inline := &putFloor{name: "floor-inline", db: db, inline: true}
	inline.seq.Store(2 << 40)
	return []*putFloor{one, two, inline}
}

// inlineOp is op for the inline floor: one row with the bytes, read back
// and verified.
func (f *putFloor) inlineOp(ctx context.Context, p []byte) error {
	id := f.seq.Add(1)
	now := time.Now().UnixNano()
	sum := sha256.Sum256(p)
	if _, err := f.db.ExecContext(ctx, `INSERT INTO floor_claims (id, object_key, digest, size, state, created_at, expires_at, data)
		VALUES ($1, '', $2, $3, 'active', $4, $5, $6)`, id, hex.EncodeToString(sum[:]), len(p), now, now+int64(time.Hour), p); err != nil {
		return err
	}
	var want string
	var data []byte
	if err := f.db.QueryRowContext(ctx, `SELECT digest, data FROM floor_claims WHERE id = $1 AND state = 'active'`, id).
		Scan(&want, &data); err != nil {
		return err
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
		return fmt.Errorf("floor: row %d read back %d bytes of another digest", id, len(data))
	}
	return nil
}

// op puts p and reads it back, verified.
func (f *putFloor) op(ctx context.Context, p []byte) error {
	if f.inline {
		return f.inlineOp(ctx, p)
	}
	id := f.seq.Add(1)
	key := fmt.Sprintf("floor/%d", id)
	now := time.Now().UnixNano()
	sum := sha256.Sum256(p)
	digest := hex.EncodeToString(sum[:])
	insert := `INSERT INTO floor_claims (id, object_key, digest, size, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	if f.intent {
		if _, err := f.db.ExecContext(ctx, insert, id, key, "", len(p), "pending", now, now+int64(time.Hour)); err != nil {
			return err
		}
	}
	if _, err := f.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key),
		Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p)))}); err != nil {
		return err
	}
	var err error
	if f.intent {
		_, err = f.db.ExecContext(ctx, `UPDATE floor_claims SET state = 'active', digest = $2 WHERE id = $1 AND state = 'pending'`, id, digest)
	} else {
		_, err = f.db.ExecContext(ctx, insert, id, key, digest, len(p), "active", now, now+int64(time.Hour))
	}
	if err != nil {
		return err
	}
	var gotKey, want string
	var size int64
	if err := f.db.QueryRowContext(ctx, `SELECT object_key, digest, size FROM floor_claims WHERE id = $1 AND state = 'active'`, id).
		Scan(&gotKey, &want, &size); err != nil {
		return err
	}
	out, err := f.s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(gotKey)})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return err
	}
	if n != size || hex.EncodeToString(h.Sum(nil)) != want {
		return fmt.Errorf("floor: %s read back %d bytes of another digest", key, n)
	}
	return nil
}

// stackMeter reads the counters of the processes under a benchmark:
// PostgreSQL's and MinIO's CPU (every process of that command name),
// and PostgreSQL's writing transactions and WAL bytes, when
// TEST_DATABASE_URL is set.
type stackMeter struct {
	admin *sql.DB // nil: no PostgreSQL counters
}

// stackReading is the counters at one moment.
type stackReading struct {
	pg, minio     time.Duration
	commits, wal  int64
	pgCountersSet bool
}

func newStackMeter(b *testing.B) *stackMeter {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		return &stackMeter{}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return &stackMeter{admin: db}
}

func (m *stackMeter) read() stackReading {
	r := stackReading{pg: commandsCPU("postgres"), minio: commandsCPU("minio")}
	if m.admin != nil {
		// The next transaction id counts the transactions that wrote
		// (a read-only one takes none), at once: the cumulative
		// statistics of pg_stat_database lag by up to a second.
		err := m.admin.QueryRow(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
			pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&r.commits, &r.wal)
		r.pgCountersSet = err == nil
	}
	return r
}

// stackUse sums what the stack spent over some rounds.
type stackUse struct {
	pg, minio    time.Duration
	commits, wal int64
	pgCounters   bool
}

func (u *stackUse) add(a, b stackReading) {
	u.pg += b.pg - a.pg
	u.minio += b.minio - a.minio
	u.commits += b.commits - a.commits
	u.wal += b.wal - a.wal
	u.pgCounters = a.pgCountersSet && b.pgCountersSet
}

// report gives the use per put + redeem pair as metrics named after who.
func (u stackUse) report(b *testing.B, who string, pairs int) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(pairs) }
	b.ReportMetric(per(u.pg), who+"-pg-cpu-us/pair")
	b.ReportMetric(per(u.minio), who+"-minio-cpu-us/pair")
	if u.pgCounters {
		b.ReportMetric(float64(u.commits)/float64(pairs), who+"-write-xacts/pair")
		b.ReportMetric(float64(u.wal)/float64(pairs), who+"-wal-bytes/pair")
	}
}
