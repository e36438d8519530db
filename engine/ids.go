package engine

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
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

// objectKey is where a blob's bytes live: under the namespace's prefix
// (so lifecycle rules and listings can be scoped to a namespace) and named
// by the blob id, which is known before a single byte is written.
func objectKey(ns, blobID string) string { return ns + "/" + blobID }
