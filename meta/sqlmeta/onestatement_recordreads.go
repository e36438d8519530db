package sqlmeta

import (
	"context"
	"strings"

	"github.com/claimcheck/claimcheck/meta"
)

// Read receipts in one statement (PostgreSQL, ADR 0160), one per
// namespace of a batch (ADR 0264, recordreads.go).
//
// The transaction of RecordReads takes five round trips per group (BEGIN,
// the claims locked and read, their new counters written, the redeemed
// events, COMMIT), and its statements have one placeholder group per
// read, so every batch size is a statement of its own text that each
// pooled connection parses and plans again. Under concurrent redeems the
// engine's batches are small (two or three reads), and this was a fifth
// of PostgreSQL's CPU per put + redeem. recordReadsOnce writes a group as
// one statement outside a transaction block (Store.once) whose text does
// not depend on the group's size: the reads travel as arrays. It computes
// what the transaction computes in Go — reads counted, the earliest read
// the first, the latest the last, delete_after_read lowering the due time
// to first read + retention — in SQL, locks the claims of the group's
// namespace in id order first (the order of every multi-claim writer),
// and inserts one redeemed event per read of an active claim, and a
// first_redeemed event after the first read of a claim whose count was
// zero before (ADR 0240). An event number already taken (two events in
// one nanosecond) fails the statement as a whole through its guard, and
// the group goes to the transaction, which renumbers (audit.go).
// Reads of claims that are not active (in the namespace) change nothing
// and come back as skipped, as from the transaction.
//
// The statement names its namespace in the lock (l) and in the update
// (u), the two parts that touch claims; the events it inserts are the
// updated claims', so of that namespace too. A group of reads without a
// namespace takes the statement without it.

const recordReadsOnceTemplate = `WITH r (claim_id, at, seq, actor, fseq) AS (
		SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]))),
	a AS (SELECT claim_id, count(*) AS n, min(at) AS first_at, max(at) AS last_at FROM r GROUP BY claim_id),
	f AS (SELECT DISTINCT ON (claim_id) claim_id, at, fseq, actor FROM r ORDER BY claim_id, seq),
	l AS (SELECT id, reads FROM claims WHERE {ns}id IN (SELECT claim_id FROM a) AND state = 'active' ORDER BY id FOR UPDATE),
	u AS (
		UPDATE claims SET reads = claims.reads + a.n,
			first_read_at = LEAST(claims.first_read_at, a.first_at),
			last_read_at = GREATEST(claims.last_read_at, a.last_at),
			due_at = CASE WHEN claims.delete_after_read <> 0 AND (claims.due_at IS NULL
					OR LEAST(claims.first_read_at, a.first_at) + claims.retention_after_read < claims.due_at)
				THEN LEAST(claims.first_read_at, a.first_at) + claims.retention_after_read ELSE claims.due_at END,
			due_reason = CASE WHEN claims.delete_after_read <> 0 AND (claims.due_at IS NULL
					OR LEAST(claims.first_read_at, a.first_at) + claims.retention_after_read < claims.due_at)
				THEN ? ELSE claims.due_reason END
		FROM a, l WHERE {claims.ns}claims.id = a.claim_id AND claims.id = l.id AND claims.state = 'active'
		RETURNING claims.id, claims.namespace, claims.blob_id, l.reads AS before),
	w AS (
		SELECT r.seq, r.at, CAST(? AS TEXT) AS kind, u.namespace, u.id, u.blob_id, r.actor FROM r JOIN u ON u.id = r.claim_id
		UNION ALL
		SELECT f.fseq, f.at, CAST(? AS TEXT), u.namespace, u.id, u.blob_id, f.actor FROM f JOIN u ON u.id = f.claim_id WHERE u.before = 0),
	e AS (
		INSERT INTO events (` + eventColumns + `)
		SELECT w.seq, w.at, w.kind, w.namespace, w.id, w.blob_id, '', w.actor, '', '' FROM w
		ON CONFLICT DO NOTHING RETURNING seq)
	SELECT u.id FROM u
	WHERE 1 / CASE WHEN (SELECT count(*) FROM e) = (SELECT count(*) FROM w) THEN 1 ELSE 0 END = 1`

// The statement of a group of one namespace, and of a group of reads
// that name none.
var (
	recordReadsOnceInQuery = strings.NewReplacer("{ns}", "namespace = ? AND ", "{claims.ns}", "claims.namespace = ? AND ").
				Replace(recordReadsOnceTemplate)
	recordReadsOnceQuery = strings.NewReplacer("{ns}", "", "{claims.ns}", "").Replace(recordReadsOnceTemplate)
)

// recordReadsOnce tries group g of reads as one statement, with the
// event numbers seqs (the number after a read's own is its
// first_redeemed event's), and sets skip for its reads of claims not
// active. done is false when the statement changed nothing because an
// event number was taken: the caller records the group in a transaction
// then.
func (s *Store) recordReadsOnce(ctx context.Context, reads []meta.Read, g readGroup, seqs []int64, skip []bool) (done bool, err error) {
	n := len(g.idx)
	ids := make([]string, n)
	ats := make([]int64, n)
	rseqs := make([]int64, n)
	fseqs := make([]int64, n)
	actors := make([]string, n)
	for j, i := range g.idx {
		r := reads[i]
		ids[j], ats[j], actors[j] = r.ClaimID, r.At.UnixNano(), r.Actor
		rseqs[j], fseqs[j] = seqs[i], seqs[i]+1
	}
	query, args := recordReadsOnceQuery, []any{ids, ats, rseqs, actors, fseqs, meta.ReasonReadRetention}
	if g.ns != "" {
		query, args = recordReadsOnceInQuery, []any{ids, ats, rseqs, actors, fseqs, g.ns, meta.ReasonReadRetention, g.ns}
	}
	args = append(args, meta.EventRedeemed, meta.EventFirstRedeemed)
	updated := map[string]bool{}
	err = s.once(ctx, func(q *txq) error {
		clear(updated) // a retried statement answers anew
		return q.execReturningIDs(updated, query, args...)
	})
	if pgCode(err) == errLostSwap {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, i := range g.idx {
		skip[i] = !updated[reads[i].ClaimID]
	}
	return true, nil
}
