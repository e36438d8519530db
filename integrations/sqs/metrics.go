package sqs

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the envelope's Prometheus metrics, labelled by queue or
// topic name (and by consumer name on the consuming side). Create one
// per registry with NewMetrics and pass it to every publisher and
// Consumer that should report into it; a nil *Metrics reports nothing.
type Metrics struct {
	published       *prometheus.CounterVec // destination, mode
	publishedBytes  *prometheus.CounterVec // destination, mode
	publishFailures *prometheus.CounterVec // destination
	orphansDeleted  *prometheus.CounterVec // destination
	consumed        *prometheus.CounterVec // queue, consumer, outcome
	resolveErrors   *prometheus.CounterVec // queue, consumer, reason
	releaseFailures *prometheus.CounterVec // queue, consumer
}

// NewMetrics creates the metrics and registers them with reg (never the
// global registry implicitly). It panics if reg already holds metrics of
// the same names, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_sqs_" + name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		published: counter("published_total",
			"Messages sent, by queue or topic and mode (inline: the body as is; offloaded: a reference).", "destination", "mode"),
		publishedBytes: counter("published_bytes_total",
			"Body bytes sent, by queue or topic and mode (offloaded bytes went to the claim store).", "destination", "mode"),
		publishFailures: counter("publish_failures_total",
			"Sends that failed (offload, SQS or SNS).", "destination"),
		orphansDeleted: counter("orphans_deleted_total",
			"Claims deleted because the send that carried their reference failed.", "destination"),
		consumed: counter("consumed_total",
			"Messages handled, by queue, consumer and outcome (acked, nakked, terminated, dead_lettered).", "queue", "consumer", "outcome"),
		resolveErrors: counter("resolve_errors_total",
			"References that could not be resolved, by reason (a gone reason such as expired or read_retention_over, not_found, checksum_mismatch, invalid_ref, unavailable).", "queue", "consumer", "reason"),
		releaseFailures: counter("release_failures_total",
			"Releases that failed after the delete (the claim then ends at its retention or max_age deadline).", "queue", "consumer"),
	}
}
