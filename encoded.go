package claimcheck

import "io"

// EncodingZstd is the content encoding (RFC 9110 §8.4) of a payload sent
// as the zstd frames it is stored in.
const EncodingZstd = "zstd"

// EncodingIdentity is the encoding of a payload sent as the bytes it is
// stored as, uncompressed (RFC 9110 §8.4.1): the payload itself, not
// hashed by the store (ADR 0155).
const EncodingIdentity = "identity"

// Encoded is a payload in the form it is stored in, opened by the
// embedded store's RedeemEncoded for the HTTP server (ADR 0136). It must
// be closed.
type Encoded struct {
	io.ReadCloser
	Ref         Ref
	ContentType string
	// Encoding is the content encoding of the bytes Read gives; empty
	// for the payload itself, verified.
	Encoding string
}
