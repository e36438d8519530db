package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// Master key rotation (ADR 0075).
//
// A data key is stored wrapped by a master key, and the row names which
// one. Rotating the master key is: configure the new key as master_key
// and the old one in previous_master_keys on every replica (new data keys
// are wrapped by the new key, old ones still unwrap), then rewrap every
// live data key still wrapped by an old key. Only the 60-byte wrapped
// keys change; the data keys themselves, and so every object encrypted
// under them, stay as they are. Once no live key is left on the old
// master key, it can be removed from the config.
//
// Each rewrap is a compare-and-swap on the row's master key id, so
// replicas running it at once change each key once, a run interrupted by
// a crash is simply run again, and a key destroyed meanwhile stays
// destroyed (a tombstone never gets key material back).

// rewrapPage is how many live data keys one listing reads.
const rewrapPage = 100

// rewrapAttempts bounds the compare-and-swaps of one key: a swap fails
// only when another process changed the row in between, and each failure
// re-reads it.
const rewrapAttempts = 3

// RewrapDataKeys rewraps every live data key wrapped by a previous master
// key with the current one (only opt.Namespace's when set). A key that
// fails is counted and reported, and the run goes on with the others; an
// error is returned only when the run itself cannot go on (no master key,
// a database error), with the report of what was done so far. Safe to run
// on several replicas at once and to run again. It is an admin operation:
// each rewrapped key is logged as a data_key_rewrapped event with the
// actor of ctx.
func (s *Store) RewrapDataKeys(ctx context.Context, opt claimcheck.RewrapOptions) (claimcheck.RewrapReport, error) {
	rep := claimcheck.RewrapReport{DryRun: opt.DryRun, ByMasterKey: map[string]int{}}
	if opt.Namespace != "" {
		if err := claimcheck.ValidateNamespace(opt.Namespace); err != nil {
			return rep, fmt.Errorf("rewrap keys: %w", err)
		}
	}
	if s.keys == nil {
		return rep, fmt.Errorf("rewrap keys: %w: no master_key is configured; set the new master key in master_key and the old ones in previous_master_keys", claimcheck.ErrUnavailable)
	}
	rep.MasterKeyID = s.keys.ID()
	err := s.eachLiveKey(ctx, opt.Namespace, func(dk meta.DataKey) error {
		return s.rewrapKey(ctx, dk, opt.DryRun, &rep)
	})
	if err != nil {
		return rep, fmt.Errorf("rewrap keys: %w", err)
	}
	s.log.InfoContext(ctx, "rewrapped data keys", "master_key", rep.MasterKeyID, "dry_run", rep.DryRun, "namespace", opt.Namespace,
		"rewrapped", rep.Rewrapped, "already_current", rep.AlreadyCurrent, "failed", rep.Failed, "destroyed", rep.Destroyed,
		"actor", claimcheck.ActorFrom(ctx))
	return rep, nil
}

// rewrapKey moves one key to the current master key and counts the
// outcome in rep. It returns an error only for a database failure.
func (s *Store) rewrapKey(ctx context.Context, dk meta.DataKey, dryRun bool, rep *claimcheck.RewrapReport) error {
	for range rewrapAttempts {
		if dk.Destroyed() {
			rep.Destroyed++
			return nil
		}
		if dk.MasterKeyID == s.keys.ID() {
			rep.AlreadyCurrent++
			rep.ByMasterKey[dk.MasterKeyID]++
			return nil
		}
		key, err := s.keys.Unwrap(dk)
		if err != nil {
			rep.Failed++
			rep.ByMasterKey[dk.MasterKeyID]++
			rep.Failures = append(rep.Failures, claimcheck.RewrapFailure{Namespace: dk.Namespace, KeyID: dk.ID, MasterKeyID: dk.MasterKeyID, Error: err.Error()})
			s.log.WarnContext(ctx, "rewrap keys: a data key cannot be rewrapped", "namespace", dk.Namespace, "key", dk.ID, "master_key", dk.MasterKeyID, "err", err)
			return nil
		}
		if dryRun {
			rep.Rewrapped++
			rep.ByMasterKey[dk.MasterKeyID]++ // still there: nothing changes
			return nil
		}
		swapped, err := s.meta.RewrapDataKey(ctx, meta.Rewrap{ID: dk.ID, From: dk.MasterKeyID, To: s.keys.ID(),
			Wrapped: s.keys.Wrap(dk.Namespace, dk.ID, key), At: s.clock.Now()})
		if err != nil {
			return metaErr("rewrap data key "+dk.ID, err)
		}
		if swapped {
			rep.Rewrapped++
			rep.ByMasterKey[s.keys.ID()]++
			s.log.InfoContext(ctx, "rewrapped a data key", "namespace", dk.Namespace, "key", dk.ID, "from", dk.MasterKeyID, "to", s.keys.ID())
			return nil
		}
		// Another process changed the row first (rewrapped or destroyed
		// it): look again.
		id := dk.ID
		if dk, err = s.meta.DataKey(ctx, id); err != nil {
			return metaErr("rewrap data key "+id, err)
		}
	}
	rep.Failed++
	rep.ByMasterKey[dk.MasterKeyID]++
	rep.Failures = append(rep.Failures, claimcheck.RewrapFailure{Namespace: dk.Namespace, KeyID: dk.ID, MasterKeyID: dk.MasterKeyID,
		Error: fmt.Sprintf("the key changed under %d rewraps in a row; run again", rewrapAttempts)})
	return nil
}

// eachLiveKey calls fn for every live data key (of ns only, when set),
// page by page in id order.
func (s *Store) eachLiveKey(ctx context.Context, ns string, fn func(meta.DataKey) error) error {
	after := ""
	for {
		page, err := s.meta.LiveDataKeys(ctx, ns, after, rewrapPage)
		if err != nil {
			return metaErr("list data keys", err)
		}
		for _, dk := range page {
			if err := fn(dk); err != nil {
				return err
			}
		}
		if len(page) < rewrapPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// checkMasterKeys logs the configured master key ids at start, and warns
// when live data keys are wrapped by a master key the config does not
// have: their namespaces cannot be read or written until it is back in
// previous_master_keys (most likely it was removed before a rewrap
// finished). It only logs: the other namespaces work, and each request on
// these answers the same ErrUnavailable.
func (s *Store) checkMasterKeys(ctx context.Context) {
	if s.keys != nil {
		// Which keys this replica has: during a rotation, the way to see
		// that every replica runs the new config before the rewrap.
		s.log.InfoContext(ctx, "encryption at rest: master keys", "master_key", s.keys.ID(), "previous_master_keys", s.keys.PreviousIDs())
	}
	unknown := map[string][]string{} // master key id -> namespaces
	err := s.eachLiveKey(ctx, "", func(dk meta.DataKey) error {
		if s.keys != nil {
			if _, err := s.keys.Opener(dk); err == nil {
				return nil
			}
		}
		unknown[dk.MasterKeyID] = append(unknown[dk.MasterKeyID], dk.Namespace)
		return nil
	})
	if err != nil {
		s.log.WarnContext(ctx, "could not check which master keys wrap the data keys", "err", err)
		return
	}
	for _, id := range slices.Sorted(maps.Keys(unknown)) {
		ns := unknown[id]
		s.log.WarnContext(ctx, "data keys are wrapped by a master key that is not configured: their namespaces cannot be read or written; add it to previous_master_keys (or master_key)",
			"master_key", id, "data_keys", len(ns), "namespaces", ns[:min(len(ns), 20)])
	}
}
