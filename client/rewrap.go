package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// RewrapDataKeys rewraps the data key of namespace opt.Namespace with the
// server's current master key (an admin operation; ADR 0075). Over HTTP
// it works on one namespace at a time, so opt.Namespace is required; the
// whole store is rewrapped offline with `claimcheck rewrap-keys`.
func (c *Client) RewrapDataKeys(ctx context.Context, opt claimcheck.RewrapOptions) (claimcheck.RewrapReport, error) {
	if opt.Namespace == "" {
		return claimcheck.RewrapReport{}, fmt.Errorf("rewrap keys: %w: namespace is required over HTTP (rewrap every namespace with `claimcheck rewrap-keys` on the store)", claimcheck.ErrInvalidArgument)
	}
	if err := claimcheck.ValidateNamespace(opt.Namespace); err != nil {
		return claimcheck.RewrapReport{}, fmt.Errorf("rewrap keys: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "namespaces", opt.Namespace, "key", "rewrap")
	if err != nil {
		return claimcheck.RewrapReport{}, err
	}
	if opt.DryRun {
		req.URL.RawQuery = api.QueryDryRun + "=true"
	}
	op := "rewrap the data key of " + opt.Namespace
	resp, err := c.do(req, http.StatusOK, op, "")
	if err != nil {
		return claimcheck.RewrapReport{}, err
	}
	var rep claimcheck.RewrapReport
	if err := decodeAnswer(resp, &rep); err != nil {
		return claimcheck.RewrapReport{}, fmt.Errorf("%s: %w", op, err)
	}
	return rep, nil
}
