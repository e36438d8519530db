package systemtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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

// TestEventsSurviveKilledDispatcher: two replicas on PostgreSQL, the
// first (holding every dispatch shard, then half) killed with SIGKILL
// while the replicas deliver to a receiver named in the config. Every
// created event arrives (the other replica takes the shards and resumes
// from the stored cursor), signed,
// and the only events that arrive twice are those of the batch that was
// in flight (ADR 0240).
func TestEventsSurviveKilledDispatcher(t *testing.T) {
	t.Parallel()
	dsn, db := testsvc.Postgres(t)
	bin := buildBinary(t)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	key := bytes.Repeat([]byte{7}, 32)

	var mu sync.Mutex
	seen := map[string]int{}
	var bad []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		var ce struct {
			Subject string `json:"subject"`
			Type    string `json:"type"`
		}
		_ = json.Unmarshal(body, &ce)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("webhook-signature") != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
			bad = append(bad, id)
		}
		seen[ce.Subject]++
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()

	batch := 20
	cfg := fmt.Sprintf(`metadata: %q
storage: %q
defaults: false
namespaces:
  load: {threshold: 1}
subscriptions:
  allow_loopback_targets: true
  settle: 100ms
  interval: 20ms
  batch: %d
  backoff_min: 100ms
  targets:
    - id: ops
      url: %q
      types: [created]
      secret: %q
`, dsn, "file://"+filepath.ToSlash(t.TempDir()), batch, recv.URL+"/hook", secret)
	path := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, bin, path)
	waitFor(t, "the first replica to hold every dispatch shard", func() bool {
		return shardHolders(db)[a.cmd.Process.Pid] == 16
	})
	b := startReplica(t, bin, path)
	c, err := client.New(b.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 300
	ids := make([]string, 0, n)
	for i := range n {
		ref, err := c.Put(ctx, "load", strings.NewReader(fmt.Sprintf("payload %d", i)), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
		if i == n/3 {
			// Mid-delivery: kill the holder, which is delivering what
			// has been put so far.
			waitFor(t, "deliveries to begin", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) > 0
			})
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every created event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, "the surviving replica to hold every shard", func() bool {
		return shardHolders(db)[b.cmd.Process.Pid] == 16
	})
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("signatures that do not verify: %v", bad)
	}
	dup := 0
	for _, id := range ids {
		if seen[id] > 1 {
			dup++
		}
	}
	if dup > batch {
		t.Errorf("%d events arrived twice; at most the batch in flight (%d) may", dup, batch)
	}
	t.Logf("%d events, %d arrived twice (the batch in flight when the holder was killed)", n, dup)
}
