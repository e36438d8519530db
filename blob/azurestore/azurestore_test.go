package azurestore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/azurestore"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// sasUnchecked is why the suite's refused-body checks do not apply: a
// SAS grants a blob, not a body.
const sasUnchecked = "a SAS cannot bind a Put Blob's length or sha256 (Azure checks only an MD5 the client would have to send); ConfirmUpload hashes the object and refuses it (ADR 0230)"

func TestAzure(t *testing.T) {
	u := testsvc.AzureURL(t)
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: sasUnchecked, PresignSumUnchecked: sasUnchecked})
}

func TestAzurePrefix(t *testing.T) {
	u := testsvc.AzureURL(t) + "?prefix=under/a/prefix/"
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) },
		blobtest.Options{PresignLengthUnchecked: sasUnchecked, PresignSumUnchecked: sasUnchecked})
}

// TestAzureSASCreatesOnly checks that a SAS URL cannot replace the blob
// it created: after the confirm the URL is still valid, and the bytes
// must stay the ones confirmed.
func TestAzureSASCreatesOnly(t *testing.T) {
	s := blobtest.Open(t, testsvc.AzureURL(t))
	defer s.Close()
	key := "sas-creates-only/" + strings.ToLower(rand.Text())
	defer func() { _ = s.Delete(context.Background(), key) }()
	pp, err := blob.AbilitiesOf(s).Presigner.PresignPut(t.Context(), key, 5, strings.Repeat("0", 64), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := url.Parse(pp.URL); q.Query().Get("sp") != "c" {
		t.Errorf("SAS permissions sp=%q, want c (create only)", q.Query().Get("sp"))
	}
	put := func(body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), pp.Method, pp.URL, strings.NewReader(body))
		for k, v := range pp.Headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := put("first"); code != http.StatusCreated {
		t.Fatalf("first PUT = %d, want 201", code)
	}
	if code := put("other"); code/100 == 2 {
		t.Fatalf("second PUT = %d, want a refusal", code)
	}
	r, err := s.NewReader(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	_ = r.Close()
	if string(got) != "first" {
		t.Fatalf("blob = %q, want the first PUT's bytes", got)
	}
}

// TestAzureOpenErrors: what is wrong is said at open, with what to do.
func TestAzureOpenErrors(t *testing.T) {
	u := testsvc.AzureURL(t)
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if _, err := blob.Open(t.Context(), "azblob://no-such-container"); err == nil || !strings.Contains(err.Error(), "container no-such-container does not exist: create it") {
		t.Errorf("Open of a missing container = %v", err)
	}
	if _, err := blob.Open(t.Context(), u+"?bogus=1"); err == nil || !strings.Contains(err.Error(), `unknown parameter "bogus"`) {
		t.Errorf("Open with an unknown parameter = %v", err)
	}
	// Another key of the right length: the emulator checks Shared Key
	// signatures as Azure does.
	i := strings.Index(conn, "AccountKey=") + len("AccountKey=")
	wrong := conn[:i] + strings.Repeat("A", 86) + "==" + conn[strings.Index(conn[i:], ";")+i:]
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", wrong)
	if _, err := blob.Open(t.Context(), u); err == nil || !strings.Contains(err.Error(), "the credentials were refused") {
		t.Errorf("Open with a wrong key = %v", err)
	}
}

// TestAzureLifecycleAbsentOnAzurite opens the engine on Azurite with no
// account_resource_id. Azurite has no management plane (no lifecycle
// management policies at all; the policy requests are checked against
// a recording ARM endpoint in lifecycle_test.go), and without the
// account's resource the store cannot reach one anyway: the start says
// so loudly, naming what to set and grant, and check mode counts every
// rule the policies call for as drift.
func TestAzureLifecycleAbsentOnAzurite(t *testing.T) {
	u := testsvc.Azure(t) // a container of its own: the store marks it as its own
	// One store (one metadata database) started twice: the container is
	// its own (.claimcheck-store).
	data := t.TempDir()
	for _, mode := range []string{engine.LifecycleCheck, engine.LifecycleManage} {
		var log bytes.Buffer
		s := enginetest.Open(t, engine.Config{
			Data: data, Storage: u, Lifecycle: mode,
			Namespaces: map[string]claimcheck.Policy{"orders": {}},
			Logger:     slog.New(slog.NewTextHandler(&log, nil)),
		})
		_ = s.Close()
		for _, part := range []string{"level=WARN", "lifecycle safety net absent", "account_resource_id=", "Storage Account Contributor", "managementPolicies/write", "rules=3"} {
			if !strings.Contains(log.String(), part) {
				t.Errorf("%s mode: the start-up log lacks %q:\n%s", mode, part, log.String())
			}
		}
	}
}

// TestAzureAccountResourceID checks that a malformed account resource
// is refused at open, naming the parameter and the form it takes.
func TestAzureAccountResourceID(t *testing.T) {
	u := testsvc.AzureURL(t)
	_, err := blob.Open(t.Context(), u+"?account_resource_id=/subscriptions/s/resourceGroups/g")
	if err == nil || !strings.Contains(err.Error(), "account_resource_id") || !strings.Contains(err.Error(), "Microsoft.Storage/storageAccounts/ACCOUNT") {
		t.Errorf("err = %v, want account_resource_id's form named", err)
	}
}
