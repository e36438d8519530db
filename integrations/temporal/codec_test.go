package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

// A namespace that deletes claims after their first read is refused when
// the driver, the codec or OffloadFields is built: replay reads every
// reference again.
func TestDeleteAfterReadNamespaceRefused(t *testing.T) {
	yes := true
	store := enginetest.Open(t, engine.Config{
		Namespaces: map[string]claimcheck.Policy{"once": {TTL: claimcheck.TTLPolicy{DeleteAfterRead: &yes}}},
	})
	ctx := context.Background()
	opts := cctemporal.Options{Namespace: "once"}
	_, errD := cctemporal.NewDriver(ctx, store, opts)
	_, errC := cctemporal.NewCodec(ctx, store, opts)
	_, errF := cctemporal.OffloadFields(ctx, store, opts, map[string]any{"a": 1})
	for name, err := range map[string]error{"driver": errD, "codec": errC, "fields": errF} {
		if !errors.Is(err, cctemporal.ErrReplayUnsafe) || !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("%s: error %v: want ErrReplayUnsafe and ErrInvalidArgument", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "delete_after_read") || !strings.Contains(err.Error(), "replays") {
			t.Errorf("%s: error %q does not say why", name, err)
		}
	}
	// The default namespace is fine.
	if _, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{}); err != nil {
		t.Fatal(err)
	}
}

// CLAIMCHECK_THRESHOLD_BYTES overrides the namespace's threshold; a
// payload just under it stays inline, one at it is offloaded.
func TestCodecThresholdFromEnvironment(t *testing.T) {
	t.Setenv(cctemporal.ThresholdEnv, "1000")
	store := openStore(t)
	cd, err := cctemporal.NewCodec(context.Background(), store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	under := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}}
	under.Data = make([]byte, 999-proto.Size(under)-3) // 3 bytes of tag and length for Data
	if proto.Size(under) != 999 {
		t.Fatalf("test payload is %d bytes", proto.Size(under))
	}
	at := proto.Clone(under).(*commonpb.Payload)
	at.Data = append(at.Data, 'x')
	out, err := cd.Encode([]*commonpb.Payload{under, at})
	if err != nil {
		t.Fatal(err)
	}
	if cctemporal.IsRefPayload(out[0]) || !cctemporal.IsRefPayload(out[1]) {
		t.Fatalf("999 bytes offloaded: %v, 1000 bytes offloaded: %v; want false, true", cctemporal.IsRefPayload(out[0]), cctemporal.IsRefPayload(out[1]))
	}
	// Encoding a reference again leaves it alone.
	again, err := cd.Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(again[1], out[1]) {
		t.Fatal("re-encoding a reference changed it")
	}

	t.Setenv(cctemporal.ThresholdEnv, "lots")
	if _, err := cctemporal.NewCodec(context.Background(), store, cctemporal.Options{}); err == nil || !strings.Contains(err.Error(), cctemporal.ThresholdEnv) {
		t.Fatalf("bad %s: error %v", cctemporal.ThresholdEnv, err)
	}
}

// The codec composes with other codecs: here zlib compression, in both
// orders, through a data converter; values come back intact and the
// claims labelled with the serialization context.
func TestCodecInChain(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	// zlib shrinks the photos below the default 50 KiB when it runs
	// first; a lower threshold offloads in both orders.
	cd, err := cctemporal.NewCodec(ctx, store, cctemporal.Options{Threshold: 4096})
	if err != nil {
		t.Fatal(err)
	}
	zlib := converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true})
	photos := makePhotos(2000)
	for name, codecs := range map[string][]converter.PayloadCodec{
		"claimcheck-outer": {cd, zlib}, // zlib encodes first: the claim holds compressed bytes
		"claimcheck-inner": {zlib, cd}, // the reference is compressed in history
	} {
		t.Run(name, func(t *testing.T) {
			dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codecs...)
			dc = dc.(converter.DataConverterWithSerializationContext).WithSerializationContext(
				converter.WorkflowSerializationContext{Namespace: "default", WorkflowID: "wf-chain"})
			p, err := dc.ToPayload(photos)
			if err != nil {
				t.Fatal(err)
			}
			if proto.Size(p) >= 1024 {
				t.Fatalf("encoded payload is %d bytes: the codec did not offload", proto.Size(p))
			}
			var got []Photo
			if err := dc.FromPayload(p, &got); err != nil {
				t.Fatal(err)
			}
			if !equalJSON(t, got, photos) {
				t.Fatal("value changed through the chain")
			}
			if name == "claimcheck-outer" {
				var ref claimcheck.Ref
				if err := json.Unmarshal(p.Data, &ref); err != nil {
					t.Fatal(err)
				}
				info, err := store.Stat(ctx, ref)
				if err != nil {
					t.Fatal(err)
				}
				if info.Labels["temporal.workflow_id"] != "wf-chain" {
					t.Fatalf("labels %v: want temporal.workflow_id=wf-chain", info.Labels)
				}
			}
		})
	}
}

// The driver and codec take any Claims: here the HTTP client of a
// `claimcheck serve` handler running in-process.
func TestCodecOverHTTPClient(t *testing.T) {
	store := openStore(t)
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	defer srv.Close()
	cl, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := cctemporal.NewCodec(context.Background(), cl, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(makePhotos(1000))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := cd.Encode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	if !cctemporal.IsRefPayload(enc[0]) {
		t.Fatal("not offloaded")
	}
	dec, err := cd.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dec[0], p) {
		t.Fatal("round trip through the HTTP client changed the payload")
	}
}

// OffloadFields offloads large values at any depth, keeps small ones
// inline, and both directions are idempotent.
func TestOffloadAndMaterializeFields(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	opts := cctemporal.Options{Threshold: 10_000}
	big := strings.Repeat("x", 20_000)
	state := map[string]any{
		"id":     "order-1",
		"photos": makePhotos(200),                                                 // large array of small records: offloaded whole
		"nested": map[string]any{"meta": map[string]any{"n": 1}, "blob": big},     // blob offloaded, nested kept
		"list":   []any{"small", map[string]any{"inner": big}, 12345678901234567}, // element's field offloaded
	}
	off, err := cctemporal.OffloadFields(ctx, store, opts, state)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(off)
	if len(enc) >= 4*claimcheck.MaxRefSize+200 {
		t.Fatalf("offloaded state is %d bytes: %s", len(enc), enc)
	}
	isRef := func(v any) bool { m, ok := v.(map[string]any); return ok && m["type"] == claimcheck.RefType }
	nested := off["nested"].(map[string]any)
	list := off["list"].([]any)
	if !isRef(off["photos"]) || isRef(off["nested"]) || !isRef(nested["blob"]) || isRef(nested["meta"]) ||
		isRef(list[1]) || !isRef(list[1].(map[string]any)["inner"]) || off["id"] != "order-1" {
		t.Fatalf("unexpected offload shape: %s", enc)
	}
	again, err := cctemporal.OffloadFields(ctx, store, opts, off)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, again, off) {
		t.Fatal("offloading twice changed the state")
	}
	back, err := cctemporal.MaterializeFields(ctx, store, again)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, back, state) {
		t.Fatal("materialized state differs from the original")
	}
	twice, err := cctemporal.MaterializeFields(ctx, store, back)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, twice, state) {
		t.Fatal("materializing twice changed the state")
	}
}
