package client_test

import (
	"net/http"
	"testing"
)

// TestDestroyKeyNeedsConfirm: crypto-shredding over the wire must repeat
// the namespace in the query, so that a mistyped or replayed URL does not
// destroy data. (Shredding itself, through the client, is checked by
// TestConformance.)
func TestDestroyKeyNeedsConfirm(t *testing.T) {
	b := setup(t)
	for _, query := range []string{"", "?confirm=other"} {
		req, _ := http.NewRequest(http.MethodDelete, b.http.URL+"/v1/namespaces/vault/key"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("destroy with %q: %d, want 400", query, resp.StatusCode)
		}
	}
}
