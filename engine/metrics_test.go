package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
)

// TestStorageMetrics: the engine measures both storage layers on the
// registry it is given, through everything it does with them.
func TestStorageMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *engine.Config) { c.Registerer = reg })
	data := []byte("counted on the way to storage and back")
	ref := b.put(t, "plain", data)
	if got, err := b.redeem(t, ref); err != nil || string(got) != string(data) {
		t.Fatalf("redeem = %q, %v", got, err)
	}
	if _, err := b.redeem(t, claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Fatalf("redeem of an unknown claim = %v, want not found", err)
	}

	for _, c := range []struct {
		name, op, result string
		want             float64
	}{
		{"claimcheck_blob_operations_total", "put", "ok", 1},
		{"claimcheck_blob_operations_total", "get", "ok", 1},
		{"claimcheck_meta_operations_total", "CreatePending", "ok", 1},
		{"claimcheck_meta_operations_total", "Commit", "ok", 1},
		{"claimcheck_meta_operations_total", "ClaimWithBlob", "not_found", 1}, // a redeem reads claim and blob together
	} {
		got := metrictest.Value(t, reg, c.name, "operation", c.op, "result", c.result)
		if got != c.want {
			t.Errorf("%s{operation=%q,result=%q} = %v, want %v", c.name, c.op, c.result, got, c.want)
		}
	}
	for _, name := range []string{"claimcheck_blob_operations_total", "claimcheck_meta_operations_total"} {
		if got := metrictest.Sum(t, reg, name, "result", "error"); got != 0 {
			t.Errorf("%s counted a failure on a healthy store", name)
		}
	}
}

// presigning gives a local store the ability to presign, as S3 has.
type presigning struct{ blob.Store }

const presignedURL = "https://bucket.invalid/presigned"

func (presigning) PresignPut(_ context.Context, key string, _ int64, _ string, ttl time.Duration) (blob.PresignedPut, error) {
	return blob.PresignedPut{URL: presignedURL, Method: "PUT", Expires: time.Now().Add(ttl)}, nil
}

// TestMetricsKeepPresigner: a store given in Config that presigns still
// does through the engine's metrics wrapper; if the wrapper hid the
// ability, the engine would quietly hand out its own upload URLs instead.
func TestMetricsKeepPresigner(t *testing.T) {
	ctx := context.Background()
	bs, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *engine.Config) {
		c.Registerer = reg
		c.BlobStore = presigning{bs}
	})
	data := []byte("uploaded directly")
	u, err := b.store.InitUpload(ctx, "plain", claimcheck.UploadRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	if u.URL != presignedURL {
		t.Errorf("upload URL = %q, want the store's presigned %q", u.URL, presignedURL)
	}
	if got := metrictest.Value(t, reg, "claimcheck_blob_operations_total", "operation", "presign", "result", "ok"); got != 1 {
		t.Errorf("presign ok = %v, want 1", got)
	}
}
