package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// InitUpload starts a direct upload in namespace ns; see
// claimcheck.Uploads. req.IdempotencyKey travels in the Idempotency-Key
// header: retrying an init with it is always safe.
func (c *Client) InitUpload(ctx context.Context, ns string, req claimcheck.UploadRequest) (claimcheck.Upload, error) {
	op := "init upload to " + ns
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.Upload{}, fmt.Errorf("init upload: %w", err)
	}
	b, err := json.Marshal(api.InitUploadRequestOf(req))
	if err != nil {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, err)
	}
	hr, err := c.newRequest(ctx, http.MethodPost, bytes.NewReader(b), "v1", "namespaces", ns, "uploads")
	if err != nil {
		return claimcheck.Upload{}, err
	}
	hr.Header.Set("Content-Type", api.ContentTypeJSON)
	if req.IdempotencyKey != "" {
		hr.Header.Set(api.HeaderIdempotencyKey, req.IdempotencyKey)
	}
	resp, err := c.do(hr, http.StatusCreated, op, "")
	if err != nil {
		return claimcheck.Upload{}, err
	}
	var u claimcheck.Upload
	if err := decodeAnswer(resp, &u); err != nil {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, err)
	}
	return u, nil
}

// ConfirmUpload checks and commits an uploaded payload; see
// claimcheck.Uploads.
func (c *Client) ConfirmUpload(ctx context.Context, id string) (claimcheck.Ref, error) {
	if !claimcheck.ValidClaimID(id) {
		return claimcheck.Ref{}, fmt.Errorf("confirm upload: %w: upload id %q is malformed", claimcheck.ErrInvalidArgument, id)
	}
	req, err := c.newRequest(ctx, http.MethodPost, nil, "v1", "uploads", id, "confirm")
	if err != nil {
		return claimcheck.Ref{}, err
	}
	resp, err := c.do(req, http.StatusOK, "confirm upload "+id, id)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	var ref claimcheck.Ref
	if err := decodeAnswer(resp, &ref); err != nil {
		return claimcheck.Ref{}, fmt.Errorf("confirm upload %s: %w", id, err)
	}
	return ref, nil
}

// SendUpload sends the payload of upload u to its URL: the request a
// browser would make, with u's method and headers and exactly u.Size
// bytes read from body, and without the API key (the URL is the
// credential). A relative URL is taken relative to the server. Errors of
// a claimcheck server come back as its sentinel errors; another service's
// (S3) as an *Error with its status.
func (c *Client) SendUpload(ctx context.Context, u claimcheck.Upload, body io.Reader) error {
	op := "upload " + u.ID
	if u.URL == "" {
		return fmt.Errorf("%s: %w: the upload has no URL (it is %s)", op, claimcheck.ErrInvalidArgument, u.State)
	}
	target, err := c.base.Parse(u.URL)
	if err != nil {
		return fmt.Errorf("%s: %w: URL: %v", op, claimcheck.ErrInvalidArgument, err)
	}
	if target.Scheme != "http" && target.Scheme != "https" {
		return fmt.Errorf("%s: %w: URL scheme %q", op, claimcheck.ErrInvalidArgument, target.Scheme)
	}
	method := u.Method
	if method == "" {
		method = http.MethodPut
	}
	tracker := &bodyTracker{r: &exactReader{r: body, left: u.Size, size: u.Size}}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), tracker)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	propagate(req)
	req.ContentLength = u.Size
	if u.Size == 0 {
		req.Body = http.NoBody
	}
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if berr := tracker.finish(); err != nil && berr != nil {
		return fmt.Errorf("%s: reading the payload: %w", op, berr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return fmt.Errorf("%s: %w: %w", op, claimcheck.ErrUnavailable, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return nil
	}
	return fmt.Errorf("%s to %s: %w", op, redacted(target), decodeError(resp, u.ID))
}

// redacted is the URL without its query, which holds the credential (a
// claimcheck upload token, or an S3 signature).
func redacted(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	return v.Redacted()
}
