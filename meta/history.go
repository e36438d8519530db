package meta

import (
	"context"
	"time"
)

// HistoryStore prunes the rows of finished work (ADR 0077).
//
// A finished claim keeps its row, so that a redeem or stat of it answers
// gone with the reason instead of not found, and a collected blob keeps
// its row in state deleted. Neither has a deadline of its own; without
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
	PruneHistory(ctx context.Context, before time.Time, limit int) (PruneResult, error)
}

// PruneResult counts the rows PruneHistory deleted.
type PruneResult struct {
	Claims int
	Blobs  int
}
