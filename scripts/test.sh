#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, vet, golangci-lint, and
# the tests of every module of the workspace (go.work) under the race
# detector.
#   ./scripts/test.sh
# Long stress and fuzz modes: CLAIMCHECK_TEST_LONG=1 ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# What the checkout holds that git does not have committed, one line per
# path with its content's hash: tracked files changed and files neither
# tracked nor ignored. The run must leave it as it found it (checked at
# the end), so that a test which rewrites a tracked file (go.work.sum, a
# golden file, generated types) or leaves a file behind fails here, not
# in the next commit. In CI the checkout starts clean.
checkout_state() {
  git status --porcelain --untracked-files=all | cut -c4- | sort |
    while IFS= read -r f; do echo "$f $(git hash-object -- "$f" 2>/dev/null || echo gone)"; done
}
checkout_before=$(checkout_state)

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

# Every module joined by go.work: the root and the integrations.
mapfile -t modules < <(go list -m -f '{{.Dir}}')
mapfile -t paths < <(go list -m -f '{{.Path}}')

# Modules kept out of go.work because their dependencies would change
# the versions every workspace module builds with (deploy/ needs
# Prometheus itself, deploy/helm Helm and the Kubernetes API types); each
# builds alone (deploy/ against the root by a replace).
standalone=(deploy deploy/helm)

# golangci-lint on every module with the committed .golangci.yml, built
# once at its pinned version (scripts/lint.sh); any issue fails the run.
# Its govet linter runs go vet's analyzers, on the standalone modules
# too, so go vet is not run a second time on its own.
echo "== golangci-lint"
./scripts/lint.sh

short=-short
if [ "${CLAIMCHECK_TEST_LONG:-}" = 1 ]; then short=; fi

# Scratch space for the services and the test log, removed on exit.
work=$(mktemp -d)
services_started=
cleanup() {
  if [ -n "$services_started" ]; then
    ./scripts/fakegcs.sh stop "$work" || true
    ./scripts/azurite.sh stop "$work" || true
    ./scripts/jaeger.sh stop "$work" || true
    ./scripts/minio.sh stop "$work" || true
    ./scripts/postgres.sh stop "$work" || true
    ./scripts/patroni.sh stop "$work" || true
    ./scripts/goaws.sh stop "$work" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # run the EXIT trap on a signal too

# Real PostgreSQL, MinIO, goaws, fake-gcs-server, Azurite and Jaeger for the
# suites that need them, started here and always stopped on exit.
# CLAIMCHECK_TEST_SERVICES=0 skips them (those suites then skip, saying
# why); a TEST_DATABASE_URL, TEST_SQS_ENDPOINT, TEST_GCS_URL, TEST_AZURE_URL or
# TEST_JAEGER_OTLP already set is used as it is.
if [ "${CLAIMCHECK_TEST_SERVICES:-1}" != 0 ]; then
  echo "== services"
  services_started=1
  if [ -z "${TEST_DATABASE_URL:-}" ]; then env=$(./scripts/postgres.sh start "$work"); eval "$env"; fi
  # Three Patroni nodes and etcd, for the failover test (TestPatroniFailover),
  # where PostgreSQL's server binaries are installed.
  if [ -z "${TEST_PATRONI_DSN:-}" ] && compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    env=$(./scripts/patroni.sh start "$work"); eval "$env"
  fi
  if [ -z "${TEST_S3_URL:-}" ]; then env=$(./scripts/minio.sh start "$work"); eval "$env"; fi
  # goaws (SQS and SNS) for integrations/sqs, beside MinIO for its S3 side.
  if [ -z "${TEST_SQS_ENDPOINT:-}" ]; then env=$(./scripts/goaws.sh start "$work"); eval "$env"; fi
  # The emulators of Google Cloud Storage and Azure Blob Storage, for
  # blob/gcsstore, blob/azurestore, the engine's conformance suite and
  # the browser suite: started once for the whole run.
  if [ -z "${TEST_GCS_URL:-}" ]; then env=$(./scripts/fakegcs.sh start "$work"); eval "$env"; fi
  if [ -z "${TEST_AZURE_URL:-}" ] && command -v npm >/dev/null; then env=$(./scripts/azurite.sh start "$work"); eval "$env"; fi
  # Jaeger, for the end-to-end tracing test (TestTracingThroughJaeger).
  if [ -z "${TEST_JAEGER_OTLP:-}" ]; then env=$(./scripts/jaeger.sh start "$work"); eval "$env"; fi
fi

# Download tools for the system test of Content-Length and resumed
# downloads (TestDownloadTools): wget and aria2c, Debian packages,
# installed when this runs as root and they are missing; otherwise that
# test skips, saying why.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null &&
  { ! command -v wget >/dev/null || ! command -v aria2c >/dev/null; }; then
  echo "== download tools (apt-get install wget aria2)"
  apt-get install -y -q wget aria2 >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q wget aria2 >/dev/null; } ||
    echo "could not install wget and aria2: TestDownloadTools will skip"
fi

# python3 and curl, for the conformance matrix's Python and curl cells
# (internal/conformance) and the Python client's suite below: installed
# before the Go tests, so that the matrix runs those cells.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null &&
  { ! command -v python3 >/dev/null || ! command -v curl >/dev/null; }; then
  echo "== python3 and curl (apt-get install python3 curl)"
  apt-get install -y -q python3 curl >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q python3 curl >/dev/null; } ||
    echo "could not install python3 and curl: the matrix names the cells it cannot run"
fi

# Every go test run's output also goes to one log, summed up at the end.
log="$work/test.log"

# The root module's own versions in the module cache: the README tour
# builds programs outside go.work (GOWORK=off, GOPROXY=off), which take
# the versions the root go.mod pins rather than the workspace's choice.
# A failed download is retried: the module proxy is a network service.
echo "== go mod download (root module, outside go.work)"
for try in 1 2 3; do
  if GOWORK=off go mod download; then break; fi
  if [ "$try" = 3 ]; then echo "go mod download failed three times"; exit 1; fi
  sleep $((try * 5))
done

# The JavaScript client's dependencies from its lockfile, for the system
# tests that run it as one of their clients (the damage chaos test);
# scripts/js-test.sh below runs its own suites.
if command -v npm >/dev/null; then
  (cd clients/js && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 \
    npm ci --no-audit --no-fund --loglevel=error)
fi

# The conformance matrix writes its table here; it is printed after the
# Go tests, whatever their outcome.
export CLAIMCHECK_TEST_MATRIX_REPORT="$work/conformance-matrix.txt"
# The chaos tests record their clients' calls and write the lifecycle
# history checker's report here (internal/history, ADR 0287); printed
# after the Go tests too.
export TEST_HISTORY_DIR="$work/history"

echo "== go test -race $short"
for i in "${!modules[@]}"; do
  echo "-- ${paths[$i]}"
  (cd "${modules[$i]}" && go test -race $short -count=1 -timeout 30m ./...) 2>&1 | tee -a "$log"
done
for dir in "${standalone[@]}"; do
  echo "-- $dir (GOWORK=off)"
  # deploy/helm renders and decodes files on one goroutine: the race
  # detector would only rebuild Helm and the Kubernetes types for nothing.
  race=-race
  if [ "$dir" = deploy/helm ]; then race=; fi
  (cd "$dir" && GOWORK=off go test $race $short -count=1 -timeout 30m ./...) 2>&1 | tee -a "$log"
done

echo "== conformance matrix (internal/conformance)"
if [ -f "$CLAIMCHECK_TEST_MATRIX_REPORT" ]; then cat "$CLAIMCHECK_TEST_MATRIX_REPORT"; else echo "no table: TestConformanceMatrix did not run"; fi

echo "== lifecycle history checks (internal/history)"
for f in "$TEST_HISTORY_DIR"/*.report; do
  if [ -f "$f" ]; then echo "-- $(basename "$f" .report)"; cat "$f"; else echo "no report: no chaos test recorded a history"; fi
done

# The JavaScript client (clients/js): Node and headless Chromium against
# a real server, and MinIO while it is up. node --test prints its own
# closing lines.
echo "== clients/js"
./scripts/js-test.sh

# The operator console (server/console): its committed build checked
# against its sources, then headless Chromium walks every page against a
# real server. Its screenshots are kept in .artifacts/console (ignored by
# git, left after the run) unless CLAIMCHECK_TEST_ARTIFACTS names another
# directory.
echo "== operator console (server/console)"
CLAIMCHECK_TEST_ARTIFACTS="${CLAIMCHECK_TEST_ARTIFACTS:-$PWD/.artifacts}" ./scripts/console-test.sh

# The stress tests at full size, without the race detector (which slows
# the pure-Go SQLite driver tenfold); -race above ran them at short size.
echo "== stress tests at full size"
go test -count=1 -timeout 30m -run 'Stress|RandomDeadlines|Concurrent' ./... 2>&1 | tee -a "$log"

# The Python client (clients/python) against a real claimcheck serve,
# with the standard library's unittest: no package to install. The binary
# is built once here; the tests start their own server on 127.0.0.1.
echo "== python client (clients/python)"
go build -o "$work/claimcheck" ./cmd/claimcheck
(cd clients/python && CLAIMCHECK_TEST_BIN="$work/claimcheck" PYTHONDONTWRITEBYTECODE=1 \
  python3 -m unittest -v) 2>&1

# The packages as users install them: the Python client with pip, without
# network, on the system's setuptools; a release build of linux/amd64,
# twice, which must give the same bytes (scripts/release.sh). The README
# tours ran above (internal/systemtest, TestREADMETour), and the npm
# package in the JavaScript suite (test/package.test.js).
echo "== packages and release build"
./scripts/python-package.sh
./scripts/release.sh --check

# The container image (deploy/container): built and run with podman,
# a put redeemed through it, where podman is installed (scripts/image.sh
# --smoke); deploy/container_test.go checks the Containerfile everywhere.
# CLAIMCHECK_TEST_IMAGE=0 skips it.
echo "== container image"
if [ "${CLAIMCHECK_TEST_IMAGE:-1}" = 0 ]; then
  echo "skipped: CLAIMCHECK_TEST_IMAGE=0"
elif ! command -v podman >/dev/null; then
  echo "skipped: podman is not installed (apt-get install podman); the Containerfile is checked statically"
else
  ./scripts/image.sh --smoke --tag claimcheck:test-$$
  podman rmi "claimcheck:test-$$" >/dev/null
fi

# One closing line for the whole run: packages whose tests ran and passed,
# and failures (a failure has already stopped the script, through pipefail).
passed=$(grep -E '^ok ' "$log" | grep -vc 'no tests to run' || true)
failed=$(grep -cE '^(FAIL|--- FAIL)' "$log" || true)
echo "packages: $passed passed, $failed failed"

# The checkout as the run found it (see checkout_state at the top).
echo "== checkout unchanged"
if [ "$(checkout_state)" != "$checkout_before" ]; then
  echo "the run changed the checkout; tracked files:"
  git status --porcelain --untracked-files=no
  echo "files neither tracked nor ignored (gitignore what a test legitimately leaves):"
  git ls-files --others --exclude-standard
  exit 1
fi
