package engine

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's Prometheus instruments. They live on the Store
// (both modes of the API count the same events) and register on the
// Registerer from Config, never the global registry.
type metrics struct {
	created    *prometheus.CounterVec   // claims created, by namespace
	redeemed   *prometheus.CounterVec   // successful redeem opens, by namespace
	bytesIn    *prometheus.CounterVec   // original bytes accepted by puts
	bytesOut   *prometheus.CounterVec   // original bytes served by redeems
	stored     *prometheus.CounterVec   // object bytes written
	dedupHits  *prometheus.CounterVec   // puts that shared an existing blob
	putDur     *prometheus.HistogramVec // whole put, body streamed and committed
	redeemDur  *prometheus.HistogramVec // whole redeem, until the stream ends
	notFound   prometheus.Counter
	gone       *prometheus.CounterVec // gone answers, by reason
	putErrors  *prometheus.CounterVec // failed puts, by kind
	corruption prometheus.Counter     // redeems that failed verification
}

func newMetrics(reg prometheus.Registerer) *metrics {
	ns := []string{"namespace"}
	buckets := prometheus.ExponentialBuckets(0.001, 2.5, 14) // 1ms … ~150s
	m := &metrics{
		created:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_claims_created_total", Help: "Claims created (committed puts)."}, ns),
		redeemed:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_claims_redeemed_total", Help: "Claims opened for reading."}, ns),
		bytesIn:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_bytes_in_total", Help: "Original payload bytes accepted by puts."}, ns),
		bytesOut:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_bytes_out_total", Help: "Original payload bytes served by redeems."}, ns),
		stored:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_bytes_stored_total", Help: "Object bytes written to blob storage (after compression)."}, ns),
		dedupHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_dedup_hits_total", Help: "Puts that shared an existing blob with the same content."}, ns),
		putDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "claimcheck_put_duration_seconds",
			Help: "Duration of puts, from the first body byte to the commit.", Buckets: buckets}, ns),
		redeemDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "claimcheck_redeem_duration_seconds",
			Help: "Duration of redeems, from the lookup to the end of the stream.", Buckets: buckets}, ns),
		notFound:   prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_claims_not_found_total", Help: "Lookups of claims that do not exist."}),
		gone:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_claims_gone_total", Help: "Lookups of claims already finished, by reason."}, []string{"reason"}),
		putErrors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_put_errors_total", Help: "Failed puts, by kind."}, []string{"kind"}),
		corruption: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_checksum_mismatches_total", Help: "Redeems whose stored bytes failed verification."}),
	}
	reg.MustRegister(m.created, m.redeemed, m.bytesIn, m.bytesOut, m.stored, m.dedupHits,
		m.putDur, m.redeemDur, m.notFound, m.gone, m.putErrors, m.corruption)
	return m
}
