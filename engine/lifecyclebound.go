package engine

import (
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/bucketsetup"
)

// The bucket set-up at start (internal/bucketsetup) leaves the bucket's
// lifecycle rules in force in Store.rules. S3 counts an object's age
// from its write, not from our references, so a blob shared by dedup
// must have been written recently enough that no rule expires it before
// the new claim's deadline: dedupNotBefore is that bound.

// Lifecycle modes (Config.Lifecycle); see internal/bucketsetup.
const (
	// LifecycleManage creates missing rules and repairs drifted ones at
	// start (the default).
	LifecycleManage = bucketsetup.LifecycleManage
	// LifecycleCheck only reads the rules and reports drift, for
	// credentials that may not change the bucket's configuration.
	LifecycleCheck = bucketsetup.LifecycleCheck
	// LifecycleOff neither reads nor writes rules; dedup then assumes the
	// bucket expires nothing.
	LifecycleOff = bucketsetup.LifecycleOff
)

// Bucket CORS modes (Config.BucketCORS); see internal/bucketsetup.
const (
	// BucketCORSManage writes the store's rule when the allowed origins
	// are not all covered.
	BucketCORSManage = bucketsetup.BucketCORSManage
	// BucketCORSCheck only reads the rules and says what is missing (the
	// default: a bucket's CORS is often the web team's).
	BucketCORSCheck = bucketsetup.BucketCORSCheck
	// BucketCORSOff neither reads nor writes them.
	BucketCORSOff = bucketsetup.BucketCORSOff
)

// dedupNotBefore is the oldest creation time of a blob that dedup may
// share with a claim expiring at expires in namespace ns: the bucket's
// rules in force must keep the blob's object until then plus the margin.
// An object is written after its blob row is created, and S3 counts whole
// days from the write, so a blob created at or after the bound outlives
// the claim. The zero time (no bound) when no rule covers the namespace.
func (s *Store) dedupNotBefore(ns string, expires time.Time) time.Time {
	prefix := namespacePrefix(ns)
	days := 0
	for _, r := range s.rules {
		if r.ExpireDays > 0 && r.Covers(prefix) && (days == 0 || r.ExpireDays < days) {
			days = r.ExpireDays
		}
	}
	if days == 0 {
		return time.Time{}
	}
	return expires.Add(bucketsetup.LifecycleMargin - time.Duration(days)*24*time.Hour)
}

// latestExpiry is the latest a claim created at created with expiry
// expires may ever expire under policy p: created + ttl.max_lifetime when
// extensions may move it there (ADR 0101), else expires. Dedup bounds the
// blobs it shares by this, not by the expiry of the day, so that the
// choice already holds for every expiry the claim may be given later
// (Extend checks again, for blobs chosen under an older policy).
func latestExpiry(p claimcheck.Policy, created, expires time.Time) time.Time {
	if l := created.Add(p.TTL.Lifetime()); l.After(expires) {
		return l
	}
	return expires
}
