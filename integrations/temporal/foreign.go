package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
)

// Temporal's own External Storage drivers (aws.s3driver, gcp.gcsdriver)
// write one object per payload, the serialized Payload protobuf, under a
// key that names its owner and the sha256 of the stored bytes, and put the
// bucket, key and hash in the reference. They never delete. A worker that
// moves to claimcheck still replays histories holding those references, so
// it registers a ForeignDriver under the stock driver's name: the SDK
// hands it the references by that name (both reference forms, json/protobuf
// and the legacy json/external-storage-reference, are decoded by the SDK
// before a driver sees the claim data). ADR 0279.

// The stock drivers' names (and types), as written into history.
const (
	S3DriverName  = "aws.s3driver"
	GCSDriverName = "gcp.gcsdriver"
)

// The stock drivers' claim data fields.
const (
	foreignBucket = "bucket"
	foreignKey    = "key"
	foreignAlgo   = "hash_algorithm"
	foreignHash   = "hash_value"
)

// LabelSource marks a claim adopted from another driver's object: its
// value is SourceID(bucket, key), by which the ForeignDriver finds the
// claim once the object has moved into claimcheck (Adopt).
const LabelSource = "temporal.source_object"

// SourceID names a foreign object in a label: the hex sha256 of
// "bucket/key" (keys may be longer than a label value).
func SourceID(bucket, key string) string {
	h := sha256.Sum256([]byte(bucket + "/" + key))
	return hex.EncodeToString(h[:])
}

// ForeignBucket is one bucket another driver wrote, as claimcheck reads
// it: package foreignbucket adapts claimcheck's blob backends (s3://,
// gs://, azblob://), and a test may use anything else.
type ForeignBucket interface {
	// Read returns the object's bytes; an error wrapping fs.ErrNotExist
	// when there is none.
	Read(ctx context.Context, key string) ([]byte, error)
	// List returns up to pageSize keys starting with prefix after token,
	// and the next token ("" when done).
	List(ctx context.Context, prefix, token string, pageSize int) (keys []string, next string, err error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

// ForeignOptions configure a ForeignDriver.
type ForeignOptions struct {
	// Name is the driver name the references carry (S3DriverName or
	// GCSDriverName, or the DriverName the stock driver was given).
	Name string
	// Buckets maps each bucket name the references may name to its
	// reader. A reference naming another bucket is refused: history is
	// input, and a worker reads only where it was told to.
	Buckets map[string]ForeignBucket
	// Namespace is the claimcheck namespace Adopt moved the objects into
	// (default DefaultNamespace); the driver looks there first.
	Namespace string
}

// ForeignDriver retrieves the references of a stock driver: from the
// claim Adopt made of the object when there is one, else from the object
// itself, verifying the sha256 either way. It never stores: the selector
// of Driver.ExternalStorage sends new payloads to claimcheck.
type ForeignDriver struct {
	c    claimcheck.Claims
	opts ForeignOptions
}

var _ converter.StorageDriver = (*ForeignDriver)(nil)

// NewForeignDriver returns a driver reading the references named
// opts.Name. c is where adopted objects live (nil: none are looked for).
func NewForeignDriver(c claimcheck.Claims, opts ForeignOptions) (*ForeignDriver, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("%w: foreign driver: Name is required (%q or %q)", claimcheck.ErrInvalidArgument, S3DriverName, GCSDriverName)
	}
	if opts.Name == DriverType {
		return nil, fmt.Errorf("%w: foreign driver: Name %q is claimcheck's own driver", claimcheck.ErrInvalidArgument, opts.Name)
	}
	if len(opts.Buckets) == 0 {
		return nil, fmt.Errorf("%w: foreign driver %s: Buckets is empty", claimcheck.ErrInvalidArgument, opts.Name)
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	return &ForeignDriver{c: c, opts: opts}, nil
}

// Name is the stock driver's name, so the SDK routes its references here.
func (f *ForeignDriver) Name() string { return f.opts.Name }

// Type says which driver reads them.
func (f *ForeignDriver) Type() string { return DriverType + "-foreign" }

// Store refuses: a ForeignDriver only reads what another driver wrote.
func (f *ForeignDriver) Store(converter.StorageDriverStoreContext, []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	return nil, fmt.Errorf("%w: driver %s only retrieves: select claimcheck's driver for new payloads (Driver.ExternalStorage)", claimcheck.ErrInvalidArgument, f.opts.Name)
}

// Retrieve returns the payloads of the references, in order.
func (f *ForeignDriver) Retrieve(ctx converter.StorageDriverRetrieveContext, claims []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	cctx := ctxOr(ctx.Context)
	out := make([]*commonpb.Payload, len(claims))
	err := each(len(claims), func(i int) error {
		return ctx.GetLimiter().Permit(cctx, claims[i], func() error {
			p, err := f.retrieve(cctx, claims[i].ClaimData)
			if err != nil {
				return fmt.Errorf("claimcheck temporal driver %s: claim %d: %w", f.opts.Name, i, err)
			}
			out[i] = p
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForeignRef is a stock driver's reference, checked.
type ForeignRef struct {
	Bucket, Key string
	Hash        string // hex sha256 of the stored bytes
}

// parseForeignRef reads the claim data, naming the field that is wrong.
func parseForeignRef(cd map[string]string) (ForeignRef, error) {
	var r ForeignRef
	for _, f := range []struct {
		name string
		to   *string
	}{{foreignBucket, &r.Bucket}, {foreignKey, &r.Key}, {foreignHash, &r.Hash}} {
		v, ok := cd[f.name]
		if !ok || v == "" {
			return r, fmt.Errorf("%w: claim data has no %q", claimcheck.ErrInvalidArgument, f.name)
		}
		*f.to = v
	}
	if a := cd[foreignAlgo]; a != "sha256" {
		return r, fmt.Errorf("%w: claim data %q is %q: only sha256 is known", claimcheck.ErrInvalidArgument, foreignAlgo, a)
	}
	if !isHexSHA256(r.Hash) {
		return r, fmt.Errorf("%w: claim data %q is %q: not a hex sha256", claimcheck.ErrInvalidArgument, foreignHash, r.Hash)
	}
	k, err := ParseForeignKey(r.Key)
	if err != nil {
		return r, err
	}
	if k.Hash != r.Hash {
		return r, fmt.Errorf("%w: claim data %q %s differs from the hash in its %q %s", claimcheck.ErrInvalidArgument, foreignHash, r.Hash, foreignKey, r.Key)
	}
	return r, nil
}

func (f *ForeignDriver) retrieve(ctx context.Context, cd map[string]string) (*commonpb.Payload, error) {
	r, err := parseForeignRef(cd)
	if err != nil {
		return nil, err
	}
	b, ok := f.opts.Buckets[r.Bucket]
	if !ok {
		return nil, fmt.Errorf("%w: claim data %q %q is not one of the driver's buckets", claimcheck.ErrInvalidArgument, foreignBucket, r.Bucket)
	}
	// The adopted claim first; then the object; then the claim again, for
	// an object Adopt moved between the two reads.
	if p, found, err := f.fromClaim(ctx, r); found || err != nil {
		return p, err
	}
	data, err := b.Read(ctx, r.Key)
	if errors.Is(err, fs.ErrNotExist) {
		if p, found, err := f.fromClaim(ctx, r); found || err != nil {
			return p, err
		}
		return nil, fmt.Errorf("bucket %s key %s: %w (and no claim adopted it in %q)", r.Bucket, r.Key, err, f.opts.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s key %s: %w", r.Bucket, r.Key, err)
	}
	return verifiedPayload(r, data)
}

// fromClaim reads the claim Adopt made of r's object, if any.
func (f *ForeignDriver) fromClaim(ctx context.Context, r ForeignRef) (*commonpb.Payload, bool, error) {
	if f.c == nil {
		return nil, false, nil
	}
	ci, ok, err := adoptedClaim(ctx, f.c, f.opts.Namespace, r.Bucket, r.Key)
	if err != nil || !ok {
		return nil, false, err
	}
	if ci.Ref.Digest != "sha256:"+r.Hash {
		return nil, true, fmt.Errorf("%w: claim %s adopted bucket %s key %s with digest %s, the reference says sha256:%s", claimcheck.ErrChecksumMismatch, ci.Ref.ID, r.Bucket, r.Key, ci.Ref.Digest, r.Hash)
	}
	p, err := redeemPayload(ctx, f.c, ci.Ref)
	return p, true, err
}

// adoptedClaim finds the active claim adopted from bucket/key.
func adoptedClaim(ctx context.Context, c claimcheck.Claims, ns, bucket, key string) (claimcheck.ClaimInfo, bool, error) {
	page, err := c.List(ctx, ns, claimcheck.ListOptions{
		Labels: map[string]string{LabelSource: SourceID(bucket, key)}, State: claimcheck.StateActive, Limit: 1})
	if err != nil {
		return claimcheck.ClaimInfo{}, false, fmt.Errorf("look up the claim adopted from bucket %s key %s in %q: %w", bucket, key, ns, err)
	}
	if len(page.Claims) == 0 {
		return claimcheck.ClaimInfo{}, false, nil
	}
	return page.Claims[0], true, nil
}

// verifiedPayload checks data against the reference's hash and parses it;
// bytes that fail are never handed out.
func verifiedPayload(r ForeignRef, data []byte) (*commonpb.Payload, error) {
	if got := sha256Hex(data); got != r.Hash {
		return nil, fmt.Errorf("%w: bucket %s key %s: stored bytes hash to %s, the reference says %s", claimcheck.ErrChecksumMismatch, r.Bucket, r.Key, got, r.Hash)
	}
	var p commonpb.Payload
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("bucket %s key %s: not a serialized Temporal payload: %w", r.Bucket, r.Key, err)
	}
	return &p, nil
}

// ForeignKey is what a stock driver's object key says: the owner (empty
// parts for the fallback form v0/d/sha256/<hex>, and for the shortened
// v0/ns/<ns>/d/sha256/<hex> of a key too long for GCS) and the hash.
type ForeignKey struct {
	Namespace                string // Temporal namespace
	WorkflowType, WorkflowID string // a workflow's payload
	ActivityType, ActivityID string // a standalone activity's payload
	RunID                    string
	Hash                     string // hex sha256 of the stored bytes
}

// Workflow reports whether the key names a workflow, which the keeper can
// ask Temporal about. The run may be empty (a start input, stored before
// Temporal chose the run): the keeper then keeps the claim by the
// workflow's latest run, which closes no earlier.
func (k ForeignKey) Workflow() bool { return k.Namespace != "" && k.WorkflowID != "" }

// ParseForeignKey reads a key the stock drivers write:
//
//	v0/ns/<ns>/wt/<type>/wi/<id>/ri/<run>/d/sha256/<hex>
//	v0/ns/<ns>/at/<type>/ai/<id>/ri/<run>/d/sha256/<hex>
//	v0/ns/<ns>/d/sha256/<hex>
//	v0/d/sha256/<hex>
//
// Segments are percent-encoded ("null" for an empty one).
func ParseForeignKey(key string) (ForeignKey, error) {
	bad := func(why string) (ForeignKey, error) {
		return ForeignKey{}, fmt.Errorf("%w: key %q: %s", claimcheck.ErrInvalidArgument, key, why)
	}
	seg := strings.Split(key, "/")
	if len(seg) < 4 || seg[0] != "v0" {
		return bad("not a v0/... key of Temporal's storage drivers")
	}
	n := len(seg)
	if seg[n-3] != "d" || seg[n-2] != "sha256" || !isHexSHA256(seg[n-1]) {
		return bad("does not end in /d/sha256/<64 hex digits>")
	}
	k := ForeignKey{Hash: seg[n-1]}
	owner := seg[1 : n-3]
	if len(owner)%2 != 0 {
		return bad("owner segments do not come in name/value pairs")
	}
	for i := 0; i < len(owner); i += 2 {
		v, err := url.PathUnescape(owner[i+1])
		if err != nil {
			return bad(fmt.Sprintf("segment %q: %v", owner[i+1], err))
		}
		if v == "null" {
			v = ""
		}
		var to *string
		switch owner[i] {
		case "ns":
			to = &k.Namespace
		case "wt":
			to = &k.WorkflowType
		case "wi":
			to = &k.WorkflowID
		case "at":
			to = &k.ActivityType
		case "ai":
			to = &k.ActivityID
		case "ri":
			to = &k.RunID
		default:
			return bad(fmt.Sprintf("unknown segment %q", owner[i]))
		}
		*to = v
	}
	return k, nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
