package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// RedeemRange opens bytes [offset, offset+length) of the claim's payload
// (claimcheck.Claims.RedeemRange; length < 0: to the end; offset < 0: the last
// -offset bytes) with one Range request. The part ends (io.EOF) only
// after exactly its bytes arrived and the server's trailer reported no
// failure. What the server checked them against depends on how the
// object is stored (docs/HTTP.md, "Ranged redeem"); the whole payload's
// sha256 cannot be checked on a part, so a caller assembling a payload
// from parts checks the whole file against the ref (claimcheck get
// --continue does).
//
// A server that ignores the Range answers the whole payload: the part is
// then cut out of it here and, like a full redeem, verified whole.
func (c *Client) RedeemRange(ctx context.Context, ref claimcheck.Ref, offset, length int64) (*claimcheck.Part, error) {
	if offset >= 0 && length == 0 {
		return nil, fmt.Errorf("redeem %s: %w: range length 0 selects nothing", ref.ID, claimcheck.ErrInvalidArgument)
	}
	req, err := c.claimRequest(ctx, http.MethodGet, ref, nil, "")
	if err != nil {
		return nil, fmt.Errorf("redeem: %w", err)
	}
	req.Header.Set("TE", "trailers")
	req.Header.Set(api.HeaderRange, api.FormatRange(offset, length))
	op := "redeem " + ref.ID
	resp, err := c.doAny(req, op, ref.ID, http.StatusPartialContent, http.StatusOK, http.StatusRequestedRangeNotSatisfiable)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		defer func() { _ = resp.Body.Close() }()
		_, _, size, perr := api.ParseContentRange(resp.Header.Get(api.HeaderContentRange))
		if perr != nil {
			return nil, fmt.Errorf("%s: %w", op, decodeError(resp, ref.ID))
		}
		return nil, fmt.Errorf("redeem: %w", &claimcheck.RangeError{ID: ref.ID, Offset: offset, Size: size})
	}
	got, err := claimcheck.ParseRef([]byte(resp.Header.Get(api.HeaderRef)))
	if err == nil {
		err = checkAnsweredRef(ref, got)
	}
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: header %s: %w", op, api.HeaderRef, err)
	}
	start, n, err := claimcheck.ResolveRange(ref.ID, offset, length, got.Size)
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("redeem: %w", err)
	}
	body := &trailerChecker{resp: resp, id: ref.ID}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode == http.StatusOK {
		return claimcheck.PartOfPayload(claimcheck.NewPayload(got, ct, body), start, n), nil
	}
	gs, gn, size, err := api.ParseContentRange(resp.Header.Get(api.HeaderContentRange))
	if err == nil && (gs != start || gn != n || size != got.Size) {
		err = fmt.Errorf("%w: the server sent bytes %d-%d of %d, asked for %d-%d of %d", claimcheck.ErrChecksumMismatch, gs, gs+gn-1, size, start, start+n-1, got.Size)
	}
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return claimcheck.NewPart(got, ct, start, n, body), nil
}
