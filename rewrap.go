package claimcheck

// RewrapOptions selects what RewrapDataKeys works on.
type RewrapOptions struct {
	// Namespace limits the run to one namespace's key; "" is every
	// namespace.
	Namespace string
	// DryRun changes nothing: it reports what a run would do, and checks
	// that every key it would rewrap unwraps.
	DryRun bool
}

// RewrapReport is what RewrapDataKeys did (or, on a dry run, would do)
// to the live data keys it found. Destroyed keys are never listed.
type RewrapReport struct {
	// MasterKeyID is the current master key, the one keys are moved to.
	MasterKeyID string `json:"master_key_id"`
	DryRun      bool   `json:"dry_run"`
	// Rewrapped keys were wrapped by a previous master key and are now
	// wrapped by the current one (on a dry run: would be).
	Rewrapped int `json:"rewrapped"`
	// AlreadyCurrent keys were wrapped by the current master key already,
	// including those another process rewrapped during this run.
	AlreadyCurrent int `json:"already_current"`
	// Failed keys could not be rewrapped; Failures says why. Their master
	// key is not configured, or the wrapped key does not unwrap.
	Failed   int             `json:"failed"`
	Failures []RewrapFailure `json:"failures,omitempty"`
	// Destroyed keys were live when listed and destroyed before their
	// turn: left alone.
	Destroyed int `json:"destroyed"`
	// ByMasterKey counts the live data keys by the master key that wraps
	// them at the end of the run (on a dry run: now). A rotation is done
	// when only MasterKeyID is left.
	ByMasterKey map[string]int `json:"by_master_key"`
}

// Pending is the number of live keys left on master keys other than the
// current one.
func (r RewrapReport) Pending() int {
	n := 0
	for id, c := range r.ByMasterKey {
		if id != r.MasterKeyID {
			n += c
		}
	}
	return n
}

// RewrapFailure is one key RewrapDataKeys could not rewrap.
type RewrapFailure struct {
	Namespace   string `json:"namespace"`
	KeyID       string `json:"key_id"`
	MasterKeyID string `json:"master_key_id"`
	Error       string `json:"error"`
}
