package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

func holdBody(reason string) (io.Reader, error) {
	if reason == "" {
		return nil, nil
	}
	b, err := json.Marshal(api.HoldRequest{Reason: reason})
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// SetHold puts the claim on legal hold (an admin operation).
func (c *Client) SetHold(ctx context.Context, ref claimcheck.Ref, reason string) error {
	body, err := holdBody(reason)
	if err != nil {
		return fmt.Errorf("hold %s: %w", ref.ID, err)
	}
	req, err := c.claimRequest(ctx, http.MethodPut, ref, body, "hold")
	if err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", api.ContentTypeJSON)
	}
	return c.noContent(req, "hold "+ref.ID, ref.ID)
}

// ClearHold lifts the claim's own legal hold.
func (c *Client) ClearHold(ctx context.Context, ref claimcheck.Ref) error {
	req, err := c.claimRequest(ctx, http.MethodDelete, ref, nil, "hold")
	if err != nil {
		return fmt.Errorf("clear hold: %w", err)
	}
	return c.noContent(req, "clear hold of "+ref.ID, ref.ID)
}

// SetNamespaceHold puts every claim of ns on legal hold.
func (c *Client) SetNamespaceHold(ctx context.Context, ns, reason string) error {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	body, err := holdBody(reason)
	if err != nil {
		return fmt.Errorf("hold namespace %s: %w", ns, err)
	}
	req, err := c.newRequest(ctx, http.MethodPut, body, "v1", "namespaces", ns, "hold")
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", api.ContentTypeJSON)
	}
	return c.noContent(req, "hold namespace "+ns, "")
}

// ClearNamespaceHold lifts the namespace's legal hold.
func (c *Client) ClearNamespaceHold(ctx context.Context, ns string) error {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return fmt.Errorf("clear hold: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodDelete, nil, "v1", "namespaces", ns, "hold")
	if err != nil {
		return err
	}
	return c.noContent(req, "clear hold of namespace "+ns, "")
}

// NamespaceHold returns the namespace's legal hold, nil if none.
func (c *Client) NamespaceHold(ctx context.Context, ns string) (*claimcheck.Hold, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "v1", "namespaces", ns, "hold")
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req, http.StatusOK, "hold of namespace "+ns, "")
	if err != nil {
		return nil, err
	}
	var ans api.NamespaceHold
	if err := decodeAnswer(resp, &ans); err != nil {
		return nil, fmt.Errorf("hold of namespace %s: %w", ns, err)
	}
	return ans.Hold, nil
}

// noContent sends req and expects 204.
func (c *Client) noContent(req *http.Request, op, id string) error {
	resp, err := c.do(req, http.StatusNoContent, op, id)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// DestroyNamespaceKey destroys the data key of encrypted namespace ns
// (crypto-shredding, an admin operation): its encrypted claims become
// unreadable for good.
func (c *Client) DestroyNamespaceKey(ctx context.Context, ns string) error {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return fmt.Errorf("destroy key: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodDelete, nil, "v1", "namespaces", ns, "key")
	if err != nil {
		return err
	}
	q := req.URL.Query()
	q.Set("confirm", ns)
	req.URL.RawQuery = q.Encode()
	return c.noContent(req, "destroy the data key of "+ns, "")
}
