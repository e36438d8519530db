package engine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/sweep"
)

// The background scrub spends a byte budget that accrues with the clock,
// one runner at a time, resumes where it stopped, and marks a corrupt
// object damaged so redeems answer at once and a put repairs it.
func TestBackgroundScrub(t *testing.T) {
	b := setup(t, func(c *engine.Config) {
		c.Sweeper.Disabled = true // ticks are driven by the test
		c.Sweeper.Scrub = true
		c.Sweeper.ScrubRate = 1000 // bytes per second of the fake clock
	})
	ctx := context.Background()
	var refs []claimcheck.Ref
	var payloads [][]byte
	for i := range 4 {
		p := bytes.Repeat([]byte{byte('a' + i)}, 2000)
		ref, err := b.store.Put(ctx, "plain", bytes.NewReader(p), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs, payloads = append(refs, ref), append(payloads, p)
	}
	// Flip a byte of the third object (uncompressed: only the digest
	// tells).
	var objects []string
	if err := filepath.WalkDir(filepath.Join(b.dir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
			objects = append(objects, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(objects) != 4 {
		t.Fatalf("objects: %v", objects)
	}
	var victim string
	for _, o := range objects {
		data, _ := os.ReadFile(o)
		if data[0] == 'c' {
			victim = o
			data[100] ^= 1
			if err := os.WriteFile(o, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	sw := b.store.Sweeper()
	if rep, err := sw.TickScrub(ctx); err != nil || rep.Blobs != 0 {
		t.Fatalf("first tick (starts the clock) = %+v, %v; want nothing read", rep, err)
	}
	// One second: a budget of 1000 bytes; a blob is read whole, one per
	// tick here (each is 2000 bytes, so the debt skips the next second).
	var total sweep.ScrubReport
	for range 12 {
		b.clock.Advance(time.Second)
		rep, err := sw.TickScrub(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Blobs > 1 {
			t.Fatalf("a tick with a 1000-byte budget verified %d blobs of 2000 bytes", rep.Blobs)
		}
		total.Blobs += rep.Blobs
		total.Bytes += rep.Bytes
		total.Found = append(total.Found, rep.Found...)
		if rep.PassDone {
			total.PassDone = true
			break
		}
	}
	if !total.PassDone || total.Blobs != 4 || len(total.Found) != 1 || total.Bytes > 12*1000+2000 {
		t.Fatalf("scrub over 12 seconds = %+v; want a pass over 4 blobs at about 1000 bytes/s finding one", total)
	}
	if _, err := b.store.Redeem(ctx, refs[2]); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("redeem of the blob the scrub marked: %v, want checksum mismatch before any byte", err)
	}
	if _, err := b.store.Put(ctx, "plain", bytes.NewReader(payloads[2]), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := b.store.Redeem(ctx, refs[2])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, payloads[2]) {
		t.Fatalf("redeem after the repairing put: %v", err)
	}
	if _, err := os.Stat(victim); !os.IsNotExist(err) {
		t.Fatalf("the damaged object %s is still there after the repair: %v", victim, err)
	}
}
