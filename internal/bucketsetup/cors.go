package bucketsetup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck/blob"
)

// Bucket CORS (ADR 0086). A direct upload on S3 storage is a PUT from
// the browser straight to the bucket with a presigned URL, so the
// bucket's own CORS rules must let the pages of the server's allowed
// origins (http.cors.allowed_origins, handed over as
// Config.BrowserOrigins) send it. Like the lifecycle rules
// (lifecycle.go), the store checks them at start and, in manage mode,
// writes its one rule, keeping everybody else's. Nothing here decides
// who may upload: the presigned URL does. A missing rule only makes
// browsers fail, so every problem is reported, never fatal.

// Bucket CORS modes (Config.BucketCORS).
const (
	// BucketCORSManage writes the store's rule when the allowed origins
	// are not all covered.
	BucketCORSManage = "manage"
	// BucketCORSCheck only reads the rules and says what is missing (the
	// default: a bucket's CORS is often the web team's).
	BucketCORSCheck = "check"
	// BucketCORSOff neither reads nor writes them.
	BucketCORSOff = "off"
)

// corsRuleID marks the rule this store owns; others are kept.
const corsRuleID = ruleIDPrefix + "direct-uploads"

// desiredCORSRule is the rule manage mode writes for origins: PUTs with
// the headers the store's presigned URLs need (corsRequestHeaders, which
// the bucket must allow each of).
func desiredCORSRule(origins, corsRequestHeaders []string) blob.CORSRule {
	return blob.CORSRule{
		ID:             corsRuleID,
		AllowedOrigins: slices.Clone(origins),
		AllowedMethods: []string{"PUT"},
		AllowedHeaders: slices.Clone(corsRequestHeaders),
		ExposeHeaders:  []string{"ETag"},
		MaxAgeSeconds:  3600,
	}
}

// uncoveredOrigins are the origins no rule lets PUT a direct upload.
func uncoveredOrigins(rules []blob.CORSRule, origins, corsRequestHeaders []string) []string {
	var out []string
	for _, o := range origins {
		if !slices.ContainsFunc(rules, func(r blob.CORSRule) bool { return r.Allows(o, "PUT", corsRequestHeaders) }) {
			out = append(out, o)
		}
	}
	return out
}

// corsUnsupportedHint is said when the service has no bucket CORS
// configuration to write.
const corsUnsupportedHint = "this service has no bucket CORS configuration to write (MinIO answers CORS by its server-wide MINIO_API_CORS_ALLOW_ORIGIN, which allows every origin unless set); " +
	"make sure it lets these origins PUT, or set \"bucket_cors: off\" to silence this"

// setupCORS runs the start-up check of the bucket's CORS rules in the
// configured mode. It never fails the start: it logs what browsers would
// run into, and how to fix it.
func setupCORS(ctx context.Context, log *slog.Logger, cc blob.CORSConfigurer, mode string, origins []string) {
	if cc == nil || mode == BucketCORSOff || len(origins) == 0 {
		return
	}
	rules, err := cc.CORSRules(ctx)
	if err != nil {
		if errors.Is(err, blob.ErrCORSUnsupported) {
			log.Warn("bucket CORS: cannot check which origins may PUT direct uploads to the bucket: "+corsUnsupportedHint, "origins", origins, "err", err)
			return
		}
		log.Warn("bucket CORS: reading the bucket's CORS rules failed; browsers of http.cors.allowed_origins may be unable to PUT direct uploads (set \"bucket_cors: off\" if these credentials may not read them)", "origins", origins, "err", err)
		return
	}
	corsRequestHeaders := cc.CORSRequestHeaders()
	missing := uncoveredOrigins(rules, origins, corsRequestHeaders)
	if len(missing) == 0 {
		return
	}
	what := fmt.Sprintf("no rule of the bucket lets these origins PUT with headers %s, so browsers there cannot send direct uploads", strings.Join(corsRequestHeaders, ", "))
	if mode == BucketCORSCheck {
		log.Warn("bucket CORS: "+what+"; set \"bucket_cors: manage\" to let claimcheck add its rule, or add one by hand (docs/OPERATIONS.md, \"Browsers\")", "missing", missing, "mode", mode)
		return
	}
	// Manage: our rule as wanted, everybody else's as they are.
	next := []blob.CORSRule{desiredCORSRule(origins, corsRequestHeaders)}
	for _, r := range rules {
		if r.ID != corsRuleID {
			next = append(next, r)
		}
	}
	if err := cc.PutCORSRules(ctx, next); err != nil {
		if errors.Is(err, blob.ErrCORSUnsupported) {
			log.Warn("bucket CORS: "+what+"; "+corsUnsupportedHint, "missing", missing, "err", err)
			return
		}
		log.Warn("bucket CORS: "+what+", and writing claimcheck's rule failed (set \"bucket_cors: check\" or \"off\" if these credentials may not change the bucket's configuration)", "missing", missing, "err", err)
		return
	}
	log.Info("bucket CORS: rule written: these origins may now PUT direct uploads", "rule", corsRuleID, "origins", origins)
}
