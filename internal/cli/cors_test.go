package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/internal/config"
)

// TestCORSConfig: http.cors comes from the file and from the environment
// (one comma-separated string), reaches the engine as the origins its
// bucket must cover, and a bad origin stops serve naming the entry.
func TestCORSConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
	}{
		{"file", "http:\n  cors:\n    allowed_origins: [\"https://App.example.com:443\", \"https://*.example.org\"]\n    max_age: 10m\nbucket_cors: manage\n", nil},
		{"environment", "", []string{"CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS=https://App.example.com:443, https://*.example.org", "CLAIMCHECK_HTTP__CORS__MAX_AGE=10m", "CLAIMCHECK_BUCKET_CORS=manage"}},
	} {
		var fc fileConfig
		if err := config.Decode([]byte(tc.yaml), tc.env, &fc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		limits, _, err := fc.HTTP.load(false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		origins, err := limits.CORS.NormalOrigins()
		if err != nil || !slices.Equal(origins, []string{"https://app.example.com", "https://*.example.org"}) || limits.CORS.MaxAge.String() != "10m0s" || fc.BucketCORS != "manage" {
			t.Errorf("%s: origins %v (%v), max_age %s, bucket_cors %q", tc.name, origins, err, limits.CORS.MaxAge, fc.BucketCORS)
		}
	}
	var fc fileConfig
	if err := config.Decode(nil, []string{"CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS=https://ok.example.com,https://app.example.com/"}, &fc); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fc.HTTP.load(false); err == nil || !strings.Contains(err.Error(), `http.cors.allowed_origins[1] "https://app.example.com/"`) {
		t.Errorf("a bad origin: %v", err)
	}
}
