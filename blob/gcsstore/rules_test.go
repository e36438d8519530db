package gcsstore_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// fakeBucketAPI is the bucket resource of GCS's JSON API as far as the
// store's rules use it: GET returns the bucket, PATCH replaces the
// fields it sends. fake-gcs-server accepts a PATCH of "lifecycle" and
// "cors" but keeps neither, so the store's requests are checked here,
// against what the SDK sends.
type fakeBucketAPI struct {
	mu      sync.Mutex
	bucket  map[string]json.RawMessage
	patches []map[string]json.RawMessage
}

func newFakeBucketAPI(t *testing.T, bucket map[string]json.RawMessage) (*fakeBucketAPI, string) {
	f := &fakeBucketAPI{bucket: bucket}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/storage/v1/b/rules":
		case r.Method == http.MethodPatch && r.URL.Path == "/storage/v1/b/rules":
			var p map[string]json.RawMessage
			body, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(body, &p); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.patches = append(f.patches, p)
			maps.Copy(f.bucket, p)
		default:
			http.NotFound(w, r) // testIamPermissions among others: no IAM here
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f.bucket)
	}))
	t.Cleanup(srv.Close)
	return f, "gs://rules?anonymous=true&endpoint=" + srv.URL
}

// TestGCSLifecycleRules checks the rules the store writes and reads: its
// own with their ID marker, a foreign one (two prefixes, no ID) written
// back as the bucket had it, and the drift the start-up check reports.
func TestGCSLifecycleRules(t *testing.T) {
	foreign := `{"action":{"type":"Delete"},"condition":{"age":400,"matchesPrefix":["logs/","tmp/"]}}`
	f, u := newFakeBucketAPI(t, map[string]json.RawMessage{
		"name":      json.RawMessage(`"rules"`),
		"lifecycle": json.RawMessage(`{"rule":[` + foreign + `]}`),
	})
	s := blobtest.Open(t, u+"&prefix=cc/")
	defer s.Close()
	lc := blob.AbilitiesOf(s).Lifecycler
	ctx := t.Context()
	rules, err := lc.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// "logs/" and "tmp/" are outside the store's prefix "cc/": the rule
	// reaches none of its keys.
	if len(rules) != 0 {
		t.Fatalf("rules under cc/ = %+v, want none", rules)
	}
	want := []blob.LifecycleRule{
		{ID: "claimcheck:abort-multipart", AbortMultipartDays: 1},
		{ID: "claimcheck:default", Prefix: "", ExpireDays: 9},
		{ID: "claimcheck:ns:orders", Prefix: "orders/", ExpireDays: 3},
	}
	if err := lc.PutLifecycleRules(ctx, want); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	sent := string(f.patches[len(f.patches)-1]["lifecycle"])
	f.mu.Unlock()
	for _, part := range []string{
		`"matchesPrefix":["cc/orders/",".claimcheck-rule/claimcheck:ns:orders"]`,
		`"age":3`, `"type":"Delete"`, `"type":"AbortIncompleteMultipartUpload"`,
	} {
		if !strings.Contains(sent, part) {
			t.Errorf("PATCH lifecycle %s lacks %s", sent, part)
		}
	}
	if strings.Contains(sent, "logs/") {
		t.Errorf("PATCH lifecycle %s keeps a rule the caller did not pass back", sent)
	}
	got, err := lc.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b blob.LifecycleRule) int { return strings.Compare(a.ID, b.ID) })
	if !slices.Equal(got, want) {
		t.Fatalf("rules read back = %+v, want %+v", got, want)
	}
}

// TestGCSLifecycleCheck opens the engine in check mode on the emulator,
// which keeps no lifecycle rules: every rule the policies call for is
// reported as drift, and nothing is written.
func TestGCSLifecycleCheck(t *testing.T) {
	u := testsvc.GCS(t)
	var log bytes.Buffer
	enginetest.Open(t, engine.Config{
		Storage: u, Lifecycle: engine.LifecycleCheck,
		Namespaces: map[string]claimcheck.Policy{"orders": {}},
		Logger:     slog.New(slog.NewTextHandler(&log, nil)),
	})
	// Rule IDs are scoped to the store (claimcheck:<store id>:…).
	for _, id := range []string{":ns:orders drift=missing", ":default drift=missing"} {
		if !strings.Contains(log.String(), "lifecycle rule drift") || !strings.Contains(log.String(), id) {
			t.Errorf("check mode did not report %s missing:\n%s", id, log.String())
		}
	}
}

// TestGCSCORSRules round-trips a rule with its ID through the CORS
// configuration GCS has, one header list per rule.
func TestGCSCORSRules(t *testing.T) {
	f, u := newFakeBucketAPI(t, map[string]json.RawMessage{"name": json.RawMessage(`"rules"`)})
	s := blobtest.Open(t, u)
	defer s.Close()
	cc := blob.AbilitiesOf(s).CORSConfigurer
	rule := blob.CORSRule{ID: "claimcheck:direct-uploads", AllowedOrigins: []string{"https://app.example.com"}, AllowedMethods: []string{"PUT"},
		AllowedHeaders: cc.CORSRequestHeaders(), MaxAgeSeconds: 3600}
	if err := cc.PutCORSRules(t.Context(), []blob.CORSRule{rule}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	sent := string(f.patches[0]["cors"])
	f.mu.Unlock()
	if !strings.Contains(sent, `"X-Goog-Content-Length-Range"`) || !strings.Contains(sent, `"maxAgeSeconds":3600`) {
		t.Errorf("PATCH cors = %s", sent)
	}
	got, err := cc.CORSRules(t.Context())
	if err != nil || len(got) != 1 || got[0].ID != rule.ID || !got[0].Allows("https://app.example.com", "PUT", cc.CORSRequestHeaders()) {
		t.Fatalf("CORSRules = %+v, %v; want the rule back", got, err)
	}
}
