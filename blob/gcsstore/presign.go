package gcsstore

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/storage"

	"github.com/claimcheck/claimcheck/blob"
)

// maxPresignTTL is the longest lifetime a V4 signed URL may have.
const maxPresignTTL = 7 * 24 * time.Hour

// createOnlyHeader makes GCS refuse a signed PUT to an object that
// exists: signed as "0", the URL only creates.
const createOnlyHeader = "X-Goog-If-Generation-Match"

// lengthRangeHeader makes GCS refuse a signed PUT whose body is not
// within the range: signed as "N,N", it binds the URL to the length.
const lengthRangeHeader = "X-Goog-Content-Length-Range"

// PresignPut implements blob.Presigner with a V4 signed URL of the XML
// API, signed over the Content-Type, x-goog-content-length-range
// "size,size", so GCS refuses a body of another length, and
// x-goog-if-generation-match "0", so it only creates the object: the URL
// stays valid after the confirm, and could otherwise replace the bytes of
// a blob that dedup may share with other claims. GCS has no header that
// checks a body against a sha256 (it checks MD5 and CRC32C, which the
// client does not send): other bytes of the right length are stored, and
// the confirm, which hashes the object, refuses and deletes them, so the
// client can PUT again (ADR 0230).
func (b *Bucket) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (blob.PresignedPut, error) {
	if err := blob.CheckPresign(key, size, sha256Hex, ttl, maxPresignTTL); err != nil {
		return blob.PresignedPut{}, err
	}
	expires := time.Now().Add(ttl)
	length := fmt.Sprintf("%d,%d", size, size)
	u, err := b.bucket.SignedURL(b.prefix+key, &storage.SignedURLOptions{
		Scheme:         storage.SigningSchemeV4,
		Method:         http.MethodPut,
		Expires:        expires,
		ContentType:    "application/octet-stream",
		Headers:        []string{strings.ToLower(lengthRangeHeader) + ":" + length, strings.ToLower(createOnlyHeader) + ":0"},
		GoogleAccessID: b.sign.accessID,
		PrivateKey:     b.sign.privateKey,
		Hostname:       b.sign.hostname,
		Insecure:       b.sign.insecure,
		Style:          storage.PathStyle(),
	})
	if err != nil {
		return blob.PresignedPut{}, fmt.Errorf("blob: presign %s: %w (the signer needs a private key, access_id and private_key_path, or roles/iam.serviceAccountTokenCreator on its own service account)", key, err)
	}
	return blob.PresignedPut{
		URL:     u,
		Method:  http.MethodPut,
		Headers: map[string]string{"Content-Type": "application/octet-stream", lengthRangeHeader: length, createOnlyHeader: "0"},
		Expires: expires,
	}, nil
}
