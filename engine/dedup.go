package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
)

// digestFirst reports whether a put with opts asks the digest-first
// question (put step 4). digest_first: false (ADR 0083): the namespace
// does not tell a putter whether it holds some content; the body is read
// and dedup happens at commit, where the answer looks the same either
// way.
func digestFirst(pol claimcheck.Policy, opts claimcheck.PutOptions) bool {
	return opts.Digest != "" && opts.Size > 0 && pol.DigestFirstEnabled()
}

// The digest-first question (put step 4, docs/ARCHITECTURE.md, "Put"): a
// caller that sends the digest and size before the body skips the upload
// when a blob with that content can be shared. On a hit the claim is
// created active on the shared blob in one transaction and the body is
// never read (the HTTP server then answers without asking for it); when
// nothing may be shared nothing changed and the put streams the body as
// usual. It is asked one of two ways, by where the round trips are:
//   - putDigestFirstInTx: objects are local files and the metadata SQLite
//     (Store.checkInTx); the candidate is found, locked and its file
//     stat'ed inside the one transaction that attaches the claim
//     (ADR 0140), before any row is written;
//   - putDigestFirstOn: otherwise; the creation of the pending claim
//     found the candidate instead of creating anything
//     (meta.CreatePendingParams.UnlessDigest, ADR 0145), and its object
//     is checked (a HEAD must not hold row locks) before the claim is
//     attached to exactly that blob and object.
// ok reports that the put is done (with ref, or with err).

// digestFirstParams is the commit of a digest-first hit, before the
// candidate is known.
func (s *Store) digestFirstParams(ns string, pol claimcheck.Policy, opts claimcheck.PutOptions, claim meta.Claim, sk *sealKey) meta.CommitExistingParams {
	c := claim
	c.State, c.BlobID, c.Size, c.ReservedBytes = meta.ClaimActive, "", opts.Size, 0
	c.DueAt, c.DueReason = c.ExpiresAt, meta.ReasonExpired
	return meta.CommitExistingParams{
		Claim: c, Digest: opts.Digest, Now: s.clock.Now(),
		DedupNotBefore: keyFloor(s.digestFirstNotBefore(ns, latestExpiry(pol, c.CreatedAt, c.ExpiresAt)), sk),
		QuotaBytes:     int64(pol.Quota.Bytes), QuotaClaims: pol.Quota.Claims,
		Tenant: s.tenantQuota(pol),
	}
}

// putDigestFirstInTx asks the digest-first question in one transaction
// (see above). A miss is a lookup in a transaction rolled back, cheaper
// than the read it replaces.
func (s *Store) putDigestFirstInTx(ctx context.Context, ns string, pol claimcheck.Policy, opts claimcheck.PutOptions, claim meta.Claim, start time.Time, sk *sealKey) (ref claimcheck.Ref, ok bool, err error) {
	p := s.digestFirstParams(ns, pol, opts, claim, sk)
	// The candidate's object must still be there, whole, before a claim
	// is attached to it without a byte being read (integrity.go): one
	// stat, quick enough to run inside the transaction on the candidate
	// it has locked. The finding is acted on once the transaction is
	// over: marking damage is a write of its own.
	var (
		checked  meta.Blob
		finding  integrity.Finding
		checkErr error
	)
	p.Check = func(ctx context.Context, cand meta.Blob) bool {
		checked = cand
		finding, checkErr = integrity.CheckSize(ctx, s.blobs, cand)
		return checkErr == nil && finding.Cause == ""
	}
	res, hit, err := s.meta.CommitExisting(ctx, p)
	return s.digestFirstAnswer(ctx, ns, opts, start, checked, finding, checkErr, res, hit, err)
}

// putDigestFirstOn asks the digest-first question of the candidate cand
// the creation of the pending claim found (see above).
func (s *Store) putDigestFirstOn(ctx context.Context, ns string, pol claimcheck.Policy, opts claimcheck.PutOptions, claim meta.Claim, start time.Time, sk *sealKey, cand meta.Blob) (ref claimcheck.Ref, ok bool, err error) {
	if cand.Damaged() || cand.Size != opts.Size {
		return claimcheck.Ref{}, false, nil
	}
	// The object must still be there, whole (integrity.go): one
	// Attributes call (a HEAD, a stat). A missing or resized object is
	// damage: marked, and the put sends its body, which repairs it.
	finding, checkErr := integrity.CheckSize(ctx, s.blobs, cand)
	var (
		res meta.CommitResult
		hit bool
	)
	if checkErr == nil && finding.Cause == "" {
		p := s.digestFirstParams(ns, pol, opts, claim, sk)
		p.BlobID, p.Key = cand.ID, cand.Key // only the blob and object just checked
		res, hit, err = s.meta.CommitExisting(ctx, p)
	}
	return s.digestFirstAnswer(ctx, ns, opts, start, cand, finding, checkErr, res, hit, err)
}

// digestFirstAnswer turns the check of the candidate checked and the
// commit's outcome into a put's answer.
func (s *Store) digestFirstAnswer(ctx context.Context, ns string, opts claimcheck.PutOptions, start time.Time, checked meta.Blob, finding integrity.Finding, checkErr error, res meta.CommitResult, hit bool, err error) (claimcheck.Ref, bool, error) {
	if checkErr != nil {
		// Storage did not answer: the upload path decides for itself.
		s.log.WarnContext(ctx, "put: digest-first dedup could not check the object; uploading", "namespace", ns, "blob", checked.ID, "err", checkErr)
		return claimcheck.Ref{}, false, nil
	}
	if finding.Cause != "" {
		s.markDamaged(ctx, checked, finding.Cause, finding.Detail+" (digest-first put)")
		return claimcheck.Ref{}, false, nil
	}
	if err != nil {
		var qe *meta.QuotaError
		if errors.As(err, &qe) {
			// Refused as the upload would be: report it now.
			s.metrics.putErrors.WithLabelValues("quota_or_metadata").Inc()
			return claimcheck.Ref{}, true, metaErr("put to "+ns, err)
		}
		// The shortcut is an optimisation: any other failure falls back
		// to the upload, which decides for itself.
		s.log.WarnContext(ctx, "put: digest-first dedup failed; uploading", "namespace", ns, "err", err)
		return claimcheck.Ref{}, false, nil
	}
	if !hit {
		return claimcheck.Ref{}, false, nil
	}
	s.metrics.created.WithLabelValues(ns).Inc()
	s.metrics.bytesIn.WithLabelValues(ns).Add(float64(opts.Size))
	s.observeDedup(ns, res, opts.Size)
	s.metrics.putDur.WithLabelValues(ns).Observe(s.clock.Now().Sub(start).Seconds())
	return refOf(res.Claim, res.Blob), true, nil
}

// digestFirstNotBefore is the oldest creation time of a blob the claim
// may share: the same bound as the upload path's commit (the lifecycle
// safety net, lifecyclebound.go), so a digest-first hit never shares an object
// the bucket could expire before this claim's deadline.
func (s *Store) digestFirstNotBefore(ns string, expires time.Time) time.Time {
	return s.dedupNotBefore(ns, expires)
}

// observeDedup counts a dedup hit: the hit, the bytes not written, and
// whether an orphaned blob was brought back during its grace period.
func (s *Store) observeDedup(ns string, res meta.CommitResult, size int64) {
	if !res.DedupHit {
		return
	}
	s.metrics.dedupHits.WithLabelValues(ns).Inc()
	s.metrics.bytesSaved.WithLabelValues(ns).Add(float64(size))
	if res.FlipBack {
		s.metrics.flipBacks.WithLabelValues(ns).Inc()
	}
}

// discardObject deletes the object of a put whose commit was refused
// (meta.ErrConflict: the claim was no longer pending, or the transaction
// rolled back). Its staging blob was never committed, so no claim can
// reference the object, but the sweeper may already have collected the
// row while the object was still being written, which would leave the
// object behind with a deleted row. Best effort: if this fails too, the
// backstop collects the object as debris after its grace period.
func (s *Store) discardObject(ctx context.Context, key string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := s.blobs.Delete(cctx, key); err != nil {
		s.log.WarnContext(ctx, "put: could not delete the object of a refused commit; the backstop will", "key", key, "err", err)
	}
}

// collectDiscarded deletes the object of the staging blob a dedup hit made
// unneeded (res.Discarded) and marks the blob deleted, so two identical
// puts leave one object behind, not two until the next sweep. The commit
// already moved the blob to deleting with a retry time: if the delete or
// the final update fails here, or the process dies, the sweeper's
// collection retries it then, like any interrupted collection.
func (s *Store) collectDiscarded(ctx context.Context, res meta.CommitResult) {
	b := res.Discarded
	if b.ID == "" {
		return
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := s.blobs.Delete(cctx, b.Key); err != nil {
		s.log.WarnContext(ctx, "put: could not delete the object a dedup hit made unneeded; the sweeper will retry", "blob", b.ID, "key", b.Key, "err", err)
		return
	}
	if err := s.meta.FinishCollect(cctx, []string{b.ID}, s.clock.Now()); err != nil {
		s.log.WarnContext(ctx, "put: deleted the object a dedup hit made unneeded, but could not record it; the sweeper will", "blob", b.ID, "err", err)
	}
}

// localStorage reports whether the storage URL names objects this process
// reaches without a network round trip: files, or memory in tests.
func localStorage(storage string) bool {
	u, err := url.Parse(storage)
	return err == nil && (u.Scheme == "file" || u.Scheme == "mem")
}

// maxCommitChecks bounds the rounds of commitShared: each round checks
// one candidate, and a candidate only changes under a concurrent repair
// or collection.
const maxCommitChecks = 4

// commitShared is the commit of an object a put wrote (put step 5), with
// dedup's check of the object it would share (ADR 0255): a put is never
// acknowledged onto a blob whose object was not just seen to exist with
// its stored size. The commit does not share an unchecked candidate: it
// names it (meta.CandidateError), one Attributes call checks it outside
// the transaction (a HEAD must hold no row locks), and the commit runs
// again pinned to that blob and object. An object missing, resized or
// unreadable is marked damaged, and the next commit is the repair by
// this put's bytes, once readBack (nil when cp.RepairVerified already
// says so) has read them back. A candidate that cannot be checked
// because the storage does not answer fails the put as unavailable:
// nothing is acknowledged. A commit that shares nothing costs nothing
// more.
func (s *Store) commitShared(ctx context.Context, cp meta.CommitParams, readBack func(context.Context) error) (meta.CommitResult, error) {
	cp.CheckCandidate = cp.Dedup
	for range maxCommitChecks {
		res, err := s.meta.Commit(ctx, cp)
		ce, isCand := errors.AsType[*meta.CandidateError](err)
		switch {
		case isCand:
			f, cerr := integrity.CheckSize(ctx, s.blobs, ce.Blob)
			if cerr != nil {
				return res, fmt.Errorf("the object of blob %s, which holds these bytes, cannot be checked: %w", ce.Blob.ID, cerr)
			}
			if f.Cause != "" {
				s.markDamaged(ctx, ce.Blob, f.Cause, f.Detail+" (put)")
			} else {
				cp.CheckedBlobID, cp.CheckedKey = ce.Blob.ID, ce.Blob.Key
			}
		case errors.Is(err, meta.ErrDamagedCandidate) && !cp.RepairVerified && readBack != nil:
			// The blob of these bytes is damaged and nothing changed.
			// This body can repair it: read the new object back, and
			// only if storage kept it right, commit again as the repair
			// (integrity.go). A rare path, so the extra read is cheap.
			if err := readBack(ctx); err != nil {
				return res, err
			}
			cp.RepairVerified = true
		default:
			return res, err
		}
		cp.Now = s.clock.Now()
	}
	return meta.CommitResult{}, fmt.Errorf("%w: the blob holding these bytes kept changing while its object was checked", claimcheck.ErrUnavailable)
}
