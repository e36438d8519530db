package engine

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// DefaultDataDir is where the embedded defaults keep their files.
const DefaultDataDir = "./data"

// DefaultMetadataTimeout is Config.MetadataTimeout's default: long
// enough for the slowest page of the background jobs on a loaded
// database, short enough that a client's retry, not its own timeout,
// is what answers a database that stopped answering.
const DefaultMetadataTimeout = 10 * time.Second

// DefaultStorageTimeout is Config.StorageTimeout's default: far above a
// request to a storage that answers (a part of a multipart upload on a
// slow link included), short enough that a client's retry, not its own
// timeout, is what answers a storage that stopped answering.
const DefaultStorageTimeout = 30 * time.Second

// Config configures a Store. The zero value is valid: SQLite metadata and
// file blobs under ./data, and every namespace on the built-in policy.
// In a YAML file (docs/CONFIGURATION.md lists every key) the fields are:
//
//	data: ./data                        # embedded defaults live here
//	metadata: sqlite:./data/claimcheck.db
//	storage: file:///var/lib/claimcheck/blobs
//	defaults: { threshold: 50KiB, ... } # or "defaults: false" to require configured namespaces
//	tenants:                            # optional; "default" always exists
//	  acme: { quota: { bytes: 1TiB } }
//	namespaces:
//	  video-processing: { tenant: acme, threshold: 1MiB, ttl: { max_age: 24h } }
type Config struct {
	// Data is the directory of the embedded defaults (default ./data).
	Data string `yaml:"data"`
	// Metadata is the metadata database: "sqlite:PATH" (default
	// sqlite:<data>/claimcheck.db) or a postgres:// URL.
	Metadata string `yaml:"metadata"`
	// MetadataTimeout bounds every metadata operation (a request's, and
	// the background jobs'): past it the operation is cancelled and
	// answers unavailable (503 with Retry-After over HTTP) naming this
	// key, rather than waiting on a database that stopped answering
	// (ADR 0286). 0: DefaultMetadataTimeout; negative: unbounded.
	MetadataTimeout time.Duration `yaml:"metadata_timeout"`
	// Storage is the blob storage URL: file:///DIR (default
	// <data>/blobs), mem://, or s3://BUCKET?endpoint=…&region=….
	Storage string `yaml:"storage"`
	// StorageShared lets this store start on storage whose owner marker
	// names another store (a different metadata store): sharing on
	// purpose. It leaves a marker of its own beside the owner's, and
	// while one is there no store's backstop collects debris (each one's
	// objects look like debris to the other); the lifecycle set-up changes
	// only this store's rules, as always. Without it such a start fails,
	// naming both stores (internal/bucketsetup/owner.go, ADR 0255).
	StorageShared bool `yaml:"storage_shared"`
	// StorageTimeout bounds every storage call by its progress: a call
	// that makes none for this long (no answer to a request, no bytes of
	// a stream taken or given) is cancelled and answers unavailable (503
	// with Retry-After over HTTP) naming this key, rather than waiting
	// on a storage that stopped answering; a large payload that keeps
	// moving on a slow link is never cut (blob.WithTimeout, ADR 0289).
	// 0: DefaultStorageTimeout; negative: unbounded.
	StorageTimeout time.Duration `yaml:"storage_timeout"`
	// Defaults is the policy of namespaces the config does not name, and
	// the base every named namespace inherits unset fields from.
	Defaults Defaults `yaml:"defaults"`
	// Namespaces are the configured namespaces by name.
	Namespaces map[string]claimcheck.Policy `yaml:"namespaces"`
	// Tenants are the declared tenants by name. DefaultTenant exists
	// without being declared; any other tenant a namespace names must be
	// declared here, so a typo cannot create a tenant of its own.
	Tenants map[string]claimcheck.TenantPolicy `yaml:"tenants"`
	// Sweeper bounds the background sweeper.
	Sweeper sweep.Config `yaml:"sweeper"`
	// Events configures the audit trail (audit.go).
	Events EventsConfig `yaml:"events"`
	// Subscriptions configures the delivery of events to receivers over
	// HTTP and the operator's own targets (ADR 0240).
	Subscriptions dispatch.Config `yaml:"subscriptions"`
	// TenantLimits bounds the objects each tenant makes by name
	// (tenantlimits.go, ADR 0270).
	TenantLimits TenantLimits `yaml:"tenant_limits"`
	// ConfigFile is the path of the config file the server was started
	// with, named in the answer to a tenant that tries to change a
	// subscription of that file ("": not started from a file).
	ConfigFile string `yaml:"-"`
	// History is how long finished claims and collected blobs keep their
	// rows (history.go, ADR 0077).
	History HistoryConfig `yaml:"history"`
	// Lifecycle is what the store does with the bucket's lifecycle rules
	// at start on storage that has them (S3, GCS; Azure with the URL's
	// account_resource_id, ADR 0230): "manage" (default) creates
	// and repairs them, "check" only reports drift, "off" ignores them.
	// See internal/bucketsetup and ADR 0020.
	Lifecycle string `yaml:"lifecycle"`
	// BucketCORS is what the store does at start with the CORS rules of a
	// bucket browsers PUT direct uploads to (S3, GCS; Azure: the storage
	// account's rules): "check" (default) says
	// which of BrowserOrigins no rule covers, "manage" writes claimcheck's
	// rule for them, "off" ignores them. See internal/bucketsetup and ADR 0086.
	BucketCORS string `yaml:"bucket_cors"`
	// BrowserOrigins are the web origins whose pages use the server
	// (serve sets them from http.cors.allowed_origins): the ones the
	// bucket's CORS rules must cover.
	BrowserOrigins []string `yaml:"-"`
	// MasterKey wraps the data keys of encrypted namespaces: base64 of 32
	// random bytes (CLAIMCHECK_MASTER_KEY in the environment keeps it out
	// of the file). Required when any namespace has encryption:
	// aes-256-gcm. See crypt.go and ADR 0066.
	MasterKey string `yaml:"master_key"`
	// PreviousMasterKeys are master keys that wrapped data keys before
	// MasterKey replaced them: they unwrap the data keys they made, and
	// never wrap new ones. Keep a key here until RewrapDataKeys (`claimcheck
	// rewrap-keys`) has moved every data key to MasterKey. In the file a
	// list; CLAIMCHECK_PREVIOUS_MASTER_KEYS takes them comma-separated.
	// See crypt.go and ADR 0075.
	PreviousMasterKeys MasterKeys `yaml:"previous_master_keys"`

	// Clock is the time source (default the wall clock). Tests pass a
	// *clock.Fake.
	Clock clock.Clock `yaml:"-"`
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
	// Registerer receives the store's metrics (default: a private
	// registry, i.e. not exported). Never the global registry implicitly.
	Registerer prometheus.Registerer `yaml:"-"`
	// Tracing is the `tracing:` block (ADR 0250): how a process that
	// runs the store exports traces (internal/tracing.Setup reads it),
	// and which namespaces' labels spans may carry (RecordLabels), which
	// the store reads itself.
	Tracing tracing.Config `yaml:"tracing"`
	// TracerProvider receives the store's spans: an engine span per
	// operation, with a span per metadata and blob call under it, and a
	// trace of its own per background pass. Nil: no tracing, and no
	// wrapper around the stores.
	TracerProvider trace.TracerProvider `yaml:"-"`
	// MetaStore and BlobStore, when set, are used instead of opening
	// Metadata and Storage (tests wrap them to inject faults or count
	// requests). The Store does not close them.
	MetaStore meta.Store `yaml:"-"`
	BlobStore blob.Store `yaml:"-"`
}

// Defaults is the config's defaults section: a policy, or switched off
// ("defaults: false") so that only configured namespaces exist.
type Defaults struct {
	Disabled bool
	Policy   claimcheck.Policy
}

// ConfigShape tells the strict config loader (internal/config) what a
// defaults node must look like: a mapping is a policy, checked key by key
// like a namespace's; anything else is UnmarshalYAML's to judge. Without
// it the loader could not look inside, since UnmarshalYAML decodes the
// policy itself.
func (d *Defaults) ConfigShape(n *yaml.Node) any {
	if n.Kind == yaml.MappingNode {
		return claimcheck.Policy{}
	}
	return nil
}

// UnmarshalYAML accepts a policy mapping or a boolean.
func (d *Defaults) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var on bool
		if err := n.Decode(&on); err != nil {
			return fmt.Errorf("line %d: want a policy or true/false, got %q", n.Line, n.Value)
		}
		*d = Defaults{Disabled: !on}
		return nil
	}
	d.Disabled = false
	// n.Decode would decode with a fresh, lenient decoder: a typo under
	// defaults: was silently dropped while the same typo under a
	// namespace was refused. Re-decode strictly, whoever decodes Config.
	var buf bytes.Buffer
	if err := yaml.NewEncoder(&buf).Encode(n); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	var p claimcheck.Policy
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("line %d: defaults: %w", n.Line, err)
	}
	d.Policy = p
	return nil
}

// MarshalYAML writes false for disabled defaults, else the policy.
func (d Defaults) MarshalYAML() (any, error) {
	if d.Disabled {
		return false, nil
	}
	return d.Policy, nil
}

// MasterKeys is a list of master keys (base64 of 32 bytes each). In YAML
// it is a sequence, or one string of keys separated by commas (base64
// never holds a comma), which is the form an environment variable gives.
type MasterKeys []string

// UnmarshalYAML accepts a sequence of strings or a comma-separated string.
func (m *MasterKeys) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*m = nil
		if n.Tag == "!!null" {
			return nil
		}
		for _, k := range strings.Split(n.Value, ",") {
			if k = strings.TrimSpace(k); k != "" {
				*m = append(*m, k)
			}
		}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return fmt.Errorf("line %d: previous_master_keys: want a list of base64 keys or one comma-separated string", n.Line)
	}
	*m = list
	return nil
}

// WithDefaults fills the unset locations from Data.
func (c Config) WithDefaults() Config {
	if c.Data == "" {
		c.Data = DefaultDataDir
	}
	if c.Metadata == "" {
		c.Metadata = "sqlite:" + filepath.Join(c.Data, "claimcheck.db")
	}
	if c.Storage == "" {
		dir, err := filepath.Abs(filepath.Join(c.Data, "blobs"))
		if err != nil {
			dir = filepath.Join(c.Data, "blobs")
		}
		c.Storage = "file://" + filepath.ToSlash(dir)
	}
	if c.MetadataTimeout == 0 {
		c.MetadataTimeout = DefaultMetadataTimeout
	}
	if c.StorageTimeout == 0 {
		c.StorageTimeout = DefaultStorageTimeout
	}
	if c.Lifecycle == "" {
		c.Lifecycle = LifecycleManage
	}
	if c.BucketCORS == "" {
		c.BucketCORS = BucketCORSCheck
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Policies resolves and validates every namespace policy. It returns the
// complete policy of each configured namespace and the defaults policy
// (nil when defaults are disabled). Errors name the namespace and field.
func (c Config) Policies() (map[string]claimcheck.Policy, *claimcheck.Policy, error) {
	base := c.Defaults.Policy.WithDefaults(claimcheck.BuiltinPolicy())
	if err := base.Validate(); err != nil {
		return nil, nil, under("defaults", err)
	}
	names := make([]string, 0, len(c.Namespaces))
	for name := range c.Namespaces {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]claimcheck.Policy, len(names))
	for _, name := range names {
		if err := claimcheck.ValidateNamespace(name); err != nil {
			return nil, nil, fmt.Errorf("namespaces: %w", err)
		}
		p := c.Namespaces[name].WithDefaults(base)
		if err := p.Validate(); err != nil {
			return nil, nil, under("namespaces."+name, err)
		}
		if !c.HasTenant(p.Tenant) {
			return nil, nil, invalidf("namespaces.%s: tenant %q is not declared in the tenants section", name, p.Tenant)
		}
		out[name] = p
	}
	if !c.HasTenant(base.Tenant) {
		return nil, nil, invalidf("defaults: tenant %q is not declared in the tenants section", base.Tenant)
	}
	if c.Defaults.Disabled {
		if len(out) == 0 {
			return nil, nil, invalidf("defaults are off and no namespace is configured: add a namespaces section or remove \"defaults: false\"")
		}
		return out, nil, nil
	}
	return out, &base, nil
}

// HasTenant reports whether tenant exists: DefaultTenant always does,
// others when the tenants section declares them.
func (c Config) HasTenant(tenant string) bool {
	if tenant == claimcheck.DefaultTenant {
		return true
	}
	_, ok := c.Tenants[tenant]
	return ok
}

// Validate checks the whole config; Open calls it.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if _, _, err := c.Policies(); err != nil {
		return err
	}
	tenants := make([]string, 0, len(c.Tenants))
	for name := range c.Tenants {
		tenants = append(tenants, name)
	}
	sort.Strings(tenants)
	for _, name := range tenants {
		if err := claimcheck.ValidateTenant(name); err != nil {
			return fmt.Errorf("tenants: %w", err)
		}
		if err := c.Tenants[name].Validate(); err != nil {
			return under("tenants."+name, err)
		}
	}
	if err := c.Sweeper.Validate(); err != nil {
		return invalidKey{err}
	}
	if err := c.Tracing.Validate(); err != nil {
		return invalidKey{err}
	}
	if err := c.validateSubscriptions(); err != nil {
		return err
	}
	if err := checkURLQuery("storage", c.Storage); err != nil {
		return err
	}
	if err := checkURLQuery("metadata", c.Metadata); err != nil {
		return err
	}
	switch c.Lifecycle {
	case LifecycleManage, LifecycleCheck, LifecycleOff:
	default:
		return invalidf("lifecycle %q: want manage, check or off", c.Lifecycle)
	}
	switch c.BucketCORS {
	case BucketCORSManage, BucketCORSCheck, BucketCORSOff:
	default:
		return invalidf("bucket_cors %q: want manage, check or off", c.BucketCORS)
	}
	if err := c.validateEncryption(); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Metadata, "sqlite:") && !strings.HasPrefix(c.Metadata, "postgres://") && !strings.HasPrefix(c.Metadata, "postgresql://") && c.MetaStore == nil {
		return invalidf("metadata %q: want sqlite:PATH or a postgres:// URL", c.Metadata)
	}
	return nil
}

// validateSubscriptions checks the subscriptions section, and that each
// target's tenant exists as a namespace's must: a typo would otherwise
// make a subscription of a tenant nobody has.
func (c Config) validateSubscriptions() error {
	if err := c.Subscriptions.Validate(); err != nil {
		return err
	}
	for i, t := range c.Subscriptions.Targets {
		if t.Tenant != "" && !c.HasTenant(t.Tenant) {
			return &claimcheck.FieldError{Field: fmt.Sprintf("subscriptions.targets[%d].tenant", i), Got: strconv.Quote(t.Tenant),
				Reason: "is not declared in the tenants section"}
		}
	}
	return nil
}

// checkURLQuery refuses a URL whose query does not parse: url.Query
// drops a malformed pair without a word (an endpoint=%zz would vanish and
// the default endpoint be used), so every backend's check of its
// parameters would never see it. The value is not quoted back: it may
// hold credentials.
func checkURLQuery(key, raw string) error {
	_, query, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	if _, err := url.ParseQuery(query); err != nil {
		return &claimcheck.FieldError{Field: key, Reason: "the URL's query does not parse (a parameter with a bad %-escape or a ';'): " + redactedQueryError(err)}
	}
	return nil
}

// redactedQueryError names what url.ParseQuery refused without the
// parameter's value.
func redactedQueryError(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return "invalid escape " + strconv.Quote(string(esc))
	}
	return "a ';' separator"
}

// under puts a config section's path in front of a field error, so that
// it names the key as written ("namespaces.orders.ttl.max_age"); other
// errors get the section as a prefix.
func under(section string, err error) error {
	if fe, ok := errors.AsType[*claimcheck.FieldError](err); ok {
		return fe.Under(section)
	}
	return fmt.Errorf("%s: %w", section, err)
}
