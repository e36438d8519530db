package engine

import (
	"strings"
	"testing"
	"time"
)

// TestObjectKeySpread: a new object's key is <namespace>/<2 hex>/<blob id>,
// the spread a function of the id alone, and ids created in the same
// millisecond (what a burst of puts makes) fall over all 256 spreads
// rather than at the end of one key range.
func TestObjectKeySpread(t *testing.T) {
	now := time.Now()
	const n = 20000
	counts := map[string]int{}
	for range n {
		id := newBlobID(now)
		key := objectKey("orders", id)
		parts := strings.Split(key, "/")
		if len(parts) != 3 || parts[0] != "orders" || parts[2] != id || strings.Trim(parts[1], "0123456789abcdef") != "" || len(parts[1]) != 2 {
			t.Fatalf("key %q: want orders/<2 hex>/%s", key, id)
		}
		if again := objectKey("orders", id); again != key {
			t.Fatalf("key of %s is %q, then %q", id, key, again)
		}
		if !strings.HasPrefix(key, namespacePrefix("orders")) {
			t.Fatalf("key %q is outside the namespace prefix %q", key, namespacePrefix("orders"))
		}
		counts[parts[1]]++
	}
	if len(counts) != 256 {
		t.Fatalf("%d ids fell into %d spreads, want all 256", n, len(counts))
	}
	// About 78 each; a spread with more than three times its share would
	// be a hot range again.
	for s, c := range counts {
		if c > 3*n/256 {
			t.Errorf("spread %s took %d of %d keys", s, c, n)
		}
	}
	if k := encryptedObjectKey("orders", "b_x", "dk_y"); k != objectKey("orders", "b_x")+".dk_y" {
		t.Errorf("encrypted key %q", k)
	}
}
