// Package temporal connects claimcheck to Temporal workflows: an External
// Storage driver, a PayloadCodec for setups without External Storage, a
// codec-server HTTP handler, and helpers that offload large fields of
// JSON workflow state.
package temporal
