package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/allstores" // the storage backends Config.Storage may name
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/internal/bucketsetup"
	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

// Store is the embedded claim store: the engine behind both the library
// and `claimcheck serve`. It keeps metadata in a meta.Store and bytes in a
// blob.Store and runs every protocol of the design on top of them.
type Store struct {
	// hooks are where a test stops a put (testhooks.go); none in
	// production.
	hooks testHooks
	// meta and blobs are the stores wrapped in their metrics: every layer
	// above goes through the wrappers.
	meta  meta.Store
	blobs blob.Store
	// checkInTx: the objects are files (or memory) this process stats
	// without a network round trip, and the metadata is SQLite, which
	// has no round trips either; a digest-first put then finds and checks
	// its candidate inside its one transaction (dedup.go).
	checkInTx bool
	clock     clock.Clock
	log       *slog.Logger
	// tracer starts the engine's spans; nil when tracing is off
	// (tracing.go).
	tracer *tracing.Tracer
	// metrics are the engine's own instruments (metrics.go).
	metrics *metrics
	// sweeper does the due work nobody asks for in-line; its metrics
	// also count the in-line finishes.
	sweeper      *sweep.Sweeper
	sweepMetrics *sweep.Metrics
	// discardRetry is when the sweeper retries deleting the object of a
	// staging blob a dedup hit made unneeded, should the put's own
	// delete fail (dedup.go): the sweeper's retry delay.
	discardRetry time.Duration
	reads        *readRecorder
	policies     map[string]claimcheck.Policy
	defaults     *claimcheck.Policy // nil: only configured namespaces exist
	// tenants holds the quota of each declared tenant (tenantquota.go).
	tenants map[string]claimcheck.TenantPolicy
	// rules are the bucket's lifecycle rules in force after the start-up
	// check of the safety net (internal/bucketsetup), for dedup's bound
	// (lifecyclebound.go).
	rules   []blob.LifecycleRule
	closers []io.Closer
	// uploads: direct uploads' URL key (upload.go).
	uploads *uploads
	// keys holds the master key of encryption at rest (crypt.go); nil
	// when none is configured.
	keys *keyring
	// dispatcher delivers events to subscriptions (subscriptions.go). targets is what subscriptions may
	// reach, settle how old an event must be to be delivered or streamed.
	dispatcher *dispatch.Dispatcher
	targets    dispatch.TargetPolicy
	settle     time.Duration
	// limits bounds each tenant's named objects (tenantlimits.go);
	// configFile names where the configured subscriptions come from.
	limits     TenantLimits
	configFile string
	// eventRetention is events.retention in force (0: kept for ever):
	// a stream may not resume from before it (StreamBounds).
	eventRetention time.Duration
}

var (
	_ claimcheck.Claims  = (*Store)(nil)
	_ claimcheck.Uploads = (*Store)(nil)
	_ claimcheck.Admin   = (*Store)(nil)
)

// Open opens (creating if needed) the store described by cfg.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	policies, defaults, err := cfg.Policies()
	if err != nil {
		return nil, err
	}
	s := &Store{clock: cfg.Clock, log: cfg.Logger, policies: policies, defaults: defaults, hooks: processHooks}
	if s.keys, err = masterkey.New(cfg.MasterKey, cfg.PreviousMasterKeys); err != nil {
		return nil, err
	}
	s.tenants = cfg.Tenants
	s.uploads = &uploads{}

	metaStore := cfg.MetaStore
	if metaStore == nil {
		m, err := sqlmeta.Open(ctx, cfg.Metadata)
		if err != nil {
			return nil, fmt.Errorf("open metadata %s: %w", RedactURL(cfg.Metadata), err)
		}
		metaStore = m
		s.closers = append(s.closers, m)
	}
	blobStore := cfg.BlobStore
	if blobStore == nil {
		b, err := blob.Open(ctx, cfg.Storage)
		if err != nil {
			_ = s.Close() // opening failed; that error is the one to report
			return nil, fmt.Errorf("open storage %s: %w", cfg.Storage, err)
		}
		blobStore = b
		s.closers = append(s.closers, b)
	}
	// Every storage call is bounded by its progress (ADR 0289), the
	// owner marker's and the bucket set-up's at start included.
	blobStore = blob.WithTimeout(blobStore, max(cfg.StorageTimeout, 0))
	s.checkInTx = cfg.MetaStore == nil && strings.HasPrefix(cfg.Metadata, "sqlite:") &&
		cfg.BlobStore == nil && localStorage(cfg.Storage)

	// Metrics register once both stores are open, so an Open that fails
	// there leaves the registry as it was. The stores given in Config are
	// wrapped too: the engine measures whatever it runs on. The wrappers
	// carry the optional abilities (presigning, batch deletes, lifecycle
	// and CORS rules, appends) that the engine, the sweeper and the
	// bucket set-up find with blob.AbilitiesOf.
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	// The blob spans, when tracing is on, sit under the metrics: a span
	// measures the store's call itself (tracing.go). The metadata store
	// has one layer for both.
	s.tracer = tracing.NewTracer(cfg.TracerProvider, cfg.Tracing.RecordLabels)
	s.meta = meta.Instrument(metaStore, meta.Instrumentation{Registerer: reg, TracerProvider: cfg.TracerProvider, System: metaSystem(cfg), Timeout: max(cfg.MetadataTimeout, 0)})
	// Inline objects (inline.go) are objects to everything above: measured
	// and traced as the bucket's are.
	s.blobs = blob.WithMetrics(blob.WithTracing(newInlineStore(blobStore, s.meta, s.clock), cfg.TracerProvider), reg)
	s.metrics = newMetrics(reg, s.meta, s.log)
	s.sweepMetrics = sweep.NewMetrics(reg)

	id, own, err := s.claimStorage(ctx, cfg, blobStore)
	if err != nil {
		_ = s.Close() // opening failed; that error is the one to report
		return nil, err
	}
	set, err := bucketsetup.Run(ctx, s.blobs, bucketsetup.Config{
		Lifecycle: cfg.Lifecycle, Policies: s.policies, Defaults: s.defaults, NamespacePrefix: namespacePrefix,
		BucketCORS: cfg.BucketCORS, BrowserOrigins: cfg.BrowserOrigins, Logger: s.log,
		StoreID: id, OwnsStorage: own,
	})
	if err != nil {
		_ = s.Close() // opening failed; that error is the one to report
		return nil, fmt.Errorf("open storage %s: %w", RedactURL(cfg.Storage), err)
	}
	s.rules = set.Rules
	s.metrics.lifecycleDrift.Set(float64(set.Drift))
	if err := s.syncTenants(ctx); err != nil {
		_ = s.Close() // opening failed; that error is the one to report
		return nil, err
	}
	s.checkMasterKeys(ctx)
	s.reads = newReadRecorder(s.meta, s.log)
	cfg.Sweeper.EventRetention = cfg.Events.Retention.Effective(DefaultEventRetention)
	s.eventRetention = cfg.Sweeper.EventRetention
	cfg.Sweeper.HistoryRetention = cfg.History.Retention.Effective(DefaultHistoryRetention)
	if metaSystem(cfg) == "postgresql" && cfg.Sweeper.PageWorkers == 0 {
		// Due pages are taken FOR UPDATE SKIP LOCKED: idle maintenance
		// keeps several in flight (sweep.Config.PageWorkers).
		cfg.Sweeper.PageWorkers = sweep.MaintenancePageWorkers
	}
	s.sweeper = sweep.New(cfg.Sweeper, s.meta, s.blobs, s.keys, s.clock, s.log, s.sweepMetrics) // its scrub reads objects the way a redeem does (internal/integrity)
	s.sweeper.SetTracerProvider(cfg.TracerProvider)
	s.discardRetry = cfg.Sweeper.WithDefaults().RetryDelay
	if !cfg.Sweeper.Disabled {
		s.sweeper.Start(ctx)
	}
	subCfg := cfg.Subscriptions.WithDefaults()
	s.targets, s.settle = subCfg.TargetPolicy, subCfg.Settle
	s.limits, s.configFile = cfg.TenantLimits.WithDefaults(), cfg.ConfigFile
	if err := s.syncTargets(ctx, subCfg.Targets); err != nil {
		_ = s.Close() // opening failed; that error is the one to report
		return nil, err
	}
	s.dispatcher = dispatch.New(subCfg, s.meta, s.openSecret, s.clock, s.log, reg)
	if !subCfg.Disabled {
		s.dispatcher.Start(ctx)
	}
	return s, nil
}

// storeIDName names the store's id in the metadata store's secrets:
// generated once, shared by every replica on the database, so replicas
// are one store and another database is another store.
const storeIDName = "store_id"

// claimStorage makes sure the storage is this store's, or shared on
// purpose (bucketsetup.ClaimStorage), and returns the store's id and
// whether the storage's owner marker names it.
// The marker is read and written on the storage as opened (bs), not
// through the metrics wrapper: the storage metrics count payload work.
func (s *Store) claimStorage(ctx context.Context, cfg Config, bs blob.Store) (id string, own bool, err error) {
	candidate := make([]byte, 8)
	_, _ = rand.Read(candidate)
	b, err := s.meta.Secret(ctx, storeIDName, candidate)
	if err != nil {
		return "", false, fmt.Errorf("store id: %w", err)
	}
	id = hex.EncodeToString(b)
	md := RedactURL(cfg.Metadata)
	if cfg.MetaStore != nil {
		md = "given by the embedding program"
	}
	storage := RedactURL(cfg.Storage)
	if cfg.BlobStore != nil {
		storage = "given by the embedding program"
	}
	own, err = bucketsetup.ClaimStorage(ctx, bs, storage,
		bucketsetup.Owner{ID: id, Metadata: md, Since: s.clock.Now().UTC()}, cfg.StorageShared, s.log)
	if err != nil {
		return "", false, fmt.Errorf("open storage %s: %w", storage, err)
	}
	return id, own, nil
}

// SweepOnce does up to maxOps items of due work now (maxOps <= 0: until
// nothing is due), whatever the traffic: finish due claims, collect due
// blobs. It is what `claimcheck sweep --once` runs.
func (s *Store) SweepOnce(ctx context.Context, maxOps int) (sweep.Result, error) {
	return s.sweeper.RunOnce(ctx, maxOps)
}

// Sweeper returns the store's background sweeper, for operators and
// benchmarks that drive it by hand.
func (s *Store) Sweeper() *sweep.Sweeper { return s.sweeper }

// touch tells the sweeper the store is busy.
func (s *Store) touch() { s.sweeper.Touch() }

// Close releases the databases and storage the Store opened.
func (s *Store) Close() error {
	if s.dispatcher != nil {
		s.dispatcher.Stop()
	}
	if s.sweeper != nil {
		s.sweeper.Stop()
	}
	if s.reads != nil {
		s.reads.close()
	}
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i].Close())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Ready reports whether the metadata database answers.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.meta.Ping(ctx); err != nil {
		return fmt.Errorf("%w: metadata: %v", claimcheck.ErrUnavailable, err)
	}
	return nil
}

// Policy returns the effective policy of namespace ns.
func (s *Store) Policy(ctx context.Context, ns string) (claimcheck.Policy, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.Policy{}, err
	}
	if p, ok := s.policies[ns]; ok {
		return p, nil
	}
	if s.defaults == nil {
		return claimcheck.Policy{}, fmt.Errorf("%w: namespace %q is not configured (defaults are off)", claimcheck.ErrNotFound, ns)
	}
	return *s.defaults, nil
}

// MaybeOffload stores data when it reaches the namespace threshold; see
// the package function MaybeOffload.
func (s *Store) MaybeOffload(ctx context.Context, ns string, data []byte) (claimcheck.Value, error) {
	return claimcheck.MaybeOffload(ctx, s, ns, data)
}

// Resolve returns the bytes of v; see the package function Resolve.
func (s *Store) Resolve(ctx context.Context, v claimcheck.Value) ([]byte, error) {
	return claimcheck.Resolve(ctx, s, v)
}

// cleanupContext is for work that must happen even though the caller's
// context is done (finishing an aborted put releases its quota now rather
// than at its due time).
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// metaErr reports the metadata store's errors as the contract's.
var metaErr = meta.PublicError

// RedactURL drops the password and query of a URL shown in errors and
// logs: a postgres:// DSN may carry a password, a storage URL endpoint
// parameters.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery = ""
	return u.String()
}

// metaSystem is the db.system.name of the metadata store's spans.
func metaSystem(cfg Config) string {
	switch {
	case cfg.MetaStore != nil:
		return ""
	case strings.HasPrefix(cfg.Metadata, "sqlite:"):
		return "sqlite"
	case strings.HasPrefix(cfg.Metadata, "postgres"):
		return "postgresql"
	}
	return ""
}
