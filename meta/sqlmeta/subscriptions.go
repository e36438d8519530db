package sqlmeta

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Subscriptions and the event feed (ADR 0240); see meta.SubscriptionStore.

const subscriptionColumns = `id, tenant, url, types, namespaces, labels, secret, secret_key_id, enabled, source,
	created_at, cursor_seq, state, failing_since, attempts, last_error, delivered, events_per_request`

func subscriptionArgs(s meta.Subscription) []any {
	labels := ""
	if len(s.Labels) > 0 {
		b, _ := json.Marshal(s.Labels) // a map of strings always marshals
		labels = string(b)
	}
	state := s.State
	if state == "" {
		state = meta.SubscriptionActive
	}
	source := s.Source
	if source == "" {
		source = meta.SourceAPI
	}
	return []any{s.ID, s.Tenant, s.URL, strings.Join(s.Types, ","), strings.Join(s.Namespaces, ","), labels,
		base64.StdEncoding.EncodeToString(s.Secret), s.SecretKeyID, boolInt(s.Enabled), source,
		s.CreatedAt.UnixNano(), s.Cursor, state, unixOrZero(s.FailingSince), s.Attempts, s.LastError, s.Delivered, s.EventsPerRequest}
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (q *txq) insertSubscription(s meta.Subscription) error {
	_, err := q.exec(`INSERT INTO subscriptions (`+subscriptionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, subscriptionArgs(s)...)
	return err
}

// CreateSubscription inserts a subscription; see meta.SubscriptionStore.
// The count of the tenant's subscriptions and the insert are one write
// transaction, so concurrent creates cannot pass the limit together.
func (s *Store) CreateSubscription(ctx context.Context, sub meta.Subscription, limit int) error {
	err := s.write(ctx, func(q *txq) error {
		if limit > 0 {
			var n int
			if err := q.queryRow(`SELECT COUNT(*) FROM subscriptions WHERE tenant = ? AND source = ?`,
				sub.Tenant, meta.SourceAPI).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return fmt.Errorf("tenant %s has %d: %w", sub.Tenant, n, meta.ErrLimitReached)
			}
		}
		var one int
		err := q.queryRow(`SELECT 1 FROM subscriptions WHERE tenant = ? AND id = ?`, sub.Tenant, sub.ID).Scan(&one)
		if err == nil {
			return fmt.Errorf("id taken: %w", meta.ErrConflict)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := q.insertSubscription(sub); err != nil {
			return err
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: create subscription %s: %w", sub.ID, err)
	}
	return nil
}

// SyncConfigSubscriptions makes the config's subscriptions the given
// ones; see meta.SubscriptionStore. Their ids are in their own space
// (meta.ConfigIDPrefix), keyed with their tenant, so no row made over the
// API can be in their way.
func (s *Store) SyncConfigSubscriptions(ctx context.Context, subs []meta.Subscription) error {
	err := s.write(ctx, func(q *txq) error {
		// A server of the version before migration 0062 names configured
		// rows by their bare id: give them back their prefix, keeping
		// their cursor (ADR 0269).
		if _, err := q.exec(`UPDATE subscriptions SET id = ? || id WHERE source = ? AND id NOT LIKE ?
			AND NOT EXISTS (SELECT 1 FROM subscriptions o WHERE o.tenant = subscriptions.tenant AND o.id = ? || subscriptions.id)`,
			meta.ConfigIDPrefix, meta.SourceConfig, meta.ConfigIDPrefix+"%", meta.ConfigIDPrefix); err != nil {
			return err
		}
		have, err := q.subscriptions(`WHERE source = ?`, meta.SourceConfig)
		if err != nil {
			return err
		}
		type key struct{ tenant, id string }
		kept := map[key]bool{}
		for _, sub := range subs {
			sub.Source = meta.SourceConfig
			kept[key{sub.Tenant, sub.ID}] = true
			a := subscriptionArgs(sub) // id, tenant, url, types, namespaces, labels, secret, secret_key_id, enabled
			n, err := q.exec(`UPDATE subscriptions SET url = ?, types = ?, namespaces = ?, labels = ?,
				secret = ?, secret_key_id = ?, enabled = ?, events_per_request = ? WHERE tenant = ? AND id = ? AND source = ?`,
				a[2], a[3], a[4], a[5], a[6], a[7], a[8], sub.EventsPerRequest, sub.Tenant, sub.ID, meta.SourceConfig)
			if err != nil {
				return err
			}
			if n == 0 {
				if err := q.insertSubscription(sub); err != nil {
					return fmt.Errorf("%s of tenant %s: %w", sub.ID, sub.Tenant, err)
				}
			}
		}
		// Tenants cannot resume a configured target (ADR 0269): the
		// operator does, by starting the server again once the receiver
		// is fixed.
		if _, err := q.exec(`UPDATE subscriptions SET state = ?, failing_since = 0, attempts = 0 WHERE source = ? AND state = ?`,
			meta.SubscriptionActive, meta.SourceConfig, meta.SubscriptionDeadLettered); err != nil {
			return err
		}
		// Nor retry its dead-lettered events (ADR 0277): the start is
		// their retry too.
		if _, err := q.exec(`UPDATE subscription_parked SET state = ?, attempts = 0, failing_since = 0, next_attempt = 0
			WHERE state = ? AND subscription_id LIKE ?`, meta.ParkedWaiting, meta.ParkedDeadLettered, meta.ConfigIDPrefix+"%"); err != nil {
			return err
		}
		for _, h := range have {
			if !kept[key{h.Tenant, h.ID}] {
				if _, err := q.exec(`DELETE FROM subscriptions WHERE tenant = ? AND id = ? AND source = ?`,
					h.Tenant, h.ID, meta.SourceConfig); err != nil {
					return err
				}
				if _, err := q.exec(`DELETE FROM subscription_parked WHERE tenant = ? AND subscription_id = ?`, h.Tenant, h.ID); err != nil {
					return err
				}
			}
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: subscriptions of the config: %w", err)
	}
	return nil
}

func (q *txq) subscriptions(where string, args ...any) ([]meta.Subscription, error) {
	rows, err := q.query(`SELECT `+subscriptionColumns+` FROM subscriptions `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []meta.Subscription
	for rows.Next() {
		var s meta.Subscription
		var types, nss, labels, secret string
		var enabled int
		var created, failing int64
		if err := rows.Scan(&s.ID, &s.Tenant, &s.URL, &types, &nss, &labels, &secret, &s.SecretKeyID, &enabled, &s.Source,
			&created, &s.Cursor, &s.State, &failing, &s.Attempts, &s.LastError, &s.Delivered, &s.EventsPerRequest); err != nil {
			return nil, err
		}
		s.Types, s.Namespaces, s.Enabled = splitList(types), splitList(nss), enabled != 0
		if labels != "" {
			if err := json.Unmarshal([]byte(labels), &s.Labels); err != nil {
				return nil, fmt.Errorf("subscription %s: labels: %w", s.ID, err)
			}
		}
		if s.Secret, err = base64.StdEncoding.DecodeString(secret); err != nil {
			return nil, fmt.Errorf("subscription %s: secret: %w", s.ID, err)
		}
		s.CreatedAt = time.Unix(0, created).UTC()
		if failing != 0 {
			s.FailingSince = time.Unix(0, failing).UTC()
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Subscriptions lists a tenant's subscriptions; see
// meta.SubscriptionStore.
func (s *Store) Subscriptions(ctx context.Context, tenant string) ([]meta.Subscription, error) {
	var out []meta.Subscription
	err := s.read(ctx, func(q *txq) error {
		var err error
		if tenant == "" {
			out, err = q.subscriptions(`ORDER BY tenant, id`)
		} else {
			out, err = q.subscriptions(`WHERE tenant = ? ORDER BY id`, tenant)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: subscriptions: %w", err)
	}
	return out, nil
}

// SubscriptionPage lists a page of a tenant's subscriptions; see
// meta.SubscriptionStore. The key (tenant, id) serves it.
func (s *Store) SubscriptionPage(ctx context.Context, tenant, after string, limit int) ([]meta.Subscription, error) {
	var out []meta.Subscription
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = q.subscriptions(`WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?`, tenant, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: subscriptions of %s after %q: %w", tenant, after, err)
	}
	return out, nil
}

// DeleteSubscription deletes one; see meta.SubscriptionStore.
func (s *Store) DeleteSubscription(ctx context.Context, tenant, id string) error {
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`DELETE FROM subscriptions WHERE tenant = ? AND id = ? AND source = ?`, tenant, id, meta.SourceAPI)
		if err == nil && n == 0 {
			err = meta.ErrNotFound
		}
		if err != nil {
			return err
		}
		// Its parked events go with it (ADR 0277).
		if _, err = q.exec(`DELETE FROM subscription_parked WHERE tenant = ? AND subscription_id = ?`, tenant, id); err != nil {
			return err
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: delete subscription %s: %w", id, err)
	}
	return nil
}

// ResumeSubscription puts one back to active; see meta.SubscriptionStore.
func (s *Store) ResumeSubscription(ctx context.Context, tenant, id string) error {
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`UPDATE subscriptions SET state = ?, enabled = 1, failing_since = 0, attempts = 0
			WHERE tenant = ? AND id = ? AND source = ?`, meta.SubscriptionActive, tenant, id, meta.SourceAPI)
		if err == nil && n == 0 {
			err = meta.ErrNotFound
		}
		if err != nil {
			return err
		}
		return q.subscriptionsChanged()
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: resume subscription %s: %w", id, err)
	}
	return nil
}

// AdvanceSubscription records a round's progress; see
// meta.SubscriptionStore.
func (s *Store) AdvanceSubscription(ctx context.Context, tenant, id string, p meta.SubscriptionProgress) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`UPDATE subscriptions SET
			cursor_seq = CASE WHEN cursor_seq < ? AND (CAST(? AS BIGINT) = 0 OR cursor_seq = ?) THEN ? ELSE cursor_seq END,
			state = ?, failing_since = ?, attempts = ?, last_error = ?, delivered = delivered + ? WHERE tenant = ? AND id = ?`,
			p.Cursor, p.From, p.From, p.Cursor, p.State, unixOrZero(p.FailingSince), p.Attempts, p.LastError, p.Delivered, tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: advance subscription %s: %w", id, err)
	}
	return nil
}

// MarkLagging moves subscriptions between active and lagging; see
// meta.SubscriptionStore. Seqs are event times in nanoseconds (audit.go),
// so a cursor compares with a time.
func (s *Store) MarkLagging(ctx context.Context, bound time.Time) (int, error) {
	var n int
	err := s.write(ctx, func(q *txq) error {
		lagging, err := q.exec(`UPDATE subscriptions SET state = ? WHERE state = ? AND enabled = 1 AND cursor_seq < ?`,
			meta.SubscriptionLagging, meta.SubscriptionActive, bound.UnixNano())
		if err != nil {
			return err
		}
		active, err := q.exec(`UPDATE subscriptions SET state = ? WHERE state = ? AND cursor_seq >= ?`,
			meta.SubscriptionActive, meta.SubscriptionLagging, bound.UnixNano())
		if err != nil {
			return err
		}
		if lagging+active > 0 {
			if err := q.subscriptionsChanged(); err != nil {
				return err
			}
		}
		return q.queryRow(`SELECT COUNT(*) FROM subscriptions WHERE state = ? AND enabled = 1`, meta.SubscriptionLagging).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: mark lagging subscriptions: %w", err)
	}
	return n, nil
}

// FeedEvents reads events with their tenant and, when labels is set,
// their claims' labels; see meta.SubscriptionStore. A claim event's
// tenant is its namespace's (the namespaces row records it); an
// administrative event carries its own. It depends on events (seq, at,
// kind, namespace, tenant, claim_id, blob_id, detail, actor, reason),
// namespaces (name, tenant), for labels claims (id, labels), and the
// trails of compacted claims (ADR 0266), which a feed resumed from a seq
// older than the compaction reads: their claims have no labels left.
func (s *Store) FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]meta.FeedEvent, error) {
	const tenantOf = `CASE WHEN e.tenant <> '' THEN e.tenant ELSE COALESCE(n.tenant, '') END`
	labelsOf, claims := `''`, ``
	if labels {
		labelsOf, claims = `COALESCE(c.labels, '')`, `
		LEFT JOIN claims c ON c.id = e.claim_id AND e.claim_id <> ''`
	}
	query := `SELECT e.seq, e.at, e.kind, e.namespace, e.claim_id, e.blob_id, e.detail, e.actor, e.reason, ` + tenantOf + `,
			` + labelsOf + `
		FROM events e
		LEFT JOIN namespaces n ON n.name = e.namespace AND e.namespace <> ''` + claims + `
		WHERE e.seq > ? AND e.seq <= ?`
	if tenant != "" {
		query += ` AND ` + tenantOf + ` = ?`
	}
	query += ` ORDER BY e.seq LIMIT ?`
	var out []meta.FeedEvent
	err := s.read(ctx, func(q *txq) error {
		out = out[:0]
		rowLabels := map[string]map[string]string{}
		fromRows := map[string]bool{}
		rows := func(after int64) ([]meta.Event, error) {
			args := []any{after, upTo}
			if tenant != "" {
				args = append(args, tenant)
			}
			return q.feedRows(query, append(args, limit), rowLabels, fromRows)
		}
		// A trail's events are a claim's: their tenant is their
		// namespace's.
		tenants := map[string]string{}
		var lookupErr error
		tenantOfTrail := func(ns string) string {
			t, ok := tenants[ns]
			if !ok && lookupErr == nil {
				if err := q.queryRow(`SELECT tenant FROM namespaces WHERE name = ?`, ns).Scan(&t); err != nil && !errors.Is(err, sql.ErrNoRows) {
					lookupErr = err
				}
				tenants[ns] = t
			}
			return t
		}
		es, err := q.pageWithTrails("", afterSeq, upTo, limit, rows, func(e meta.Event) bool {
			return tenant == "" || tenantOfTrail(e.Namespace) == tenant
		})
		if err != nil {
			return err
		}
		if lookupErr != nil {
			return lookupErr
		}
		for _, e := range es {
			k := eventKey(e)
			if !fromRows[k] {
				e.Tenant = tenantOfTrail(e.Namespace)
			}
			out = append(out, meta.FeedEvent{Event: e, Labels: rowLabels[k]})
		}
		return lookupErr
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: event feed after %d: %w", afterSeq, err)
	}
	return endBetweenSeqs(out, limit, func(e meta.FeedEvent) int64 { return e.Seq }), nil
}

// feedRows reads a page of the feed's rows, noting each one's labels
// and that it came from a row.
func (q *txq) feedRows(query string, args []any, labels map[string]map[string]string, fromRows map[string]bool) ([]meta.Event, error) {
	var ls string
	return q.scanEvents(query, args, []any{&ls}, func(e meta.Event) error {
		k := eventKey(e)
		fromRows[k] = true
		if ls == "" {
			return nil
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(ls), &m); err != nil {
			return fmt.Errorf("event %d: labels of claim %s: %w", e.Seq, e.ClaimID, err)
		}
		labels[k] = m
		return nil
	})
}

// endBetweenSeqs drops the last events of a full page that share its last
// seq. seq is unique within a namespace only (events_days.go), and the
// next page starts after the last seq, so a page that ended between two
// events of one seq would skip the second. A full page of a single seq
// (as many namespaces logging in the same nanosecond as the page holds)
// is kept whole: dropping it all would stop the feed.
func endBetweenSeqs[E any](out []E, limit int, seq func(E) int64) []E {
	if len(out) < limit || len(out) == 0 {
		return out
	}
	last := seq(out[len(out)-1])
	i := len(out)
	for i > 0 && seq(out[i-1]) == last {
		i--
	}
	if i == 0 {
		return out
	}
	return out[:i]
}

// subscriptionsChanged sets the cursor meta.SubscriptionsChanged to a new
// token, in the transaction that changes the subscriptions.
func (q *txq) subscriptionsChanged() error {
	var token [8]byte
	_, _ = rand.Read(token[:]) // crypto/rand.Read never fails
	_, err := q.exec(`INSERT INTO cursors (name, value) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, meta.SubscriptionsChanged, hex.EncodeToString(token[:]))
	return err
}
