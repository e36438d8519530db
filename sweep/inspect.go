package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
)

// Report is what Inspect found: the read-only view behind
// `claimcheck gc --dry-run` and `claimcheck fsck`.
type Report struct {
	At    time.Time `json:"at"`
	Blobs int       `json:"blobs_scanned"`

	// Reclaimable: blobs due for collection now (grace over).
	Reclaimable Reclaim `json:"reclaimable"`
	// InGrace: blobs orphaned but still within their grace period.
	InGrace Reclaim `json:"in_grace"`

	Drift   []Drift     `json:"refcount_drift"`
	Missing []meta.Blob `json:"missing_objects"`
	// WrongSize lists blobs whose object's size is not the stored size
	// (truncated or grown); Damaged the blobs marked damaged (ADR 0095)
	// when the walk read them, found now or earlier.
	WrongSize []WrongSize `json:"wrong_size"`
	// Unreadable lists blobs whose object the storage keeps answering
	// with an error of its own (ADR 0255); Unchecked the ones whose
	// object could not be checked at all (the storage did not answer).
	// The walk goes on past both.
	Unreadable     []Unreadable  `json:"unreadable"`
	Unchecked      []Unchecked   `json:"unchecked"`
	Damaged        []meta.Blob   `json:"damaged"`
	StuckDeleting  []meta.Blob   `json:"stuck_deleting"`
	Debris         []blob.Object `json:"debris"`
	ObjectsListed  int           `json:"objects_listed"`
	DebrisBytes    int64         `json:"debris_bytes"`
	StuckThreshold string        `json:"stuck_threshold"`
	// QuotaDrift lists namespaces whose quota counters disagree with
	// the sums over their live claims (meta.QuotaStore.QuotaDrift).
	QuotaDrift []meta.QuotaDrift `json:"quota_drift"`
	// Scrub is what `fsck --verify` read and found (nil without it).
	Scrub *ScrubReport `json:"scrub,omitempty"`
}

// Reclaim sums a set of blobs waiting for collection.
type Reclaim struct {
	Count  int       `json:"count"`
	Bytes  int64     `json:"bytes"` // object bytes
	Oldest time.Time `json:"oldest,omitzero"`
}

func (r *Reclaim) add(b meta.Blob, t time.Time) {
	r.Count++
	r.Bytes += b.StoredSize
	if r.Oldest.IsZero() || t.Before(r.Oldest) {
		r.Oldest = t
	}
}

// Drift is a blob whose refcount hint disagrees with its live claims.
type Drift struct {
	BlobID   string         `json:"blob_id"`
	State    meta.BlobState `json:"state"`
	Refcount int64          `json:"refcount"`
	Live     int64          `json:"live_claims"`
}

// Problems reports whether fsck should fail: anything out of place.
func (r Report) Problems() bool {
	return len(r.Drift) > 0 || len(r.Missing) > 0 || len(r.StuckDeleting) > 0 || len(r.Debris) > 0 || len(r.QuotaDrift) > 0 ||
		len(r.WrongSize) > 0 || len(r.Damaged) > 0 || len(r.Unreadable) > 0 || len(r.Unchecked) > 0 ||
		(r.Scrub != nil && (len(r.Scrub.Found) > 0 || len(r.Scrub.Unchecked) > 0))
}

// Inspect walks every blob row and the whole bucket, a page at a time, and
// reports without changing anything. A deleting blob counts as stuck once
// it has been deleting longer than stuckAfter; objects without a row count
// as debris once older than grace (younger ones may be writes in
// progress), temp files of writes once older than tempGrace. withObjects=false skips the object checks (gc --dry-run).
func Inspect(ctx context.Context, m Store, b blob.Store, now time.Time, grace, tempGrace, stuckAfter time.Duration, pageSize int, withObjects bool) (Report, error) {
	r := Report{At: now.UTC(), StuckThreshold: stuckAfter.String()}
	qd, err := m.QuotaDrift(ctx)
	if err != nil {
		return r, err
	}
	r.QuotaDrift = qd
	after := ""
	for {
		page, err := m.Blobs(ctx, after, pageSize)
		if err != nil {
			return r, err
		}
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
		r.Blobs += len(page)
		var ids []string
		for _, bl := range page {
			switch bl.State {
			case meta.BlobStaging, meta.BlobOrphaned, meta.BlobDeleting:
				if !bl.CollectAt.IsZero() && !bl.CollectAt.After(now) {
					r.Reclaimable.add(bl, bl.StateAt)
				} else if bl.State == meta.BlobOrphaned {
					r.InGrace.add(bl, bl.StateAt)
				}
			}
			if bl.State == meta.BlobDeleting && now.Sub(bl.StateAt) > stuckAfter {
				r.StuckDeleting = append(r.StuckDeleting, bl)
			}
			if bl.State == meta.BlobCommitted || bl.State == meta.BlobOrphaned {
				ids = append(ids, bl.ID)
			}
			if bl.Damaged() && holdsContent(bl) {
				r.Damaged = append(r.Damaged, bl)
			}
		}
		live, err := m.LiveRefs(ctx, ids)
		if err != nil {
			return r, err
		}
		for _, bl := range page {
			if bl.State != meta.BlobCommitted && bl.State != meta.BlobOrphaned {
				continue
			}
			// An orphaned blob keeps refcount 0 and no claim: consistent.
			n := live[bl.ID]
			if n == bl.Refcount && (bl.State != meta.BlobCommitted || n > 0) {
				continue
			}
			// The page and the count are two reads. Every change to a
			// blob's claims also writes the blob (refcount, version), so
			// an unchanged version means the count belongs to this row;
			// a changed one is traffic, not drift (the next run sees it).
			again, err := m.Blob(ctx, bl.ID)
			if err != nil {
				return r, err
			}
			if again.Version == bl.Version {
				r.Drift = append(r.Drift, Drift{BlobID: bl.ID, State: bl.State, Refcount: bl.Refcount, Live: n})
			}
		}
		if withObjects {
			found, err := CheckObjects(ctx, m, b, page)
			if err != nil {
				return r, err
			}
			r.Missing = append(r.Missing, found.Missing...)
			r.WrongSize = append(r.WrongSize, found.WrongSize...)
			r.Unreadable = append(r.Unreadable, found.Unreadable...)
			r.Unchecked = append(r.Unchecked, found.Unchecked...)
		}
		if len(page) < pageSize {
			break
		}
	}
	if !withObjects {
		return r, nil
	}
	token := ""
	for {
		debris, next, listed, err := Debris(ctx, m, b, token, pageSize, now.Add(-grace), now.Add(-tempGrace))
		if err != nil {
			return r, err
		}
		r.ObjectsListed += listed
		for _, o := range debris {
			// Listed before a concurrent collection deleted it (its row
			// is deleted now): gone, not debris.
			if _, err := b.Attributes(ctx, o.Key); errors.Is(err, blob.ErrNotFound) {
				continue
			}
			r.Debris = append(r.Debris, o)
			r.DebrisBytes += o.Size
		}
		if next == "" {
			break
		}
		token = next
	}
	return r, nil
}

// String is a one-line summary.
func (r Reclaim) String() string {
	if r.Count == 0 {
		return "0 blobs"
	}
	return fmt.Sprintf("%d blobs, %d bytes, oldest since %s", r.Count, r.Bytes, r.Oldest.UTC().Format(time.RFC3339))
}

// StuckDeletingAfter is how long a blob may stay in deleting before fsck
// reports it: far longer than a delete takes, long enough for a few
// retries of a failing one.
const StuckDeletingAfter = time.Hour

// Inspect reports on the sweeper's stores with its configuration (grace
// for debris: backstop_grace); see the package function Inspect.
func (s *Sweeper) Inspect(ctx context.Context, withObjects bool) (Report, error) {
	return Inspect(ctx, s.meta, s.blobs, s.clock.Now(), s.cfg.BackstopGrace, s.cfg.TempGrace(), StuckDeletingAfter, s.cfg.PageSize, withObjects)
}

// MarkFindings marks damaged the blobs a report found missing or of the
// wrong size (fsck does, so that the next put of their bytes repairs
// them), and returns how many it marked now.
func (s *Sweeper) MarkFindings(ctx context.Context, r Report) (int, error) {
	n := 0
	now := s.clock.Now()
	mark := func(b meta.Blob, f integrity.Finding) error {
		marked, err := integrity.MarkDamaged(ctx, s.meta, s.metrics.GC.Damaged, s.log, b, f, now)
		if marked {
			n++
		}
		return err
	}
	for _, b := range r.Missing {
		if err := mark(b, integrity.Finding{Cause: meta.DamageMissing, Detail: "object not found"}); err != nil {
			return n, err
		}
	}
	for _, w := range r.WrongSize {
		f := integrity.Finding{Cause: meta.DamageSize, Detail: fmt.Sprintf("object has %d bytes, stored size is %d", w.ObjectSize, w.Blob.StoredSize)}
		if err := mark(w.Blob, f); err != nil {
			return n, err
		}
	}
	for _, u := range r.Unreadable {
		if err := mark(u.Blob, integrity.Finding{Cause: meta.DamageUnreadable, Detail: u.Detail}); err != nil {
			return n, err
		}
	}
	return n, nil
}
