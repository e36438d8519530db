package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// DefaultMaxAttempts is how many failed deletes of a blob's object the
// sweeper makes before it parks the blob as a dead letter. With the
// default retry_delay of 30s doubling up to an hour, the tenth failure
// comes about three hours after the first.
const DefaultMaxAttempts = 10

// ReaperMetrics count what the reaper gives back and what it cannot.
type ReaperMetrics struct {
	// Reaped counts pending claims finished because their upload
	// deadline passed, by reason (never_confirmed for direct uploads,
	// aborted for puts whose writer went away).
	Reaped *prometheus.CounterVec
	// RefundedBytes counts the quota reservations given back by those
	// finishes. Each is counted by the one transaction that finished the
	// claim, so a cleanup that runs twice does not count twice.
	RefundedBytes prometheus.Counter
	// Parked counts blobs parked as dead letters; DeadLetters is how many
	// are parked now (across all processes: read from the database).
	Parked      prometheus.Counter
	DeadLetters prometheus.Gauge
}

func newReaperMetrics(reg prometheus.Registerer) *ReaperMetrics {
	m := &ReaperMetrics{
		Reaped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_claims_reaped_total",
			Help: "Pending claims (unconfirmed uploads, abandoned puts) finished after their upload deadline, by reason."}, []string{"reason"}),
		RefundedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_quota_refunded_bytes_total",
			Help: "Quota reservations of pending claims given back when they were reaped."}),
		Parked: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_dead_letters_parked_total",
			Help: "Blobs parked as dead letters after sweeper.max_attempts failed object deletes."}),
		DeadLetters: prometheus.NewGauge(prometheus.GaugeOpts{Name: "claimcheck_dead_letters",
			Help: "Blobs parked as dead letters now; each needs an operator (claimcheck dlq ls, dlq retry)."}),
	}
	if reg != nil {
		reg.MustRegister(m.Reaped, m.RefundedBytes, m.Parked, m.DeadLetters)
	}
	return m
}

// observe counts a finished claim that was reaped: a pending claim that
// its deadline (not a caller) finished.
func (m *ReaperMetrics) observe(f meta.FinishResult) {
	if f.PreviousState != meta.ClaimPending {
		return
	}
	switch f.Claim.DeleteReason {
	case meta.ReasonNeverConfirmed, meta.ReasonAborted:
		m.Reaped.WithLabelValues(f.Claim.DeleteReason).Inc()
		m.RefundedBytes.Add(float64(f.Claim.ReservedBytes))
	}
}

// deleteFailed records a failed object delete of a deleting blob: retried
// after a delay that doubles with the attempts (bounded), or, at
// max_attempts, parked as a dead letter so it stops coming due. Either way
// the row stays in deleting and keeps owning its object.
func (s *Sweeper) deleteFailed(ctx context.Context, b meta.Blob, cause error, now time.Time) {
	// Recording the failure must not be skipped because the run is
	// stopping; if it is lost anyway the blob stays due at the retry time
	// BeginCollect gave it, and the next attempt counts again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	attempt := b.Attempts + 1
	if attempt < s.cfg.MaxAttempts {
		if err := s.meta.CollectFailed(ctx, b.ID, cause.Error(), now.Add(backoff(s.cfg.RetryDelay, attempt))); err != nil {
			s.log.Warn("sweep: recording a failed delete", "blob", b.ID, "err", err)
		}
		return
	}
	if err := s.meta.ParkBlob(ctx, b.ID, cause.Error(), now); err != nil {
		s.log.Warn("sweep: parking a dead letter", "blob", b.ID, "err", err)
		return
	}
	s.metrics.Reaper.Parked.Inc()
	s.metrics.Reaper.DeadLetters.Inc()
	s.log.Error("sweep: object delete failed too often; blob parked as a dead letter (claimcheck dlq ls, dlq retry)",
		"blob", b.ID, "namespace", b.Namespace, "key", b.Key, "attempts", attempt, "err", cause)
	if err := s.meta.AppendEvents(ctx, []meta.Event{{At: now, Kind: meta.EventDeadLetter, Namespace: b.Namespace, BlobID: b.ID,
		Detail: fmt.Sprintf("object %s: delete failed %d times, last: %v", b.Key, attempt, cause)}}); err != nil {
		s.log.Warn("sweep: recording a dead letter event", "blob", b.ID, "err", err)
	}
}

// refreshDeadLetters sets the dead-letter gauge from the database, so it
// is right whichever process parked or retried them.
func (s *Sweeper) refreshDeadLetters(ctx context.Context) {
	n, err := s.meta.CountDeadLetters(ctx)
	if err != nil {
		s.log.Warn("sweep: counting dead letters", "err", err)
		return
	}
	s.metrics.Reaper.DeadLetters.Set(float64(n))
}

// RetryDeadLetters puts the parked blobs of ids back in the due index,
// due now, with a fresh retry schedule; ids that are not parked are
// skipped. The next sweep run deletes their objects. It returns the blobs
// it took back, as they were parked, and records a retry event for each
// with the actor of ctx (the operator's API key, over HTTP). The listing
// and the tenancy rules of dead letters are the engine's
// (engine.Store.DeadLetters); this is the one step that changes rows,
// kept beside the parking it undoes.
func (s *Sweeper) RetryDeadLetters(ctx context.Context, ids []string) ([]meta.Blob, error) {
	now := s.clock.Now()
	back, err := s.meta.RetryDeadLetters(ctx, ids, false, now)
	if err != nil {
		return nil, fmt.Errorf("retry dead letters: %w", err)
	}
	if len(back) > 0 {
		events := make([]meta.Event, len(back))
		for i, b := range back {
			events[i] = meta.Event{At: now, Kind: meta.EventDeadLetterRetry, Namespace: b.Namespace, BlobID: b.ID,
				Actor: claimcheck.ActorFrom(ctx), Detail: fmt.Sprintf("retried after %d failed deletes, last: %s", b.Attempts, b.LastError)}
		}
		if err := s.meta.AppendEvents(ctx, events); err != nil {
			s.log.Warn("sweep: recording dead letter retries", "err", err)
		}
	}
	s.refreshDeadLetters(ctx)
	return back, nil
}
