// Package systemtest holds the tests of claimcheck as it is deployed: the
// real `claimcheck` binary, built once per test run from cmd/claimcheck,
// run as `serve` processes on 127.0.0.1 and driven by its own client
// commands, the Go client and plain HTTP. The package has no code of its
// own; everything is in its _test.go files.
//
// What lives here:
//   - end-to-end runs of the command line against a served store (put,
//     get, stat, release, rm, upload --resume, get --continue, holds,
//     keys and auth, TLS, rewrap-keys, ls and extend), and uploads through
//     a reverse proxy;
//   - the READMEs' tours, run as they are written (the fenced blocks
//     marked tour: shell lines, Go programs built as modules outside the
//     repository, Python), and the integration READMEs' replace lines;
//   - several replicas of one store on PostgreSQL and S3, working at once;
//   - a rolling restart of two replicas with an event stream open
//     (TestRollingRestartWithStreams: every exit 0, no event lost;
//     CLAIMCHECK_TEST_ROLLING_RESTARTS=N for more rounds);
//   - chaos: a server killed with SIGKILL between writing an object and
//     committing it, and stored objects damaged under a running server;
//   - benchmarks of the served paths, against MinIO among others
//     (BenchmarkServeUserPaths, BenchmarkVersusMinIO, BenchmarkRedeemTail,
//     BenchmarkRedeemP99WithScrub), and at 10^6 to 10^7 live claims
//     (BenchmarkLiveClaims, stores filled by internal/testkit/livefill).
//
// Each test starts its own servers on their own data directory (or
// PostgreSQL schema and S3 bucket), so the tests run in parallel
// (t.Parallel), except the few that set the environment their servers
// inherit (t.Setenv).
//
// The tests of one subcommand's flags and output, which run the command
// line in process through cli.Main, stay beside it in internal/cli.
//
// Services: the tests on the embedded defaults (SQLite and files) need
// only the Go toolchain, which builds the binary. Those of replicas, of
// damage on PostgreSQL and S3, and BenchmarkVersusMinIO need PostgreSQL
// (TEST_DATABASE_URL) and S3 (TEST_S3_URL, MinIO); without the variables
// they skip, saying which is missing. scripts/test.sh starts both and
// sets them.
//
// Running it:
//
//	go test -short ./internal/systemtest       # what CI runs (under -race)
//	go test ./internal/systemtest              # full size: a longer load on the replicas
//	go test -run '^$' -bench VersusMinIO -benchtime 20x ./internal/systemtest
//
// CLAIMCHECK_TEST_CHAOS_OPS sets how many operations the damage chaos
// test runs; each benchmark's comment names the variables it reads.
package systemtest
