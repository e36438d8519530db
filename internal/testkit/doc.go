// Package testkit holds, in its subpackages, the code that only tests
// and benchmarks use; nothing a binary links imports it (the test here
// checks that).
//
//   - enginetest opens a fresh embedded store for a test, closed when
//     the test ends.
//   - claimsharness puts the embedded store, behind a loopback server,
//     under the claimstest suite.
//   - metrictest reads metric values from a Prometheus registry.
//   - brokertest is the store and helpers the tests of the
//     message-broker integrations (Kafka, NATS, SQS) share.
//   - testsvc gives a test its own schema and bucket of the PostgreSQL
//     and S3 services scripts/test.sh starts, and of the storage
//     emulators.
//   - tracingtest reads the spans a test exported.
//   - lifecyclesim is an in-memory bucket that runs lifecycle rules on
//     a fake clock.
//   - cutbody cuts a body short, to play a dropped connection.
//   - depcheck checks that the light packages do not link the engine.
//   - benchdata generates the payloads benchmarks share.
//   - netns builds networks of Linux namespaces for the fault tests.
//   - release reads PREVIOUS_RELEASE, the release upgrades are tested from.
//   - servetest builds and runs the real binary for the tests that
//     judge the server from outside (internal/securitytest).
//   - livefill fills a metadata store with millions of live claims for
//     the latency benchmark at fleet size.
//
// The conformance suites (claimstest, meta/metatest, blob/blobtest) stay
// beside the interfaces they test: they are public, for other
// implementations to run. The system tests (internal/systemtest) are
// tests, not a kit.
package testkit
