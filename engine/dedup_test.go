package engine_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
)

// The two ways a digest-first put checks its candidate's object (ADR
// 0140): on local files inside its one transaction, and, for objects
// behind a network (a BlobStore given in the config stands for one here),
// read and HEAD before it. Both must give the same answers at the edges.
var digestFirstPaths = []struct {
	name   string
	mutate func(t *testing.T) func(*engine.Config)
}{
	{"in-transaction", func(*testing.T) func(*engine.Config) { return func(*engine.Config) {} }},
	{"checked-first", func(t *testing.T) func(*engine.Config) {
		return func(c *engine.Config) {
			b, err := blob.Open(context.Background(), "file://"+filepath.ToSlash(filepath.Join(c.Data, "objects")))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			c.BlobStore = b
		}
	}},
}

func digestFirst(data []byte) claimcheck.PutOptions {
	return claimcheck.PutOptions{Digest: claimcheck.DigestOf(data), Size: int64(len(data))}
}

func usage(t *testing.T, b *bundle, ns string) claimcheck.NamespaceUsage {
	t.Helper()
	info, err := b.store.Namespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return info.Usage
}

// A hit over the namespace's quota is refused before the body is read,
// naming the limit, and leaves the usage as it was.
func TestDigestFirstHitOverQuota(t *testing.T) {
	for _, path := range digestFirstPaths {
		t.Run(path.name, func(t *testing.T) {
			b := setup(t, path.mutate(t), func(c *engine.Config) {
				c.Namespaces["capped"] = claimcheck.Policy{Compression: claimcheck.CompressionNone,
					Quota: claimcheck.Quota{Bytes: 150 << 10}}
			})
			data := randomBytes(t, 100<<10)
			b.put(t, "capped", data)
			before := usage(t, b, "capped")
			_, err := b.store.Put(context.Background(), "capped", failingBody{}, digestFirst(data))
			if !errors.Is(err, claimcheck.ErrQuotaExceeded) || !strings.Contains(err.Error(), "153600") {
				t.Fatalf("hit over quota: %v; want quota_exceeded naming the limit of 153600 bytes", err)
			}
			if got := usage(t, b, "capped"); got != before {
				t.Fatalf("usage after a refused hit = %+v, want %+v", got, before)
			}
		})
	}
}

// A candidate whose object vanished is marked damaged; the put sends its
// body after all, which repairs the blob, and both claims redeem.
func TestDigestFirstMissingObjectRepaired(t *testing.T) {
	for _, path := range digestFirstPaths {
		t.Run(path.name, func(t *testing.T) {
			b := setup(t, path.mutate(t))
			ctx := context.Background()
			data := randomBytes(t, 64<<10)
			first := b.put(t, "plain", data)
			removeObjects(t, b)
			body := &countingBody{r: bytes.NewReader(data)}
			second, err := b.store.Put(ctx, "plain", body, digestFirst(data))
			if err != nil {
				t.Fatal(err)
			}
			if body.n != len(data) {
				t.Fatalf("the put read %d bytes of its body, want all %d (the candidate's object is gone)", body.n, len(data))
			}
			for _, ref := range []claimcheck.Ref{first, second} {
				if got, err := b.redeem(t, ref); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("redeem %s: %d bytes, %v", ref.ID, len(got), err)
				}
			}
			evs, err := b.store.NamespaceEvents(ctx, "plain", claimcheck.EventQuery{})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, e := range evs {
				kinds[e.Kind]++
			}
			if kinds["blob_damaged"] != 1 || kinds["blob_repaired"] != 1 {
				t.Fatalf("events %v: want one blob_damaged and one blob_repaired", kinds)
			}
		})
	}
}

// A blob whose last claim was deleted is shared again during its grace
// period (flipped back), and once collected it is a miss: the body is
// read and stored anew.
func TestDigestFirstOrphanedAndCollected(t *testing.T) {
	for _, path := range digestFirstPaths {
		t.Run(path.name, func(t *testing.T) {
			b := setup(t, path.mutate(t))
			ctx := context.Background()
			data := randomBytes(t, 32<<10)
			first := b.put(t, "plain", data)
			if err := b.store.Delete(ctx, first); err != nil {
				t.Fatal(err)
			}
			again, err := b.store.Put(ctx, "plain", failingBody{}, digestFirst(data))
			if err != nil {
				t.Fatalf("digest-first put onto an orphan in grace: %v", err)
			}
			if err := b.store.Delete(ctx, again); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(2 * time.Hour) // past the grace period
			if _, err := b.store.SweepOnce(ctx, 0); err != nil {
				t.Fatal(err)
			}
			body := &countingBody{r: bytes.NewReader(data)}
			third, err := b.store.Put(ctx, "plain", body, digestFirst(data))
			if err != nil {
				t.Fatal(err)
			}
			if body.n != len(data) {
				t.Fatalf("the put read %d bytes of its body, want all %d (the blob was collected)", body.n, len(data))
			}
			if got, err := b.redeem(t, third); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("redeem: %d bytes, %v", len(got), err)
			}
			if u := usage(t, b, "plain"); u.ActiveClaims != 1 || u.UsedBytes != int64(len(data)) || u.PendingClaims != 0 || u.ReservedBytes != 0 {
				t.Fatalf("usage = %+v, want one active claim of %d bytes", u, len(data))
			}
		})
	}
}

// removeObjects deletes every object file of the store's namespace
// "plain" under its data directory.
func removeObjects(t *testing.T, b *bundle) {
	t.Helper()
	root := b.dir
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(filepath.ToSlash(strings.TrimPrefix(p, root)), "/plain/") && strings.HasPrefix(d.Name(), "b_") {
			n++
			return os.Remove(p)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("removed %d objects under %s: %v", n, root, err)
	}
}

// A digest-first hit on local objects is one metadata operation, its
// one write transaction (ADR 0140); otherwise the creation of the pending
// claim finds the candidate instead of creating anything (ADR 0145), so
// that the HEAD holds no lock, and the hit is the commit after it.
func TestDigestFirstHitMetadataOperations(t *testing.T) {
	for _, path := range digestFirstPaths {
		t.Run(path.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			b := setup(t, path.mutate(t), func(c *engine.Config) { c.Registerer = reg })
			data := randomBytes(t, 32<<10)
			b.put(t, "plain", data)
			before := metrictest.SumBy(t, reg, "claimcheck_meta_operation_duration_seconds", "operation")
			if _, err := b.store.Put(context.Background(), "plain", failingBody{}, digestFirst(data)); err != nil {
				t.Fatal(err)
			}
			after := metrictest.SumBy(t, reg, "claimcheck_meta_operation_duration_seconds", "operation")
			got := map[string]float64{}
			for op, n := range after {
				// Namespaces is the scrape's own (the usage gauges).
				if d := n - before[op]; d > 0 && op != "Namespaces" {
					got[op] = d
				}
			}
			want := map[string]float64{"CommitExisting": 1}
			if path.name == "checked-first" {
				want["CreatePending"] = 1
			}
			if !maps.Equal(got, want) {
				t.Fatalf("metadata operations of a hit: %v, want %v", got, want)
			}
		})
	}
}
