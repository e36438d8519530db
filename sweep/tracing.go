package sweep

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// The spans of background work (ADR 0250). Work that no request caused
// starts a trace of its own, so that an operator finds a slow
// collection or backstop pass by its name; its metadata and blob calls
// are its children (meta.WithTracing, blob.WithTracing). A tick that
// finds nothing due starts none.
const (
	spanRun      = "claimcheck.sweep"         // one bounded run: finishing due claims, collecting due blobs
	spanFinish   = "claimcheck.sweep.finish"  // one page of due claims finished
	spanCollect  = "claimcheck.sweep.collect" // one page of due blobs collected
	spanBackstop = "claimcheck.backstop"
	spanScrub    = "claimcheck.scrub"
	spanPrune    = "claimcheck.sweep.prune"
)

// maxFinishLinks bounds the links of one page's span to the puts of the
// claims it finished; a page is at most Config.PageSize claims.
const maxFinishLinks = 32

// SetTracerProvider makes the sweeper trace its passes with tp (nil:
// off, the default). Call it before Start.
func (s *Sweeper) SetTracerProvider(tp trace.TracerProvider) {
	s.tracer = tracing.NewTracer(tp, nil)
}

func endRun(span trace.Span, res Result, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("claimcheck.claims_finished", res.ClaimsFinished),
			attribute.Int("claimcheck.blobs_collected", res.BlobsCollected),
			attribute.Int("claimcheck.delete_failures", res.DeleteFailures),
			attribute.Bool("claimcheck.aborted", res.Aborted))
	}
	tracing.End(span, err)
}

// traceFinished ends the span of a page of finished claims, linked to
// the spans that created them: the end of a payload's life leads back to
// its put.
func traceFinished(span trace.Span, done []meta.FinishResult, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("claimcheck.claims_finished", len(done)))
		links := 0
		for _, f := range done {
			if links == maxFinishLinks {
				break
			}
			if sc := tracing.SpanContextOf(f.Claim.TraceParent); sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
					tracing.ClaimID.String(f.Claim.ID), tracing.GoneReason.String(f.Claim.DeleteReason)}})
				links++
			}
		}
	}
	tracing.End(span, err)
}

func endCollect(span trace.Span, n int, res, before Result, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("claimcheck.blobs_due", n),
			attribute.Int("claimcheck.blobs_collected", res.BlobsCollected-before.BlobsCollected),
			attribute.Int("claimcheck.delete_failures", res.DeleteFailures-before.DeleteFailures))
	}
	tracing.End(span, err)
}

func endBackstop(span trace.Span, res BackstopResult, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("claimcheck.blobs_scanned", res.BlobsScanned),
			attribute.Int("claimcheck.objects_listed", res.ObjectsListed),
			attribute.Int("claimcheck.debris_deleted", res.DebrisDeleted),
			attribute.Int("claimcheck.missing_objects", res.MissingObjects),
			attribute.Bool("claimcheck.pass_done", res.PassDone),
			attribute.Bool("claimcheck.skipped", res.Skipped))
	}
	tracing.End(span, err)
}

func endScrub(span trace.Span, rep ScrubReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("claimcheck.blobs_verified", rep.Blobs),
			attribute.Int64("claimcheck.bytes_read", rep.Bytes),
			attribute.Int("claimcheck.damaged", len(rep.Found)),
			attribute.Bool("claimcheck.pass_done", rep.PassDone))
	}
	tracing.End(span, err)
}
