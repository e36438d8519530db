package claimcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// RefType is the value of the "type" field of every reference.
const RefType = "claim_check_ref"

// RefVersion is the reference format this package writes. ParseRef refuses
// any other version with a clear error.
const RefVersion = 1

// MaxRefSize is the largest encoded reference. References travel inside
// message headers and workflow histories, so they must stay small; the
// namespace-name and size limits are chosen so that every ref fits.
const MaxRefSize = 300

// Ref is the small, versioned reference a producer passes along instead of
// the payload. Only ID and Namespace are trusted by the store; the other
// fields are informational and re-read from the metadata on every call.
//
// The encoding is compact JSON:
//
//	{"type":"claim_check_ref","v":1,"id":"cc_…","ns":"orders","size":1186475,
//	 "stored_size":351204,"compression":"zstd","digest":"sha256:…",
//	 "created_at":1767965040,"expires_at":1768051440}
//
// Timestamps are Unix seconds (as in JWT) and the digest is the hex sha256
// of the original bytes (as in OCI digests) so that the worst case fits in
// MaxRefSize bytes; see docs/adr/0003-reference-format.md.
type Ref struct {
	ID          string    // claim id, "cc_" + 22 URL-safe characters
	Namespace   string    // namespace the claim lives in
	Size        int64     // original (uncompressed) size in bytes
	StoredSize  int64     // size of the stored object in bytes
	Compression string    // zstd, gzip or none
	Digest      string    // "sha256:" + 64 lowercase hex digits, of the original bytes
	CreatedAt   time.Time // second precision
	ExpiresAt   time.Time // second precision; max_age deadline, never extended
}

// refJSON is the wire form of a Ref. Field order is the encoding order.
type refJSON struct {
	Type        string `json:"type"`
	V           int    `json:"v"`
	ID          string `json:"id"`
	NS          string `json:"ns"`
	Size        int64  `json:"size"`
	StoredSize  int64  `json:"stored_size"`
	Compression string `json:"compression"`
	Digest      string `json:"digest"`
	CreatedAt   int64  `json:"created_at"`
	ExpiresAt   int64  `json:"expires_at"`
}

// Ids and digests are checked by hand, not by regular expression: every
// request that names a claim and every put's answer checks one (a
// regexp.MatchString of a digest costs microseconds). The patterns they
// implement: ids ^cc_[A-Za-z0-9_-]{22}$ and ^b_[A-Za-z0-9_-]{22}$, digests
// ^sha256:[0-9a-f]{64}$ (ref_test.go checks them against these).
const (
	claimIDPrefix = "cc_"
	blobIDPrefix  = "b_"
	idChars       = 22
	digestPrefix  = "sha256:"
	digestHex     = 64
)

// validID reports whether s is prefix followed by idChars characters of
// the URL-safe base64 alphabet.
func validID(s, prefix string) bool {
	if len(s) != len(prefix)+idChars || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// MarshalJSON encodes the reference in its versioned wire form.
func (r Ref) MarshalJSON() ([]byte, error) {
	return json.Marshal(refJSON{
		Type: RefType, V: RefVersion, ID: r.ID, NS: r.Namespace,
		Size: r.Size, StoredSize: r.StoredSize, Compression: r.Compression, Digest: r.Digest,
		CreatedAt: unixOrZero(r.CreatedAt), ExpiresAt: unixOrZero(r.ExpiresAt),
	})
}

// UnmarshalJSON parses strictly, as ParseRef does.
func (r *Ref) UnmarshalJSON(data []byte) error {
	ref, err := ParseRef(data)
	if err != nil {
		return err
	}
	*r = ref
	return nil
}

// String returns the JSON encoding.
func (r Ref) String() string {
	b, _ := r.MarshalJSON()
	return string(b)
}

// ParseRef parses an encoded reference strictly: unknown fields, a wrong
// type, an unknown version, a malformed id, namespace or digest, negative
// sizes and oversized input are refused with an ErrInvalidArgument that
// names the problem.
func ParseRef(data []byte) (Ref, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Ref{}, invalidf("ref: empty input")
	}
	if len(data) > 4*MaxRefSize {
		return Ref{}, invalidf("ref: %d bytes is too long to be a reference (at most %d)", len(data), MaxRefSize)
	}
	// A well-formed reference, the common case (every put's answer),
	// takes one strict pass; anything else goes the way below, whose
	// first complaint is the one a user should see.
	if w, err := decodeRefStrict(data); err == nil && w.Type == RefType && w.V == RefVersion {
		return w.ref()
	}
	// Look at the version before anything else, so that a newer format
	// gets "unsupported version" rather than "unknown field".
	var head struct {
		Type string `json:"type"`
		V    int    `json:"v"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Ref{}, invalidf("ref: not a JSON reference: %v", err)
	}
	if head.Type != RefType {
		return Ref{}, invalidf("ref: type is %q, want %q", head.Type, RefType)
	}
	if head.V != RefVersion {
		return Ref{}, invalidf("ref: unsupported version %d (this build reads version %d)", head.V, RefVersion)
	}
	w, err := decodeRefStrict(data)
	if err != nil {
		return Ref{}, err
	}
	return w.ref()
}

// decodeRefStrict decodes the wire form, refusing unknown fields and
// anything after the one JSON value.
func decodeRefStrict(data []byte) (refJSON, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w refJSON
	if err := dec.Decode(&w); err != nil {
		return refJSON{}, invalidf("ref: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return refJSON{}, invalidf("ref: trailing data after the reference")
	}
	return w, nil
}

// ref returns the reference of a decoded wire form, validated.
func (w refJSON) ref() (Ref, error) {
	ref := Ref{
		ID: w.ID, Namespace: w.NS, Size: w.Size, StoredSize: w.StoredSize,
		Compression: w.Compression, Digest: w.Digest,
		CreatedAt: timeOrZero(w.CreatedAt), ExpiresAt: timeOrZero(w.ExpiresAt),
	}
	if err := ref.validate(); err != nil {
		return Ref{}, err
	}
	return ref, nil
}

func (r Ref) validate() error {
	if !ValidClaimID(r.ID) {
		return invalidf("ref: id %q is not a claim id", r.ID)
	}
	if err := ValidateNamespace(r.Namespace); err != nil {
		return fmt.Errorf("ref: %w", err)
	}
	if r.Size < 0 || r.StoredSize < 0 {
		return invalidf("ref: negative size")
	}
	if r.Digest != "" && !ValidDigest(r.Digest) {
		return invalidf("ref: digest %q is not sha256:<64 hex digits>", r.Digest)
	}
	switch Compression(r.Compression) {
	case "", CompressionZstd, CompressionGzip, CompressionNone:
	default:
		return invalidf("ref: unknown compression %q", r.Compression)
	}
	return nil
}

// ValidClaimID reports whether id has the form of a claim id.
func ValidClaimID(id string) bool { return validID(id, claimIDPrefix) }

// ValidBlobID reports whether id has the form of a blob id (the id of a
// dead letter).
func ValidBlobID(id string) bool { return validID(id, blobIDPrefix) }

// ValidDigest reports whether d has the form "sha256:<64 hex digits>"
// (lowercase).
func ValidDigest(d string) bool {
	if len(d) != len(digestPrefix)+digestHex || d[:len(digestPrefix)] != digestPrefix {
		return false
	}
	for i := len(digestPrefix); i < len(d); i++ {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func timeOrZero(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}
