package nats

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the envelope's Prometheus metrics, labelled by subject (and
// by consumer name on the consuming side). Create one per registry with
// NewMetrics and pass it to every Publisher and Consumer that should
// report into it; a nil *Metrics reports nothing.
//
// Subjects become label values as they are: a subject hierarchy with an id
// in it (orders.12345) makes one series per id, so publish such traffic
// on subjects whose variable part is in a header, or leave Metrics nil.
type Metrics struct {
	published       *prometheus.CounterVec // subject, mode
	publishedBytes  *prometheus.CounterVec // subject, mode
	publishFailures *prometheus.CounterVec // subject
	orphansDeleted  *prometheus.CounterVec // subject
	consumed        *prometheus.CounterVec // subject, consumer, outcome
	resolveErrors   *prometheus.CounterVec // subject, consumer, reason
	releaseFailures *prometheus.CounterVec // subject, consumer
}

// NewMetrics creates the metrics and registers them with reg (never the
// global registry implicitly). It panics if reg already holds metrics of
// the same names, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_nats_" + name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		published: counter("published_total",
			"Messages published, by subject and mode (inline: the body as is; offloaded: a reference).", "subject", "mode"),
		publishedBytes: counter("published_bytes_total",
			"Body bytes published, by subject and mode (offloaded bytes went to the claim store).", "subject", "mode"),
		publishFailures: counter("publish_failures_total",
			"Publishes that failed (offload or JetStream).", "subject"),
		orphansDeleted: counter("orphans_deleted_total",
			"Claims deleted because the publish that carried their reference failed.", "subject"),
		consumed: counter("consumed_total",
			"Messages handled, by subject, consumer and outcome (acked, nakked, terminated, dead_lettered).", "subject", "consumer", "outcome"),
		resolveErrors: counter("resolve_errors_total",
			"References that could not be resolved, by reason (a gone reason such as expired or read_retention_over, not_found, checksum_mismatch, invalid_ref, unavailable).", "subject", "consumer", "reason"),
		releaseFailures: counter("release_failures_total",
			"Releases that failed after the ack (the claim then ends at its retention or max_age deadline).", "subject", "consumer"),
	}
}
