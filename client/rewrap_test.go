package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestRewrapOverHTTP: what is particular to master key rotation over the
// wire, POST /v1/namespaces/{ns}/key/rewrap. (The rotation itself, through
// the client, is checked by TestConformance.)
func TestRewrapOverHTTP(t *testing.T) {
	b := setup(t)
	// The whole store is not rewrapped over HTTP.
	if _, err := b.client.RewrapDataKeys(context.Background(), claimcheck.RewrapOptions{}); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "rewrap-keys") {
		t.Fatalf("rewrap without a namespace: %v", err)
	}
	// Bad queries are refused, naming the parameter.
	for query, want := range map[string]string{"dry_run=maybe": "dry_run", "dryrun=true": "dryrun", "dry_run=1&dry_run=0": "dry_run"} {
		resp, err := http.Post(b.http.URL+"/v1/namespaces/vault/key/rewrap?"+query, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e api.Error
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Code != api.CodeInvalidArgument || !strings.Contains(e.Message, want) {
			t.Errorf("POST ?%s: %s %s; want 400 invalid_argument naming %s", query, resp.Status, body, want)
		}
	}
}
