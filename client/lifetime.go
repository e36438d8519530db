package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Listing and extending claims (GET /v1/namespaces/{ns}/claims, POST
// /v1/claims/{id}/extend).

// List returns one page of the claims of ns; pass the page's Next as
// opts.Cursor for the following one.
func (c *Client) List(ctx context.Context, ns string, opts claimcheck.ListOptions) (claimcheck.ClaimPage, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list %s: %w", ns, err)
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces", ns, "claims")
	if err != nil {
		return claimcheck.ClaimPage{}, err
	}
	req.URL.RawQuery = api.FormatListQuery(opts).Encode()
	resp, err := c.do(req, http.StatusOK, "list "+ns, "")
	if err != nil {
		return claimcheck.ClaimPage{}, err
	}
	var page claimcheck.ClaimPage
	if err := decodeAnswer(resp, &page); err != nil {
		return claimcheck.ClaimPage{}, fmt.Errorf("list %s: %w", ns, err)
	}
	return page, nil
}

// Extend moves the claim's expiry later; see claimcheck.Claims.
func (c *Client) Extend(ctx context.Context, ref claimcheck.Ref, opts claimcheck.ExtendOptions) (claimcheck.ClaimInfo, error) {
	if err := opts.Validate(); err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	body, err := api.FormatExtendRequest(opts)
	if err != nil {
		return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w", ref.ID, err)
	}
	req, err := c.claimRequest(ctx, http.MethodPost, ref, bytes.NewReader(body), "extend")
	if err != nil {
		return claimcheck.ClaimInfo{}, fmt.Errorf("extend: %w", err)
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	resp, err := c.do(req, http.StatusOK, "extend "+ref.ID, ref.ID)
	if err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	var info claimcheck.ClaimInfo
	if err := decodeAnswer(resp, &info); err != nil {
		return claimcheck.ClaimInfo{}, fmt.Errorf("extend %s: %w", ref.ID, err)
	}
	return info, nil
}
