package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
)

// The hook after the object write runs with the object stored and the
// claim not yet committed: a put it fails leaves no claim to redeem.
func TestAfterObjectWriteHook(t *testing.T) {
	b := setup(t)
	stop := errors.New("stopped after the object write")
	objects := -1
	b.store.SetAfterObjectWrite(func(context.Context) error {
		objects = 0
		_ = filepath.WalkDir(filepath.Join(b.dir, "blobs"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
				objects++
			}
			return nil
		})
		return stop
	})
	ctx := context.Background()
	if _, err := b.store.Put(ctx, "plain", bytes.NewReader(jsonDoc(100<<10)), claimcheck.PutOptions{}); !errors.Is(err, stop) {
		t.Fatalf("put: %v, want the hook's error", err)
	}
	if objects != 1 {
		t.Fatalf("the hook saw %d objects, want the put's one", objects)
	}
	list, err := b.store.List(ctx, "plain", claimcheck.ListOptions{State: claimcheck.StateActive})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Claims) != 0 {
		t.Fatalf("%d active claims after a put stopped before its commit", len(list.Claims))
	}
	b.store.SetAfterObjectWrite(nil)
	if _, err := b.store.Put(ctx, "plain", bytes.NewReader(jsonDoc(100<<10)), claimcheck.PutOptions{}); err != nil {
		t.Fatalf("put without the hook: %v", err)
	}
}
