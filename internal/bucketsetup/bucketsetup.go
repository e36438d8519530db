// Package bucketsetup is what the embedded store does to its bucket at
// start, before it serves anything: the configuration of the bucket
// itself, which lives beside the objects and outlives every process.
//
//   - The lifecycle safety net (lifecycle.go, ADR 0020): on a bucket that
//     expires objects by age (S3 lifecycle rules), one expiration rule per
//     namespace prefix, well past every claim's life, so an object the
//     protocol failed to delete does not stay forever; and a rule that
//     aborts forgotten multipart uploads.
//   - Bucket CORS (cors.go, ADR 0086): on a bucket whose presigned URLs
//     browsers use, a rule that lets the server's allowed origins PUT
//     direct uploads.
//
// Both read the bucket's rules, compare them with what the configuration
// calls for, and in manage mode write the store's own rules (their IDs
// start with "claimcheck:<store id>:"), keeping everybody else's, other
// stores' on the same bucket included. Before them, ClaimStorage (owner.go)
// makes sure the storage is this store's, or shared on purpose. The engine calls
// Run from engine.Open with its metered store: the abilities used here
// (blob.Lifecycler, blob.CORSConfigurer) come from blob.AbilitiesOf, and a
// bucket without them is left alone.
package bucketsetup

import (
	"context"
	"log/slog"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
)

// Config is what the set-up needs of the store's configuration.
type Config struct {
	// Lifecycle is the safety net's mode: LifecycleManage,
	// LifecycleCheck or LifecycleOff.
	Lifecycle string
	// Policies are the configured namespaces' policies; Defaults the
	// policy of every other namespace (nil: only configured namespaces
	// exist).
	Policies map[string]claimcheck.Policy
	Defaults *claimcheck.Policy
	// NamespacePrefix is the prefix every object key of namespace ns
	// starts with (the engine's layout, ADR 0261): what a namespace's
	// lifecycle rule covers.
	NamespacePrefix func(ns string) string

	// BucketCORS is the bucket CORS mode: BucketCORSManage,
	// BucketCORSCheck or BucketCORSOff.
	BucketCORS string
	// BrowserOrigins are the origins whose pages may PUT direct uploads
	// (http.cors.allowed_origins).
	BrowserOrigins []string

	// StoreID is the store's id (ClaimStorage): its lifecycle rules'
	// IDs carry it, and only rules carrying it are changed.
	StoreID string
	// OwnsStorage: the owner marker names this store, so claimcheck
	// rules without a store id, written before IDs carried one, are
	// this store's too.
	OwnsStorage bool

	Logger *slog.Logger
}

// Result is what the set-up leaves in force.
type Result struct {
	// Rules are the bucket's lifecycle rules in force after the check
	// (nil: the bucket has none to check, or the mode is off), which
	// bound the blobs dedup may share.
	Rules []blob.LifecycleRule
	// Drift is the number of lifecycle rules that differ from the
	// configuration and were left as they are (every drifted rule in
	// check mode; in manage mode the foreign rules that expire the
	// store's objects too soon).
	Drift int
}

// Run sets the bucket up in the configured modes: the lifecycle safety
// net first, then bucket CORS. Only the safety net can fail the start
// (its rules could not be read, or not written in manage mode); a CORS
// problem is logged, never fatal, since it only makes browsers fail.
func Run(ctx context.Context, bucket blob.Store, cfg Config) (Result, error) {
	ab := blob.AbilitiesOf(bucket)
	rules, drift, err := setupLifecycle(ctx, cfg.Logger, ab.Lifecycler, cfg)
	if err != nil {
		return Result{}, err
	}
	setupCORS(ctx, cfg.Logger, ab.CORSConfigurer, cfg.BucketCORS, cfg.BrowserOrigins)
	return Result{Rules: rules, Drift: drift}, nil
}
