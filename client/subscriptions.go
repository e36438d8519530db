package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/server/api"
)

// Subscriptions and the live stream of events (ADR 0240); they need a
// tenant-wide admin key.

// CreateSubscription makes a subscription of the key's tenant; the
// answer carries its secret, which is never shown again.
func (c *Client) CreateSubscription(ctx context.Context, spec claimcheck.SubscriptionSpec) (claimcheck.Subscription, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodPost, bytes.NewReader(b), "v1", "subscriptions")
	if err != nil {
		return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w", err)
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	resp, err := c.do(req, http.StatusCreated, "create subscription", "")
	if err != nil {
		return claimcheck.Subscription{}, err
	}
	var sub claimcheck.Subscription
	if err := decodeAnswer(resp, &sub); err != nil {
		return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w", err)
	}
	return sub, nil
}

// Subscriptions lists the key's tenant's subscriptions, following the
// pages of the listing to the last.
func (c *Client) Subscriptions(ctx context.Context) ([]claimcheck.Subscription, error) {
	var out []claimcheck.Subscription
	for cursor := ""; ; {
		page, err := c.SubscriptionPage(ctx, cursor, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Subscriptions...)
		if page.Next == "" || page.Next == cursor {
			return out, nil
		}
		cursor = page.Next
	}
}

// SubscriptionPage lists one page of the key's tenant's subscriptions,
// by id, after cursor ("" from the first); limit 0 is the server's
// default page size.
func (c *Client) SubscriptionPage(ctx context.Context, cursor string, limit int) (claimcheck.SubscriptionPage, error) {
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "subscriptions")
	if err != nil {
		return claimcheck.SubscriptionPage{}, fmt.Errorf("subscriptions: %w", err)
	}
	req.URL.RawQuery = api.FormatPageQuery(cursor, limit).Encode()
	resp, err := c.do(req, http.StatusOK, "subscriptions", "")
	if err != nil {
		return claimcheck.SubscriptionPage{}, err
	}
	var page claimcheck.SubscriptionPage
	if err := decodeAnswer(resp, &page); err != nil {
		return claimcheck.SubscriptionPage{}, fmt.Errorf("subscriptions: %w", err)
	}
	return page, nil
}

// DeleteSubscription removes a subscription.
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	req, err := c.newRequest(ctx, http.MethodDelete, nil, "v1", "subscriptions", id)
	if err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	return c.noContent(req, "delete subscription "+id, "")
}

// ResumeSubscription delivers again to a dead-lettered subscription.
func (c *Client) ResumeSubscription(ctx context.Context, id string) error {
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "subscriptions", id, "resume")
	if err != nil {
		return fmt.Errorf("resume subscription: %w", err)
	}
	return c.noContent(req, "resume subscription "+id, "")
}

// FromOldest, as FollowEvents' after, starts the stream at the oldest
// event the server retains.
const FromOldest int64 = -1

// FollowEvents reads the live stream of the key's tenant's events that
// f selects, from after event id after (0: from now; FromOldest: from
// the oldest event retained), and calls fn with
// each, until ctx ends or fn returns an error. A broken stream is opened
// again after the last event received (Last-Event-ID), so fn sees every
// event once, in order; a refusal by the server (a mistake in f, a key
// without the right) ends it with that error.
func (c *Client) FollowEvents(ctx context.Context, f claimcheck.EventFilter, after int64, fn func(claimcheck.Event) error) error {
	v := url.Values{}
	for _, t := range f.Types {
		v.Add(api.QueryType, t)
	}
	for _, ns := range f.Namespaces {
		v.Add(api.QueryNamespace, ns)
	}
	for k, val := range f.Labels {
		v.Add(api.QueryLabel, k+"="+val)
	}
	for {
		req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "events", "stream")
		if err != nil {
			return fmt.Errorf("events stream: %w", err)
		}
		req.URL.RawQuery = v.Encode()
		req.Header.Set("Accept", "text/event-stream")
		switch {
		case after == FromOldest:
			req.Header.Set(api.HeaderLastEvent, api.StreamOldest)
		case after > 0:
			req.Header.Set(api.HeaderLastEvent, strconv.FormatInt(after, 10))
		}
		resp, err := c.do(req, http.StatusOK, "events stream", "")
		wait := time.Second
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if e, ok := err.(*Error); ok && e.Status < 500 {
				return err
			}
		} else {
			var st streamState
			st, err = readStream(resp, after, fn)
			_ = resp.Body.Close()
			if err != nil {
				return err
			}
			after = st.after
			if st.retry > 0 {
				wait = st.retry
			}
		}
		if err := clock.Sleep(ctx, clock.Real{}, wait); err != nil {
			return err
		}
	}
}

// streamState is where a stream stopped: the id of the last event
// received, and the reconnection time the server asked for (its retry
// field; it asks for a short one when it shuts down, ADR 0273).
type streamState struct {
	after int64
	retry time.Duration
}

// readStream calls fn with each event of an SSE answer and returns the
// id of the last one and the server's retry hint; an error is fn's.
// Messages of another event type than an event kind (the "shutdown" a
// server sends before it ends the stream) carry no event, and are not
// passed on.
func readStream(resp *http.Response, after int64, fn func(claimcheck.Event) error) (streamState, error) {
	st := streamState{after: after}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var data, kind string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "retry:"):
			if ms, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "retry:"))); err == nil && ms >= 0 {
				st.retry = time.Duration(ms) * time.Millisecond
			}
		case line == "":
			if data != "" && kind != api.StreamShutdown {
				var e claimcheck.Event
				if err := json.Unmarshal([]byte(data), &e); err == nil {
					if err := fn(e); err != nil {
						return st, err
					}
					st.after = e.Seq
				}
			}
			data, kind = "", ""
		}
	}
	return st, nil
}

// SubscriptionAttempts lists one page of a subscription's parked and
// dead-lettered events (ADR 0277), by seq, after cursor ("" from the
// first); limit 0 is the server's default page size.
func (c *Client) SubscriptionAttempts(ctx context.Context, id, cursor string, limit int) (claimcheck.SubscriptionAttemptPage, error) {
	var page claimcheck.SubscriptionAttemptPage
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "subscriptions", id, "attempts")
	if err != nil {
		return page, fmt.Errorf("subscription attempts: %w", err)
	}
	req.URL.RawQuery = api.FormatPageQuery(cursor, limit).Encode()
	err = c.subscriptionCall(req, "subscription attempts", id, &page)
	return page, err
}

// RetrySubscription has a subscription's parked and dead-lettered
// events delivered now; it returns how many.
func (c *Client) RetrySubscription(ctx context.Context, id string) (claimcheck.SubscriptionRetry, error) {
	var out claimcheck.SubscriptionRetry
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "subscriptions", id, "retry")
	if err != nil {
		return out, fmt.Errorf("retry subscription: %w", err)
	}
	err = c.subscriptionCall(req, "retry subscription", id, &out)
	return out, err
}

// ReplaySubscription has a subscription's events after since delivered
// again: since is an RFC 3339 time or an event seq. It returns the
// cursor the server set.
func (c *Client) ReplaySubscription(ctx context.Context, id, since string) (claimcheck.SubscriptionReplay, error) {
	var out claimcheck.SubscriptionReplay
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "subscriptions", id, "replay")
	if err != nil {
		return out, fmt.Errorf("replay subscription: %w", err)
	}
	req.URL.RawQuery = url.Values{api.QuerySince: {since}}.Encode()
	err = c.subscriptionCall(req, "replay subscription", id, &out)
	return out, err
}

// subscriptionCall sends req and decodes its 200 answer into out.
func (c *Client) subscriptionCall(req *http.Request, op, id string, out any) error {
	resp, err := c.do(req, http.StatusOK, op, id)
	if err != nil {
		return err
	}
	if err := decodeAnswer(resp, out); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
