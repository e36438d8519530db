package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// ClaimEvents returns a page of the claim's audit trail; see
// claimcheck.Admin.
func (c *Client) ClaimEvents(ctx context.Context, ref claimcheck.Ref, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	// Checked here as the store checks it: the wire leaves out a limit
	// that is not positive, so a negative one would pass as the default.
	if _, err := q.Check(); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	req, err := c.claimRequest(ctx, http.MethodGet, ref, nil, "events")
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	v := api.FormatEventQuery(q)
	if ref.Namespace != "" {
		v.Set("ns", ref.Namespace)
	}
	req.URL.RawQuery = v.Encode()
	return c.events(req, "events of "+ref.ID, ref.ID)
}

// NamespaceEvents returns a page of a namespace's audit trail.
func (c *Client) NamespaceEvents(ctx context.Context, ns string, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	if _, err := q.Check(); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces", ns, "events")
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	req.URL.RawQuery = api.FormatEventQuery(q).Encode()
	return c.events(req, "events of "+ns, "")
}

// TenantEvents returns a page of a tenant's administrative events (API
// keys, failed authentications); see claimcheck.Admin. With an API key,
// tenant must be the key's own, or "" for it; without one, "" is the
// server's default tenant.
func (c *Client) TenantEvents(ctx context.Context, tenant string, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	if tenant != "" {
		if err := claimcheck.ValidateTenant(tenant); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
	}
	if _, err := q.Check(); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "events")
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	v := api.FormatEventQuery(q)
	if tenant != "" {
		v.Set(api.QueryTenant, tenant)
	}
	req.URL.RawQuery = v.Encode()
	op := "events of the tenant"
	if tenant != "" {
		op = "events of tenant " + tenant
	}
	return c.events(req, op, "")
}

func (c *Client) events(req *http.Request, op, id string) ([]claimcheck.Event, error) {
	resp, err := c.do(req, http.StatusOK, op, id)
	if err != nil {
		return nil, err
	}
	var page api.EventsPage
	if err := decodeAnswer(resp, &page); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return page.Events, nil
}
