package sqlmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Parked events of subscriptions (ADR 0277, migration 0063); see
// meta.ParkingStore.

const parkedColumns = `tenant, subscription_id, seq, claim_id, event, state, attempts, failing_since, next_attempt, last_error`

// ParkEvents stores parked events; see meta.ParkingStore.
func (s *Store) ParkEvents(ctx context.Context, es []meta.ParkedEvent) error {
	if len(es) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		for _, p := range es {
			ev, err := json.Marshal(p.Event)
			if err != nil {
				return err
			}
			state := p.State
			if state == "" {
				state = meta.ParkedWaiting
			}
			if _, err := q.exec(`INSERT INTO subscription_parked (`+parkedColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, p.Tenant, p.SubscriptionID, p.Event.Seq, p.ClaimID, string(ev), state, p.Attempts,
				unixOrZero(p.FailingSince), unixOrZero(p.NextAttempt), p.LastError); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: park %d events: %w", len(es), err)
	}
	return nil
}

// ParkedEvents lists a subscription's parked events; see
// meta.ParkingStore.
func (s *Store) ParkedEvents(ctx context.Context, tenant, id string, afterSeq int64, limit int) ([]meta.ParkedEvent, error) {
	var out []meta.ParkedEvent
	err := s.read(ctx, func(q *txq) error {
		out = out[:0]
		rows, err := q.query(`SELECT `+parkedColumns+` FROM subscription_parked
			WHERE tenant = ? AND subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`, tenant, id, afterSeq, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p meta.ParkedEvent
			var seq, since, next int64
			var ev string
			if err := rows.Scan(&p.Tenant, &p.SubscriptionID, &seq, &p.ClaimID, &ev, &p.State, &p.Attempts,
				&since, &next, &p.LastError); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(ev), &p.Event); err != nil {
				return fmt.Errorf("parked event %d: %w", seq, err)
			}
			p.Event.Seq, p.FailingSince, p.NextAttempt = seq, timeOrZero(since), timeOrZero(next)
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: parked events of subscription %s: %w", id, err)
	}
	return out, nil
}

func timeOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// UpdateParked records an attempt at a parked event; see
// meta.ParkingStore.
func (s *Store) UpdateParked(ctx context.Context, p meta.ParkedEvent) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`UPDATE subscription_parked SET state = ?, attempts = ?, failing_since = ?, next_attempt = ?,
			last_error = ? WHERE tenant = ? AND subscription_id = ? AND seq = ?`, p.State, p.Attempts, unixOrZero(p.FailingSince),
			unixOrZero(p.NextAttempt), p.LastError, p.Tenant, p.SubscriptionID, p.Event.Seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: parked event %d of subscription %s: %w", p.Event.Seq, p.SubscriptionID, err)
	}
	return nil
}

// UnparkEvents deletes delivered parked events; see meta.ParkingStore.
func (s *Store) UnparkEvents(ctx context.Context, tenant, id string, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		for _, seq := range seqs {
			if _, err := q.exec(`DELETE FROM subscription_parked WHERE tenant = ? AND subscription_id = ? AND seq = ?`,
				tenant, id, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: unpark %d events of subscription %s: %w", len(seqs), id, err)
	}
	return nil
}

// RetryParked makes every parked event of a subscription due now; see
// meta.ParkingStore.
func (s *Store) RetryParked(ctx context.Context, tenant, id string, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(q *txq) error {
		var err error
		n, err = q.exec(`UPDATE subscription_parked SET state = ?, attempts = 0, failing_since = 0, next_attempt = ?
			WHERE tenant = ? AND subscription_id = ?`, meta.ParkedWaiting, now.UnixNano(), tenant, id)
		if err != nil || n == 0 {
			return err
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: retry parked events of subscription %s: %w", id, err)
	}
	return int(n), nil
}

// ReplaySubscription sets a subscription's cursor; see
// meta.ParkingStore.
func (s *Store) ReplaySubscription(ctx context.Context, tenant, id string, cursor int64) error {
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`UPDATE subscriptions SET cursor_seq = ?, failing_since = 0, attempts = 0 WHERE tenant = ? AND id = ?`,
			cursor, tenant, id)
		if err == nil && n == 0 {
			err = meta.ErrNotFound
		}
		if err != nil {
			return err
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: replay subscription %s: %w", id, err)
	}
	return nil
}
