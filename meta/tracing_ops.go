package meta

import (
	"context"
	"time"
)

// The traced methods of Store, in the order of metrics.go: each is the
// wrapped one inside a span, nothing else.

// The traced operations, indexes into traced.opts; opNames are their
// span names' operation part, the method's name.
const (
	opAppendEvents = iota
	opBeginCollect
	opBlob
	opBlobs
	opBlobsByKeys
	opClaimWithBlob
	opClaim
	opClaimEvents
	opClaimHolds
	opClearClaimHold
	opClearNamespaceHold
	opCollectFailed
	opCommit
	opCommitExisting
	opCountDeadLetters
	opCountNamespaces
	opCreateDataKey
	opCreateKey
	opCreatePending
	opExtendPending
	opCreateUpload
	opCreateResumable
	opResumable
	opRecordReceived
	opRestage
	opCursor
	opDataKey
	opDeadLetters
	opDestroyDataKey
	opEvents
	opFinishClaim
	opFinishCollect
	opFinishDueClaims
	opFixRefcounts
	opHeldClaims
	opKey
	opKeys
	opLiveDataKey
	opLiveDataKeys
	opLiveRefs
	opNamespace
	opNamespaceEvents
	opNamespaceHold
	opNamespaces
	opOldestDue
	opParkBlob
	opPing
	opPruneEvents
	opPruneHistory
	opCompactHistory
	opQuotaDrift
	opRecordReads
	opRelease
	opReleaseLease
	opRequestLeaseRelease
	opCheckLease
	opRetryDeadLetters
	opRevokeKey
	opRewrapDataKey
	opSecret
	opSetClaimHold
	opSetCursor
	opSetNamespaceHold
	opSetTenants
	opTenantEvents
	opTenants
	opTryLease
	opUpload
	opUploadByKey
	opMarkDamaged
	opClearDamage
	opDamagedBlobs
	opDedupCandidate
	opListClaims
	opExtendClaim
	opCreateSubscription
	opSyncConfigSubscriptions
	opSubscriptions
	opDeleteSubscription
	opResumeSubscription
	opAdvanceSubscription
	opMarkLagging
	opFeedEvents
	opSaveBlockTable
	opBlockTable
	numOps
)

var opNames = [numOps]string{
	opAppendEvents:            "AppendEvents",
	opBeginCollect:            "BeginCollect",
	opBlob:                    "Blob",
	opBlobs:                   "Blobs",
	opBlobsByKeys:             "BlobsByKeys",
	opClaimWithBlob:           "ClaimWithBlob",
	opClaim:                   "Claim",
	opClaimEvents:             "ClaimEvents",
	opClaimHolds:              "ClaimHolds",
	opClearClaimHold:          "ClearClaimHold",
	opClearNamespaceHold:      "ClearNamespaceHold",
	opCollectFailed:           "CollectFailed",
	opCommit:                  "Commit",
	opCommitExisting:          "CommitExisting",
	opCountDeadLetters:        "CountDeadLetters",
	opCountNamespaces:         "CountNamespaces",
	opCreateDataKey:           "CreateDataKey",
	opCreateKey:               "CreateKey",
	opCreatePending:           "CreatePending",
	opExtendPending:           "ExtendPending",
	opCreateUpload:            "CreateUpload",
	opCreateResumable:         "CreateResumable",
	opResumable:               "Resumable",
	opRecordReceived:          "RecordReceived",
	opRestage:                 "Restage",
	opCursor:                  "Cursor",
	opDataKey:                 "DataKey",
	opDeadLetters:             "DeadLetters",
	opDestroyDataKey:          "DestroyDataKey",
	opEvents:                  "Events",
	opFinishClaim:             "FinishClaim",
	opFinishCollect:           "FinishCollect",
	opFinishDueClaims:         "FinishDueClaims",
	opFixRefcounts:            "FixRefcounts",
	opHeldClaims:              "HeldClaims",
	opKey:                     "Key",
	opKeys:                    "Keys",
	opLiveDataKey:             "LiveDataKey",
	opLiveDataKeys:            "LiveDataKeys",
	opLiveRefs:                "LiveRefs",
	opNamespace:               "Namespace",
	opNamespaceEvents:         "NamespaceEvents",
	opNamespaceHold:           "NamespaceHold",
	opNamespaces:              "Namespaces",
	opOldestDue:               "OldestDue",
	opParkBlob:                "ParkBlob",
	opPing:                    "Ping",
	opPruneEvents:             "PruneEvents",
	opPruneHistory:            "PruneHistory",
	opCompactHistory:          "CompactHistory",
	opQuotaDrift:              "QuotaDrift",
	opRecordReads:             "RecordReads",
	opRelease:                 "Release",
	opReleaseLease:            "ReleaseLease",
	opRequestLeaseRelease:     "RequestLeaseRelease",
	opCheckLease:              "CheckLease",
	opRetryDeadLetters:        "RetryDeadLetters",
	opRevokeKey:               "RevokeKey",
	opRewrapDataKey:           "RewrapDataKey",
	opSecret:                  "Secret",
	opSetClaimHold:            "SetClaimHold",
	opSetCursor:               "SetCursor",
	opSetNamespaceHold:        "SetNamespaceHold",
	opSetTenants:              "SetTenants",
	opTenantEvents:            "TenantEvents",
	opTenants:                 "Tenants",
	opTryLease:                "TryLease",
	opUpload:                  "Upload",
	opUploadByKey:             "UploadByKey",
	opMarkDamaged:             "MarkDamaged",
	opClearDamage:             "ClearDamage",
	opDamagedBlobs:            "DamagedBlobs",
	opDedupCandidate:          "DedupCandidate",
	opListClaims:              "ListClaims",
	opExtendClaim:             "ExtendClaim",
	opCreateSubscription:      "CreateSubscription",
	opSyncConfigSubscriptions: "SyncConfigSubscriptions",
	opSubscriptions:           "Subscriptions",
	opDeleteSubscription:      "DeleteSubscription",
	opResumeSubscription:      "ResumeSubscription",
	opAdvanceSubscription:     "AdvanceSubscription",
	opMarkLagging:             "MarkLagging",
	opFeedEvents:              "FeedEvents",
}

func (t *traced) AppendEvents(ctx context.Context, events []Event) error {
	ctx, sp := t.start(ctx, opAppendEvents)
	return t.end(sp, t.next.AppendEvents(ctx, events))
}

func (t *traced) BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]Blob, error) {
	ctx, sp := t.start(ctx, opBeginCollect)
	return spanEnd1[[]Blob]{t, sp}.end(t.next.BeginCollect(ctx, now, limit, retry))
}

func (t *traced) Blob(ctx context.Context, id string) (Blob, error) {
	ctx, sp := t.start(ctx, opBlob)
	return spanEnd1[Blob]{t, sp}.end(t.next.Blob(ctx, id))
}

func (t *traced) Blobs(ctx context.Context, afterID string, limit int) ([]Blob, error) {
	ctx, sp := t.start(ctx, opBlobs)
	return spanEnd1[[]Blob]{t, sp}.end(t.next.Blobs(ctx, afterID, limit))
}

func (t *traced) BlobsByKeys(ctx context.Context, keys []string) (map[string]Blob, error) {
	ctx, sp := t.start(ctx, opBlobsByKeys)
	return spanEnd1[map[string]Blob]{t, sp}.end(t.next.BlobsByKeys(ctx, keys))
}

func (t *traced) ClaimWithBlob(ctx context.Context, id string) (Claim, Blob, bool, error) {
	ctx, sp := t.start(ctx, opClaimWithBlob)
	a, b, c, err := t.next.ClaimWithBlob(ctx, id)
	return a, b, c, t.end(sp, err)
}

func (t *traced) Claim(ctx context.Context, id string) (Claim, error) {
	ctx, sp := t.start(ctx, opClaim)
	return spanEnd1[Claim]{t, sp}.end(t.next.Claim(ctx, id))
}

func (t *traced) ClaimEvents(ctx context.Context, claimID string, afterSeq int64, limit int) ([]Event, error) {
	ctx, sp := t.start(ctx, opClaimEvents)
	return spanEnd1[[]Event]{t, sp}.end(t.next.ClaimEvents(ctx, claimID, afterSeq, limit))
}

func (t *traced) ClaimHolds(ctx context.Context, id string) (ClaimHolds, error) {
	ctx, sp := t.start(ctx, opClaimHolds)
	return spanEnd1[ClaimHolds]{t, sp}.end(t.next.ClaimHolds(ctx, id))
}

func (t *traced) ClearClaimHold(ctx context.Context, id string, now time.Time) (FinishResult, bool, error) {
	ctx, sp := t.start(ctx, opClearClaimHold)
	return spanEnd2[FinishResult, bool]{t, sp}.end(t.next.ClearClaimHold(ctx, id, now))
}

func (t *traced) ClearNamespaceHold(ctx context.Context, ns string, now time.Time) ([]FinishResult, error) {
	ctx, sp := t.start(ctx, opClearNamespaceHold)
	return spanEnd1[[]FinishResult]{t, sp}.end(t.next.ClearNamespaceHold(ctx, ns, now))
}

func (t *traced) CollectFailed(ctx context.Context, id string, cause string, retryAt time.Time) error {
	ctx, sp := t.start(ctx, opCollectFailed)
	return t.end(sp, t.next.CollectFailed(ctx, id, cause, retryAt))
}

func (t *traced) Commit(ctx context.Context, p CommitParams) (CommitResult, error) {
	ctx, sp := t.start(ctx, opCommit)
	return spanEnd1[CommitResult]{t, sp}.end(t.next.Commit(ctx, p))
}

func (t *traced) CommitExisting(ctx context.Context, p CommitExistingParams) (CommitResult, bool, error) {
	ctx, sp := t.start(ctx, opCommitExisting)
	return spanEnd2[CommitResult, bool]{t, sp}.end(t.next.CommitExisting(ctx, p))
}

func (t *traced) CountDeadLetters(ctx context.Context) (int64, error) {
	ctx, sp := t.start(ctx, opCountDeadLetters)
	return spanEnd1[int64]{t, sp}.end(t.next.CountDeadLetters(ctx))
}

func (t *traced) CountNamespaces(ctx context.Context) ([]Namespace, error) {
	ctx, sp := t.start(ctx, opCountNamespaces)
	return spanEnd1[[]Namespace]{t, sp}.end(t.next.CountNamespaces(ctx))
}

func (t *traced) CreateDataKey(ctx context.Context, k DataKey) (DataKey, error) {
	ctx, sp := t.start(ctx, opCreateDataKey)
	return spanEnd1[DataKey]{t, sp}.end(t.next.CreateDataKey(ctx, k))
}

func (t *traced) CreateKey(ctx context.Context, k APIKey) error {
	ctx, sp := t.start(ctx, opCreateKey)
	return t.end(sp, t.next.CreateKey(ctx, k))
}

func (t *traced) CreatePending(ctx context.Context, p CreatePendingParams) error {
	ctx, sp := t.start(ctx, opCreatePending)
	return t.end(sp, t.next.CreatePending(ctx, p))
}

func (t *traced) ExtendPending(ctx context.Context, claimID, blobID string, dueAt time.Time) error {
	ctx, sp := t.start(ctx, opExtendPending)
	return t.end(sp, t.next.ExtendPending(ctx, claimID, blobID, dueAt))
}

func (t *traced) CreateUpload(ctx context.Context, u Upload) (Upload, bool, error) {
	ctx, sp := t.start(ctx, opCreateUpload)
	return spanEnd2[Upload, bool]{t, sp}.end(t.next.CreateUpload(ctx, u))
}

func (t *traced) CreateResumable(ctx context.Context, u Upload, handle string) error {
	ctx, sp := t.start(ctx, opCreateResumable)
	return t.end(sp, t.next.CreateResumable(ctx, u, handle))
}

func (t *traced) Resumable(ctx context.Context, id string) (ResumableUpload, error) {
	ctx, sp := t.start(ctx, opResumable)
	return spanEnd1[ResumableUpload]{t, sp}.end(t.next.Resumable(ctx, id))
}

func (t *traced) RecordReceived(ctx context.Context, p Received) error {
	ctx, sp := t.start(ctx, opRecordReceived)
	return t.end(sp, t.next.RecordReceived(ctx, p))
}

func (t *traced) Restage(ctx context.Context, p RestageParams) error {
	ctx, sp := t.start(ctx, opRestage)
	return t.end(sp, t.next.Restage(ctx, p))
}

func (t *traced) Cursor(ctx context.Context, name string) (string, error) {
	ctx, sp := t.start(ctx, opCursor)
	return spanEnd1[string]{t, sp}.end(t.next.Cursor(ctx, name))
}

func (t *traced) DataKey(ctx context.Context, id string) (DataKey, error) {
	ctx, sp := t.start(ctx, opDataKey)
	return spanEnd1[DataKey]{t, sp}.end(t.next.DataKey(ctx, id))
}

func (t *traced) DeadLetters(ctx context.Context, ns string, afterID string, limit int) ([]Blob, error) {
	ctx, sp := t.start(ctx, opDeadLetters)
	return spanEnd1[[]Blob]{t, sp}.end(t.next.DeadLetters(ctx, ns, afterID, limit))
}

func (t *traced) DestroyDataKey(ctx context.Context, ns string, now time.Time) (DataKey, error) {
	ctx, sp := t.start(ctx, opDestroyDataKey)
	return spanEnd1[DataKey]{t, sp}.end(t.next.DestroyDataKey(ctx, ns, now))
}

func (t *traced) Events(ctx context.Context, afterSeq int64, limit int) ([]Event, error) {
	ctx, sp := t.start(ctx, opEvents)
	return spanEnd1[[]Event]{t, sp}.end(t.next.Events(ctx, afterSeq, limit))
}

func (t *traced) FinishClaim(ctx context.Context, id string, reason string, now time.Time, onlyIfDue bool) (FinishResult, bool, error) {
	ctx, sp := t.start(ctx, opFinishClaim)
	return spanEnd2[FinishResult, bool]{t, sp}.end(t.next.FinishClaim(ctx, id, reason, now, onlyIfDue))
}

func (t *traced) FinishCollect(ctx context.Context, ids []string, now time.Time) error {
	ctx, sp := t.start(ctx, opFinishCollect)
	return t.end(sp, t.next.FinishCollect(ctx, ids, now))
}

func (t *traced) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]FinishResult, error) {
	ctx, sp := t.start(ctx, opFinishDueClaims)
	return spanEnd1[[]FinishResult]{t, sp}.end(t.next.FinishDueClaims(ctx, now, limit))
}

func (t *traced) FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]RefFix, error) {
	ctx, sp := t.start(ctx, opFixRefcounts)
	return spanEnd1[[]RefFix]{t, sp}.end(t.next.FixRefcounts(ctx, blobIDs, now, grace))
}

func (t *traced) HeldClaims(ctx context.Context, ns string) (int64, error) {
	ctx, sp := t.start(ctx, opHeldClaims)
	return spanEnd1[int64]{t, sp}.end(t.next.HeldClaims(ctx, ns))
}

func (t *traced) Key(ctx context.Context, id string) (APIKey, error) {
	ctx, sp := t.start(ctx, opKey)
	return spanEnd1[APIKey]{t, sp}.end(t.next.Key(ctx, id))
}

func (t *traced) Keys(ctx context.Context, tenant string) ([]APIKey, error) {
	ctx, sp := t.start(ctx, opKeys)
	return spanEnd1[[]APIKey]{t, sp}.end(t.next.Keys(ctx, tenant))
}

func (t *traced) LiveDataKey(ctx context.Context, ns string) (DataKey, error) {
	ctx, sp := t.start(ctx, opLiveDataKey)
	return spanEnd1[DataKey]{t, sp}.end(t.next.LiveDataKey(ctx, ns))
}

func (t *traced) LiveDataKeys(ctx context.Context, ns string, afterID string, limit int) ([]DataKey, error) {
	ctx, sp := t.start(ctx, opLiveDataKeys)
	return spanEnd1[[]DataKey]{t, sp}.end(t.next.LiveDataKeys(ctx, ns, afterID, limit))
}

func (t *traced) LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error) {
	ctx, sp := t.start(ctx, opLiveRefs)
	return spanEnd1[map[string]int64]{t, sp}.end(t.next.LiveRefs(ctx, blobIDs))
}

func (t *traced) Namespace(ctx context.Context, name string) (Namespace, error) {
	ctx, sp := t.start(ctx, opNamespace)
	return spanEnd1[Namespace]{t, sp}.end(t.next.Namespace(ctx, name))
}

func (t *traced) NamespaceEvents(ctx context.Context, namespace string, since time.Time, afterSeq int64, limit int) ([]Event, error) {
	ctx, sp := t.start(ctx, opNamespaceEvents)
	return spanEnd1[[]Event]{t, sp}.end(t.next.NamespaceEvents(ctx, namespace, since, afterSeq, limit))
}

func (t *traced) NamespaceHold(ctx context.Context, ns string) (*Hold, error) {
	ctx, sp := t.start(ctx, opNamespaceHold)
	return spanEnd1[*Hold]{t, sp}.end(t.next.NamespaceHold(ctx, ns))
}

func (t *traced) Namespaces(ctx context.Context) ([]Namespace, error) {
	ctx, sp := t.start(ctx, opNamespaces)
	return spanEnd1[[]Namespace]{t, sp}.end(t.next.Namespaces(ctx))
}

func (t *traced) OldestDue(ctx context.Context) (time.Time, error) {
	ctx, sp := t.start(ctx, opOldestDue)
	return spanEnd1[time.Time]{t, sp}.end(t.next.OldestDue(ctx))
}

func (t *traced) ParkBlob(ctx context.Context, id string, cause string, now time.Time) error {
	ctx, sp := t.start(ctx, opParkBlob)
	return t.end(sp, t.next.ParkBlob(ctx, id, cause, now))
}

func (t *traced) Ping(ctx context.Context) error {
	ctx, sp := t.start(ctx, opPing)
	return t.end(sp, t.next.Ping(ctx))
}

func (t *traced) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	ctx, sp := t.start(ctx, opPruneEvents)
	return spanEnd1[int]{t, sp}.end(t.next.PruneEvents(ctx, before, limit))
}

func (t *traced) PruneHistory(ctx context.Context, before time.Time, limit int) (PruneResult, error) {
	ctx, sp := t.start(ctx, opPruneHistory)
	return spanEnd1[PruneResult]{t, sp}.end(t.next.PruneHistory(ctx, before, limit))
}

func (t *traced) CompactHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	ctx, sp := t.start(ctx, opCompactHistory)
	return spanEnd1[int]{t, sp}.end(t.next.CompactHistory(ctx, before, limit))
}

func (t *traced) QuotaDrift(ctx context.Context) ([]QuotaDrift, error) {
	ctx, sp := t.start(ctx, opQuotaDrift)
	return spanEnd1[[]QuotaDrift]{t, sp}.end(t.next.QuotaDrift(ctx))
}

func (t *traced) RecordReads(ctx context.Context, reads []Read) ([]string, error) {
	ctx, sp := t.start(ctx, opRecordReads)
	return spanEnd1[[]string]{t, sp}.end(t.next.RecordReads(ctx, reads))
}

func (t *traced) Release(ctx context.Context, id string, consumer string, now time.Time) (Claim, error) {
	ctx, sp := t.start(ctx, opRelease)
	return spanEnd1[Claim]{t, sp}.end(t.next.Release(ctx, id, consumer, now))
}

func (t *traced) ReleaseLease(ctx context.Context, name string, holder string) error {
	ctx, sp := t.start(ctx, opReleaseLease)
	return t.end(sp, t.next.ReleaseLease(ctx, name, holder))
}

func (t *traced) RequestLeaseRelease(ctx context.Context, name string, holder string) error {
	ctx, sp := t.start(ctx, opRequestLeaseRelease)
	return t.end(sp, t.next.RequestLeaseRelease(ctx, name, holder))
}

func (t *traced) CheckLease(ctx context.Context, name string, holder string, now time.Time) (bool, bool, error) {
	ctx, sp := t.start(ctx, opCheckLease)
	return spanEnd2[bool, bool]{t, sp}.end(t.next.CheckLease(ctx, name, holder, now))
}

func (t *traced) RetryDeadLetters(ctx context.Context, ids []string, all bool, now time.Time) ([]Blob, error) {
	ctx, sp := t.start(ctx, opRetryDeadLetters)
	return spanEnd1[[]Blob]{t, sp}.end(t.next.RetryDeadLetters(ctx, ids, all, now))
}

func (t *traced) RevokeKey(ctx context.Context, id string, tenant string, now time.Time) (APIKey, error) {
	ctx, sp := t.start(ctx, opRevokeKey)
	return spanEnd1[APIKey]{t, sp}.end(t.next.RevokeKey(ctx, id, tenant, now))
}

func (t *traced) RewrapDataKey(ctx context.Context, r Rewrap) (bool, error) {
	ctx, sp := t.start(ctx, opRewrapDataKey)
	return spanEnd1[bool]{t, sp}.end(t.next.RewrapDataKey(ctx, r))
}

func (t *traced) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	ctx, sp := t.start(ctx, opSecret)
	return spanEnd1[[]byte]{t, sp}.end(t.next.Secret(ctx, name, candidate))
}

func (t *traced) SetClaimHold(ctx context.Context, id string, reason string, now time.Time) error {
	ctx, sp := t.start(ctx, opSetClaimHold)
	return t.end(sp, t.next.SetClaimHold(ctx, id, reason, now))
}

func (t *traced) SetCursor(ctx context.Context, name string, value string) error {
	ctx, sp := t.start(ctx, opSetCursor)
	return t.end(sp, t.next.SetCursor(ctx, name, value))
}

func (t *traced) SetNamespaceHold(ctx context.Context, ns string, reason string, now time.Time) (int64, error) {
	ctx, sp := t.start(ctx, opSetNamespaceHold)
	return spanEnd1[int64]{t, sp}.end(t.next.SetNamespaceHold(ctx, ns, reason, now))
}

func (t *traced) SetTenants(ctx context.Context, byNamespace map[string]string, others string) error {
	ctx, sp := t.start(ctx, opSetTenants)
	return t.end(sp, t.next.SetTenants(ctx, byNamespace, others))
}

func (t *traced) TenantEvents(ctx context.Context, tenant string, since time.Time, afterSeq int64, limit int) ([]Event, error) {
	ctx, sp := t.start(ctx, opTenantEvents)
	return spanEnd1[[]Event]{t, sp}.end(t.next.TenantEvents(ctx, tenant, since, afterSeq, limit))
}

func (t *traced) Tenants(ctx context.Context) ([]TenantUsage, error) {
	ctx, sp := t.start(ctx, opTenants)
	return spanEnd1[[]TenantUsage]{t, sp}.end(t.next.Tenants(ctx))
}

func (t *traced) TryLease(ctx context.Context, name string, holder string, now time.Time, ttl time.Duration) (bool, error) {
	ctx, sp := t.start(ctx, opTryLease)
	return spanEnd1[bool]{t, sp}.end(t.next.TryLease(ctx, name, holder, now, ttl))
}

func (t *traced) Upload(ctx context.Context, id string) (Upload, error) {
	ctx, sp := t.start(ctx, opUpload)
	return spanEnd1[Upload]{t, sp}.end(t.next.Upload(ctx, id))
}

func (t *traced) UploadByKey(ctx context.Context, ns string, key string) (Upload, error) {
	ctx, sp := t.start(ctx, opUploadByKey)
	return spanEnd1[Upload]{t, sp}.end(t.next.UploadByKey(ctx, ns, key))
}

func (t *traced) MarkDamaged(ctx context.Context, d Damage) (bool, error) {
	ctx, sp := t.start(ctx, opMarkDamaged)
	return spanEnd1[bool]{t, sp}.end(t.next.MarkDamaged(ctx, d))
}

func (t *traced) ClearDamage(ctx context.Context, blobID, key string, now time.Time) (bool, error) {
	ctx, sp := t.start(ctx, opClearDamage)
	return spanEnd1[bool]{t, sp}.end(t.next.ClearDamage(ctx, blobID, key, now))
}

func (t *traced) DamagedBlobs(ctx context.Context, afterID string, limit int) ([]Blob, error) {
	ctx, sp := t.start(ctx, opDamagedBlobs)
	return spanEnd1[[]Blob]{t, sp}.end(t.next.DamagedBlobs(ctx, afterID, limit))
}

func (t *traced) DedupCandidate(ctx context.Context, ns, digest string) (Blob, error) {
	ctx, sp := t.start(ctx, opDedupCandidate)
	return spanEnd1[Blob]{t, sp}.end(t.next.DedupCandidate(ctx, ns, digest))
}

func (t *traced) ListClaims(ctx context.Context, p ListParams) ([]ListedClaim, error) {
	ctx, sp := t.start(ctx, opListClaims)
	return spanEnd1[[]ListedClaim]{t, sp}.end(t.next.ListClaims(ctx, p))
}

func (t *traced) ExtendClaim(ctx context.Context, p ExtendParams) (Claim, error) {
	ctx, sp := t.start(ctx, opExtendClaim)
	return spanEnd1[Claim]{t, sp}.end(t.next.ExtendClaim(ctx, p))
}

func (t *traced) CreateSubscription(ctx context.Context, s Subscription) error {
	ctx, sp := t.start(ctx, opCreateSubscription)
	return t.end(sp, t.next.CreateSubscription(ctx, s))
}

func (t *traced) SyncConfigSubscriptions(ctx context.Context, subs []Subscription) error {
	ctx, sp := t.start(ctx, opSyncConfigSubscriptions)
	return t.end(sp, t.next.SyncConfigSubscriptions(ctx, subs))
}

func (t *traced) Subscriptions(ctx context.Context, tenant string) ([]Subscription, error) {
	ctx, sp := t.start(ctx, opSubscriptions)
	return spanEnd1[[]Subscription]{t, sp}.end(t.next.Subscriptions(ctx, tenant))
}

func (t *traced) DeleteSubscription(ctx context.Context, tenant, id string) error {
	ctx, sp := t.start(ctx, opDeleteSubscription)
	return t.end(sp, t.next.DeleteSubscription(ctx, tenant, id))
}

func (t *traced) ResumeSubscription(ctx context.Context, tenant, id string) error {
	ctx, sp := t.start(ctx, opResumeSubscription)
	return t.end(sp, t.next.ResumeSubscription(ctx, tenant, id))
}

func (t *traced) AdvanceSubscription(ctx context.Context, id string, p SubscriptionProgress) error {
	ctx, sp := t.start(ctx, opAdvanceSubscription)
	return t.end(sp, t.next.AdvanceSubscription(ctx, id, p))
}

func (t *traced) MarkLagging(ctx context.Context, bound time.Time) (int, error) {
	ctx, sp := t.start(ctx, opMarkLagging)
	return spanEnd1[int]{t, sp}.end(t.next.MarkLagging(ctx, bound))
}

func (t *traced) FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]FeedEvent, error) {
	ctx, sp := t.start(ctx, opFeedEvents)
	return spanEnd1[[]FeedEvent]{t, sp}.end(t.next.FeedEvents(ctx, tenant, afterSeq, upTo, limit, labels))
}

func (t *traced) SaveBlockTable(ctx context.Context, key string, table []byte) error {
	ctx, sp := t.start(ctx, opSaveBlockTable)
	return t.end(sp, t.next.SaveBlockTable(ctx, key, table))
}

func (t *traced) BlockTable(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, sp := t.start(ctx, opBlockTable)
	table, ok, err := t.next.BlockTable(ctx, key)
	return table, ok, t.end(sp, err)
}
