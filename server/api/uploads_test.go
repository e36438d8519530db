package api_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzInitUploadRequest feeds arbitrary init bodies through the decoding
// the server does (ParseInitUploadRequest): it never panics, refusals
// are ErrInvalidArgument, and whatever it accepts is one valid JSON
// value with a non-negative size, carries a well-formed digest and
// survives the round trip through the wire form.
func FuzzInitUploadRequest(f *testing.F) {
	f.Add([]byte(`{"size":10,"sha256":"`+"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"+`"}`), "key-1")
	f.Add([]byte(`{"size":-1,"sha256":"sha256:xyz","labels":{"a":"b"}}`), "")
	f.Add([]byte(`{"size":1e30}`), "k")
	f.Add([]byte(`{"size":1,"sha256":"`+"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"+`"}{"size":2}`), "k")
	f.Add([]byte(`{"sha256":"`+"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"+`"}`), "k")
	f.Add([]byte(`{"size":1}`), "")
	f.Add([]byte(`{"size":1,"sha256":"x"} trailing`), "")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		r, err := api.ParseInitUploadRequest(body)
		if err != nil {
			if !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		if r.Size < 0 || !json.Valid(body) {
			t.Fatalf("accepted %q as %+v", body, r)
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
