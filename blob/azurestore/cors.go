package azurestore

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/claimcheck/claimcheck/blob"
)

// corsMarker starts the exposed header that carries the ID of a CORS
// rule: Azure's rules have no ID. A header of that name never appears
// in an answer, so exposing it changes nothing (ADR 0230).
const corsMarker = "x-claimcheck-rule-"

// CORSRequestHeaders implements blob.CORSConfigurer: the headers of a
// SAS PUT (PresignPut).
func (b *Bucket) CORSRequestHeaders() []string {
	return []string{"Content-Type", "X-Ms-Blob-Type"}
}

// CORSRules implements blob.CORSConfigurer. Azure keeps CORS rules per
// storage account (its blob service), not per container: the rules read
// and written are the account's, shared by every container in it (ADR
// 0230).
func (b *Bucket) CORSRules(ctx context.Context) ([]blob.CORSRule, error) {
	props, err := b.service.GetProperties(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("blob: get the CORS rules of the storage account of container %s: %w", b.name, err)
	}
	rules := make([]blob.CORSRule, 0, len(props.CORS))
	for i, c := range props.CORS {
		id := "azure:" + strconv.Itoa(i)
		var expose []string
		for _, h := range split(c.ExposedHeaders) {
			if m, ok := strings.CutPrefix(strings.ToLower(h), corsMarker); ok {
				if raw, err := hex.DecodeString(m); err == nil {
					id = string(raw)
					continue
				}
			}
			expose = append(expose, h)
		}
		r := blob.CORSRule{
			ID: id, AllowedOrigins: split(c.AllowedOrigins), AllowedMethods: split(c.AllowedMethods),
			AllowedHeaders: split(c.AllowedHeaders), ExposeHeaders: expose,
		}
		if c.MaxAgeInSeconds != nil {
			r.MaxAgeSeconds = int(*c.MaxAgeInSeconds)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// split reads one of Azure's comma-separated lists.
func split(s *string) []string {
	if s == nil || *s == "" {
		return nil
	}
	parts := strings.Split(*s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// PutCORSRules implements blob.CORSConfigurer: the account's CORS rules
// are replaced; the rest of its blob service properties are kept.
func (b *Bucket) PutCORSRules(ctx context.Context, rules []blob.CORSRule) error {
	out := make([]*service.CORSRule, 0, len(rules))
	for _, r := range rules {
		expose := r.ExposeHeaders
		if r.ID != "" && !strings.HasPrefix(r.ID, "azure:") {
			expose = append(expose[:len(expose):len(expose)], corsMarker+hex.EncodeToString([]byte(r.ID)))
		}
		out = append(out, &service.CORSRule{
			AllowedOrigins:  ptr(strings.Join(r.AllowedOrigins, ",")),
			AllowedMethods:  ptr(strings.Join(r.AllowedMethods, ",")),
			AllowedHeaders:  ptr(strings.Join(r.AllowedHeaders, ",")),
			ExposedHeaders:  ptr(strings.Join(expose, ",")),
			MaxAgeInSeconds: ptr(int32(r.MaxAgeSeconds)),
		})
	}
	if _, err := b.service.SetProperties(ctx, &service.SetPropertiesOptions{CORS: out}); err != nil {
		return fmt.Errorf("blob: put the CORS rules of the storage account of container %s (%d rules): %w", b.name, len(out), err)
	}
	return nil
}
