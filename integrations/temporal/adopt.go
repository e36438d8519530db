package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/claimcheck/claimcheck"
)

// Adoption hands the objects of a stock driver (aws.s3driver,
// gcp.gcsdriver) to claimcheck, so that they end with their workflow run
// instead of living until a bucket lifecycle rule (ADR 0280). For each
// object whose key names a workflow run, Adopt reads the bytes, checks
// them against the sha256 in the key, stores them as a claim labelled with
// the run (the labels the keeper reads, and LabelSource naming the
// object), and then deletes the object: the claim is its one copy, and the
// keeper ends it at run close plus retention. A ForeignDriver finds the
// claim by LabelSource, so histories keep replaying throughout.
//
// Invariants: a dry run reads and lists only (no put, no delete); an
// object whose bytes fail the hash in its key is never adopted nor
// deleted; an object is deleted only after its claim is committed with
// the key's digest (the store verifies it); a second run finds the claim
// by LabelSource and puts nothing twice.

// AdoptOptions configure Adopt.
type AdoptOptions struct {
	// Bucket is the bucket name as the references write it.
	Bucket string
	// Objects reads, lists and deletes that bucket.
	Objects ForeignBucket
	// Namespace is the claimcheck namespace the claims go to (default
	// DefaultNamespace). It must keep claims across reads (NewDriver's
	// rule), and the keeper must keep it.
	Namespace string
	// Prefix narrows the listing (default "v0/", every driver key).
	Prefix string
	// DryRun lists what would be adopted and changes nothing.
	DryRun bool
	// KeepSource leaves the objects in the bucket after adopting them
	// (then the bucket's lifecycle rules still end them, and claimcheck
	// ends only its copy).
	KeepSource bool
	// PageSize of the listing (default 1000).
	PageSize int
	// Each, when set, is told every object's outcome as it is decided.
	Each func(AdoptedObject)
}

// AdoptOutcome is what Adopt did (or, in a dry run, would do) with one object.
type AdoptOutcome string

// The outcomes.
const (
	AdoptAdopted AdoptOutcome = "adopted"         // stored as a claim (dry run: would be)
	AdoptAlready AdoptOutcome = "already-adopted" // a claim has it from an earlier run
	AdoptUnowned AdoptOutcome = "unowned"         // the key names no workflow run (or names too long for a label): left where it is
	AdoptForeign AdoptOutcome = "not-a-driver-key"
	AdoptRefused AdoptOutcome = "refused" // bytes fail the key's hash, or the put failed
	AdoptMissing AdoptOutcome = "missing" // listed, then gone before it was read
)

// AdoptedObject is one object's outcome.
type AdoptedObject struct {
	Key           string
	Outcome       AdoptOutcome
	Claim         string // the claim's id (adopted, already-adopted)
	SourceDeleted bool
	Err           error // why refused
}

// AdoptReport counts the outcomes.
type AdoptReport struct {
	DryRun   bool
	Listed   int
	Counts   map[AdoptOutcome]int
	Deleted  int // source objects deleted
	Refusals []error
}

// Adopt runs one adoption over the bucket (see the top of this file). The
// error is a failure to list or a refused namespace; refused objects are
// in the report, each error naming the key.
func Adopt(ctx context.Context, c claimcheck.Claims, o AdoptOptions) (AdoptReport, error) {
	rep := AdoptReport{DryRun: o.DryRun, Counts: map[AdoptOutcome]int{}}
	if c == nil || o.Objects == nil || o.Bucket == "" {
		return rep, fmt.Errorf("%w: adopt: claims, Objects and Bucket are required", claimcheck.ErrInvalidArgument)
	}
	opts := Options{Namespace: o.Namespace}
	if _, err := newPolicies(ctx, c, &opts); err != nil {
		return rep, fmt.Errorf("adopt: %w", err)
	}
	o.Namespace = opts.Namespace
	if o.Prefix == "" {
		o.Prefix = "v0/"
	}
	if o.PageSize <= 0 {
		o.PageSize = 1000
	}
	token := ""
	for {
		keys, next, err := o.Objects.List(ctx, o.Prefix, token, o.PageSize)
		if err != nil {
			return rep, fmt.Errorf("adopt: list bucket %s prefix %q: %w", o.Bucket, o.Prefix, err)
		}
		for _, key := range keys {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			obj := adoptOne(ctx, c, o, key)
			rep.Listed++
			rep.Counts[obj.Outcome]++
			if obj.SourceDeleted {
				rep.Deleted++
			}
			if obj.Err != nil {
				rep.Refusals = append(rep.Refusals, obj.Err)
			}
			if o.Each != nil {
				o.Each(obj)
			}
		}
		if next == "" {
			return rep, nil
		}
		token = next
	}
}

// adoptOne decides for one key.
func adoptOne(ctx context.Context, c claimcheck.Claims, o AdoptOptions, key string) AdoptedObject {
	obj := AdoptedObject{Key: key}
	k, err := ParseForeignKey(key)
	if err != nil {
		obj.Outcome = AdoptForeign
		return obj
	}
	if !k.Workflow() || !labelable(k) {
		// A standalone activity's, or no owner: no run to end with. Or
		// a name longer than a label holds: the keeper, reading the cut
		// label, would not find the run and would let the claim expire
		// while its history still needs it.
		obj.Outcome = AdoptUnowned
		return obj
	}
	ci, found, err := adoptedClaim(ctx, c, o.Namespace, o.Bucket, key)
	if err != nil {
		return refused(obj, err)
	}
	if found {
		obj.Outcome, obj.Claim = AdoptAlready, ci.Ref.ID
		if ci.Ref.Digest != "sha256:"+k.Hash {
			return refused(obj, fmt.Errorf("bucket %s key %s: claim %s adopted it with digest %s, the key says sha256:%s", o.Bucket, key, ci.Ref.ID, ci.Ref.Digest, k.Hash))
		}
		// An earlier run stopped between the put and the delete.
		return deleteSource(ctx, o, obj)
	}
	data, err := o.Objects.Read(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		obj.Outcome = AdoptMissing
		return obj
	}
	if err != nil {
		return refused(obj, fmt.Errorf("bucket %s key %s: read: %w", o.Bucket, key, err))
	}
	if got := sha256Hex(data); got != k.Hash {
		return refused(obj, fmt.Errorf("%w: bucket %s key %s: stored bytes hash to %s, the key says %s: not adopted", claimcheck.ErrChecksumMismatch, o.Bucket, key, got, k.Hash))
	}
	obj.Outcome = AdoptAdopted
	if o.DryRun {
		return obj
	}
	labels := Target{Namespace: k.Namespace, WorkflowType: k.WorkflowType, WorkflowID: k.WorkflowID, RunID: k.RunID}.Labels()
	labels[LabelSource] = SourceID(o.Bucket, key)
	ref, err := c.Put(ctx, o.Namespace, bytes.NewReader(data), claimcheck.PutOptions{
		Size: int64(len(data)), Digest: "sha256:" + k.Hash, ContentType: PayloadContentType, Labels: labels})
	if err != nil {
		return refused(obj, fmt.Errorf("bucket %s key %s: store in %q: %w", o.Bucket, key, o.Namespace, err))
	}
	obj.Claim = ref.ID
	return deleteSource(ctx, o, obj)
}

// labelable reports whether the run's names fit claim labels whole.
func labelable(k ForeignKey) bool {
	for _, v := range []string{k.Namespace, k.WorkflowType, k.WorkflowID, k.RunID} {
		if len(v) > maxLabelValue {
			return false
		}
	}
	return true
}

// deleteSource deletes an adopted object unless told to keep it (or in a
// dry run).
func deleteSource(ctx context.Context, o AdoptOptions, obj AdoptedObject) AdoptedObject {
	if o.DryRun || o.KeepSource {
		return obj
	}
	if err := o.Objects.Delete(ctx, obj.Key); err != nil {
		obj.Err = fmt.Errorf("bucket %s key %s: adopted as claim %s, but deleting the object failed (a later run deletes it): %w", o.Bucket, obj.Key, obj.Claim, err)
		return obj
	}
	obj.SourceDeleted = true
	return obj
}

func refused(obj AdoptedObject, err error) AdoptedObject {
	obj.Outcome, obj.Err = AdoptRefused, err
	return obj
}
