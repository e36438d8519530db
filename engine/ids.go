package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// idEncoding is unpadded base64 over the characters of base64url, in
// ASCII order, so that ids compare as strings the way their bytes do.
// Ids keep the format of the contract (22 characters of [A-Za-z0-9_-]).
var idEncoding = base64.NewEncoding("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz").WithPadding(base64.NoPadding)

// newID returns prefix + 22 characters over 16 bytes: the creation time
// in milliseconds (6 bytes, big-endian) and 80 random bits. The random
// part keeps ids unguessable (knowing a claim id is what lets a consumer
// redeem); the time prefix keeps rows created together next to each
// other in the primary-key index. Claims created together come due
// together, so the sweeper's pages of due claims and blobs touch a few
// index pages instead of one random page per row, and inserts append at
// the index's right edge (ADR 0105).
func newID(prefix string, now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("claimcheck: crypto/rand failed: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b[:])
}

func newClaimID(now time.Time) string { return newID("cc_", now) }
func newBlobID(now time.Time) string  { return newID("b_", now) }

// objectKey is where a blob's bytes live (ADR 0261):
// <namespace>/<spread>/<blob id>. The namespace leads, so lifecycle rules,
// listings and operators can still scope to a namespace by its prefix
// (namespacePrefix). The spread is two hex digits of a hash of the blob
// id: the id itself is time-ordered, so without it every write of a
// namespace lands at the end of one key range, which an object store
// serves from one partition; with it, writes fall evenly over 256
// ranges. The key is stored in the blob row and never parsed back (but
// for the second segment that marks an inline object, inline.go), so
// objects written under the older <namespace>/<blob id> layout keep
// working beside the new ones.
func objectKey(ns, blobID string) string {
	return namespacePrefix(ns) + keySpread(blobID) + "/" + blobID
}

// namespacePrefix is the prefix every object key of namespace ns starts
// with, in either layout.
func namespacePrefix(ns string) string { return ns + "/" }

// keySpread is the spreading element of a blob's object key: the first
// byte of the SHA-256 of the blob id, as two lowercase hex digits (256
// values). It is a function of the id alone, so an operator can find a
// blob's object from its id.
func keySpread(blobID string) string {
	sum := sha256.Sum256([]byte(blobID))
	return hex.EncodeToString(sum[:1])
}
