// Package history records what clients of a claimcheck server asked and
// were answered, and checks the record against the lifecycle promises
// after a run (ADR 0287): every acknowledged put redeems its bytes until
// its earliest legitimate end, nothing redeems after its documented end,
// the usage the server reports equals the live set, and the store's
// inventory at the end has no unowned or missing object and no object
// of a finished claim kept past the backstop bound.
//
// A record is JSON lines of Event, one line when an operation is invoked
// and one when it completes (Recorder writes them around the Go client);
// Check reads them back and returns a Report. Times are the client's, so
// the checker allows Options.Skew either way around every deadline, and
// an operation whose answer never came (or was unavailable) counts as
// perhaps done: a check fails only on what no order of events explains.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Operations, the Event.Op values.
const (
	OpPut     = "put"
	OpRedeem  = "redeem"
	OpRelease = "release"
	OpExtend  = "extend"
	OpDelete  = "delete"
	OpHold    = "hold"
	OpUsage   = "usage" // the namespace's usage as the server reports it
	// OpInventory is what the store holds at the end of a run, as
	// `claimcheck fsck --json` reports it (Recorder.Inventory).
	OpInventory = "inventory"
)

// Phases, the Event.Phase values: an invocation, then one completion.
const (
	PhaseInvoke = "invoke"
	PhaseOK     = "ok"
	PhaseFail   = "fail"
)

// Event is one line of a history.
type Event struct {
	// Seq numbers the events in the order they were written; a
	// completion's Of is its invocation's Seq.
	Seq   int64     `json:"seq"`
	Of    int64     `json:"of,omitempty"`
	Op    string    `json:"op"`
	Phase string    `json:"phase"`
	Time  time.Time `json:"time"`
	NS    string    `json:"ns,omitempty"`
	// ID is the claim (a put's, once acknowledged).
	ID string `json:"id,omitempty"`
	// Digest is what a put stored or what a redeem read back.
	Digest string `json:"digest,omitempty"`
	// Size is the bytes a put stored (its original size).
	Size int64 `json:"size,omitempty"`
	// ExpiresAt is an acknowledged put's max_age deadline, or an
	// extension's new one.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ReadWindow is, for a put to a delete-after-read namespace, its
	// retention_after_read: the claim ends that long after its first
	// read or its last release.
	ReadWindow time.Duration `json:"read_window,omitempty"`
	// Error is a failure's class: gone, expired, not_found, unavailable,
	// or another error's code or text.
	Error string `json:"error,omitempty"`
	// ActiveClaims and UsedBytes are a usage answer.
	ActiveClaims int64 `json:"active_claims,omitempty"`
	UsedBytes    int64 `json:"used_bytes,omitempty"`
	// Inventory is an inventory's findings.
	Inventory *Inventory `json:"inventory,omitempty"`
}

// Inventory is what the store holds beside the clients' view: objects
// no blob owns, blobs of finished claims whose objects wait for
// collection, blobs whose object is missing, namespaces whose quota
// counters disagree with their live claims.
type Inventory struct {
	Unowned    int `json:"unowned,omitempty"`
	Missing    int `json:"missing,omitempty"`
	QuotaDrift int `json:"quota_drift,omitempty"`
	Reclaim    int `json:"reclaimable,omitempty"`
	// OldestReclaim is when the oldest blob waiting for collection
	// lost its last claim (zero: none waits).
	OldestReclaim time.Time `json:"oldest_reclaimable,omitzero"`
}

// Read reads a history of JSON lines; the error names the line.
func Read(r io.Reader) ([]Event, error) {
	var evs []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}
