package claimcheck

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Built-in policy defaults, used for every field that neither the
// namespace nor the config's defaults section sets.
const (
	DefaultThreshold          Size     = 50 * 1024 // 51,200 bytes: below it MaybeOffload keeps bytes inline
	DefaultMaxSize            Size     = 5 << 30
	DefaultCompression                 = CompressionZstd
	DefaultMaxAge             Duration = Duration(24 * time.Hour)
	DefaultRetentionAfterRead Duration = Duration(5 * time.Minute)
	DefaultGracePeriod        Duration = Duration(time.Hour)
	DefaultURLTTL             Duration = Duration(15 * time.Minute)
	DefaultConfirmWithin      Duration = Duration(time.Hour)

	// MaxInlineBelow caps inline_below: a row of the metadata database
	// is no place for large payloads (ADR 0292).
	MaxInlineBelow Size = 1 << 20
	// MaxMaxSize caps max_size so that sizes fit the reference budget.
	MaxMaxSize Size = 1 << 40
	// MaxNamespaceLen is the longest namespace name; see MaxRefSize.
	MaxNamespaceLen = 24
)

// Compression names a compression algorithm for stored objects.
type Compression string

// The compression settings. Zstd stores a payload as it is when its
// first 64 KiB frame does not shrink (ADR 0165); auto compresses with
// zstd unless a sample of the payload does not shrink by 10% (already
// compressed or random data).
const (
	CompressionZstd Compression = "zstd"
	CompressionGzip Compression = "gzip"
	CompressionNone Compression = "none"
	CompressionAuto Compression = "auto"
)

// Policy is a namespace's rules. In a config file every field is optional:
// an unset field takes the value of the defaults section, then the
// built-in default. Zero is how a field is unset, so the fields tagged
// config:"nonzero" refuse an explicit 0 in a config file (ADR 0080):
// "max_age: 0" would otherwise silently mean 24h. Policy changes apply to new claims only; a claim keeps
// the deadlines it was given.
type Policy struct {
	// Tenant owns the namespace (default DefaultTenant). API keys of
	// other tenants never see its claims.
	Tenant      string      `yaml:"tenant" json:"tenant,omitempty"`
	Threshold   Size        `yaml:"threshold" json:"threshold" config:"nonzero"`
	MaxSize     Size        `yaml:"max_size" json:"max_size" config:"nonzero"`
	Compression Compression `yaml:"compression" json:"compression"`
	Dedup       *bool       `yaml:"dedup" json:"dedup"`
	// DigestFirst lets a put that sends its digest and length skip the
	// upload when the namespace already holds those bytes (default on,
	// with dedup). The early answer tells whoever may put into the
	// namespace that the content exists there; off, every put sends its
	// body and dedup happens, unseen, at commit (ADR 0083).
	DigestFirst *bool        `yaml:"digest_first" json:"digest_first"`
	TTL         TTLPolicy    `yaml:"ttl" json:"ttl"`
	Uploads     UploadPolicy `yaml:"uploads" json:"uploads"`
	Quota       Quota        `yaml:"quota" json:"quota"`
	// Encryption is "aes-256-gcm" to encrypt the namespace's objects at
	// rest, or "none" (the default). It needs the config's master_key.
	// See engine/crypt.go and ADR 0066.
	Encryption string `yaml:"encryption" json:"encryption,omitempty"`
	// InlineBelow keeps the bytes of a put that declares at most this
	// many bytes in the metadata database instead of the object store:
	// one transaction instead of an object write, for small payloads (0,
	// the default: every payload is an object). At most MaxInlineBelow.
	// See engine/inline.go and ADR 0292.
	InlineBelow Size `yaml:"inline_below" json:"inline_below,omitzero"`
}

// TTLPolicy sets a claim's deadlines.
type TTLPolicy struct {
	// MaxAge is the hard deadline: nothing outlives created + max_age.
	MaxAge Duration `yaml:"max_age" json:"max_age" config:"nonzero"`
	// DeleteAfterRead finishes the claim RetentionAfterRead after its
	// first read. Reads inside that window succeed (redelivery).
	DeleteAfterRead *bool `yaml:"delete_after_read" json:"delete_after_read"`
	// RetentionAfterRead is the redelivery window after the first read
	// (with DeleteAfterRead) or after the last release.
	RetentionAfterRead Duration `yaml:"retention_after_read" json:"retention_after_read" config:"nonzero"`
	// GracePeriod is how long an unreferenced blob waits before it is
	// collected; a dedup hit inside it revives the blob.
	GracePeriod Duration `yaml:"grace_period" json:"grace_period" config:"nonzero"`
	// MaxLifetime is the longest any claim may live from its creation,
	// extensions included (Extender, ADR 0101). Unset (0) means max_age:
	// claims cannot be extended. The lifecycle safety net's rule follows
	// it, so a bucket rule by age never expires an extended claim's
	// object.
	MaxLifetime Duration `yaml:"max_lifetime" json:"max_lifetime,omitzero"`

	// maxLifetimeGiven records that a config file set max_lifetime, 0
	// included (MarkMaxLifetimeGiven): a namespace's explicit 0 means "no
	// extensions" even when the defaults allow them (ADR 0080).
	maxLifetimeGiven bool
}

// MarkMaxLifetimeGiven records whether a config file gave max_lifetime,
// 0 included: given, WithDefaults keeps the value as the namespace's own
// instead of taking the base's (ADR 0080). The config loader
// (internal/config) calls it for every ttl section it decodes.
func (t *TTLPolicy) MarkMaxLifetimeGiven(given bool) { t.maxLifetimeGiven = given }

// Lifetime is the longest a claim of this policy may live from its
// creation: max_lifetime when set, else max_age.
func (t TTLPolicy) Lifetime() time.Duration {
	return max(t.MaxAge.D(), t.MaxLifetime.D())
}

// UploadPolicy governs direct (presigned) uploads.
type UploadPolicy struct {
	URLTTL        Duration `yaml:"url_ttl" json:"url_ttl" config:"nonzero"`               // lifetime of a presigned URL
	ConfirmWithin Duration `yaml:"confirm_within" json:"confirm_within" config:"nonzero"` // unconfirmed uploads are reaped after this
}

// Quota limits a namespace. Zero means unlimited.
//
// In a namespace's policy, a field the config file leaves out takes the
// defaults' value (WithDefaults); one it gives is the namespace's own, so
// an explicit 0 is unlimited even when the defaults set a quota (ADR 0080:
// the quota fields keep 0 as "unlimited"). A Quota built in Go has no
// field given: its zeros take the defaults' values.
type Quota struct {
	Bytes  Size  `yaml:"bytes" json:"bytes"`
	Claims int64 `yaml:"claims" json:"claims"`

	// given records which fields a config file set (MarkGiven).
	given struct{ bytes, claims bool }
}

// MarkGiven records which fields a config file gave, 0 included: a
// given field is the namespace's own, which WithDefaults keeps. The
// config loader (internal/config) calls it for every quota it decodes.
func (q *Quota) MarkGiven(bytes, claims bool) {
	q.given.bytes, q.given.claims = bytes, claims
}

// DedupEnabled reports the effective dedup setting (default on).
func (p Policy) DedupEnabled() bool { return p.Dedup == nil || *p.Dedup }

// DigestFirstEnabled reports whether a put with a digest may be answered
// from an existing blob before its body is read: dedup on and digest_first
// not switched off.
func (p Policy) DigestFirstEnabled() bool {
	return p.DedupEnabled() && (p.DigestFirst == nil || *p.DigestFirst)
}

// DeletesAfterRead reports the effective delete_after_read setting
// (default off).
func (p Policy) DeletesAfterRead() bool {
	return p.TTL.DeleteAfterRead != nil && *p.TTL.DeleteAfterRead
}

// BuiltinPolicy returns the built-in defaults.
func BuiltinPolicy() Policy {
	no := false
	yes := true
	return Policy{
		Tenant:      DefaultTenant,
		Threshold:   DefaultThreshold,
		MaxSize:     DefaultMaxSize,
		Compression: DefaultCompression,
		Dedup:       &yes,
		DigestFirst: &yes,
		TTL: TTLPolicy{
			MaxAge:             DefaultMaxAge,
			DeleteAfterRead:    &no,
			RetentionAfterRead: DefaultRetentionAfterRead,
			GracePeriod:        DefaultGracePeriod,
		},
		Uploads:    UploadPolicy{URLTTL: DefaultURLTTL, ConfirmWithin: DefaultConfirmWithin},
		Encryption: EncryptionNone,
	}
}

// WithDefaults returns p with every unset field taken from base.
func (p Policy) WithDefaults(base Policy) Policy {
	pick := func(v, d Size) Size {
		if v == 0 {
			return d
		}
		return v
	}
	dur := func(v, d Duration) Duration {
		if v == 0 {
			return d
		}
		return v
	}
	if p.Tenant == "" {
		p.Tenant = base.Tenant
	}
	p.Threshold = pick(p.Threshold, base.Threshold)
	p.MaxSize = pick(p.MaxSize, base.MaxSize)
	if p.Compression == "" {
		p.Compression = base.Compression
	}
	if p.Dedup == nil {
		p.Dedup = base.Dedup
	}
	if p.DigestFirst == nil {
		p.DigestFirst = base.DigestFirst
	}
	p.TTL.MaxAge = dur(p.TTL.MaxAge, base.TTL.MaxAge)
	if p.TTL.DeleteAfterRead == nil {
		p.TTL.DeleteAfterRead = base.TTL.DeleteAfterRead
	}
	p.TTL.RetentionAfterRead = dur(p.TTL.RetentionAfterRead, base.TTL.RetentionAfterRead)
	p.TTL.GracePeriod = dur(p.TTL.GracePeriod, base.TTL.GracePeriod)
	if !p.TTL.maxLifetimeGiven {
		p.TTL.MaxLifetime = dur(p.TTL.MaxLifetime, base.TTL.MaxLifetime)
	}
	p.TTL.maxLifetimeGiven = false // settled
	p.Uploads.URLTTL = dur(p.Uploads.URLTTL, base.Uploads.URLTTL)
	p.Uploads.ConfirmWithin = dur(p.Uploads.ConfirmWithin, base.Uploads.ConfirmWithin)
	// The result's quota is a plain value: what was given is settled.
	q := Quota{Bytes: p.Quota.Bytes, Claims: p.Quota.Claims}
	if !p.Quota.given.bytes {
		q.Bytes = pick(q.Bytes, base.Quota.Bytes)
	}
	if !p.Quota.given.claims && q.Claims == 0 {
		q.Claims = base.Quota.Claims
	}
	p.Quota = q
	if p.Encryption == "" {
		p.Encryption = base.Encryption
	}
	p.InlineBelow = pick(p.InlineBelow, base.InlineBelow)
	return p
}

// Encrypted reports whether the namespace encrypts its objects at rest.
func (p Policy) Encrypted() bool { return p.Encryption == EncryptionAES256GCM }

// Validate checks a complete policy (after WithDefaults). The error names
// the field and the value.
func (p Policy) Validate() error {
	if err := ValidateTenant(p.Tenant); err != nil {
		return err
	}
	switch p.Encryption {
	case "", EncryptionNone, EncryptionAES256GCM:
	default:
		return fieldErr("encryption", strconv.Quote(p.Encryption), "want aes-256-gcm or none")
	}
	if p.Threshold < 0 {
		return fieldErr("threshold", p.Threshold.String(), "must not be negative")
	}
	if p.MaxSize <= 0 {
		return fieldErr("max_size", p.MaxSize.String(), "must be positive")
	}
	if p.MaxSize > MaxMaxSize {
		return fieldErr("max_size", p.MaxSize.String(), "at most "+MaxMaxSize.String())
	}
	if p.Threshold > p.MaxSize {
		return fieldErr("threshold", p.Threshold.String(), "must not be larger than max_size "+p.MaxSize.String())
	}
	switch p.Compression {
	case CompressionZstd, CompressionGzip, CompressionNone, CompressionAuto:
	default:
		return fieldErr("compression", strconv.Quote(string(p.Compression)), "want zstd, gzip, none or auto")
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"ttl.max_age", p.TTL.MaxAge},
		{"ttl.retention_after_read", p.TTL.RetentionAfterRead},
		{"ttl.grace_period", p.TTL.GracePeriod},
		{"uploads.url_ttl", p.Uploads.URLTTL},
		{"uploads.confirm_within", p.Uploads.ConfirmWithin},
	} {
		if d.v <= 0 {
			return fieldErr(d.name, d.v.String(), "must be positive")
		}
	}
	if p.TTL.RetentionAfterRead > p.TTL.MaxAge {
		return fieldErr("ttl.retention_after_read", p.TTL.RetentionAfterRead.String(), "must not be longer than ttl.max_age "+p.TTL.MaxAge.String())
	}
	if p.TTL.MaxLifetime < 0 {
		return fieldErr("ttl.max_lifetime", p.TTL.MaxLifetime.String(), "must not be negative")
	}
	if p.TTL.MaxLifetime != 0 && p.TTL.MaxLifetime < p.TTL.MaxAge {
		return fieldErr("ttl.max_lifetime", p.TTL.MaxLifetime.String(), "must not be shorter than ttl.max_age "+p.TTL.MaxAge.String())
	}
	if p.Uploads.URLTTL >= p.Uploads.ConfirmWithin {
		return fieldErr("uploads.url_ttl", p.Uploads.URLTTL.String(), "must be shorter than uploads.confirm_within "+p.Uploads.ConfirmWithin.String())
	}
	if p.InlineBelow < 0 || p.InlineBelow > MaxInlineBelow {
		return fieldErr("inline_below", p.InlineBelow.String(), "want 0 (off) to "+MaxInlineBelow.String())
	}
	if p.Quota.Bytes < 0 {
		return fieldErr("quota.bytes", p.Quota.Bytes.String(), "must not be negative")
	}
	if p.Quota.Claims < 0 {
		return fieldErr("quota.claims", strconv.FormatInt(p.Quota.Claims, 10), "must not be negative")
	}
	return nil
}

// validName reports whether s matches ^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$,
// the form of namespace and tenant names; by hand rather than by regular
// expression, since every request checks one or more (ref.go says why,
// policy_test.go holds the two to the same answers).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			continue
		}
		if (c == '-' || c == '_') && i > 0 && i < len(s)-1 {
			continue
		}
		return false
	}
	return true
}

// ValidateNamespace checks a namespace name: 1 to 24 characters of
// lowercase letters, digits, '-' and '_', starting and ending with a letter
// or digit. Names are used as object-key prefixes, so nothing else is
// allowed (no '/', no '.').
func ValidateNamespace(ns string) error {
	if ns == "" {
		return invalidf("namespace: empty name")
	}
	if len(ns) > MaxNamespaceLen {
		return invalidf("namespace %q: longer than %d characters", ns, MaxNamespaceLen)
	}
	if !validName(ns) {
		return invalidf("namespace %q: use lowercase letters, digits, '-' and '_', starting and ending with a letter or digit", ns)
	}
	return nil
}

// Size is a byte count. In YAML and JSON it is a plain integer or a string
// with a unit: "50KiB", "1MiB", "5GiB", "1.5MB".
type Size int64

// ParseSize parses "51200", "50KiB", "1MiB", "5GiB" and the like.
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fieldErr("size", `""`, "empty")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fieldErr("size", strconv.Quote(s), "must not be negative")
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fieldErr("size", strconv.Quote(s), "want a byte count such as 51200, 50KiB or 1GiB")
	}
	if n > math.MaxInt64 {
		return 0, fieldErr("size", strconv.Quote(s), "too large")
	}
	return Size(n), nil
}

// String prints the size with a binary unit (e.g. "50 KiB").
func (s Size) String() string {
	if s < 0 {
		return strconv.FormatInt(int64(s), 10) + " B"
	}
	return humanize.IBytes(uint64(s))
}

// UnmarshalText accepts an integer or a string with a unit (the form a
// config file gives).
func (s *Size) UnmarshalText(b []byte) error { return decodeText(b, ParseSize, s) }

// MarshalText writes the size with a unit (the form a config file
// gives).
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON writes the plain integer.
func (s Size) MarshalJSON() ([]byte, error) { return strconv.AppendInt(nil, int64(s), 10), nil }

// UnmarshalJSON accepts a number or a string with a unit.
func (s *Size) UnmarshalJSON(b []byte) error { return decodeJSON(b, ParseSize, s) }

// Duration is a time span. In YAML and JSON it is Go syntax ("90s", "24h")
// or a plain number of seconds (the form the older TTL configs use).
type Duration time.Duration

// ParseDuration parses "90s", "1h30m" or "5400" (seconds).
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		if secs < 0 || secs > math.MaxInt64/int64(time.Second) {
			return 0, fieldErr("duration", strconv.Quote(s), "out of range")
		}
		return Duration(time.Duration(secs) * time.Second), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fieldErr("duration", strconv.Quote(s), "want Go syntax such as 90s or 24h, or a number of seconds")
	}
	if d < 0 {
		return 0, fieldErr("duration", strconv.Quote(s), "must not be negative")
	}
	return Duration(d), nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalText accepts Go syntax or seconds.
func (d *Duration) UnmarshalText(b []byte) error { return decodeText(b, ParseDuration, d) }

// MarshalText writes Go syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalJSON writes Go syntax.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts Go syntax or seconds.
func (d *Duration) UnmarshalJSON(b []byte) error { return decodeJSON(b, ParseDuration, d) }

// Retention is how long rows that no deadline needs any more are kept
// (events.retention, history.retention): a Duration in the same syntax,
// except that it may be negative, which keeps the rows for ever ("-1s"),
// and zero means the default.
type Retention time.Duration

// ParseRetention parses a Duration that may be negative ("-1s": keep).
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(s)
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		d, err := ParseDuration(rest)
		if err != nil {
			// Name the value as written, minus included.
			return 0, fieldErr("retention", strconv.Quote(s), "want Go syntax such as 720h, a number of seconds, or a negative value to keep for ever")
		}
		return -Retention(d), nil
	}
	d, err := ParseDuration(s)
	return Retention(d), err
}

// D returns the value as a time.Duration.
func (r Retention) D() time.Duration { return time.Duration(r) }

// Effective is the retention in force: def when unset, zero (keep for
// ever) when negative.
func (r Retention) Effective(def time.Duration) time.Duration {
	switch {
	case r == 0:
		return def
	case r < 0:
		return 0
	}
	return r.D()
}

func (r Retention) String() string { return time.Duration(r).String() }

// UnmarshalText accepts Go syntax or seconds, with an optional minus.
func (r *Retention) UnmarshalText(b []byte) error { return decodeText(b, ParseRetention, r) }

// MarshalText writes Go syntax.
func (r Retention) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// MarshalJSON writes Go syntax.
func (r Retention) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON accepts Go syntax or seconds, with an optional minus.
func (r *Retention) UnmarshalJSON(b []byte) error { return decodeJSON(b, ParseRetention, r) }

// decodeText parses text into *dst. A *FieldError keeps its type (the
// config loader puts the key's path in front of it).
func decodeText[T any](b []byte, parse func(string) (T, error), dst *T) error {
	v, err := parse(string(b))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// decodeJSON parses a JSON string, or a bare value such as a number,
// into *dst.
func decodeJSON[T any](b []byte, parse func(string) (T, error), dst *T) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		str = string(b)
	}
	v, err := parse(str)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
