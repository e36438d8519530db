package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// sweepingBody is a put's body that, before each chunk it returns, moves
// the fake clock by step and runs the sweeper, the way a slow upload
// meets the reaper in production, without any sleep.
type sweepingBody struct {
	t     *testing.T
	b     *bundle
	data  []byte
	chunk int
	steps []time.Duration // the pause before each chunk (the last repeats)
	i     int
}

func (s *sweepingBody) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	step := s.steps[min(s.i, len(s.steps)-1)]
	s.i++
	s.b.clock.Advance(step)
	if _, err := s.b.store.SweepOnce(context.Background(), 1000); err != nil {
		s.t.Errorf("sweep: %v", err)
	}
	n := copy(p, s.data[:min(s.chunk, len(s.data))])
	s.data = s.data[n:]
	return n, nil
}

// TestStreamingPutDeadlineFollowsProgress: with confirm_within 20s, a
// put that sends a chunk every 8s for five minutes is never reaped (its
// deadline follows its progress), while a put that stalls for longer
// than confirm_within is reaped and fails gone (never_confirmed) without
// committing.
func TestStreamingPutDeadlineFollowsProgress(t *testing.T) {
	b := setup(t, func(c *engine.Config) {
		c.Namespaces["slow"] = claimcheck.Policy{Uploads: claimcheck.UploadPolicy{
			URLTTL: claimcheck.Duration(10 * time.Second), ConfirmWithin: claimcheck.Duration(20 * time.Second)}}
	})
	ctx := context.Background()
	data := randomBytes(t, 40<<10)

	t.Run("progressing", func(t *testing.T) {
		body := &sweepingBody{t: t, b: b, data: data, chunk: 1 << 10, steps: []time.Duration{8 * time.Second}}
		ref, err := b.store.Put(ctx, "slow", body, claimcheck.PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatalf("a put sending every 8s for %d chunks (confirm_within 20s): %v", body.i, err)
		}
		got, err := b.redeem(t, ref)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("redeem: %d bytes, %v", len(got), err)
		}
	})

	t.Run("stalled", func(t *testing.T) {
		before, err := b.store.Namespace(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		body := &sweepingBody{t: t, b: b, data: data, chunk: 1 << 10,
			steps: []time.Duration{time.Second, time.Second, 25 * time.Second, time.Second}}
		_, err = b.store.Put(ctx, "slow", body, claimcheck.PutOptions{Size: int64(len(data))})
		if !errors.Is(err, claimcheck.ErrGone) {
			t.Fatalf("a put that stalled 25s (confirm_within 20s) = %v, want gone", err)
		}
		after, err := b.store.Namespace(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		if after.Usage.ActiveClaims != before.Usage.ActiveClaims || after.Usage.ReservedBytes != 0 {
			t.Errorf("after the reaped put: %+v (before %+v)", after.Usage, before.Usage)
		}
	})
}
