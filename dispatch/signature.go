package dispatch

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Signing follows the Standard Webhooks specification: the secret is
// "whsec_" and the base64 of its bytes; a delivery carries webhook-id
// (the event's stable id), webhook-timestamp (Unix seconds) and
// webhook-signature, "v1," and the base64 of HMAC-SHA256 under the
// secret's bytes of id "." timestamp "." body. Receivers written for the
// specification (and its libraries) verify it as they are.

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// Headers of a signed delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// NewSecret makes a signing secret of 32 random bytes.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// ParseSecret returns the key bytes of a secret. field names it in the
// error.
func ParseSecret(field, s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%s: want %q and the base64 of 24 to 64 random bytes (leave it out to have one made)", field, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%s: the part after %q is not base64: %v", field, SecretPrefix, err)
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("%s: %d bytes of key; want 24 to 64", field, len(key))
	}
	return key, nil
}

// Sign returns the webhook-signature value of a delivery.
func Sign(key []byte, id string, at time.Time, body []byte) string {
	return string(newSigner(key).append(nil, []byte(id), at.Unix(), body))
}

// signer signs deliveries under one key, reusing its HMAC state and
// buffers (one per lane: not safe for concurrent use).
type signer struct {
	mac hash.Hash
	pre []byte
	sum []byte
}

func newSigner(key []byte) *signer { return &signer{mac: hmac.New(sha256.New, key)} }

// append appends the webhook-signature value of a delivery to b.
func (s *signer) append(b, id []byte, unix int64, body []byte) []byte {
	s.mac.Reset()
	s.pre = append(append(s.pre[:0], id...), '.')
	s.pre = append(strconv.AppendInt(s.pre, unix, 10), '.')
	s.mac.Write(s.pre)
	s.mac.Write(body)
	s.sum = s.mac.Sum(s.sum[:0])
	b = append(b, "v1,"...)
	return base64.StdEncoding.AppendEncode(b, s.sum)
}

// ErrBadSignature is Verify's answer to a delivery that is not signed by
// the key, or signed too long ago.
var ErrBadSignature = errors.New("dispatch: webhook signature does not verify")

// Verify checks a delivery's headers against key the way a receiver
// does: one of the space-separated v1 signatures matches, and the
// timestamp is within tolerance of now (replays are refused).
func Verify(key []byte, id, timestamp, signatures string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrBadSignature, HeaderTimestamp, timestamp)
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s is %s away from now", ErrBadSignature, HeaderTimestamp, d)
	}
	want := Sign(key, id, at, body)
	for _, s := range strings.Fields(signatures) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
