// Package engine is claimcheck's embedded store: the implementation of
// the claimcheck contract (Claims, Uploads, Admin), and of what the HTTP
// server needs besides (server.Store), over a metadata store (package meta: SQLite by default, PostgreSQL for
// replicas) and a blob store (package blob: local files by default, S3 in
// production).
//
// Open reads a Config (policies per namespace, storage URLs, sweeper,
// encryption, events and history retention) and returns a *Store that
// puts, redeems, releases and deletes claims, runs direct uploads,
// quotas, legal holds, dead letters and crypto-shredding, and starts the
// background sweeper (package sweep) that finishes due claims and
// collects unreferenced blobs. The HTTP server (package server) puts a
// *Store on the wire; package client talks to it and satisfies the same
// contract without linking any of this package's dependencies.
//
// docs/ARCHITECTURE.md describes the protocols (put, redeem, upload,
// collect) and the invariant each keeps.
package engine
