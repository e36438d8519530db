package claimcheck

import (
	"context"
	"io"
)

// EncodingZstd is the content encoding (RFC 9110 §8.4) of a payload sent
// as the zstd frames it is stored in.
const EncodingZstd = "zstd"

// EncodingIdentity is the encoding of a payload sent as the bytes it is
// stored as, uncompressed (RFC 9110 §8.4.1): the payload itself, not
// hashed by the store (ADR 0155).
const EncodingIdentity = "identity"

// EncodedRedeemer is implemented by stores that can hand out a payload
// in the form it is stored in, still compressed (the embedded store). The
// HTTP server uses it to answer a redeem with Content-Encoding: zstd to a
// client that decodes and verifies the payload itself, so that neither
// side decompresses twice and the wire carries the compressed bytes
// (ADR 0136). It is a separate interface so that Claims stays what every
// store must implement.
type EncodedRedeemer interface {
	// RedeemEncoded opens the claim's payload like Redeem, and counts
	// as a read like it. It is for a reader that verifies the payload
	// itself. If the payload is stored in encoding (only EncodingZstd
	// is known), Encoded.Encoding is that encoding and Read gives the
	// stored frames, decrypted but not decompressed: their count is
	// checked against the stored size, and every frame carries its own
	// checksum, but the payload's size and sha256 are for the reader to
	// check once decoded. If it is stored uncompressed and encoding is
	// EncodingZstd or EncodingIdentity, Encoding is EncodingIdentity and
	// Read gives the payload's bytes as stored, their count checked, their
	// sha256 for the reader to check. Otherwise Encoding is empty and Read
	// gives the payload as Redeem does, verified.
	RedeemEncoded(ctx context.Context, ref Ref, encoding string) (*Encoded, error)
}

// Encoded is a payload opened by RedeemEncoded. It must be closed.
type Encoded struct {
	io.ReadCloser
	Ref         Ref
	ContentType string
	// Encoding is the content encoding of the bytes Read gives; empty
	// for the payload itself, verified.
	Encoding string
}
