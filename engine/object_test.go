package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestStatObject: Stat names the claim's object exactly when the object
// holds the payload as it is (uncompressed, unencrypted), and that key
// reads back the payload from the blob storage; compressed and encrypted
// objects are not named.
func TestStatObject(t *testing.T) {
	b := setup(t, encrypted)
	data := randomBytes(t, 100<<10)
	for _, tc := range []struct {
		ns   string
		data []byte
		raw  bool
	}{
		{"plain", data, true},
		{"gz", jsonDoc(100 << 10), false},
		{"sealed", data, false},
	} {
		ref := b.put(t, tc.ns, tc.data)
		info, err := b.store.Stat(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if (info.Object != "") != tc.raw {
			t.Fatalf("%s: object %q", tc.ns, info.Object)
		}
		if !tc.raw {
			continue
		}
		got, err := os.ReadFile(filepath.Join(b.dir, "blobs", filepath.FromSlash(info.Object)))
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Fatalf("%s: the object at %q is not the payload (%d bytes, %v)", tc.ns, info.Object, len(got), err)
		}
		if err := b.store.Delete(t.Context(), ref); err != nil {
			t.Fatal(err)
		}
		if info, err := b.store.Stat(t.Context(), ref); err != nil || info.State != claimcheck.StateDeleted {
			t.Fatalf("after delete: %+v %v", info, err)
		}
	}
}
