package azurestore

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/bucketsetup"
)

// Azurite emulates the blob service only: it has no management plane
// (Azure Resource Manager), so it keeps no lifecycle management
// policies. The policy requests the store sends through the SDK are
// checked here, against a recording ARM endpoint on loopback.

const accountID = "/subscriptions/sub-1/resourceGroups/rg-1/providers/Microsoft.Storage/storageAccounts/acct1"

// fakeARM is the account's managementPolicies/default resource.
type fakeARM struct {
	mu       sync.Mutex
	policy   json.RawMessage // the stored resource, nil: none
	requests []string        // method and path of each request
	puts     []json.RawMessage
	auth     []string
}

func newFakeARM(t *testing.T, initial string) (*fakeARM, *arm.ClientOptions) {
	f := &fakeARM{}
	if initial != "" {
		f.policy = json.RawMessage(initial)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		if r.URL.Path != accountID+"/managementPolicies/default" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			if f.policy == nil {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"error":{"code":"ManagementPolicyNotFound","message":"No ManagementPolicy found"}}`)
				return
			}
			_, _ = w.Write(f.policy)
		case http.MethodPut:
			body, _ := io.ReadAll(r.Body)
			f.puts = append(f.puts, body)
			f.policy = body
			_, _ = w.Write(body)
		case http.MethodDelete:
			f.policy = nil
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return f, &arm.ClientOptions{ClientOptions: policy.ClientOptions{
		Cloud: cloud.Configuration{
			ActiveDirectoryAuthorityHost: srv.URL,
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: srv.URL, Audience: "https://management.example"},
			},
		},
		Transport: srv.Client(),
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}}
}

// staticToken is an Azure AD credential that never asks Azure AD.
type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "test-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func managedBucket(t *testing.T, opts *arm.ClientOptions, container, prefix string) *Bucket {
	p, err := newPolicies(accountID, staticToken{}, opts, container, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return &Bucket{policies: p}
}

// The account's policy has rules of other owners: a tiering rule, a
// delete rule of another container and one under the store's
// container but outside its prefix. All three must come back untouched.
var foreignRules = []string{`{"enabled":true,"name":"tiering","type":"Lifecycle","definition":{"actions":{"baseBlob":{"tierToCool":{"daysAfterModificationGreaterThan":30}}},"filters":{"blobTypes":["blockBlob"]}}}`,
	`{"enabled":true,"name":"otherlogs","type":"Lifecycle","definition":{"actions":{"baseBlob":{"delete":{"daysAfterModificationGreaterThan":2}}},"filters":{"blobTypes":["blockBlob"],"prefixMatch":["other/logs/"]}}}`,
	`{"enabled":true,"name":"tmp","type":"Lifecycle","definition":{"actions":{"baseBlob":{"delete":{"daysAfterModificationGreaterThan":1}}},"filters":{"blobTypes":["blockBlob"],"prefixMatch":["cont/tmp/"]}}}`,
}

func TestAzureLifecyclePolicyRequests(t *testing.T) {
	f, opts := newFakeARM(t, `{"id":"x","name":"default","properties":{"policy":{"rules":[`+strings.Join(foreignRules, ",")+`]}}}`)
	b := managedBucket(t, opts, "cont", "cc/")
	ctx := t.Context()
	rules, err := b.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 0 {
		t.Fatalf("rules under cont/cc/ = %+v, want none (tiering deletes nothing, the others are elsewhere)", rules)
	}
	want := []blob.LifecycleRule{
		{ID: "claimcheck:default", Prefix: "", ExpireDays: 9},
		{ID: "claimcheck:ns:orders", Prefix: "orders/", ExpireDays: 3},
	}
	if err := b.PutLifecycleRules(ctx, want); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if len(f.puts) != 1 {
		t.Fatalf("requests %v, want one PUT", f.requests)
	}
	if last := f.requests[len(f.requests)-1]; !strings.HasPrefix(last, "PUT "+accountID+"/managementPolicies/default?api-version=") {
		t.Errorf("request %q", last)
	}
	if a := f.auth[len(f.auth)-1]; a != "Bearer test-token" {
		t.Errorf("Authorization %q, want the Azure AD token", a)
	}
	var sent struct {
		Properties struct {
			Policy struct {
				Rules []json.RawMessage `json:"rules"`
			} `json:"policy"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(f.puts[0], &sent); err != nil {
		t.Fatal(err)
	}
	f.mu.Unlock()
	got := sent.Properties.Policy.Rules
	if len(got) != 5 {
		t.Fatalf("PUT has %d rules, want 3 foreign + 2 ours: %s", len(got), f.puts[0])
	}
	for i, foreign := range foreignRules {
		var a, b any
		_ = json.Unmarshal([]byte(foreign), &a)
		_ = json.Unmarshal(got[i], &b)
		if ja, _ := json.Marshal(a); !bytes.Equal(ja, must(json.Marshal(b))) {
			t.Errorf("foreign rule %d written as %s, want %s", i, got[i], foreign)
		}
	}
	orders := string(got[4])
	for _, part := range []string{
		`"name":"claimcheck`, `"enabled":true`, `"type":"Lifecycle"`, `"blobTypes":["blockBlob"]`,
		`"prefixMatch":["cont/cc/orders/"]`, `"delete":{"daysAfterModificationGreaterThan":3}`,
	} {
		if !strings.Contains(orders, part) {
			t.Errorf("rule %s lacks %s", orders, part)
		}
	}
	read, err := b.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read, want) {
		t.Fatalf("rules read back = %+v, want %+v", read, want)
	}

	// Another store on the same account (another prefix) sees ours as
	// foreign only where they reach its keys, and replacing its own
	// rules leaves ours alone.
	other := managedBucket(t, opts, "cont", "")
	seen, err := other.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || !strings.HasPrefix(seen[1].ID, "azure:claimcheck") || seen[2].Prefix != "cc/orders/" {
		t.Errorf("the other store reads %+v", seen)
	}
	if err := other.PutLifecycleRules(ctx, []blob.LifecycleRule{{ID: "claimcheck:default", ExpireDays: 20}}); err != nil {
		t.Fatal(err)
	}
	// Its whole-container rule reaches this store's keys: a foreign
	// rule here, ours untouched.
	read, err = b.LifecycleRules(ctx)
	if err != nil || len(read) != 3 || !slices.Equal(read[:2], want) || read[2].Prefix != "" || read[2].ExpireDays != 20 || !strings.HasPrefix(read[2].ID, "azure:") {
		t.Errorf("after the other store's put, rules = %+v, %v; want %+v and its 20-day rule", read, err, want)
	}

	// Azure has no action for abandoned uploads.
	if err := b.PutLifecycleRules(ctx, []blob.LifecycleRule{{ID: "claimcheck:abort-multipart", AbortMultipartDays: 1}}); err == nil || !strings.Contains(err.Error(), "cannot abort uploads") {
		t.Errorf("abort rule: err = %v, want it refused by name", err)
	}
}

// TestAzureLifecycleManage runs the start-up set-up in manage mode on an
// account without a policy: it writes the rules (the abort rule left to
// Azure's own clean-up of uncommitted blocks), and a second start finds
// them in place.
func TestAzureLifecycleManage(t *testing.T) {
	f, opts := newFakeARM(t, "")
	b := managedBucket(t, opts, "cont", "")
	cfg := bucketsetup.Config{
		Lifecycle:       bucketsetup.LifecycleManage,
		Policies:        map[string]claimcheck.Policy{"orders": {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(24 * time.Hour)}}},
		NamespacePrefix: func(ns string) string { return ns + "/" },
		Logger:          slog.New(slog.DiscardHandler),
	}
	res, err := bucketsetup.Run(t.Context(), b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rules) != 1 || !strings.HasSuffix(res.Rules[0].ID, ":ns:orders") || res.Drift != 0 {
		t.Fatalf("result %+v, want the namespace's rule and no drift", res)
	}
	f.mu.Lock()
	puts := len(f.puts)
	f.mu.Unlock()
	if puts != 1 {
		t.Fatalf("%d PUTs, want 1", puts)
	}
	cfg.Lifecycle = bucketsetup.LifecycleCheck
	res, err = bucketsetup.Run(t.Context(), b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Only the abort rule, which Azure cannot hold, is missing.
	if res.Drift != 1 {
		t.Errorf("check after manage: drift %d, want 1 (the abort rule)", res.Drift)
	}
}

// TestAzureLifecycleForbidden checks that a refused policy read names the
// role to grant.
func TestAzureLifecycleForbidden(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":{"code":"AuthorizationFailed","message":"no"}}`)
	}))
	defer srv.Close()
	b := managedBucket(t, &arm.ClientOptions{ClientOptions: policy.ClientOptions{
		Cloud: cloud.Configuration{Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: srv.URL, Audience: "https://management.example"},
		}},
		Transport: srv.Client(), Retry: policy.RetryOptions{MaxRetries: -1},
	}}, "cont", "")
	_, err := b.LifecycleRules(t.Context())
	if err == nil || !strings.Contains(err.Error(), "Storage Account Contributor") || !strings.Contains(err.Error(), "managementPolicies/write") {
		t.Errorf("err = %v, want the role named", err)
	}
}

func must(b []byte, _ error) []byte { return b }
