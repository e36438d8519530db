package sqlmeta

import (
	"context"

	"github.com/claimcheck/claimcheck/meta"
)

// Read receipts in one statement (PostgreSQL, ADR 0160).
//
// The transaction of RecordReads takes five round trips per batch (BEGIN,
// the claims locked and read, their new counters written, the redeemed
// events, COMMIT), and its statements have one placeholder group per
// read, so every batch size is a statement of its own text that each
// pooled connection parses and plans again. Under concurrent redeems the
// engine's batches are small (two or three reads), and this was a fifth
// of PostgreSQL's CPU per put + redeem. recordReadsOnce writes a batch as
// one statement outside a transaction block (Store.once) whose text does
// not depend on the batch: the reads travel as four arrays. It computes
// what the transaction computes in Go — reads counted, the earliest read
// the first, the latest the last, delete_after_read lowering the due time
// to first read + retention — in SQL, locks the claims in id order first
// (the order of every multi-claim writer), and inserts one redeemed event
// per read of an active claim, and a first_redeemed event after the
// first read of a claim whose count was zero before (ADR 0240). An event
// number already taken (two events in one nanosecond) fails the statement
// as a whole through its guard, and the batch goes to the transaction,
// which renumbers (audit.go).
// Reads of claims that are not active change nothing and come back as
// skipped, as from the transaction.

const recordReadsOnceQuery = `WITH r (claim_id, at, seq, actor, fseq) AS (
		SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]))),
	a AS (SELECT claim_id, count(*) AS n, min(at) AS first_at, max(at) AS last_at FROM r GROUP BY claim_id),
	f AS (SELECT DISTINCT ON (claim_id) claim_id, at, fseq, actor FROM r ORDER BY claim_id, seq),
	l AS (SELECT id, reads FROM claims WHERE id IN (SELECT claim_id FROM a) AND state = 'active' ORDER BY id FOR UPDATE),
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
		FROM a, l WHERE claims.id = a.claim_id AND claims.id = l.id AND claims.state = 'active'
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

// recordReadsOnce tries reads as one statement; done is false when the
// statement changed nothing because an event number was taken: the
// caller records the batch in a transaction then.
func (s *Store) recordReadsOnce(ctx context.Context, reads []meta.Read) (skipped []string, done bool, err error) {
	ids := make([]string, len(reads))
	ats := make([]int64, len(reads))
	seqs := make([]int64, len(reads))
	fseqs := make([]int64, len(reads))
	actors := make([]string, len(reads))
	// Event numbers as appendEvents gives them: the read's time, moved up
	// past the previous one of the batch. Each read keeps the number
	// after its own for a first_redeemed event, used by the first read
	// of a claim whose count was zero.
	var last int64
	for i, r := range reads {
		ids[i], ats[i], actors[i] = r.ClaimID, r.At.UnixNano(), r.Actor
		seq := max(ats[i], last+1)
		seqs[i], fseqs[i], last = seq, seq+1, seq+1
	}
	updated := map[string]bool{}
	err = s.once(ctx, func(q *txq) error {
		clear(updated) // a retried statement answers anew
		return q.execReturningIDs(updated, recordReadsOnceQuery, ids, ats, seqs, actors, fseqs,
			meta.ReasonReadRetention, meta.EventRedeemed, meta.EventFirstRedeemed)
	})
	if pgCode(err) == errLostSwap {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, id := range ids {
		if !updated[id] {
			skipped = append(skipped, id)
		}
	}
	return skipped, true, nil
}
