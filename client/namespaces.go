package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Namespace returns namespace ns's policy, quota limits and usage (GET
// /v1/namespaces/{ns}).
func (c *Client) Namespace(ctx context.Context, ns string) (claimcheck.NamespaceInfo, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.NamespaceInfo{}, fmt.Errorf("namespace: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces", ns)
	if err != nil {
		return claimcheck.NamespaceInfo{}, err
	}
	resp, err := c.do(req, http.StatusOK, "namespace "+ns, "")
	if err != nil {
		return claimcheck.NamespaceInfo{}, err
	}
	var info api.NamespaceInfo
	if err := decodeAnswer(resp, &info); err != nil {
		return claimcheck.NamespaceInfo{}, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return info, nil
}

// Namespaces returns every namespace the server knows, with policy,
// limits and usage, ordered by name (GET /v1/namespaces), following the
// listing's pages to the last.
func (c *Client) Namespaces(ctx context.Context) ([]claimcheck.NamespaceInfo, error) {
	var out []claimcheck.NamespaceInfo
	for cursor := ""; ; {
		req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces")
		if err != nil {
			return nil, err
		}
		req.URL.RawQuery = api.FormatPageQuery(cursor, 0).Encode()
		resp, err := c.do(req, http.StatusOK, "list namespaces", "")
		if err != nil {
			return nil, err
		}
		var page api.NamespaceList
		if err := decodeAnswer(resp, &page); err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		out = append(out, page.Namespaces...)
		// A server from before the pages sends no next.
		if page.Next == "" || page.Next == cursor {
			return out, nil
		}
		cursor = page.Next
	}
}
