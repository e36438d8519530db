package systemtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// TestShreddingUnderLoad destroys an encrypted namespace's data key while
// two writers put and redeem there, and goes on putting after it. The
// history checker holds the server to the shred's promise both ways:
// nothing put under the destroyed key redeems once the destruction was
// answered, and every claim put after it (under the next key) redeems its
// bytes. The inventory at the end finds every object owned.
func TestShreddingUnderLoad(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	config := fmt.Sprintf("master_key: %s\nmetadata: %q\nstorage: %q\nnamespaces:\n  vault:\n    encryption: aes-256-gcm\n",
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"sqlite:"+filepath.Join(dir, "meta.db"), "file://"+filepath.ToSlash(filepath.Join(dir, "objects")))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startServer(t, bin, dir, "--config", cfg)
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	hist := recordHistory(t, "shred")
	rec := hist.rec.With(c)
	ctx := context.Background()

	phase := 500 * time.Millisecond
	if !testing.Short() {
		phase = 2 * time.Second
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			var refs []claimcheck.Ref
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				data := []byte(fmt.Sprintf("secret %d of writer %d", i, w))
				ref, err := rec.Put(ctx, "vault", data, claimcheck.PutOptions{})
				if err == nil {
					refs = append(refs, ref)
				}
				if len(refs) == 0 {
					continue
				}
				// Redeem an earlier claim too: one from before the shred,
				// now and then, once it has happened.
				_, _ = rec.Redeem(ctx, refs[i%len(refs)])
			}
		})
	}
	time.Sleep(phase)
	if err := rec.DestroyKey(ctx, "vault"); err != nil {
		t.Fatalf("destroy the key of vault: %v", err)
	}
	time.Sleep(phase)
	close(stop)
	wg.Wait()
	hist.inventory(t, bin, cfg, 0)
	hist.check(t)
}
