package api

import "github.com/claimcheck/claimcheck"

// CodeHeld answers an operation that would delete data under a legal
// hold (claimcheck.ErrHeld): 409 Conflict, because the request is valid
// and will succeed once the hold is lifted. See docs/HTTP.md and ADR 0065.
const CodeHeld = "held"

// HoldRequest is the optional JSON body of PUT /v1/claims/{id}/hold and
// PUT /v1/namespaces/{ns}/hold.
type HoldRequest struct {
	Reason string `json:"reason,omitempty"`
}

// NamespaceHold is the answer of GET /v1/namespaces/{ns}/hold: the hold,
// or null when the namespace is not held.
type NamespaceHold struct {
	Hold *claimcheck.Hold `json:"hold"`
}
