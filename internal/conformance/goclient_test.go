package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// goDriver is the Go client (package client), in this process.
type goDriver struct{}

func (goDriver) name() string { return "Go client" }
func (goDriver) skip() string { return "" }

func (d goDriver) run(ctx context.Context, tg *target, path string) outcome {
	c, err := client.New(tg.url, client.WithAPIKey(tg.key))
	if err != nil {
		return failErr(err)
	}
	data := payload(d.name() + "/" + tg.backend + "/" + path)
	ns := namespace(d.name(), path)
	var ref claimcheck.Ref
	switch path {
	case "direct":
		ref, err = goDirect(ctx, c, ns, data)
	case "tus":
		ref, err = c.UploadResumable(ctx, ns, bytes.NewReader(data), int64(len(data)), client.ResumableOptions{})
	default:
		ref, err = c.Put(ctx, ns, bytes.NewReader(data), claimcheck.PutOptions{ContentType: "application/octet-stream"})
	}
	if err != nil {
		return failErr(err)
	}
	switch path {
	case "redeem":
		err = goRedeem(ctx, c, ref, data)
	case "range":
		err = goRange(ctx, c, ref, data)
	case "release":
		err = c.Release(ctx, ref, "")
	case "events":
		err = goEvents(ctx, c, ns, ref)
	}
	if err != nil {
		return failErr(err)
	}
	return tg.check(ctx, ref, data, path)
}

func goRedeem(ctx context.Context, c *client.Client, ref claimcheck.Ref, data []byte) error {
	p, err := c.Redeem(ctx, ref)
	if err != nil {
		return err
	}
	defer p.Close()
	got, err := io.ReadAll(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("redeemed %d bytes that differ from the %d put", len(got), len(data))
	}
	return nil
}

// goRange reads bytes [1000, 6000) of the payload.
func goRange(ctx context.Context, c *client.Client, ref claimcheck.Ref, data []byte) error {
	part, err := c.RedeemRange(ctx, ref, 1000, 5000)
	if err != nil {
		return err
	}
	defer part.Close()
	got, err := io.ReadAll(part)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data[1000:6000]) {
		return fmt.Errorf("range [1000, 6000): %d bytes that differ from the payload's", len(got))
	}
	return nil
}

// goDirect inits an upload with the payload's sha256, sends other bytes
// of the same size (which the storage refuses at the PUT, or the confirm
// then refuses: GCS and Azure URLs are create-only, and the refusing
// confirm deletes the object, ADR 0230), and sends the right bytes.
func goDirect(ctx context.Context, c *client.Client, ns string, data []byte) (claimcheck.Ref, error) {
	sum := sha256.Sum256(data)
	up, err := c.InitUpload(ctx, ns, claimcheck.UploadRequest{Size: int64(len(data)), Digest: "sha256:" + hex.EncodeToString(sum[:])})
	if err != nil {
		return claimcheck.Ref{}, err
	}
	wrong := bytes.Clone(data)
	for i := range wrong {
		wrong[i] ^= 0xff
	}
	sendErr := c.SendUpload(ctx, up, bytes.NewReader(wrong))
	if ref, err := c.ConfirmUpload(ctx, up.ID); err == nil {
		return claimcheck.Ref{}, fmt.Errorf("other bytes than the declared sha256 were confirmed as %s (their PUT: %v)", ref.ID, sendErr)
	}
	if err := c.SendUpload(ctx, up, bytes.NewReader(data)); err != nil {
		return claimcheck.Ref{}, fmt.Errorf("the right bytes after a refused upload: %w", err)
	}
	return c.ConfirmUpload(ctx, up.ID)
}

// errSeen ends FollowEvents once the awaited event came.
var errSeen = errors.New("seen")

// goEvents waits on the event stream, from the oldest event retained, for
// the created event of ref.
func goEvents(ctx context.Context, c *client.Client, ns string, ref claimcheck.Ref) error {
	f := claimcheck.EventFilter{Types: []string{"created"}, Namespaces: []string{ns}}
	err := c.FollowEvents(ctx, f, client.FromOldest, func(ev claimcheck.Event) error {
		if ev.ClaimID == ref.ID {
			return errSeen
		}
		return nil
	})
	if errors.Is(err, errSeen) {
		return nil
	}
	return fmt.Errorf("no created event of %s on the stream: %w", ref.ID, err)
}
