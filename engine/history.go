package engine

import (
	"time"

	"github.com/claimcheck/claimcheck"
)

// HistoryConfig is the history section of the config:
//
//	history:
//	  retention: 720h
//
// A finished claim keeps its row so that redeeming or stating it answers
// ErrGone with the reason (expired, released, deleted, …), and a
// collected blob keeps its row in state deleted. After Retention the
// background sweeper deletes both (ADR 0077); from then on the claim
// answers ErrNotFound. Without it the metadata database would grow with
// every put for the life of the store.
type HistoryConfig struct {
	// Retention is how long the rows of finished claims and collected
	// blobs are kept (default 720h, 30 days; negative keeps them for
	// ever).
	Retention claimcheck.Retention `yaml:"retention" json:"retention"`
}

// DefaultHistoryRetention is the retention of finished rows when the
// config names none.
const DefaultHistoryRetention = 30 * 24 * time.Hour
