package engine

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// The names of the engine's spans, one per operation of the contract
// that moves a payload or its lifetime (ADR 0250). Each has the
// metadata and blob calls it makes as children (meta.Instrument,
// blob.WithTracing).
const (
	spanPut            = "claimcheck.put"
	spanRedeem         = "claimcheck.redeem"
	spanRelease        = "claimcheck.release"
	spanDelete         = "claimcheck.delete"
	spanExtend         = "claimcheck.extend"
	spanUploadInit     = "claimcheck.upload.init"
	spanUploadReceive  = "claimcheck.upload.receive"
	spanUploadConfirm  = "claimcheck.upload.confirm"
	spanTusStart       = "claimcheck.tus.start"
	spanTusAppend      = "claimcheck.tus.append"
	spanTusTerminate   = "claimcheck.tus.terminate"
	linkCreatedByClaim = "claimcheck.link"
)

// startOp starts the span of one engine operation on namespace ns ("":
// not known yet; the claim's, once loaded, is added by traceClaim). With
// tracing off it returns a span that records nothing, at no allocation
// of its own.
//
// The returned context also names ns as the namespace of the metadata
// calls the operation makes (meta.WithNamespace): a store distributed by
// namespace sends them to that namespace's shard alone (ADR 0264).
func (s *Store) startOp(ctx context.Context, name, ns string) (context.Context, trace.Span) {
	if ns != "" {
		ctx = meta.WithNamespace(ctx, ns)
	}
	ctx, sp := s.tracer.Start(ctx, name)
	if ns != "" && sp.IsRecording() {
		s.traceNamespace(sp, ns)
	}
	return ctx, sp
}

// startOpOn starts the span of an operation on the upload or claim id.
func (s *Store) startOpOn(ctx context.Context, name, id string) (context.Context, trace.Span) {
	ctx, sp := s.tracer.Start(ctx, name)
	if sp.IsRecording() {
		sp.SetAttributes(tracing.ClaimID.String(id))
	}
	return ctx, sp
}

// traceNamespace sets the namespace and its tenant on sp.
func (s *Store) traceNamespace(sp trace.Span, ns string) {
	attrs := []attribute.KeyValue{tracing.Namespace.String(ns)}
	if pol, ok := s.policies[ns]; ok {
		attrs = append(attrs, tracing.Tenant.String(pol.Tenant))
	} else if s.defaults != nil {
		attrs = append(attrs, tracing.Tenant.String(s.defaults.Tenant))
	}
	sp.SetAttributes(attrs...)
}

// traceClaim describes the claim an operation found on ctx's span (its
// id, namespace, sizes, compression) and links the span to the span
// that created the claim: from any redeem, release or extend a trace
// backend leads to the put, even when the message that carried the
// reference lost its trace headers on the way.
func (s *Store) traceClaim(ctx context.Context, c meta.Claim, b *meta.Blob) {
	if s.tracer == nil || c.ID == "" {
		return
	}
	sp := trace.SpanFromContext(ctx)
	if !sp.IsRecording() {
		return
	}
	s.traceNamespace(sp, c.Namespace)
	sp.SetAttributes(tracing.ClaimID.String(c.ID), tracing.Size.Int64(c.Size))
	if b != nil {
		s.traceBlob(ctx, *b)
	}
	if c.State == meta.ClaimDeleted && c.DeleteReason != "" {
		sp.SetAttributes(tracing.GoneReason.String(c.DeleteReason))
	}
	if pc := tracing.SpanContextOf(c.TraceParent); pc.IsValid() && pc.SpanID() != sp.SpanContext().SpanID() {
		// Within the put's own trace too: there the put is a sibling's
		// descendant, not an ancestor, and only the link says which put
		// made the claim this span works on.
		sp.AddLink(trace.Link{SpanContext: pc, Attributes: []attribute.KeyValue{attribute.String(linkCreatedByClaim, "created_by")}})
	}
}

// traceLabels puts the put's labels on its span, for the namespaces
// whose config lets them in (tracing.record_labels).
func (s *Store) traceLabels(sp trace.Span, ns string, labels map[string]string) {
	if len(labels) == 0 || !sp.IsRecording() || !s.tracer.RecordsLabels(ns) {
		return
	}
	kv := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+labels[k])
	}
	sp.SetAttributes(tracing.Labels.StringSlice(kv))
}

// traceParentOf is the W3C traceparent of sp, stored with the claim it
// creates; empty when tracing is off.
func (s *Store) traceParentOf(sp trace.Span) string {
	if s.tracer == nil {
		return ""
	}
	return tracing.TraceParent(sp.SpanContext())
}

// rangeOf is a ranged redeem's range as an HTTP Range header spells it;
// a negative offset is the last -offset bytes, a negative length runs to
// the end.
func rangeOf(offset, length int64) string {
	if offset < 0 {
		return "bytes=" + strconv.FormatInt(offset, 10)
	}
	if length < 0 {
		return "bytes=" + strconv.FormatInt(offset, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(offset, 10) + "-" + strconv.FormatInt(offset+length-1, 10)
}

// traceBlob sets the stored form of the blob an operation reads on
// ctx's span.
func (s *Store) traceBlob(ctx context.Context, b meta.Blob) {
	if s.tracer == nil || b.ID == "" {
		return
	}
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(tracing.StoredSize.Int64(b.StoredSize), tracing.Compression.String(b.Compression))
	}
}
