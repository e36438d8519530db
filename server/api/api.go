// Package api is the wire contract of claimcheck's HTTP API, shared by
// package server and package client: the header names, the JSON error
// body, the one table that maps the root package's sentinel errors to
// stable codes and HTTP statuses, and the encodings of the structured
// request headers.
//
// Both sides import this package, so the server's answers and the client's
// reading of them cannot drift apart. It depends on nothing but the root
// package and the standard library, so a program that only uses the
// client does not link the server. docs/HTTP.md describes the same
// contract for people.
package api

import "github.com/claimcheck/claimcheck"

// Request headers of PUT /v1/namespaces/{ns}/claims. Content-Length and
// Content-Type are used as well, with their usual meaning.
const (
	// HeaderDigest is "sha256:<64 lowercase hex digits>" of the payload,
	// when the producer knows it up front.
	HeaderDigest = "Claimcheck-Digest"
	// HeaderConsumers is the number of releases that finish the claim.
	HeaderConsumers = "Claimcheck-Consumers"
	// HeaderConsumerNames is a comma-separated list of the consumers whose
	// releases count; see FormatNames.
	HeaderConsumerNames = "Claimcheck-Consumer-Names"
	// HeaderLabels is a comma-separated list of key=value labels; see
	// FormatLabels.
	HeaderLabels = "Claimcheck-Labels"
)

// Response header of PUT /v1/namespaces/{ns}/claims.
const (
	// HeaderDigestFirst is "off" on a put's answer when the namespace
	// never answers a put before its body (dedup off, or digest_first:
	// false): a client need not hash a payload before sending it there
	// (ADR 0155). It is absent otherwise.
	HeaderDigestFirst = "Claimcheck-Digest-First"
)

// Response headers and trailer of GET /v1/claims/{id}.
const (
	// HeaderRef carries the claim's reference (its JSON form). The client
	// verifies the streamed bytes against its size and digest.
	HeaderRef = "Claimcheck-Ref"
	// HeaderSize is the payload's length in bytes, also in a ranged
	// answer. A client that reads trailers gets no Content-Length (the
	// answer is streamed with a trailer); any other gets one.
	HeaderSize = "Claimcheck-Size"
	// TrailerError is declared on every payload response. It stays empty
	// when the whole payload was sent and verified by the server; when
	// the stream failed part-way it holds the JSON error (an Error), and
	// the bytes already sent must not be used.
	TrailerError = "Claimcheck-Error"
)

// ContentTypeJSON is the media type of every JSON body of the API.
const ContentTypeJSON = "application/json"

// ReleaseRequest is the optional JSON body of POST /v1/claims/{id}/release.
type ReleaseRequest struct {
	Consumer string `json:"consumer,omitempty"`
}

// NamespaceInfo is the body of GET /v1/namespaces/{ns}: the policy, the
// quota limits and the usage (reservations and counts included).
type NamespaceInfo = claimcheck.NamespaceInfo

// NamespaceList is the body of GET /v1/namespaces: a page by name; Next
// is the cursor of the page after, absent after the last (QueryCursor,
// QueryLimit; ParsePageQuery).
type NamespaceList struct {
	Namespaces []claimcheck.NamespaceInfo `json:"namespaces"`
	Next       string                     `json:"next,omitempty"`
}
