package engine

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/meta"
)

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

// registerUsage registers the usage gauges on reg. A registry that has
// them already (two stores sharing one registry, as tests of several
// replicas do) keeps the first: the values are store-wide anyway.
func (s *Store) registerUsage(reg prometheus.Registerer) {
	if err := reg.Register(newUsageCollector(s.meta, s.log.Warn)); err != nil {
		s.log.Debug("metrics: usage gauges not registered", "err", err)
	}
}
