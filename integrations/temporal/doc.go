// Package temporal connects claimcheck to Temporal workflows: an External
// Storage driver, a PayloadCodec for setups without External Storage, a
// codec-server HTTP handler, helpers that offload large fields of JSON
// workflow state, the keeper that ends claims with their workflow runs,
// and the way in from Temporal's own storage drivers: a ForeignDriver
// reading their references (foreign.go) and Adopt, which makes their
// objects claims of their runs (adopt.go).
package temporal
