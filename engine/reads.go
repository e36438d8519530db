package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// readRecorder writes read receipts off the redeem path. A redeem checks
// the claim (and finishes it in-line if it is due) with reads only, serves
// the bytes, and hands its receipt here; one goroutine writes whatever has
// queued up in one transaction, then the next batch (group commit). So a
// redeem never waits for the metadata writer, which on SQLite is shared
// with puts and the sweeper's pages.
//
// A redeem of a delete_after_read claim whose own earlier receipt is not
// written yet waits for it, so that the redelivery window is exact even
// when reads follow each other within milliseconds (or a test's fake clock
// jumps past the window between them).
//
// What this gives up: a crash loses the receipts of the last moments. A
// lost first read of a delete_after_read claim only means the claim lives
// until max_age, the safe direction; it is never deleted early. Operations
// that report or act on reads (stat, release, delete) call sync first, so
// they see every read served before them.
//
// Receipts linger: the writer starts a batch receiptLinger after the first
// receipt of it arrived (or at once when receiptBatch are queued, or when
// someone waits in sync), not as soon as the previous batch is written.
// Under concurrent redeems the batches were two or three reads each, and
// a batch costs the database about the same whatever it carries; a few
// milliseconds more before a receipt is written changes nothing a caller
// sees, since everything that reports or acts on reads calls sync, which
// starts the batch at once (ADR 0160).
type readRecorder struct {
	meta meta.Store
	log  *slog.Logger

	mu       sync.Mutex
	unsaved  map[string]int // claim id → receipts queued or being written
	pending  []meta.Read
	round    chan struct{} // closed once the current pending batch is written
	inflight chan struct{} // the round being written now, nil when idle
	wake     chan struct{} // capacity 1: "there is something to write"
	flush    chan struct{} // capacity 1: "someone waits: write without lingering"
	stop     chan struct{}
	done     chan struct{}
}

func newReadRecorder(m meta.Store, log *slog.Logger) *readRecorder {
	r := &readRecorder{
		meta: m, log: log,
		unsaved: map[string]int{},
		round:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
		flush:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go r.loop()
	return r
}

// add queues the receipt of a served read of claim id of namespace ns by
// actor. The receipt carries the actor because it is written later, in a
// batch with other callers' receipts; the metadata store writes the
// "redeemed" audit event from it in the same transaction. It carries the
// namespace so that the store finds the claim by namespace and id, on one
// shard of a PostgreSQL distributed by namespace (ADR 0264).
func (r *readRecorder) add(id, ns string, at time.Time, actor string) {
	r.mu.Lock()
	r.pending = append(r.pending, meta.Read{ClaimID: id, Namespace: ns, At: at, Actor: actor})
	r.unsaved[id]++
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// unsavedFor reports whether a receipt for claim id is not written yet.
func (r *readRecorder) unsavedFor(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unsaved[id] > 0
}

// sync waits until every receipt queued before the call is written.
func (r *readRecorder) sync(ctx context.Context) error {
	r.mu.Lock()
	round := r.round
	if len(r.pending) == 0 {
		round = r.inflight // nil: nothing queued and nothing being written
	}
	r.mu.Unlock()
	if round == nil {
		return nil
	}
	select {
	case r.flush <- struct{}{}:
	default:
	}
	select {
	case <-round:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *readRecorder) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.wake:
			r.linger()
			r.writeBatch()
		case <-r.stop:
			r.writeBatch()
			return
		}
	}
}

// Receipt batching: how long the writer waits for more receipts after
// the first of a batch, and how many it writes without waiting longer.
const (
	receiptLinger = 10 * time.Millisecond
	receiptBatch  = 256
)

// linger waits until the pending batch is worth a write: receiptLinger
// after its first receipt, receiptBatch receipts, a caller in sync, or
// the recorder stopping.
func (r *readRecorder) linger() {
	t := time.NewTimer(receiptLinger)
	defer t.Stop()
	for {
		r.mu.Lock()
		n := len(r.pending)
		r.mu.Unlock()
		if n >= receiptBatch {
			return
		}
		select {
		case <-r.wake: // one more receipt: count again
		case <-t.C:
			return
		case <-r.flush:
			return
		case <-r.stop:
			return
		}
	}
}

// writeBatch writes the pending receipts in one RecordReads call. A
// failed write is retried once, with only the receipts the store says it
// did not write when it wrote some (meta.UnrecordedReadsError: a store
// that writes each namespace's receipts by itself), so that none counts
// twice; after that the receipts are dropped with a warning (their claims
// simply keep their current deadlines).
func (r *readRecorder) writeBatch() {
	r.mu.Lock()
	batch, round := r.pending, r.round
	r.pending, r.round, r.inflight = nil, make(chan struct{}), round
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight = nil
		for _, rd := range batch {
			if r.unsaved[rd.ClaimID]--; r.unsaved[rd.ClaimID] <= 0 {
				delete(r.unsaved, rd.ClaimID)
			}
		}
		r.mu.Unlock()
		close(round)
	}()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	todo := batch
	for range 2 {
		if _, err = r.meta.RecordReads(ctx, todo); err == nil {
			return
		}
		if unrecorded, ok := errors.AsType[*meta.UnrecordedReadsError](err); ok {
			todo = unrecorded.Reads
		}
	}
	r.log.WarnContext(ctx, "redeem: could not record reads; their claims keep their current deadlines", "reads", len(todo), "err", err)
}

// close writes what is pending and stops the writer.
func (r *readRecorder) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}
