package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
)

// DriverType is the Type of every Driver, and the default Name.
const DriverType = "claimcheck"

// PayloadContentType is the content type of claims holding a serialized
// Temporal payload (the Payload protobuf: metadata and data).
const PayloadContentType = "application/x-temporal-payload"

// claimDataRef is the key of the reference in a StorageDriverClaim.
const claimDataRef = "ref"

// Driver is a Temporal External Storage driver backed by claimcheck. The
// SDK hands it payloads whose serialized size reaches the threshold; it
// stores each as a claim and returns the claim's reference, which the SDK
// writes into history instead of the payload. Reading history (execution
// and every replay) redeems the reference again, so claims are never
// released: they end at their namespace's max_age.
//
// Driver is both the StorageDriver and the StorageDriverSelector: the
// selector keeps payloads below the target namespace's threshold inline.
// Use ExternalStorage to get the SDK configuration.
type Driver struct {
	c    claimcheck.Claims
	opts Options
	pol  *policies
}

var (
	_ converter.StorageDriver         = (*Driver)(nil)
	_ converter.StorageDriverSelector = (*Driver)(nil)
)

// NewDriver returns a driver storing into c. It reads the policy of
// opts.Namespace and fails when that namespace deletes claims after their
// first read: replay reads every reference again, possibly long after the
// first read, so such a namespace would break workflows on replay.
func NewDriver(ctx context.Context, c claimcheck.Claims, opts Options) (*Driver, error) {
	pol, err := newPolicies(ctx, c, &opts)
	if err != nil {
		return nil, fmt.Errorf("claimcheck temporal driver: %w", err)
	}
	return &Driver{c: c, opts: opts, pol: pol}, nil
}

// ExternalStorage returns the client (and worker) configuration that
// offloads through d. The SDK's own size threshold is set to its minimum so
// that d's selector, which knows each namespace's threshold, decides.
// foreign are drivers that only retrieve (NewForeignDriver): the
// references other drivers wrote into histories still being replayed.
func (d *Driver) ExternalStorage(foreign ...converter.StorageDriver) converter.ExternalStorage {
	return converter.ExternalStorage{
		Drivers:              append([]converter.StorageDriver{d}, foreign...),
		DriverSelector:       d,
		PayloadSizeThreshold: 1,
	}
}

// Name is stored in history with every reference; it must not change for
// a deployed driver.
func (d *Driver) Name() string { return DriverType }

// Type identifies the implementation.
func (d *Driver) Type() string { return DriverType }

// targetOf converts the SDK's target description.
func targetOf(t converter.StorageDriverTargetInfo) Target {
	switch t := t.(type) {
	case converter.StorageDriverWorkflowInfo:
		return Target{Namespace: t.Namespace, WorkflowType: t.WorkflowType, WorkflowID: t.WorkflowID, RunID: t.RunID}
	case converter.StorageDriverActivityInfo:
		return Target{Namespace: t.Namespace, ActivityType: t.ActivityType, ActivityID: t.ActivityID, RunID: t.RunID}
	}
	return Target{}
}

// SelectDriver keeps payloads below the target namespace's threshold
// inline (nil driver) and sends the others to d.
func (d *Driver) SelectDriver(ctx converter.StorageDriverSelectContext, p *commonpb.Payload) (converter.StorageDriver, error) {
	ns := namespaceOf(d.opts, targetOf(ctx.Target))
	t, err := d.pol.threshold(ctxOr(ctx.Context), ns)
	if err != nil {
		return nil, err
	}
	if int64(proto.Size(p)) < t {
		return nil, nil
	}
	return d, nil
}

// Store puts each payload in a claim labelled with the workflow or activity
// identity and returns the references, in order.
func (d *Driver) Store(ctx converter.StorageDriverStoreContext, payloads []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	cctx := ctxOr(ctx.Context)
	target := targetOf(ctx.Target)
	ns := namespaceOf(d.opts, target)
	if _, err := d.pol.threshold(cctx, ns); err != nil {
		return nil, err
	}
	labels := target.Labels()
	claims := make([]converter.StorageDriverClaim, len(payloads))
	err := each(len(payloads), func(i int) error {
		return ctx.GetLimiter().Permit(cctx, payloads[i], func() error {
			data, err := proto.Marshal(payloads[i])
			if err != nil {
				return fmt.Errorf("claimcheck temporal driver: serialize payload %d: %w", i, err)
			}
			ref, err := d.c.Put(cctx, ns, bytes.NewReader(data), claimcheck.PutOptions{
				Size: int64(len(data)), Digest: claimcheck.DigestOf(data),
				ContentType: PayloadContentType, Labels: labels,
			})
			if err != nil {
				return fmt.Errorf("claimcheck temporal driver: store payload %d of %d bytes in %q: %w", i, len(data), ns, err)
			}
			claims[i] = converter.StorageDriverClaim{ClaimData: map[string]string{claimDataRef: ref.String()}}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// Retrieve redeems each reference and returns the payloads, in order. The
// bytes are verified against the digest recorded at store time.
func (d *Driver) Retrieve(ctx converter.StorageDriverRetrieveContext, claims []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	cctx := ctxOr(ctx.Context)
	out := make([]*commonpb.Payload, len(claims))
	err := each(len(claims), func(i int) error {
		return ctx.GetLimiter().Permit(cctx, claims[i], func() error {
			s, ok := claims[i].ClaimData[claimDataRef]
			if !ok {
				return fmt.Errorf("claimcheck temporal driver: claim %d: %w: no %q in claim data", i, claimcheck.ErrInvalidArgument, claimDataRef)
			}
			ref, err := claimcheck.ParseRef([]byte(s))
			if err != nil {
				return fmt.Errorf("claimcheck temporal driver: claim %d: %w", i, err)
			}
			p, err := redeemPayload(cctx, d.c, ref)
			if err != nil {
				return fmt.Errorf("claimcheck temporal driver: claim %d: %w", i, err)
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

// redeemPayload reads the verified bytes of ref and parses them as a
// serialized Payload.
func redeemPayload(ctx context.Context, c claimcheck.Claims, ref claimcheck.Ref) (*commonpb.Payload, error) {
	data, err := claimcheck.Resolve(ctx, c, claimcheck.Value{Ref: &ref})
	if err != nil {
		if errors.Is(err, claimcheck.ErrGone) {
			return nil, fmt.Errorf("redeem %s (history outlived the claim: run the keeper (NewKeeper or claimcheck-temporal-keeper), or give the namespace a max_age of at least the Temporal retention plus the longest workflow run): %w", ref.ID, err)
		}
		return nil, fmt.Errorf("redeem %s: %w", ref.ID, err)
	}
	var p commonpb.Payload
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("claim %s: not a serialized Temporal payload: %w", ref.ID, err)
	}
	return &p, nil
}

// each runs fn(0..n-1) concurrently (the SDK's limiter bounds how many
// actually run) and returns the first error.
func each(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
