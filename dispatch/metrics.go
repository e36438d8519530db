package dispatch

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	deliveries   *prometheus.CounterVec
	ok, refused  prometheus.Counter // of deliveries, looked up once
	errored      prometheus.Counter
	lag          prometheus.Histogram
	lagging      prometheus.Gauge
	deadLettered prometheus.Gauge
	shards       prometheus.Gauge
}

// newMetrics registers the dispatcher's metrics on reg (nil: not
// registered):
//
//	claimcheck_event_deliveries_total{result}    ok, refused (not 2xx), error (no answer)
//	claimcheck_event_delivery_lag_seconds        event written to receiver's 2xx
//	claimcheck_subscriptions_lagging             behind lag_bound: pruning no longer waits for them
//	claimcheck_subscriptions_dead_lettered       delivery stopped (of this replica's shards)
//	claimcheck_dispatch_shards_held              this replica's shards of the subscriptions
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimcheck_event_deliveries_total",
			Help: "Webhook deliveries of events, by result (ok, refused: an answer other than 2xx, error: no answer).",
		}, []string{"result"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "claimcheck_event_delivery_lag_seconds",
			Help:    "Time from an event's change to its receiver's 2xx.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		lagging: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimcheck_subscriptions_lagging",
			Help: "Enabled subscriptions whose cursor is older than subscriptions.lag_bound: event pruning no longer waits for them.",
		}),
		deadLettered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimcheck_subscriptions_dead_lettered",
			Help: "Subscriptions of this replica's shards whose delivery stopped after an event kept failing past subscriptions.dead_letter_after.",
		}),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimcheck_dispatch_shards_held",
			Help: "Shards of the subscriptions this replica delivers for (of 16, shared out over the replicas).",
		}),
	}
	m.ok, m.refused, m.errored = m.deliveries.WithLabelValues("ok"), m.deliveries.WithLabelValues("refused"),
		m.deliveries.WithLabelValues("error")
	if reg != nil {
		reg.MustRegister(m.deliveries, m.lag, m.lagging, m.deadLettered, m.shards)
	}
	return m
}
