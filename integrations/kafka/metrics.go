package kafka

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the envelope's Prometheus metrics, labelled by topic (and by
// consumer group on the consuming side). Create one per registry with
// NewMetrics and pass it to every Publisher and Consumer that should
// report into it; a nil *Metrics reports nothing.
type Metrics struct {
	published       *prometheus.CounterVec // topic, mode
	publishedBytes  *prometheus.CounterVec // topic, mode
	publishFailures *prometheus.CounterVec // topic
	orphansDeleted  *prometheus.CounterVec // topic
	consumed        *prometheus.CounterVec // topic, group, outcome
	resolveErrors   *prometheus.CounterVec // topic, group, reason
	releaseFailures *prometheus.CounterVec // topic, group
}

// NewMetrics creates the metrics and registers them with reg (never the
// global registry implicitly). It panics if reg already holds metrics of
// the same names, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_kafka_" + name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		published: counter("published_total",
			"Records produced, by topic and mode (inline: the value as is; offloaded: a reference).", "topic", "mode"),
		publishedBytes: counter("published_bytes_total",
			"Value bytes produced, by topic and mode (offloaded bytes went to the claim store).", "topic", "mode"),
		publishFailures: counter("publish_failures_total",
			"Records whose produce failed (offload or Kafka).", "topic"),
		orphansDeleted: counter("orphans_deleted_total",
			"Claims deleted because the produce that carried their reference failed.", "topic"),
		consumed: counter("consumed_total",
			"Records handled, by topic, group and outcome (committed, dead_lettered, skipped).", "topic", "group", "outcome"),
		resolveErrors: counter("resolve_errors_total",
			"References that could not be resolved, by reason (a gone reason such as expired or read_retention_over, not_found, checksum_mismatch, invalid_ref, unavailable).", "topic", "group", "reason"),
		releaseFailures: counter("release_failures_total",
			"Releases that failed after the commit (the claim then ends at its retention or max_age deadline).", "topic", "group"),
	}
}
