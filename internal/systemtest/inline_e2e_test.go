package systemtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// inlineConfig keeps payloads of up to 16 KiB of "small" in the metadata
// database (ADR 0292); the short grace period lets the test see the
// sweeper collect them.
const inlineConfig = `
namespaces:
  small:
    compression: none
    inline_below: 16KiB
    ttl: { grace_period: 1s }
`

// TestInlineObjectsThroughTheServer: through the served binary, on
// SQLite + files and on PostgreSQL + MinIO, a put the client sends with
// its length and within inline_below leaves no object in the bucket and
// redeems its bytes; a damaged row is found by fsck and refused to a
// redeem, and the same bytes put again repair it; a put of unknown
// length is an object; once the claims are deleted the sweeper removes
// rows and objects alike.
func TestInlineObjectsThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite+files", true: "postgres+minio"}[pg], func(t *testing.T) {
			d := startDamageStore(t, pg, inlineConfig)
			ctx := context.Background()
			payload := randomPayload(t, 10<<10)
			ref, err := d.c.Put(ctx, "small", bytes.NewReader(payload), claimcheck.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			key := d.key(t, ref)
			if !strings.HasPrefix(key, "small/inline/") || d.exists(key) {
				t.Fatalf("the inline payload's key %q (in the bucket: %v); want an inline key and no object", key, d.exists(key))
			}
			if got, err := redeemBytes(d.c, ref); err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("redeem of the inline payload: %d bytes, %v", len(got), err)
			}

			bad := bytes.Clone(payload)
			bad[5000] ^= 0x40
			if err := d.m.PutInlineObject(ctx, key, bad, time.Now()); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := run(t, d.bin, nil, append([]string{"fsck", "--verify", "--rate", "100000000"}, d.store...)...)
			if code != 1 || !strings.Contains(out, "corrupt: 1") || !strings.Contains(out, key) {
				t.Fatalf("fsck --verify with a damaged inline row: exit %d\n%s%s", code, out, stderr)
			}
			if _, err := redeemBytes(d.c, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("redeem of a damaged inline row: %v, want checksum mismatch", err)
			}
			again := streamPut(t, d.c, "small", payload)
			for _, r := range []claimcheck.Ref{ref, again} {
				if got, err := redeemBytes(d.c, r); err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("redeem of %s after the repairing put: %d bytes, %v", r.ID, len(got), err)
				}
			}

			streamed := streamPut(t, d.c, "small", randomPayload(t, 8<<10))
			objectKey := d.key(t, streamed)
			if strings.Contains(objectKey, "/inline/") || !d.exists(objectKey) {
				t.Fatalf("a put of unknown length stored at %q (in the bucket: %v); want an object", objectKey, d.exists(objectKey))
			}

			for _, r := range []claimcheck.Ref{ref, again, streamed} {
				if err := d.c.Delete(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(time.Minute)
			for {
				rows, err := d.m.ListInlineObjects(ctx, "small/", "", 10)
				if err == nil && len(rows) == 0 && !d.exists(objectKey) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after the deletes: inline rows %+v (%v), object there: %v", rows, err, d.exists(objectKey))
				}
				time.Sleep(200 * time.Millisecond)
			}
			if out, stderr, code := run(t, d.bin, nil, append([]string{"fsck", "--verify"}, d.store...)...); code != 0 {
				t.Fatalf("fsck --verify after the collection: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}
