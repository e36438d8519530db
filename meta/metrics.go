package meta

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results, indexes into opMetrics.results; resultNames are their label
// values.
const (
	resOK = iota
	resNotFound
	resConflict
	resRefused
	resCanceled
	resError
	numResults
)

var resultNames = [numResults]string{
	resOK: "ok", resNotFound: "not_found", resConflict: "conflict",
	resRefused: "refused", resCanceled: "canceled", resError: "error",
}

// result classifies the outcome of an operation. The contract's own
// answers are not failures: ErrNotFound, a lost compare-and-swap
// (ErrConflict; one reported as a normal result, such as TryLease's false,
// is ok), and a refusal by the rules (*QuotaError, ErrHeld). Neither is a
// caller that went away (a cancelled context); a deadline that passed is
// an error, because it says the database was slow.
func result(err error) int {
	switch {
	case err == nil:
		return resOK
	case errors.Is(err, ErrNotFound):
		return resNotFound
	case errors.Is(err, ErrConflict):
		return resConflict
	case errors.Is(err, ErrHeld), isQuota(err), errors.Is(err, ErrDamagedCandidate), isCandidate(err):
		return resRefused
	case errors.Is(err, context.Canceled):
		return resCanceled
	default:
		return resError
	}
}

// isQuota uses errors.AsType rather than errors.As, whose target escapes
// and would cost an allocation per failed call.
func isQuota(err error) bool {
	_, ok := errors.AsType[*QuotaError](err)
	return ok
}

func isCandidate(err error) bool {
	_, ok := errors.AsType[*CandidateError](err)
	return ok
}

// opMetrics are one operation's instruments, bound to its label values
// once, so that a call costs two clock reads and two atomic adds, with no
// label lookup and no allocation.
type opMetrics struct {
	duration prometheus.Observer
	results  [numResults]prometheus.Counter
}

// ops has one field per method of Store but Close, named after it: the
// field name is the operation label, so the label and the method cannot
// drift apart, and WithMetrics binds them all by reflection, once.
type ops struct {
	AppendEvents, BeginCollect, Blob, Blobs, BlobsByKeys, Claim                      opMetrics
	ClaimEvents, ClaimHolds, ClearClaimHold, ClearNamespaceHold                      opMetrics
	CollectFailed, Commit, CommitExisting, CountDeadLetters                          opMetrics
	CountNamespaces, CreateDataKey, CreateKey, CreatePending                         opMetrics
	CreateUpload, Cursor, DataKey, DeadLetters, DestroyDataKey                       opMetrics
	Events, ExtendPending, FinishClaim, FinishCollect, FinishDueClaims               opMetrics
	FixRefcounts, HeldClaims, Key, Keys, LiveDataKey, LiveDataKeys                   opMetrics
	LiveRefs, Namespace, NamespaceEvents, NamespaceHold, Namespaces                  opMetrics
	OldestDue, ParkBlob, Ping, PruneEvents, PruneHistory, CompactHistory, QuotaDrift opMetrics
	RecordReads, Release, ReleaseLease, RetryDeadLetters, RevokeKey                  opMetrics
	RewrapDataKey, Secret, SetClaimHold, SetCursor, SetNamespaceHold                 opMetrics
	SetTenants, TenantEvents, Tenants, TryLease, Upload, UploadByKey                 opMetrics
	ClearDamage, DamagedBlobs, DedupCandidate, MarkDamaged                           opMetrics
	SaveBlockTable, BlockTable                                                       opMetrics
	ListClaims, ExtendClaim, ClaimWithBlob                                           opMetrics
	CreateResumable, Resumable, RecordReceived, Restage                              opMetrics
	RequestLeaseRelease, CheckLease                                                  opMetrics
	CreateSubscription, SyncConfigSubscriptions, Subscriptions                       opMetrics
	DeleteSubscription, ResumeSubscription, AdvanceSubscription                      opMetrics
	MarkLagging, FeedEvents                                                          opMetrics
}

// WithMetrics returns s with Prometheus metrics around every method but
// Close:
//
//	claimcheck_meta_operations_total{operation,result}
//	claimcheck_meta_operation_duration_seconds{operation}
//
// operation is the method's name (CreatePending, Commit, FinishDueClaims,
// ...). result is ok, not_found (ErrNotFound), conflict (ErrConflict: a
// lost compare-and-swap), refused (*QuotaError, ErrHeld, or a
// *CandidateError: the content is there to share), canceled (the
// caller's context was cancelled) or error; an operation that reports a
// lost race as a normal result (TryLease's false, RewrapDataKey's false,
// FinishClaim's done=false) is ok. Every (operation, result) series exists
// from the start, at zero, so rates and ratios need no absent() guards.
//
// The metrics are registered on reg (nil: not registered), which panics
// if it has them already, like MustRegister. Store has no optional
// interfaces or transaction types, so the wrapper is the whole store.
func WithMetrics(s Store, reg prometheus.Registerer) Store {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "claimcheck_meta_operations_total",
		Help: "Metadata store operations, by operation (method) and result (ok, not_found, conflict, refused, canceled, error).",
	}, []string{"operation", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "claimcheck_meta_operation_duration_seconds",
		Help: "Duration of metadata store operations (each one transaction), by operation (method).",
		// 0.5ms … ~8s: an indexed read on SQLite to a transaction queued
		// behind a slow one.
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
	}, []string{"operation"})
	if reg != nil {
		reg.MustRegister(total, duration)
	}
	m := &metered{next: s}
	v := reflect.ValueOf(&m.ops).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		o := v.Field(i).Addr().Interface().(*opMetrics)
		o.duration = duration.WithLabelValues(name)
		for res, rname := range resultNames {
			o.results[res] = total.WithLabelValues(name, rname)
		}
	}
	return m
}

// timer measures one call: start it before the wrapped call runs, end it
// with the call's results. Go evaluates the operands of a statement left
// to right, so in
//
//	return m.ops.X.start().end(m.next.X(...))
//
// start runs before X, and end after it. A call that panics is not
// counted: end never runs.
type timer struct {
	o     *opMetrics
	start time.Time
}

func (o *opMetrics) start() timer { return timer{o, time.Now()} }

func (t timer) end(err error) error {
	t.o.duration.Observe(time.Since(t.start).Seconds())
	t.o.results[result(err)].Inc()
	return err
}

// timer1 and timer2 end calls that return one or two values besides the
// error (methods cannot have type parameters of their own).
type (
	timer1[T any]    timer
	timer2[T, U any] timer
)

func (t timer1[T]) end(v T, err error) (T, error) { return v, timer(t).end(err) }

func (t timer2[T, U]) end(v T, w U, err error) (T, U, error) {
	return v, w, timer(t).end(err)
}

// metered is the Store of WithMetrics. Each method below is the wrapped
// one between start and end, nothing else.
type metered struct {
	next Store
	ops  ops
}

// Close implements Store. It is not measured.
func (m *metered) Close() error { return m.next.Close() }

// The measured methods of Store, in alphabetical order like ops.

func (m *metered) AppendEvents(ctx context.Context, events []Event) error {
	return m.ops.AppendEvents.start().end(m.next.AppendEvents(ctx, events))
}

func (m *metered) BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]Blob, error) {
	return timer1[[]Blob](m.ops.BeginCollect.start()).end(m.next.BeginCollect(ctx, now, limit, retry))
}

func (m *metered) Blob(ctx context.Context, id string) (Blob, error) {
	return timer1[Blob](m.ops.Blob.start()).end(m.next.Blob(ctx, id))
}

func (m *metered) Blobs(ctx context.Context, afterID string, limit int) ([]Blob, error) {
	return timer1[[]Blob](m.ops.Blobs.start()).end(m.next.Blobs(ctx, afterID, limit))
}

func (m *metered) BlobsByKeys(ctx context.Context, keys []string) (map[string]Blob, error) {
	return timer1[map[string]Blob](m.ops.BlobsByKeys.start()).end(m.next.BlobsByKeys(ctx, keys))
}

func (m *metered) ClaimWithBlob(ctx context.Context, id string) (Claim, Blob, bool, error) {
	t := m.ops.ClaimWithBlob.start()
	c, b, ok, err := m.next.ClaimWithBlob(ctx, id)
	return c, b, ok, t.end(err)
}

func (m *metered) Claim(ctx context.Context, id string) (Claim, error) {
	return timer1[Claim](m.ops.Claim.start()).end(m.next.Claim(ctx, id))
}

func (m *metered) ClaimEvents(ctx context.Context, claimID string, afterSeq int64, limit int) ([]Event, error) {
	return timer1[[]Event](m.ops.ClaimEvents.start()).end(m.next.ClaimEvents(ctx, claimID, afterSeq, limit))
}

func (m *metered) ClaimHolds(ctx context.Context, id string) (ClaimHolds, error) {
	return timer1[ClaimHolds](m.ops.ClaimHolds.start()).end(m.next.ClaimHolds(ctx, id))
}

func (m *metered) ClearClaimHold(ctx context.Context, id string, now time.Time) (FinishResult, bool, error) {
	return timer2[FinishResult, bool](m.ops.ClearClaimHold.start()).end(m.next.ClearClaimHold(ctx, id, now))
}

func (m *metered) ClearNamespaceHold(ctx context.Context, ns string, now time.Time) ([]FinishResult, error) {
	return timer1[[]FinishResult](m.ops.ClearNamespaceHold.start()).end(m.next.ClearNamespaceHold(ctx, ns, now))
}

func (m *metered) CollectFailed(ctx context.Context, id string, cause string, retryAt time.Time) error {
	return m.ops.CollectFailed.start().end(m.next.CollectFailed(ctx, id, cause, retryAt))
}

func (m *metered) Commit(ctx context.Context, p CommitParams) (CommitResult, error) {
	return timer1[CommitResult](m.ops.Commit.start()).end(m.next.Commit(ctx, p))
}

func (m *metered) CommitExisting(ctx context.Context, p CommitExistingParams) (CommitResult, bool, error) {
	return timer2[CommitResult, bool](m.ops.CommitExisting.start()).end(m.next.CommitExisting(ctx, p))
}

func (m *metered) CountDeadLetters(ctx context.Context) (int64, error) {
	return timer1[int64](m.ops.CountDeadLetters.start()).end(m.next.CountDeadLetters(ctx))
}

func (m *metered) CountNamespaces(ctx context.Context) ([]Namespace, error) {
	return timer1[[]Namespace](m.ops.CountNamespaces.start()).end(m.next.CountNamespaces(ctx))
}

func (m *metered) CreateDataKey(ctx context.Context, k DataKey) (DataKey, error) {
	return timer1[DataKey](m.ops.CreateDataKey.start()).end(m.next.CreateDataKey(ctx, k))
}

func (m *metered) CreateKey(ctx context.Context, k APIKey) error {
	return m.ops.CreateKey.start().end(m.next.CreateKey(ctx, k))
}

func (m *metered) CreatePending(ctx context.Context, p CreatePendingParams) error {
	return m.ops.CreatePending.start().end(m.next.CreatePending(ctx, p))
}

func (m *metered) ExtendPending(ctx context.Context, claimID, blobID string, dueAt time.Time) error {
	return m.ops.ExtendPending.start().end(m.next.ExtendPending(ctx, claimID, blobID, dueAt))
}

func (m *metered) CreateUpload(ctx context.Context, u Upload) (Upload, bool, error) {
	return timer2[Upload, bool](m.ops.CreateUpload.start()).end(m.next.CreateUpload(ctx, u))
}

func (m *metered) CreateResumable(ctx context.Context, u Upload, handle string) error {
	return m.ops.CreateResumable.start().end(m.next.CreateResumable(ctx, u, handle))
}

func (m *metered) Resumable(ctx context.Context, id string) (ResumableUpload, error) {
	return timer1[ResumableUpload](m.ops.Resumable.start()).end(m.next.Resumable(ctx, id))
}

func (m *metered) RecordReceived(ctx context.Context, p Received) error {
	return m.ops.RecordReceived.start().end(m.next.RecordReceived(ctx, p))
}

func (m *metered) Restage(ctx context.Context, p RestageParams) error {
	return m.ops.Restage.start().end(m.next.Restage(ctx, p))
}

func (m *metered) Cursor(ctx context.Context, name string) (string, error) {
	return timer1[string](m.ops.Cursor.start()).end(m.next.Cursor(ctx, name))
}

func (m *metered) DataKey(ctx context.Context, id string) (DataKey, error) {
	return timer1[DataKey](m.ops.DataKey.start()).end(m.next.DataKey(ctx, id))
}

func (m *metered) DeadLetters(ctx context.Context, ns string, afterID string, limit int) ([]Blob, error) {
	return timer1[[]Blob](m.ops.DeadLetters.start()).end(m.next.DeadLetters(ctx, ns, afterID, limit))
}

func (m *metered) DestroyDataKey(ctx context.Context, ns string, now time.Time) (DataKey, error) {
	return timer1[DataKey](m.ops.DestroyDataKey.start()).end(m.next.DestroyDataKey(ctx, ns, now))
}

func (m *metered) Events(ctx context.Context, afterSeq int64, limit int) ([]Event, error) {
	return timer1[[]Event](m.ops.Events.start()).end(m.next.Events(ctx, afterSeq, limit))
}

func (m *metered) FinishClaim(ctx context.Context, id string, reason string, now time.Time, onlyIfDue bool) (FinishResult, bool, error) {
	return timer2[FinishResult, bool](m.ops.FinishClaim.start()).end(m.next.FinishClaim(ctx, id, reason, now, onlyIfDue))
}

func (m *metered) FinishCollect(ctx context.Context, ids []string, now time.Time) error {
	return m.ops.FinishCollect.start().end(m.next.FinishCollect(ctx, ids, now))
}

func (m *metered) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]FinishResult, error) {
	return timer1[[]FinishResult](m.ops.FinishDueClaims.start()).end(m.next.FinishDueClaims(ctx, now, limit))
}

func (m *metered) FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]RefFix, error) {
	return timer1[[]RefFix](m.ops.FixRefcounts.start()).end(m.next.FixRefcounts(ctx, blobIDs, now, grace))
}

func (m *metered) HeldClaims(ctx context.Context, ns string) (int64, error) {
	return timer1[int64](m.ops.HeldClaims.start()).end(m.next.HeldClaims(ctx, ns))
}

func (m *metered) Key(ctx context.Context, id string) (APIKey, error) {
	return timer1[APIKey](m.ops.Key.start()).end(m.next.Key(ctx, id))
}

func (m *metered) Keys(ctx context.Context, tenant string) ([]APIKey, error) {
	return timer1[[]APIKey](m.ops.Keys.start()).end(m.next.Keys(ctx, tenant))
}

func (m *metered) LiveDataKey(ctx context.Context, ns string) (DataKey, error) {
	return timer1[DataKey](m.ops.LiveDataKey.start()).end(m.next.LiveDataKey(ctx, ns))
}

func (m *metered) LiveDataKeys(ctx context.Context, ns string, afterID string, limit int) ([]DataKey, error) {
	return timer1[[]DataKey](m.ops.LiveDataKeys.start()).end(m.next.LiveDataKeys(ctx, ns, afterID, limit))
}

func (m *metered) LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error) {
	return timer1[map[string]int64](m.ops.LiveRefs.start()).end(m.next.LiveRefs(ctx, blobIDs))
}

func (m *metered) Namespace(ctx context.Context, name string) (Namespace, error) {
	return timer1[Namespace](m.ops.Namespace.start()).end(m.next.Namespace(ctx, name))
}

func (m *metered) NamespaceEvents(ctx context.Context, namespace string, since time.Time, afterSeq int64, limit int) ([]Event, error) {
	return timer1[[]Event](m.ops.NamespaceEvents.start()).end(m.next.NamespaceEvents(ctx, namespace, since, afterSeq, limit))
}

func (m *metered) NamespaceHold(ctx context.Context, ns string) (*Hold, error) {
	return timer1[*Hold](m.ops.NamespaceHold.start()).end(m.next.NamespaceHold(ctx, ns))
}

func (m *metered) Namespaces(ctx context.Context) ([]Namespace, error) {
	return timer1[[]Namespace](m.ops.Namespaces.start()).end(m.next.Namespaces(ctx))
}

func (m *metered) OldestDue(ctx context.Context) (time.Time, error) {
	return timer1[time.Time](m.ops.OldestDue.start()).end(m.next.OldestDue(ctx))
}

func (m *metered) ParkBlob(ctx context.Context, id string, cause string, now time.Time) error {
	return m.ops.ParkBlob.start().end(m.next.ParkBlob(ctx, id, cause, now))
}

func (m *metered) Ping(ctx context.Context) error {
	return m.ops.Ping.start().end(m.next.Ping(ctx))
}

func (m *metered) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	return timer1[int](m.ops.PruneEvents.start()).end(m.next.PruneEvents(ctx, before, limit))
}

func (m *metered) CompactHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	return timer1[int](m.ops.CompactHistory.start()).end(m.next.CompactHistory(ctx, before, limit))
}

func (m *metered) PruneHistory(ctx context.Context, before time.Time, limit int) (PruneResult, error) {
	return timer1[PruneResult](m.ops.PruneHistory.start()).end(m.next.PruneHistory(ctx, before, limit))
}

func (m *metered) QuotaDrift(ctx context.Context) ([]QuotaDrift, error) {
	return timer1[[]QuotaDrift](m.ops.QuotaDrift.start()).end(m.next.QuotaDrift(ctx))
}

func (m *metered) RecordReads(ctx context.Context, reads []Read) ([]string, error) {
	return timer1[[]string](m.ops.RecordReads.start()).end(m.next.RecordReads(ctx, reads))
}

func (m *metered) Release(ctx context.Context, id string, consumer string, now time.Time) (Claim, error) {
	return timer1[Claim](m.ops.Release.start()).end(m.next.Release(ctx, id, consumer, now))
}

func (m *metered) ReleaseLease(ctx context.Context, name string, holder string) error {
	return m.ops.ReleaseLease.start().end(m.next.ReleaseLease(ctx, name, holder))
}

func (m *metered) RequestLeaseRelease(ctx context.Context, name string, holder string) error {
	return m.ops.RequestLeaseRelease.start().end(m.next.RequestLeaseRelease(ctx, name, holder))
}

func (m *metered) CheckLease(ctx context.Context, name string, holder string, now time.Time) (bool, bool, error) {
	return timer2[bool, bool](m.ops.CheckLease.start()).end(m.next.CheckLease(ctx, name, holder, now))
}

func (m *metered) RetryDeadLetters(ctx context.Context, ids []string, all bool, now time.Time) ([]Blob, error) {
	return timer1[[]Blob](m.ops.RetryDeadLetters.start()).end(m.next.RetryDeadLetters(ctx, ids, all, now))
}

func (m *metered) RevokeKey(ctx context.Context, id string, tenant string, now time.Time) (APIKey, error) {
	return timer1[APIKey](m.ops.RevokeKey.start()).end(m.next.RevokeKey(ctx, id, tenant, now))
}

func (m *metered) RewrapDataKey(ctx context.Context, r Rewrap) (bool, error) {
	return timer1[bool](m.ops.RewrapDataKey.start()).end(m.next.RewrapDataKey(ctx, r))
}

func (m *metered) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	return timer1[[]byte](m.ops.Secret.start()).end(m.next.Secret(ctx, name, candidate))
}

func (m *metered) SetClaimHold(ctx context.Context, id string, reason string, now time.Time) error {
	return m.ops.SetClaimHold.start().end(m.next.SetClaimHold(ctx, id, reason, now))
}

func (m *metered) SetCursor(ctx context.Context, name string, value string) error {
	return m.ops.SetCursor.start().end(m.next.SetCursor(ctx, name, value))
}

func (m *metered) SetNamespaceHold(ctx context.Context, ns string, reason string, now time.Time) (int64, error) {
	return timer1[int64](m.ops.SetNamespaceHold.start()).end(m.next.SetNamespaceHold(ctx, ns, reason, now))
}

func (m *metered) SetTenants(ctx context.Context, byNamespace map[string]string, others string) error {
	return m.ops.SetTenants.start().end(m.next.SetTenants(ctx, byNamespace, others))
}

func (m *metered) TenantEvents(ctx context.Context, tenant string, since time.Time, afterSeq int64, limit int) ([]Event, error) {
	return timer1[[]Event](m.ops.TenantEvents.start()).end(m.next.TenantEvents(ctx, tenant, since, afterSeq, limit))
}

func (m *metered) Tenants(ctx context.Context) ([]TenantUsage, error) {
	return timer1[[]TenantUsage](m.ops.Tenants.start()).end(m.next.Tenants(ctx))
}

func (m *metered) TryLease(ctx context.Context, name string, holder string, now time.Time, ttl time.Duration) (bool, error) {
	return timer1[bool](m.ops.TryLease.start()).end(m.next.TryLease(ctx, name, holder, now, ttl))
}

func (m *metered) Upload(ctx context.Context, id string) (Upload, error) {
	return timer1[Upload](m.ops.Upload.start()).end(m.next.Upload(ctx, id))
}

func (m *metered) UploadByKey(ctx context.Context, ns string, key string) (Upload, error) {
	return timer1[Upload](m.ops.UploadByKey.start()).end(m.next.UploadByKey(ctx, ns, key))
}

func (m *metered) MarkDamaged(ctx context.Context, d Damage) (bool, error) {
	return timer1[bool](m.ops.MarkDamaged.start()).end(m.next.MarkDamaged(ctx, d))
}

func (m *metered) SaveBlockTable(ctx context.Context, key string, table []byte) error {
	return m.ops.SaveBlockTable.start().end(m.next.SaveBlockTable(ctx, key, table))
}

func (m *metered) BlockTable(ctx context.Context, key string) ([]byte, bool, error) {
	return timer2[[]byte, bool](m.ops.BlockTable.start()).end(m.next.BlockTable(ctx, key))
}

func (m *metered) ClearDamage(ctx context.Context, blobID, key string, now time.Time) (bool, error) {
	return timer1[bool](m.ops.ClearDamage.start()).end(m.next.ClearDamage(ctx, blobID, key, now))
}

func (m *metered) DamagedBlobs(ctx context.Context, afterID string, limit int) ([]Blob, error) {
	return timer1[[]Blob](m.ops.DamagedBlobs.start()).end(m.next.DamagedBlobs(ctx, afterID, limit))
}

func (m *metered) DedupCandidate(ctx context.Context, ns, digest string) (Blob, error) {
	return timer1[Blob](m.ops.DedupCandidate.start()).end(m.next.DedupCandidate(ctx, ns, digest))
}

func (m *metered) ListClaims(ctx context.Context, p ListParams) ([]ListedClaim, error) {
	return timer1[[]ListedClaim](m.ops.ListClaims.start()).end(m.next.ListClaims(ctx, p))
}

func (m *metered) ExtendClaim(ctx context.Context, p ExtendParams) (Claim, error) {
	return timer1[Claim](m.ops.ExtendClaim.start()).end(m.next.ExtendClaim(ctx, p))
}

func (m *metered) CreateSubscription(ctx context.Context, s Subscription) error {
	return m.ops.CreateSubscription.start().end(m.next.CreateSubscription(ctx, s))
}

func (m *metered) SyncConfigSubscriptions(ctx context.Context, subs []Subscription) error {
	return m.ops.SyncConfigSubscriptions.start().end(m.next.SyncConfigSubscriptions(ctx, subs))
}

func (m *metered) Subscriptions(ctx context.Context, tenant string) ([]Subscription, error) {
	return timer1[[]Subscription](m.ops.Subscriptions.start()).end(m.next.Subscriptions(ctx, tenant))
}

func (m *metered) DeleteSubscription(ctx context.Context, tenant, id string) error {
	return m.ops.DeleteSubscription.start().end(m.next.DeleteSubscription(ctx, tenant, id))
}

func (m *metered) ResumeSubscription(ctx context.Context, tenant, id string) error {
	return m.ops.ResumeSubscription.start().end(m.next.ResumeSubscription(ctx, tenant, id))
}

func (m *metered) AdvanceSubscription(ctx context.Context, id string, p SubscriptionProgress) error {
	return m.ops.AdvanceSubscription.start().end(m.next.AdvanceSubscription(ctx, id, p))
}

func (m *metered) MarkLagging(ctx context.Context, bound time.Time) (int, error) {
	return timer1[int](m.ops.MarkLagging.start()).end(m.next.MarkLagging(ctx, bound))
}

func (m *metered) FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]FeedEvent, error) {
	return timer1[[]FeedEvent](m.ops.FeedEvents.start()).end(m.next.FeedEvents(ctx, tenant, afterSeq, upTo, limit, labels))
}
