package temporal

import (
	"bytes"
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
)

// RefEncoding is the metadata "encoding" of a reference payload written by
// the Codec. Its data is the claimcheck reference (compact JSON, at most
// claimcheck.MaxRefSize bytes); the claim holds the original payload,
// metadata included, serialized as a Payload protobuf.
const RefEncoding = "binary/claimcheck-ref"

// metadataEncoding is the payload metadata key naming the encoding.
const metadataEncoding = "encoding"

// IsRefPayload reports whether p is a reference payload written by a Codec.
func IsRefPayload(p *commonpb.Payload) bool {
	return string(p.GetMetadata()[metadataEncoding]) == RefEncoding
}

// Codec is a PayloadCodec that replaces payloads at or above the threshold
// with a small reference payload and resolves such references on decode;
// smaller payloads pass through untouched. It is for setups without
// External Storage (older SDKs, other languages through a codec server).
//
// In a chain, put it where the offloaded bytes should be taken: after an
// encryption codec in the list given to converter.NewCodecDataConverter
// (codecs encode last to first) stores ciphertext, before it stores
// plaintext. Encode uses the workflow or activity identity the SDK passes
// through WithSerializationContext for the namespace choice and labels.
type Codec struct {
	c      claimcheck.Claims
	opts   Options
	pol    *policies
	target Target
	ctx    context.Context
}

var (
	_ converter.PayloadCodec                         = (*Codec)(nil)
	_ converter.PayloadCodecWithSerializationContext = (*Codec)(nil)
)

// NewCodec returns a codec storing into c. Like NewDriver, it refuses a
// namespace that deletes claims after their first read (replay decodes
// history again). ctx is used for the policy check and for the store calls
// made by Encode and Decode, which have no context of their own; it should
// live as long as the codec.
func NewCodec(ctx context.Context, c claimcheck.Claims, opts Options) (*Codec, error) {
	pol, err := newPolicies(ctx, c, &opts)
	if err != nil {
		return nil, fmt.Errorf("claimcheck temporal codec: %w", err)
	}
	return &Codec{c: c, opts: opts, pol: pol, ctx: context.WithoutCancel(ctx)}, nil
}

// WithSerializationContext returns a codec that labels the claims it
// makes with the workflow or activity the payloads belong to.
func (c *Codec) WithSerializationContext(sc converter.SerializationContext) converter.PayloadCodec {
	var t Target
	switch sc := sc.(type) {
	case converter.WorkflowSerializationContext:
		t = Target{Namespace: sc.Namespace, WorkflowID: sc.WorkflowID}
	case converter.ActivitySerializationContext:
		t = Target{Namespace: sc.Namespace, WorkflowID: sc.WorkflowID, WorkflowType: sc.WorkflowType, ActivityType: sc.ActivityType, TaskQueue: sc.TaskQueue}
	default:
		return c
	}
	cc := *c
	cc.target = t
	return &cc
}

// Encode offloads every payload whose serialized size reaches the
// threshold. Reference payloads are left as they are, so encoding twice
// stores nothing more.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	ns := namespaceOf(c.opts, c.target)
	threshold, err := c.pol.threshold(c.ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("claimcheck temporal codec: %w", err)
	}
	out := make([]*commonpb.Payload, len(payloads))
	err = each(len(payloads), func(i int) error {
		p := payloads[i]
		if IsRefPayload(p) || int64(proto.Size(p)) < threshold {
			out[i] = p
			return nil
		}
		data, err := proto.Marshal(p)
		if err != nil {
			return fmt.Errorf("claimcheck temporal codec: serialize payload %d: %w", i, err)
		}
		ref, err := c.c.Put(c.ctx, ns, bytes.NewReader(data), claimcheck.PutOptions{
			Size: int64(len(data)), Digest: claimcheck.DigestOf(data),
			ContentType: PayloadContentType, Labels: c.target.Labels(),
		})
		if err != nil {
			return fmt.Errorf("claimcheck temporal codec: store payload %d of %d bytes in %q: %w", i, len(data), ns, err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{metadataEncoding: []byte(RefEncoding)},
			Data:     []byte(ref.String()),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Decode resolves reference payloads to the payloads they stand for and
// passes every other payload through.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	err := each(len(payloads), func(i int) error {
		p := payloads[i]
		if !IsRefPayload(p) {
			out[i] = p
			return nil
		}
		ref, err := claimcheck.ParseRef(p.GetData())
		if err != nil {
			return fmt.Errorf("claimcheck temporal codec: payload %d: %w", i, err)
		}
		orig, err := redeemPayload(c.ctx, c.c, ref)
		if err != nil {
			return fmt.Errorf("claimcheck temporal codec: payload %d: %w", i, err)
		}
		out[i] = orig
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
