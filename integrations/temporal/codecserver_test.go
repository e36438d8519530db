package temporal_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
)

// A round trip through the codec-server handler, the way the Web UI and
// `temporal` CLI use it: large payloads come back from /encode as
// references and from /decode as the original payloads; small ones pass
// untouched both ways.
func TestCodecServerRoundTrip(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	cd, err := cctemporal.NewCodec(ctx, store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := cctemporal.NewCodecServerHandler(cctemporal.CodecServerOptions{
		Codecs: []converter.PayloadCodec{cd}, AllowOrigin: "http://localhost:8233",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/codec", h))
	defer srv.Close()
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/codec"})

	dc := converter.GetDefaultDataConverter()
	large, err := dc.ToPayload(makePhotos(1000))
	if err != nil {
		t.Fatal(err)
	}
	small, err := dc.ToPayload("hello")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := remote.Encode([]*commonpb.Payload{large, small})
	if err != nil {
		t.Fatal(err)
	}
	if !cctemporal.IsRefPayload(enc[0]) || proto.Size(enc[0]) >= 1024 {
		t.Fatalf("encoded large payload: %d bytes, encoding %q: want a reference under 1 KB", proto.Size(enc[0]), enc[0].GetMetadata()["encoding"])
	}
	if !proto.Equal(enc[1], small) {
		t.Fatalf("small payload changed by encode: %v", enc[1])
	}
	dec, err := remote.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dec[0], large) || !proto.Equal(dec[1], small) {
		t.Fatal("decode did not give back the original payloads")
	}

	// A browser preflight from the Web UI's origin is answered.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", bytes.NewReader(nil))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://localhost:8233" {
		t.Fatalf("preflight: Access-Control-Allow-Origin %q", got)
	}
}
