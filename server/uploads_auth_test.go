package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
)

// TestUploadWithAuth runs the direct-upload flow on a server with API
// keys: init and confirm need a producer key of the namespace's tenant,
// while the PUT to the signed URL carries no key at all (the URL is the
// credential, as with S3).
func TestUploadWithAuth(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	producer := b.key(t, "acme", auth.RoleProducer, "")
	consumer := b.key(t, "acme", auth.RoleConsumer, "")
	other := b.key(t, "beta", auth.RoleProducer, "")

	data := make([]byte, 5000)
	rand.Read(data)
	body := fmt.Sprintf(`{"size":%d,"sha256":%q}`, len(data), strings.TrimPrefix(claimcheck.DigestOf(data), "sha256:"))
	init := func(token string) (*http.Response, []byte) {
		return b.do(t, token, http.MethodPost, "/v1/namespaces/a2/uploads", strings.NewReader(body), "Content-Type", "application/json")
	}
	if resp, _ := init(""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("init without a key: %d", resp.StatusCode)
	}
	if resp, _ := init(consumer); resp.StatusCode != http.StatusForbidden {
		t.Errorf("init with a consumer key: %d", resp.StatusCode)
	}
	if resp, _ := init(other); resp.StatusCode != http.StatusNotFound {
		t.Errorf("init with another tenant's key: %d", resp.StatusCode)
	}
	resp, answer := init(producer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("init: %d %s", resp.StatusCode, answer)
	}
	var u claimcheck.Upload
	if err := json.Unmarshal(answer, &u); err != nil {
		t.Fatal(err)
	}

	put := strings.TrimPrefix(u.URL, b.http.URL)
	if resp, msg := b.do(t, "", http.MethodPut, put, bytes.NewReader(data)); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT to the signed URL without a key: %d %s", resp.StatusCode, msg)
	}

	confirm := "/v1/uploads/" + u.ID + "/confirm"
	if resp, _ := b.do(t, other, http.MethodPost, confirm, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("confirm with another tenant's key: %d", resp.StatusCode)
	}
	if resp, _ := b.do(t, consumer, http.MethodPost, confirm, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("confirm with a consumer key: %d", resp.StatusCode)
	}
	resp, answer = b.do(t, producer, http.MethodPost, confirm, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %d %s", resp.StatusCode, answer)
	}
	ref, err := claimcheck.ParseRef(answer)
	if err != nil || ref.ID != u.ID {
		t.Fatalf("confirm answered %s: %v", answer, err)
	}
}
