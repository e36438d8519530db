package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Subscriptions and the live stream of events (ADR 0240). Both belong
// to the caller's tenant: with API keys the key's (a tenant-wide admin
// key, targetNone), without keys the tenant query parameter or the
// default tenant.

// subscriptionStore is what the subscription routes need of the store.
type subscriptionStore interface {
	// CreateSubscription makes a subscription of tenant; its answer is
	// the only one that carries the secret.
	CreateSubscription(ctx context.Context, tenant string, spec claimcheck.SubscriptionSpec) (claimcheck.Subscription, error)
	// SubscriptionPage lists a page of tenant's subscriptions after the
	// id cursor, without secrets.
	SubscriptionPage(ctx context.Context, tenant, cursor string, limit int) (claimcheck.SubscriptionPage, error)
	// DeleteSubscription and ResumeSubscription act on a subscription of
	// tenant made over the API; another tenant's is ErrNotFound, one of
	// the config file ErrPermissionDenied.
	DeleteSubscription(ctx context.Context, tenant, id string) error
	ResumeSubscription(ctx context.Context, tenant, id string) error
	// SubscriptionAttempts lists a page of the parked and dead-lettered
	// events of tenant's subscription (ADR 0277); RetrySubscription
	// makes them due now; ReplaySubscription sets the cursor back to
	// since. Retry and replay of a configured target are
	// ErrPermissionDenied.
	SubscriptionAttempts(ctx context.Context, tenant, id, after string, limit int) (claimcheck.SubscriptionAttemptPage, error)
	RetrySubscription(ctx context.Context, tenant, id string) (claimcheck.SubscriptionRetry, error)
	ReplaySubscription(ctx context.Context, tenant, id, since string) (claimcheck.SubscriptionReplay, error)
	// StreamEvents returns tenant's next events after seq after that f
	// selects, and the seq to go on after.
	StreamEvents(ctx context.Context, tenant string, f claimcheck.EventFilter, after int64, limit int) ([]claimcheck.Event, int64, error)
	// StreamBounds are the retention bound (0: none) and the head of
	// the stream, the seqs a stream may begin after (streamStart).
	StreamBounds() (retained, head int64)
}

// requestTenant is the tenant a tenant-wide request acts for. With API
// keys naming another tenant is not_found, like another tenant's
// namespace.
func requestTenant(r *http.Request) (string, error) {
	tenant := r.URL.Query().Get(api.QueryTenant)
	if key, ok := KeyFrom(r.Context()); ok {
		if tenant != "" && tenant != key.Tenant {
			return "", fmt.Errorf("%w: tenant %q", claimcheck.ErrNotFound, tenant)
		}
		return key.Tenant, nil
	}
	if tenant == "" {
		tenant = claimcheck.DefaultTenant
	}
	return tenant, nil
}

// createSubscription answers POST /v1/subscriptions: 201 and the
// subscription, with its secret.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return invalidf("subscription body: %v", err)
	}
	var spec claimcheck.SubscriptionSpec
	if err := api.DecodeJSON(b, `subscription body (want {"url":"https://…","types":["…"],"namespaces":["…"],"labels":{…},"secret":"whsec_…","events_per_request":N})`, &spec); err != nil {
		return err
	}
	sub, err := s.claims.CreateSubscription(r.Context(), tenant, spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sub)
	return nil
}

// listSubscriptions answers GET /v1/subscriptions: a page, by id, with
// the cursor of the next (ADR 0270).
func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	cursor, limit, err := api.ParsePageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.claims.SubscriptionPage(r.Context(), tenant, cursor, limit)
	if err != nil {
		return err
	}
	if page.Subscriptions == nil {
		page.Subscriptions = []claimcheck.Subscription{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// subscriptionCall runs do on one subscription of the key's tenant (the
// path's id) and answers its result as JSON, or 204 when it has none:
// the shape every call on one subscription shares.
func (s *Server) subscriptionCall(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, tenant, id string) (any, error)) error {
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	out, err := do(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteSubscription answers DELETE /v1/subscriptions/{id}.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	return s.subscriptionCall(w, r, func(ctx context.Context, tenant, id string) (any, error) {
		return nil, s.claims.DeleteSubscription(ctx, tenant, id)
	})
}

// resumeSubscription answers POST /v1/subscriptions/{id}/resume.
func (s *Server) resumeSubscription(w http.ResponseWriter, r *http.Request) error {
	return s.subscriptionCall(w, r, func(ctx context.Context, tenant, id string) (any, error) {
		return nil, s.claims.ResumeSubscription(ctx, tenant, id)
	})
}

// subscriptionAttempts answers GET /v1/subscriptions/{id}/attempts: a
// page of its parked and dead-lettered events in seq order (cursor: the
// next of the page before).
func (s *Server) subscriptionAttempts(w http.ResponseWriter, r *http.Request) error {
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	cursor, limit, err := api.ParsePageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.claims.SubscriptionAttempts(r.Context(), tenant, r.PathValue("id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// retrySubscription answers POST /v1/subscriptions/{id}/retry: how many
// parked and dead-lettered events are due again.
func (s *Server) retrySubscription(w http.ResponseWriter, r *http.Request) error {
	return s.subscriptionCall(w, r, func(ctx context.Context, tenant, id string) (any, error) {
		return s.claims.RetrySubscription(ctx, tenant, id)
	})
}

// replaySubscription answers POST /v1/subscriptions/{id}/replay?since=:
// the cursor it set.
func (s *Server) replaySubscription(w http.ResponseWriter, r *http.Request) error {
	return s.subscriptionCall(w, r, func(ctx context.Context, tenant, id string) (any, error) {
		return s.claims.ReplaySubscription(ctx, tenant, id, r.URL.Query().Get(api.QuerySince))
	})
}

// Live stream timing: how often it looks for new events, how often an
// idle stream sends a comment so that proxies keep it open, and the
// events read at a time.
const (
	streamPoll      = 200 * time.Millisecond
	streamHeartbeat = 15 * time.Second
	streamPage      = 500
)

// eventStream answers GET /v1/events/stream: Server-Sent Events, one
// per event (id: its seq, event: its kind, data: its JSON), from after
// Last-Event-ID (or ?last_event_id=; "oldest": the oldest retained),
// else from now. A mistake in the request, or an id the stream cannot
// resume from, is answered as JSON before the stream starts. When the
// server shuts down the stream ends at once with a shutdown message
// (streamEnd), and the client resumes on another replica.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) error {
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	release, err := s.acquireEventStream(w, tenant)
	if err != nil {
		return err
	}
	defer release()
	f, from, err := api.ParseStreamQuery(r.URL.Query(), r.Header.Get(api.HeaderLastEvent))
	if err != nil {
		return err
	}
	after, err := streamStart(from, s.claims)
	if err != nil {
		return err
	}
	ctx := r.Context()
	es, after, err := s.claims.StreamEvents(ctx, tenant, f, after, streamPage)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A client that reconnects waits a second, then sends the id of the
	// last event it received.
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil {
		return nil
	}
	idle, shutdown := time.Now(), shuttingDown(ctx)
	for {
		for _, e := range es {
			data, _ := json.Marshal(e) // an Event always marshals
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data); err != nil {
				return nil // the client went away
			}
		}
		if len(es) > 0 {
			idle = time.Now()
		} else if time.Since(idle) >= streamHeartbeat {
			if _, err := io.WriteString(w, ": idle\n\n"); err != nil {
				return nil
			}
			idle = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		wait := streamPoll
		if len(es) == streamPage {
			wait = 0 // a backlog: read on, but end it too on a shutdown
		}
		select {
		case <-ctx.Done():
			return nil
		case <-shutdown:
			endStream(w, rc)
			return nil
		case <-time.After(wait):
		}
		if es, after, err = s.claims.StreamEvents(ctx, tenant, f, after, streamPage); err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "events stream", "tenant", tenant, "err", err)
			}
			return nil // the stream has begun: the client reconnects from its last id
		}
	}
}
