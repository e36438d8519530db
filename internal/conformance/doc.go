// Package conformance holds the conformance matrix (tests only): every
// client of claimcheck — the Go client, the CLI, plain HTTP (curl), the
// JavaScript client in Node and in Chromium, the Python client — against
// every storage backend a server can have (files, S3 on MinIO, Google
// Cloud Storage on fake-gcs-server, Azure Blob Storage on Azurite), on
// every path the client offers: put (into a namespace that keeps payloads
// inline in the metadata database, ADR 0292), redeem, ranged redeem, direct upload
// with a wrong-bytes retry, resumable upload (tus), release and the event
// stream. One `claimcheck serve` per backend, built from this tree, serves
// every client; the test prints the matrix, one cell per client, backend
// and path, and a cell that cannot run says why.
package conformance
