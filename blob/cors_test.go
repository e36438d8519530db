package blob

import "testing"

func TestCORSRuleAllows(t *testing.T) {
	r := CORSRule{
		AllowedOrigins: []string{"https://app.example.com", "https://*.example.org"},
		AllowedMethods: []string{"PUT"},
		AllowedHeaders: []string{"Content-Type", "x-amz-*"},
	}
	for _, tc := range []struct {
		origin, method string
		headers        []string
		want           bool
	}{
		{"https://app.example.com", "PUT", []string{"content-type", "X-Amz-Checksum-Sha256"}, true},
		{"https://a.example.org", "put", nil, true},
		{"https://*.example.org", "PUT", nil, true}, // our own wildcard, the same entry
		{"https://app.example.com", "POST", nil, false},
		{"https://evil.example.com", "PUT", nil, false},
		{"https://app.example.com", "PUT", []string{"Authorization"}, false},
	} {
		if got := r.Allows(tc.origin, tc.method, tc.headers); got != tc.want {
			t.Errorf("Allows(%s, %s, %v) = %v, want %v", tc.origin, tc.method, tc.headers, got, tc.want)
		}
	}
	if !(CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"*"}}).Allows("https://*.example.org", "PUT", []string{"x"}) {
		t.Error(`"*" should allow everything`)
	}
}
