package dispatch

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/service"
)

// Delivery is shared out over the replicas in shards (ADR 0285): a
// subscription belongs to shard shardOf(tenant, id), and the replica
// holding that shard's lease is the only one delivering for it. Every
// replica keeps a member lease while it runs; from the live member and
// shard leases each one works out its fair share, takes free shards up to
// it, and asks a replica holding more than its share for one
// (RequestLeaseRelease) when none is free. A replica asked gives the
// shard up once the rounds it has running in it end, so two replicas
// never deliver one subscription at once while both are alive. A replica
// that dies keeps its shards until their leases lapse (leaseTTL); then
// the others take them and go on from the stored cursors and parked
// events.

// shardCount is how many shards there are. It is fixed: every replica
// must put a subscription in the same shard, so a different count would
// need every replica stopped first.
const shardCount = 16

// Lease names. The member and shard leases share the DispatchLease
// prefix, so one Leases read sees them all and the single lease of a
// replica from before the shards: while one of those delivers, this
// replica holds nothing (a rolling upgrade delivers nothing twice).
const (
	memberPrefix = DispatchLease + "/member/"
	shardPrefix  = DispatchLease + "/shard/"
)

// lookEvery is how often a replica reads the leases to rebalance.
const lookEvery = time.Second

// shardOf is the shard of a subscription: FNV-1a of its tenant and id.
func shardOf(tenant, id string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return int(h.Sum32() % shardCount)
}

func shardLeaseName(k int) string { return fmt.Sprintf("%s%02d", shardPrefix, k) }

// Leaser is what the shards need of the metadata store.
type Leaser interface {
	service.Leaser
	Leases(ctx context.Context, prefix string, now time.Time) ([]meta.LeaseHolding, error)
	RequestLeaseRelease(ctx context.Context, name, holder string) error
}

// shards is this replica's part of the delivery. It is used by the
// dispatcher's loop only (hold, tick), never by the rounds.
type shards struct {
	store  Leaser
	holder string
	clock  clock.Clock
	log    *slog.Logger

	member   *service.Lease
	leases   [shardCount]*service.Lease
	held     [shardCount]bool
	draining [shardCount]bool // asked for: no new rounds, released when the running ones end
	lookedAt time.Time
}

func newShards(store Leaser, holder string, clk clock.Clock, log *slog.Logger) *shards {
	lc := func(name string) service.LeaseConfig {
		// Renewed at a third of the TTL: a write every few seconds.
		return service.LeaseConfig{Name: name, Holder: holder, TTL: leaseTTL, RenewAfter: leaseTTL / 3, Clock: clk, Logger: log}
	}
	s := &shards{store: store, holder: holder, clock: clk, log: log,
		member: service.NewLease(store, lc(memberPrefix+holder))}
	for k := range s.leases {
		s.leases[k] = service.NewLease(store, lc(shardLeaseName(k)))
	}
	return s
}

// delivers reports whether this replica starts rounds for subscriptions
// of shard k.
func (s *shards) delivers(k int) bool { return s.held[k] && !s.draining[k] }

// count is how many shards this replica holds.
func (s *shards) count() int {
	n := 0
	for _, h := range s.held {
		if h {
			n++
		}
	}
	return n
}

// keep renews the member lease and the shards held, and once a
// lookEvery rebalances. It returns the shards taken now: their
// subscriptions' states must be read afresh (another replica moved their
// cursors).
func (s *shards) keep(ctx context.Context) (taken []int) {
	if _, err := s.member.Keep(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("dispatch: member lease", "err", err)
	}
	for k, l := range s.leases {
		if !s.held[k] {
			continue
		}
		t, err := l.Keep(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("dispatch: shard lease", "shard", k, "err", err)
		}
		if !t.Held {
			s.held[k], s.draining[k] = false, false
		}
	}
	if s.clock.Now().Sub(s.lookedAt) < lookEvery {
		return nil
	}
	s.lookedAt = s.clock.Now()
	live, err := s.store.Leases(ctx, DispatchLease, s.clock.Now())
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("dispatch: read the dispatch leases", "err", err)
		}
		return nil
	}
	return s.rebalance(ctx, live)
}

// rebalance takes free shards up to this replica's fair share, marks the
// ones asked for draining while it holds more than its share, and asks
// the replica holding the most for one when it holds less and none is
// free.
func (s *shards) rebalance(ctx context.Context, live []meta.LeaseHolding) (taken []int) {
	members := 0
	holders := map[int]string{}
	perHolder := map[string]int{}
	for _, l := range live {
		switch {
		case l.Name == DispatchLease && l.Holder != s.holder:
			// A replica from before the shards delivers everything.
			s.drainAll()
			return nil
		case strings.HasPrefix(l.Name, memberPrefix):
			members++
		case strings.HasPrefix(l.Name, shardPrefix):
			var k int
			if _, err := fmt.Sscanf(l.Name[len(shardPrefix):], "%d", &k); err != nil || k < 0 || k >= shardCount {
				continue
			}
			holders[k] = l.Holder
			perHolder[l.Holder]++
			if l.Holder == s.holder && l.ReleaseRequested && s.held[k] {
				s.draining[k] = true
			}
		}
	}
	members = max(members, 1)
	fair, share := shardCount/members, (shardCount+members-1)/members
	mine := s.count()
	// Asked for: keep the drains only while giving one up leaves this
	// replica its fair share.
	for k := range s.draining {
		if s.draining[k] && mine-s.drainingCount() < fair {
			s.draining[k] = false
		}
	}
	for k := 0; k < shardCount && mine < share; k++ {
		if _, ok := holders[k]; ok || s.held[k] {
			continue
		}
		t, err := s.leases[k].Keep(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("dispatch: take a shard", "shard", k, "err", err)
		}
		if t.Held {
			s.held[k] = true
			mine++
			taken = append(taken, k)
		}
	}
	if mine < fair {
		s.askForOne(ctx, holders, perHolder, share)
	}
	return taken
}

// askForOne asks the replica holding the most shards, if it holds more
// than share, to give one up.
func (s *shards) askForOne(ctx context.Context, holders map[int]string, perHolder map[string]int, share int) {
	most, top := "", share
	for h, n := range perHolder {
		if h != s.holder && n > top {
			most, top = h, n
		}
	}
	if most == "" {
		return
	}
	for k := range shardCount {
		if holders[k] == most {
			if err := s.store.RequestLeaseRelease(ctx, shardLeaseName(k), s.holder); err != nil && ctx.Err() == nil {
				s.log.Warn("dispatch: ask for a shard", "shard", k, "err", err)
			}
			return
		}
	}
}

func (s *shards) drainingCount() int {
	n := 0
	for k, d := range s.draining {
		if d && s.held[k] {
			n++
		}
	}
	return n
}

func (s *shards) drainAll() {
	for k := range s.draining {
		s.draining[k] = s.held[k]
	}
}

// releaseDrained gives up the draining shards none of whose
// subscriptions has a round running (running reports that of a shard).
func (s *shards) releaseDrained(ctx context.Context, running func(k int) bool) {
	for k := range s.draining {
		if s.draining[k] && s.held[k] && !running(k) {
			s.leases[k].Release(ctx)
			s.held[k], s.draining[k] = false, false
		}
	}
}

// releaseAll gives every lease up: a stopping replica hands its shards
// over at once.
func (s *shards) releaseAll(ctx context.Context) {
	for k, l := range s.leases {
		if s.held[k] {
			l.Release(ctx)
			s.held[k], s.draining[k] = false, false
		}
	}
	s.member.Release(ctx)
}
