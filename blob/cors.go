package blob

import (
	"context"
	"errors"
	"strings"
)

// CORSRule is one rule of a bucket's CORS configuration: browsers on a
// page of one of AllowedOrigins may send AllowedMethods with
// AllowedHeaders, and read ExposeHeaders of the answer. An origin or a
// header may hold one "*", which matches any text (S3's rules).
type CORSRule struct {
	ID             string
	AllowedOrigins []string
	AllowedMethods []string
	AllowedHeaders []string
	ExposeHeaders  []string
	MaxAgeSeconds  int
}

// ErrCORSUnsupported is returned by CORSConfigurer methods when the
// service has no bucket CORS configuration to read or write (MinIO
// answers CORS from a server-wide setting instead).
var ErrCORSUnsupported = errors.New("the storage service does not support bucket CORS configuration")

// CORSConfigurer is implemented by stores whose presigned URLs browsers
// use directly (S3, GCS, Azure): the bucket's CORS rules decide whether a page may
// PUT a direct upload. The start-up bucket set-up
// (internal/bucketsetup) checks them (and writes its own rule when
// asked), like the lifecycle rules.
type CORSConfigurer interface {
	// CORSRequestHeaders are the headers a browser sends with the
	// store's presigned PUT (PresignPut's Headers): a rule must allow
	// each for the PUT to pass the browser's preflight.
	CORSRequestHeaders() []string
	// CORSRules returns the bucket's rules (none: an empty slice).
	CORSRules(ctx context.Context) ([]CORSRule, error)
	// PutCORSRules replaces the bucket's whole CORS configuration.
	// Callers that share the bucket read the rules first and keep the
	// ones they do not own.
	PutCORSRules(ctx context.Context, rules []CORSRule) error
}

// Allows reports whether the rule lets a page of origin send method with
// every header of headers. origin is compared as text, so a wildcard
// origin of ours (https://*.example.com) is covered by the same entry or
// by a wider pattern.
func (r CORSRule) Allows(origin, method string, headers []string) bool {
	if !anyMatch(r.AllowedOrigins, origin, false) || !anyMatch(r.AllowedMethods, method, true) {
		return false
	}
	for _, h := range headers {
		if !anyMatch(r.AllowedHeaders, h, true) {
			return false
		}
	}
	return true
}

func anyMatch(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			p, s = strings.ToLower(p), strings.ToLower(s)
		}
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch matches s against p, whose one "*" (if any) matches any text.
func globMatch(p, s string) bool {
	pre, post, wild := strings.Cut(p, "*")
	if !wild {
		return p == s
	}
	return len(s) >= len(pre)+len(post) && strings.HasPrefix(s, pre) && strings.HasSuffix(s, post)
}
