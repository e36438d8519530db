package systemtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestShardedDeliveryOrderAcrossKill: two replicas on PostgreSQL share
// the subscriptions' shards out (ADR 0285); while claims are put,
// redeemed and deleted, the first replica is killed with SIGKILL. Every
// event reaches every subscription, each claim's events first arrive in
// the order they happened (created, redeemed, deleted) across the
// handover, and the surviving replica then holds every shard.
func TestShardedDeliveryOrderAcrossKill(t *testing.T) {
	t.Parallel()
	dsn, db := testsvc.Postgres(t)
	bin := buildBinary(t)

	// arrivals[sub][claim] is the kinds of that claim's events in the
	// order they arrived at sub.
	var mu sync.Mutex
	arrivals := map[string]map[string][]string{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ce struct {
			Subject string `json:"subject"`
			Type    string `json:"type"`
		}
		if err := json.Unmarshal(body, &ce); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sub := strings.TrimPrefix(r.URL.Path, "/hook/")
		mu.Lock()
		if arrivals[sub] == nil {
			arrivals[sub] = map[string][]string{}
		}
		kind := ce.Type[strings.LastIndexByte(ce.Type, '.')+1:]
		arrivals[sub][ce.Subject] = append(arrivals[sub][ce.Subject], kind)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()

	cfg := fmt.Sprintf(`metadata: %q
storage: %q
defaults: false
namespaces:
  load: {threshold: 1}
subscriptions:
  allow_loopback_targets: true
  settle: 100ms
  interval: 20ms
  batch: 20
  backoff_min: 100ms
`, dsn, "file://"+filepath.ToSlash(t.TempDir()))
	path := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, bin, path)
	waitFor(t, "the first replica to hold every shard", func() bool {
		return shardHolders(db)[a.cmd.Process.Pid] == 16
	})
	b := startReplica(t, bin, path)
	waitFor(t, "the shards shared out evenly", func() bool {
		h := shardHolders(db)
		return h[a.cmd.Process.Pid] == 8 && h[b.cmd.Process.Pid] == 8
	})
	c, err := client.New(b.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const subs = 12
	for i := range subs {
		id := fmt.Sprintf("s%02d", i)
		_, err := c.CreateSubscription(ctx, claimcheck.SubscriptionSpec{ID: id, URL: recv.URL + "/hook/" + id,
			EventFilter: claimcheck.EventFilter{Types: []string{"created", "redeemed", "deleted"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	const n = 90
	ids := make([]string, 0, n)
	for i := range n {
		ref, err := c.Put(ctx, "load", strings.NewReader(fmt.Sprintf("payload %d", i)), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := redeemBytes(c, ref); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
		if i == n/3 {
			waitFor(t, "deliveries to begin", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(arrivals) > 0
			})
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every event at every subscription", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range subs {
			for _, id := range ids {
				if len(arrivals[fmt.Sprintf("s%02d", i)][id]) < 3 {
					return false
				}
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for sub, claims := range arrivals {
		for id, kinds := range claims {
			if first := firstArrivals(kinds); strings.Join(first, ",") != "created,redeemed,deleted" {
				t.Errorf("subscription %s, claim %s: events first arrived as %v (all: %v)", sub, id, first, kinds)
			}
		}
	}
	waitFor(t, "the surviving replica to hold every shard", func() bool {
		return shardHolders(db)[b.cmd.Process.Pid] == 16
	})
}

// shardHolders counts the live dispatch shard leases by the holder's
// process id (meta.LeaseHolder names it between slashes).
func shardHolders(db *sql.DB) map[int]int {
	rows, err := db.Query(`SELECT holder FROM leases WHERE name LIKE 'events-dispatch/shard/%'
		AND expires_at > (extract(epoch from clock_timestamp()) * 1e9)::bigint`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var h string
		if rows.Scan(&h) != nil {
			return nil
		}
		var pid int
		parts := strings.Split(h, "/")
		if len(parts) > 1 {
			_, _ = fmt.Sscanf(parts[1], "%d", &pid)
		}
		out[pid]++
	}
	return out
}

// firstArrivals is kinds with every repeat after the first left out.
func firstArrivals(kinds []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range kinds {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
