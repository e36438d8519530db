package engine

import (
	"crypto/rand"
	"encoding/base64"
)

// newID returns prefix + 128 random bits in unpadded base64url (22
// characters). Claim ids are unguessable: knowing one is what lets a
// consumer redeem.
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("claimcheck: crypto/rand failed: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func newClaimID() string { return newID("cc_") }
func newBlobID() string  { return newID("b_") }

// objectKey is where a blob's bytes live: under the namespace's prefix
// (so lifecycle rules and listings can be scoped to a namespace) and named
// by the blob id, which is known before a single byte is written.
func objectKey(ns, blobID string) string { return ns + "/" + blobID }
