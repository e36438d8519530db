package meta

import (
	"context"
	"time"
)

// HistoryStore prunes the rows of finished work (ADR 0077).
//
// A finished claim keeps its row, so that a redeem or stat of it answers
// gone with the reason instead of not found, until CompactHistory turns
// it into a tombstone that answers the same; a collected blob keeps its
// row in state deleted until then. Neither has a deadline of its own; without
// pruning the claims and blobs tables would grow with every put for the
// life of the store. Pruning deletes them once they are older than the
// history retention. It never touches a live row: a claim that is pending
// or active (held claims are never finished, so never pruned) or a blob in
// any state but deleted.
type HistoryStore interface {
	// PruneHistory deletes up to limit finished claims whose finish is
	// before before, oldest first, with their releases and upload rows;
	// then up to limit deleted blobs whose collection finished before
	// before and that no claim row references any more (a claim finished
	// later than its blob was collected keeps the blob's row until the
	// claim goes), and the leases that expired before before (left by a
	// holder that died). Each is one bounded transaction.
	//
	// It also deletes the tombstones of compacted claims finished before
	// before: up to limit rows, or, where the store keeps them in day
	// partitions, every whole day that ends by before (TombstoneDays).
	PruneHistory(ctx context.Context, before time.Time, limit int) (PruneResult, error)

	// CompactHistory turns up to limit claims finished before before,
	// oldest first, into tombstones (ADR 0263): the claim keeps only its
	// id, namespace, finish reason and time, which is what answering gone
	// needs (Claim returns it finished, with those fields and no others);
	// its other rows (labels, releases, upload) go, and so do the rows of
	// collected blobs that no claim row references any more and whose
	// collection finished before before. Its events stay. A claim with
	// events an enabled, active subscription has not delivered yet is
	// compacted after they are (the feed reads its labels). It returns how
	// many claims it compacted; the caller repeats it while that is limit.
	CompactHistory(ctx context.Context, before time.Time, limit int) (int, error)
}

// PruneResult counts what PruneHistory deleted.
type PruneResult struct {
	Claims        int
	Blobs         int
	Tombstones    int // rows deleted one by one
	TombstoneDays int // day partitions dropped whole
}
