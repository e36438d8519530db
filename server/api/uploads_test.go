package api_test

import (
	"encoding/json"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzInitUploadRequest feeds arbitrary init bodies through the decoding
// the server does: it never panics, and whatever it accepts carries a
// well-formed digest and survives the round trip through the wire form.
func FuzzInitUploadRequest(f *testing.F) {
	f.Add([]byte(`{"size":10,"sha256":"`+"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"+`"}`), "key-1")
	f.Add([]byte(`{"size":-1,"sha256":"sha256:xyz","labels":{"a":"b"}}`), "")
	f.Add([]byte(`{"size":1e30}`), "k")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		var r api.InitUploadRequest
		if json.Unmarshal(body, &r) != nil {
			return
		}
		req, err := r.UploadRequest(key)
		if err != nil {
			return
		}
		if !claimcheck.ValidDigest(req.Digest) || req.IdempotencyKey != key {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		back, err := api.InitUploadRequestOf(req).UploadRequest(key)
		if err != nil || back.Digest != req.Digest || back.Size != req.Size {
			t.Fatalf("round trip of %+v: %+v, %v", req, back, err)
		}
	})
}
