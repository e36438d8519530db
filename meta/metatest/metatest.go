// Package metatest is the conformance suite of meta.Store. Every
// implementation runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) meta.Store { ... a fresh, empty store ... })
//	}
//
// The suite checks the contract written on each Store method — the state
// transitions, the quota counters after every path, due times that only
// move earlier, dedup and its interaction with collection — using only
// the interface, a fake clock and a fresh store per subtest. After every
// subtest it checks the invariants over all rows the subtest created
// (counters equal the sums over claims, every non-terminal row has a due
// time, a live claim never points at a blob being deleted).
//
// Tests assert behaviour, never timing; the concurrency test runs many
// goroutines against one store and checks the end state. Subtests run in
// parallel (t.Parallel), each on its own store and its own fake clock.
package metatest

import (
	"testing"

	"github.com/claimcheck/claimcheck/meta"
)

// Run runs the conformance suite, its subtests in parallel. open must
// return a fresh, empty store for each call, and may be called by several
// subtests at once; Run closes the store when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) meta.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"CreateCommitRoundTrip", testCreateCommitRoundTrip},
		{"CreatePendingDuplicateID", testCreatePendingDuplicateID},
		{"TraceParentKept", testTraceParentKept},
		{"CreatePendingUnlessDigest", testCreatePendingUnlessDigest},
		{"QuotaBytesRefusedLeavesNothing", testQuotaBytesRefused},
		{"QuotaClaimsRefusedLeavesNothing", testQuotaClaimsRefused},
		{"CommitQuotaRefusedChangesNothing", testCommitQuotaRefused},
		{"CommitConflicts", testCommitConflicts},
		{"ExtendPending", testExtendPending},
		{"DedupHit", testDedupHit},
		{"DedupFlipBack", testDedupFlipBack},
		{"DedupDisabled", testDedupDisabled},
		{"DedupNotBefore", testDedupNotBefore},
		{"DeletingBlobNotUsedForDedup", testDeletingNotUsedForDedup},
		{"DedupAcrossNamespaces", testDedupAcrossNamespaces},
		{"RecordRead", testRecordRead},
		{"RecordReadDeleteAfterRead", testRecordReadDeleteAfterRead},
		{"RecordReadDueOnlyMovesEarlier", testRecordReadDueOnlyMovesEarlier},
		{"RecordReadsBatch", testRecordReadsBatch},
		{"RecordReadsSkips", testRecordReadsSkips},
		{"RecordReadsNamespaces", testRecordReadsNamespaces},
		{"RecordReadsNamespacesSameInstant", testRecordReadsNamespacesSameInstant},
		{"ClaimWithBlob", testClaimWithBlob},
		{"ClaimWithBlobConcurrent", testClaimWithBlobConcurrent},
		{"ReleaseIdempotentPerName", testReleaseIdempotent},
		{"ReleaseFanOut", testReleaseFanOut},
		{"ReleaseFanOutNamed", testReleaseFanOutNamed},
		{"ReleaseOrder", testReleaseOrder},
		{"ReleaseConflicts", testReleaseConflicts},
		{"FinishActive", testFinishActive},
		{"FinishPending", testFinishPending},
		{"FinishOnlyIfDue", testFinishOnlyIfDue},
		{"FinishSharedBlob", testFinishSharedBlob},
		{"FinishDueClaims", testFinishDueClaims},
		{"FinishDueClaimsSharedBlob", testFinishDueClaimsSharedBlob},
		{"BeginCollectGraceOrderLimit", testBeginCollectGraceOrderLimit},
		{"BeginCollectReconfirms", testBeginCollectReconfirms},
		{"BeginCollectRetriesDeleting", testBeginCollectRetriesDeleting},
		{"FinishCollect", testFinishCollect},
		{"CollectFailed", testCollectFailed},
		{"OldestDue", testOldestDue},
		{"DueBacklog", testDueBacklog},
		{"FinishedClaims", testFinishedClaims},
		{"Lease", testLease},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"LeaseRelease", testLeaseRelease},
		{"LeaseReleaseContended", testLeaseReleaseContended},
		{"Leases", testLeases},
		{"NotFound", testNotFound},
		{"Ping", testPing},
		{"Concurrent", testConcurrent},
		{"ConcurrentSameDigest", testConcurrentSameDigest},
		{"ConcurrentQuota", testConcurrentQuota},
		{"CommitExistingHit", testCommitExistingHit},
		{"CommitExistingFlipBack", testCommitExistingFlipBack},
		{"CommitExistingMissChangesNothing", testCommitExistingMissChangesNothing},
		{"CommitExistingQuota", testCommitExistingQuota},
		{"CommitExistingQuotaNoLeak", testCommitExistingQuotaNoLeak},
		{"CommitExistingCheck", testCommitExistingCheck},
		{"CommitExistingCheckedCandidateChanged", testCommitExistingCheckedCandidateChanged},
		{"MarkDamaged", testMarkDamaged},
		{"DamagedRepair", testDamagedRepair},
		{"DamagedDedupOff", testDamagedDedupOff},
		{"BlobsPagingAndKeys", testBlobsPagingAndKeys},
		{"CursorAndEvents", testCursorAndEvents},
		{"AuditLifecycle", testAuditLifecycle},
		{"SubscriptionsHoldPruning", testSubscriptionsHoldPruning},
		{"SubscriptionsByTenant", testSubscriptionsByTenant},
		{"SubscriptionsChangedCursor", testSubscriptionsChangedCursor},
		{"ParkedEvents", testParkedEvents},
		{"AuditPrune", testAuditPrune},
		{"AuditConcurrentAppends", testAuditConcurrentAppends},
		{"AuditHolds", testAuditHolds},
		{"AuditKeys", testAuditKeys},
		{"Keys", testKeys},
		{"KeyLimitAndPages", testKeyLimitAndPages},
		{"ParkAndRetryDeadLetter", testParkAndRetry},
		{"RetryAllDeadLetters", testRetryAllDeadLetters},
		{"ParkConflicts", testParkConflicts},
		{"QuotaAudit", testQuotaAudit},
		{"TenantQuota", testTenantQuota},
		{"TenantMove", testTenantMove},
		{"TenantQuotaConcurrent", testTenantQuotaConcurrent},
		{"TenantAllotmentGivenBack", testTenantAllotmentGivenBack},
		{"TenantAllotmentConcurrent", testTenantAllotmentConcurrent},
		{"ReaperRacesCommit", testReaperRacesCommit},
		{"UploadRoundTrip", testUploadRoundTrip},
		{"UploadNotFound", testUploadNotFound},
		{"UploadIdempotencyKey", testUploadIdempotencyKey},
		{"UploadIdempotencyConcurrent", testUploadIdempotencyConcurrent},
		{"Resumable", testResumable},
		{"Restage", testRestage},
		{"Secret", testSecret},
		{"PruneHistory", testPruneHistory},
		{"PruneHistoryLeases", testPruneHistoryLeases},
		{"CompactHistory", testCompactHistory},
		{"CompactHistoryHeld", testCompactHistoryHeld},
		{"CompactTrails", testCompactTrails},
		{"FeedSameSeq", testFeedSameSeq},
	}
	tests = append(tests, holdTests...)
	tests = append(tests, lifetimeTests...)
	tests = append(tests, dataKeyTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, setup(t, open))
		})
	}
}
