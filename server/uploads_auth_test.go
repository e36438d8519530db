package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestUploadWithAuth runs the direct-upload flow on a server with API
// keys: init and confirm need a producer key of the namespace's tenant,
// while the PUT to the upload URL carries no key at all (its token is
// the credential, as a presigned URL is on S3).
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
		t.Fatalf("PUT to the upload URL without a key: %d %s", resp.StatusCode, msg)
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

// The embedded store is what the server serves, the data route's bodies
// included.
var _ server.Store = (*engine.Store)(nil)

// TestUploadDataToken: the server puts the store's upload token in the
// query of its data route, and refuses a PUT whose token is missing,
// altered, of another upload or given twice, and URLs of the earlier
// expires/sig form, before any byte is stored.
func TestUploadDataToken(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	producer := b.key(t, "acme", auth.RoleProducer, "")
	data := []byte("a payload sent by token")
	_, answer, u := initUpload(t, b, producer, data)
	_, _, other := initUpload(t, b, producer, []byte("another payload"))
	parsed, err := url.Parse(u.URL)
	if err != nil {
		t.Fatalf("init answered %s: %v", answer, err)
	}
	token := parsed.Query().Get("token")
	if parsed.Path != "/v1/uploads/"+u.ID+"/data" || len(parsed.Query()) != 1 || token == "" ||
		u.Method != http.MethodPut || u.Headers["Content-Type"] != "application/octet-stream" {
		t.Fatalf("init answered %s; want a PUT to the data route with a token", answer)
	}
	otherToken := strings.Split(other.URL, "?token=")[1]
	path := parsed.Path
	altered := []byte(token)
	altered[len(altered)-1] = 'A' // another URL-safe character
	if token[len(token)-1] == 'A' {
		altered[len(altered)-1] = 'B'
	}
	for _, tc := range []struct {
		name   string
		query  string
		status int
		code   string
		says   string
	}{
		{"no token", "", http.StatusForbidden, api.CodePermissionDenied, "no upload token"},
		{"URL of the earlier form", "?expires=1772367300&sig=abc", http.StatusForbidden, api.CodePermissionDenied, "earlier format"},
		{"altered token", "?token=" + string(altered), http.StatusForbidden, api.CodePermissionDenied, "signature does not match"},
		{"another upload's token", "?token=" + otherToken, http.StatusForbidden, api.CodePermissionDenied, "is for upload " + other.ID},
		{"token twice", "?token=" + token + "&token=" + token, http.StatusBadRequest, api.CodeInvalidArgument, "given 2 times"},
	} {
		resp, msg := b.do(t, "", http.MethodPut, path+tc.query, bytes.NewReader(data))
		if e := wantError(t, resp, msg, tc.status, tc.code); !strings.Contains(e.Message, tc.says) || strings.Contains(e.Message, token) {
			t.Errorf("%s: %s; want it to say %q and not to quote the token", tc.name, e.Message, tc.says)
		}
	}
	confirm := "/v1/uploads/" + u.ID + "/confirm"
	if resp, msg := b.do(t, producer, http.MethodPost, confirm, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("confirm after refused PUTs: %s %s; want 400, nothing uploaded", resp.Status, msg)
	}
	if resp, msg := b.do(t, "", http.MethodPut, path+"?token="+token, bytes.NewReader(data)); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT with the token: %s %s", resp.Status, msg)
	}
	if resp, msg := b.do(t, producer, http.MethodPost, confirm, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %s %s", resp.Status, msg)
	}
}
