package gcsstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"

	"github.com/claimcheck/claimcheck/blob"
)

// corsMarker starts the response header that carries the ID of a CORS
// rule: GCS rules have no ID. A header of that name never appears in an
// answer, so allowing browsers to read it changes nothing (ADR 0230).
const corsMarker = "X-Claimcheck-Rule-"

// CORSRequestHeaders implements blob.CORSConfigurer: the headers of a V4
// signed PUT (PresignPut).
func (b *Bucket) CORSRequestHeaders() []string {
	return []string{"Content-Type", lengthRangeHeader, createOnlyHeader}
}

// CORSRules implements blob.CORSConfigurer. GCS has one header list per
// rule (responseHeader), which both lets browsers send those headers and
// read them: it is read as AllowedHeaders and ExposeHeaders alike.
func (b *Bucket) CORSRules(ctx context.Context) ([]blob.CORSRule, error) {
	attrs, err := b.bucket.Attrs(ctx)
	if err != nil {
		return nil, fmt.Errorf("blob: get CORS rules of bucket %s: %w", b.name, err)
	}
	rules := make([]blob.CORSRule, 0, len(attrs.CORS))
	for i, c := range attrs.CORS {
		id := "gcs:" + strconv.Itoa(i)
		var headers []string
		for _, h := range c.ResponseHeaders {
			if m, ok := cutPrefixFold(h, corsMarker); ok {
				if raw, err := hex.DecodeString(m); err == nil {
					id = string(raw)
					continue
				}
			}
			headers = append(headers, h)
		}
		rules = append(rules, blob.CORSRule{
			ID: id, AllowedOrigins: c.Origins, AllowedMethods: c.Methods,
			AllowedHeaders: headers, ExposeHeaders: slices.Clone(headers), MaxAgeSeconds: int(c.MaxAge / time.Second),
		})
	}
	return rules, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// PutCORSRules implements blob.CORSConfigurer: AllowedHeaders and
// ExposeHeaders together become the rule's responseHeader list, with the
// ID's marker header.
func (b *Bucket) PutCORSRules(ctx context.Context, rules []blob.CORSRule) error {
	out := make([]storage.CORS, 0, len(rules))
	for _, r := range rules {
		var headers []string
		for _, h := range append(slices.Clone(r.AllowedHeaders), r.ExposeHeaders...) {
			if !slices.ContainsFunc(headers, func(x string) bool { return strings.EqualFold(x, h) }) {
				headers = append(headers, h)
			}
		}
		if r.ID != "" && !strings.HasPrefix(r.ID, "gcs:") {
			headers = append(headers, corsMarker+hex.EncodeToString([]byte(r.ID)))
		}
		out = append(out, storage.CORS{
			Origins: r.AllowedOrigins, Methods: r.AllowedMethods, ResponseHeaders: headers,
			MaxAge: time.Duration(r.MaxAgeSeconds) * time.Second,
		})
	}
	if _, err := b.bucket.Update(ctx, storage.BucketAttrsToUpdate{CORS: out}); err != nil {
		return fmt.Errorf("blob: put CORS rules of bucket %s (%d rules): %w", b.name, len(out), err)
	}
	return nil
}
