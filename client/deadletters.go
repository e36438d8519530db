package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// DeadLetters returns a page of the dead letters the API key may see (an
// admin operation); see claimcheck.Admin. With auth on, the
// server keeps the key's tenant (and namespace, for a limited key)
// whatever q.Tenant says; another tenant is not_found.
func (c *Client) DeadLetters(ctx context.Context, q claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error) {
	return c.deadLetterPage(ctx, http.MethodGet, q, "dead letters", "v1", "dead-letters")
}

// RetryDeadLetters retries the page of dead letters q selects and
// returns those the server took back, with the next page's After.
func (c *Client) RetryDeadLetters(ctx context.Context, q claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error) {
	return c.deadLetterPage(ctx, http.MethodPost, q, "retry dead letters", "v1", "dead-letters", "retry")
}

func (c *Client) deadLetterPage(ctx context.Context, method string, q claimcheck.DeadLetterQuery, op string, segments ...string) (claimcheck.DeadLetterPage, error) {
	// Checked here as the store checks it: the wire leaves out a limit
	// that is not positive, so a negative one would pass as the default.
	if _, err := q.Check(); err != nil {
		return claimcheck.DeadLetterPage{}, fmt.Errorf("%s: %w", op, err)
	}
	req, err := c.newRequest(ctx, method, nil, segments...)
	if err != nil {
		return claimcheck.DeadLetterPage{}, fmt.Errorf("%s: %w", op, err)
	}
	req.URL.RawQuery = api.FormatDeadLetterQuery(q).Encode()
	resp, err := c.do(req, http.StatusOK, op, "")
	if err != nil {
		return claimcheck.DeadLetterPage{}, err
	}
	var page api.DeadLetterPage
	if err := decodeAnswer(resp, &page); err != nil {
		return claimcheck.DeadLetterPage{}, fmt.Errorf("%s: %w", op, err)
	}
	return page, nil
}

// DeadLetter returns one dead letter; ErrNotFound if it is not parked or
// not the key's to see.
func (c *Client) DeadLetter(ctx context.Context, id string) (claimcheck.DeadLetter, error) {
	return c.deadLetter(ctx, http.MethodGet, id, "dead letter "+id)
}

// RetryDeadLetter puts one dead letter back in the sweeper's queue and
// returns it as it was parked.
func (c *Client) RetryDeadLetter(ctx context.Context, id string) (claimcheck.DeadLetter, error) {
	return c.deadLetter(ctx, http.MethodPost, id, "retry dead letter "+id, "retry")
}

func (c *Client) deadLetter(ctx context.Context, method, id, op string, suffix ...string) (claimcheck.DeadLetter, error) {
	if !claimcheck.ValidBlobID(id) {
		return claimcheck.DeadLetter{}, fmt.Errorf("%w: dead letter id %q is malformed", claimcheck.ErrInvalidArgument, id)
	}
	req, err := c.newRequest(ctx, method, nil, append([]string{"v1", "dead-letters", id}, suffix...)...)
	if err != nil {
		return claimcheck.DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	resp, err := c.do(req, http.StatusOK, op, "")
	if err != nil {
		return claimcheck.DeadLetter{}, err
	}
	var d claimcheck.DeadLetter
	if err := decodeAnswer(resp, &d); err != nil {
		return claimcheck.DeadLetter{}, fmt.Errorf("%s: %w", op, err)
	}
	return d, nil
}
