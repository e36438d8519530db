package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/meta"
)

// metrics are the engine's own Prometheus instruments, all of them, built
// and registered by newMetrics on the Registerer from Config (never the
// global registry). They live on the Store, so both modes of the API
// count the same events. The other instruments of a Store register on the
// same registry from their own packages: the storage layers measure
// themselves (blob.WithMetrics and meta.WithMetrics, which Open wraps the
// stores in), and the sweeper has sweep.Metrics.
type metrics struct {
	// Puts and redeems (put.go, redeem.go), by namespace.
	created   *prometheus.CounterVec   // claims created
	redeemed  *prometheus.CounterVec   // successful redeem opens
	bytesIn   *prometheus.CounterVec   // original bytes accepted by puts
	bytesOut  *prometheus.CounterVec   // original bytes served by redeems
	stored    *prometheus.CounterVec   // object bytes written
	putDur    *prometheus.HistogramVec // whole put, body streamed and committed
	redeemDur *prometheus.HistogramVec // whole redeem, until the stream ends
	// Failed lookups, puts and redeems.
	notFound   prometheus.Counter
	gone       *prometheus.CounterVec // gone answers, by reason
	putErrors  *prometheus.CounterVec // failed puts, by kind
	corruption prometheus.Counter     // redeems that failed verification

	// Dedup and commits (dedup.go), by namespace but casConflicts.
	dedupHits    *prometheus.CounterVec // puts that shared an existing blob
	bytesSaved   *prometheus.CounterVec // original bytes not stored thanks to dedup
	flipBacks    *prometheus.CounterVec // orphaned blobs committed again by a dedup hit
	casConflicts prometheus.Counter     // commits that lost a compare-and-swap

	// Direct uploads (upload.go), by namespace.
	uploadsStarted   *prometheus.CounterVec
	uploadsConfirmed *prometheus.CounterVec

	// lifecycleDrift is what the start-up check of the lifecycle safety
	// net found (internal/bucketsetup).
	lifecycleDrift prometheus.Gauge
}

// newMetrics builds and registers the engine's instruments, and the usage
// gauges read from m at scrape time.
func newMetrics(reg prometheus.Registerer, m meta.Store, log *slog.Logger) *metrics {
	ns := []string{"namespace"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	buckets := prometheus.ExponentialBuckets(0.001, 2.5, 14) // 1ms … ~150s
	x := &metrics{
		created:   counter("claimcheck_claims_created_total", "Claims created (committed puts).", ns...),
		redeemed:  counter("claimcheck_claims_redeemed_total", "Claims opened for reading.", ns...),
		bytesIn:   counter("claimcheck_bytes_in_total", "Original payload bytes accepted by puts.", ns...),
		bytesOut:  counter("claimcheck_bytes_out_total", "Original payload bytes served by redeems.", ns...),
		stored:    counter("claimcheck_bytes_stored_total", "Object bytes written to blob storage (after compression).", ns...),
		dedupHits: counter("claimcheck_dedup_hits_total", "Puts that shared an existing blob with the same content.", ns...),
		putDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "claimcheck_put_duration_seconds",
			Help: "Duration of puts, from the first body byte to the commit.", Buckets: buckets}, ns),
		redeemDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "claimcheck_redeem_duration_seconds",
			Help: "Duration of redeems, from the lookup to the end of the stream.", Buckets: buckets}, ns),
		notFound:   prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_claims_not_found_total", Help: "Lookups of claims that do not exist."}),
		gone:       counter("claimcheck_claims_gone_total", "Lookups of claims already finished, by reason.", "reason"),
		putErrors:  counter("claimcheck_put_errors_total", "Failed puts, by kind.", "kind"),
		corruption: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_checksum_mismatches_total", Help: "Redeems whose stored bytes failed verification."}),

		bytesSaved: counter("claimcheck_dedup_bytes_saved_total",
			"Original payload bytes not stored again because a put shared an existing blob.", ns...),
		flipBacks: counter("claimcheck_dedup_flip_backs_total",
			"Orphaned blobs brought back to committed by a dedup hit during their grace period.", ns...),
		casConflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_cas_conflicts_total",
			Help: "Commits that lost a compare-and-swap (the claim was finished under them)."}),

		uploadsStarted: counter("claimcheck_uploads_started_total",
			"Direct uploads started (inits that created an upload; idempotent repeats do not count).", ns...),
		uploadsConfirmed: counter("claimcheck_uploads_confirmed_total",
			"Direct uploads confirmed (committed as claims).", ns...),

		lifecycleDrift: prometheus.NewGauge(prometheus.GaugeOpts{Name: "claimcheck_lifecycle_drift_rules",
			Help: "Bucket lifecycle rules missing, different or conflicting after the start-up check (manage mode repairs ours; see the log)."}),
	}
	reg.MustRegister(x.created, x.redeemed, x.bytesIn, x.bytesOut, x.stored, x.putDur, x.redeemDur,
		x.notFound, x.gone, x.putErrors, x.corruption,
		x.dedupHits, x.bytesSaved, x.flipBacks, x.casConflicts,
		x.uploadsStarted, x.uploadsConfirmed, x.lifecycleDrift)
	// The usage gauges are store-wide: a registry that has them already
	// keeps the first, rather than failing the Open.
	if err := reg.Register(newUsageCollector(m, log.Warn)); err != nil {
		log.Debug("metrics: usage gauges not registered", "err", err)
	}
	return x
}

// usageCollector exports the namespace counters of the metadata store at
// scrape time: outstanding claims by state and the bytes they hold. They
// come from the database, not from this process's counters, so every
// replica reports the same store-wide values (aggregate them with max, not
// sum) and a restart does not reset them. One indexed read per scrape.
type usageCollector struct {
	meta        meta.Store
	log         func(msg string, args ...any)
	outstanding *prometheus.Desc
	used        *prometheus.Desc
	reserved    *prometheus.Desc
}

// usageScrapeTimeout bounds the database read of one scrape, so a slow
// database makes the gauges go missing rather than hang /metrics.
const usageScrapeTimeout = 5 * time.Second

func newUsageCollector(m meta.Store, log func(msg string, args ...any)) *usageCollector {
	ns := []string{"namespace"}
	return &usageCollector{
		meta: m, log: log,
		outstanding: prometheus.NewDesc("claimcheck_claims_outstanding",
			"Claims not finished yet, by namespace and state (pending: upload not committed), from the metadata store.",
			[]string{"namespace", "state"}, nil),
		used: prometheus.NewDesc("claimcheck_storage_used_bytes",
			"Original bytes of the active claims of a namespace (quota usage), from the metadata store.", ns, nil),
		reserved: prometheus.NewDesc("claimcheck_storage_reserved_bytes",
			"Bytes reserved by pending claims of a namespace, from the metadata store.", ns, nil),
	}
}

func (c *usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.outstanding
	ch <- c.used
	ch <- c.reserved
}

func (c *usageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), usageScrapeTimeout)
	defer cancel()
	nss, err := c.meta.Namespaces(ctx)
	if err != nil {
		c.log("metrics: could not read namespace usage", "err", err)
		return
	}
	for _, n := range nss {
		ch <- prometheus.MustNewConstMetric(c.outstanding, prometheus.GaugeValue, float64(n.ActiveClaims), n.Name, "active")
		ch <- prometheus.MustNewConstMetric(c.outstanding, prometheus.GaugeValue, float64(n.PendingClaims), n.Name, "pending")
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(n.UsedBytes), n.Name)
		ch <- prometheus.MustNewConstMetric(c.reserved, prometheus.GaugeValue, float64(n.ReservedBytes), n.Name)
	}
}
