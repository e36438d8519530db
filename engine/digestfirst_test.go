package engine_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// countingBody counts the bytes a put reads of its body.
type countingBody struct {
	r *bytes.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestDigestFirstSetting: a put that sends digest and size is answered
// from the existing blob without reading its body (the oracle: "these
// bytes exist here"), unless the namespace sets digest_first: false;
// then the body is read and dedup happens at commit, so the claim still
// shares the blob.
func TestDigestFirstSetting(t *testing.T) {
	off := false
	b := setup(t, func(c *engine.Config) {
		c.Namespaces["private"] = claimcheck.Policy{DigestFirst: &off}
	})
	ctx := context.Background()
	data := randomBytes(t, 64<<10)
	opts := claimcheck.PutOptions{Digest: claimcheck.DigestOf(data), Size: int64(len(data))}
	for _, tc := range []struct {
		ns       string
		wantRead int
	}{
		{"plain", 0},           // default: digest-first answers without the body
		{"private", len(data)}, // off: the body is read like any put
		{"nodedup", len(data)}, // no dedup, no shortcut
	} {
		t.Run(tc.ns, func(t *testing.T) {
			first := b.put(t, tc.ns, data)
			body := &countingBody{r: bytes.NewReader(data)}
			second, err := b.store.Put(ctx, tc.ns, body, opts)
			if err != nil {
				t.Fatal(err)
			}
			if body.n != tc.wantRead {
				t.Errorf("the put read %d bytes of its body, want %d", body.n, tc.wantRead)
			}
			if second.Digest != first.Digest || second.Size != first.Size {
				t.Errorf("second ref %+v does not describe the same bytes as %+v", second, first)
			}
			got, err := b.redeem(t, second)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("redeem: %d bytes, %v", len(got), err)
			}
		})
	}
	pol, err := b.store.Policy(ctx, "private")
	if err != nil || pol.DigestFirstEnabled() || !pol.DedupEnabled() {
		t.Errorf("private's policy: digest first %v, dedup %v (%v)", pol.DigestFirstEnabled(), pol.DedupEnabled(), err)
	}
}
