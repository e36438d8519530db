package blobtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
)

// testPresignPut checks a Presigner's URL with a plain HTTP client, as a
// producer uploading directly would use it: the right bytes are stored;
// a body of another length or with other bytes is refused by the service
// and leaves no object.
func testPresignPut(t *testing.T, h *harness) {
	p := blob.AbilitiesOf(h.store).Presigner
	if p == nil {
		t.Skipf("%T is not a Presigner", h.store)
	}
	data := payload(256<<10+7, 11)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])

	send := func(t *testing.T, key string, size int64, body []byte) int {
		t.Helper()
		h.track(key)
		pp, err := p.PresignPut(t.Context(), key, size, digest, 5*time.Minute)
		if err != nil {
			t.Fatalf("PresignPut(%q): %v", key, err)
		}
		if !pp.Expires.After(time.Now()) {
			t.Errorf("Expires = %v, want in the future", pp.Expires)
		}
		req, err := http.NewRequestWithContext(t.Context(), pp.Method, pp.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range pp.Headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// A server may close the connection on a refused body.
			t.Logf("PUT %s: %v", key, err)
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("Accepted", func(t *testing.T) {
		key := h.key("presigned")
		// S3 and GCS answer 200, Azure 201 Created.
		if code := send(t, key, int64(len(data)), data); code/100 != 2 {
			t.Fatalf("PUT = %d, want 2xx", code)
		}
		if got := h.get(t, key); !bytes.Equal(got, data) {
			t.Fatalf("object has %d bytes, not the %d uploaded", len(got), len(data))
		}
	})
	t.Run("WrongLength", func(t *testing.T) {
		if why := h.opts.PresignLengthUnchecked; why != "" {
			t.Skip("the service does not refuse a body of another length: " + why)
		}
		key := h.key("presigned-short")
		if code := send(t, key, int64(len(data)), data[:len(data)-1]); code/100 == 2 {
			t.Fatalf("PUT of %d bytes to a URL signed for %d = 200, want a refusal", len(data)-1, len(data))
		}
		h.wantNotFound(t, key)
	})
	t.Run("WrongChecksum", func(t *testing.T) {
		if why := h.opts.PresignSumUnchecked; why != "" {
			t.Skip("the service does not refuse other bytes: " + why)
		}
		key := h.key("presigned-other-bytes")
		other := bytes.Clone(data)
		other[len(other)/2] ^= 0xff
		if code := send(t, key, int64(len(data)), other); code/100 == 2 {
			t.Fatal("PUT of other bytes with the signed sha256 = 200, want a refusal")
		}
		h.wantNotFound(t, key)
	})
	t.Run("BadDigest", func(t *testing.T) {
		if _, err := p.PresignPut(t.Context(), h.key("x"), 1, "not-hex", time.Minute); err == nil {
			t.Error("PresignPut with a malformed digest = nil error")
		}
	})
}
