#!/usr/bin/env bash
# The JavaScript client's suites (clients/js), as scripts/test.sh runs
# them: `node --test` against a real `claimcheck serve` built from this
# tree, and end to end in a headless Chromium (the system's; installed
# with apt-get when missing and we are root, as scripts/postgres.sh does
# for PostgreSQL). With TEST_S3_URL set (scripts/minio.sh) the browser
# suite also runs against MinIO, with TEST_GCS_URL (scripts/fakegcs.sh)
# against fake-gcs-server, with TEST_AZURE_URL (scripts/azurite.sh)
# against Azurite. Before the suites, tsc checks the
# sources' JSDoc types, that types/ is what it generates, and that a
# TypeScript user's code compiles against it (test/types.ts). Without Node
# the suites are skipped, and without a Chromium the browser suite is,
# each saying why.
#   ./scripts/js-test.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
cd "$here/../clients/js"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "SKIP: node and npm not found; the JavaScript client's suites did not run (install Node 20+)"
  exit 0
fi

find_chromium() {
  local c
  for c in "${CHROMIUM:-}" chromium chromium-browser; do
    if [ -n "$c" ] && command -v "$c" >/dev/null; then command -v "$c"; return 0; fi
  done
  return 1
}
if ! find_chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "Chromium not found: installing the chromium package with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2 ||
      log "installing chromium failed; the browser suite will skip"
  else
    log "Chromium not found and not root: the browser suite will skip (install the chromium package)"
  fi
fi
if chromium=$(find_chromium); then export CHROMIUM="$chromium"; fi

# The locked dependencies only; the browser is the system's, never one
# downloaded by an install script.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# The types: tsc checks the JSDoc-typed sources against each other and
# writes their declarations, which must be the ones committed in types/
# (npm run typecheck writes them there).
npx --no-install tsc -p . --outDir "$bin/types"
if ! diff -ru types "$bin/types" >&2; then
  log "FAIL: clients/js/types differs from what tsc writes from src (run npm run typecheck in clients/js and commit types/)"
  exit 1
fi
# And the package as a TypeScript user imports it (test/types.ts).
npx --no-install tsc -p test

(cd ../.. && go build -o "$bin/claimcheck" ./cmd/claimcheck)
CLAIMCHECK_TEST_BIN="$bin/claimcheck" node --test --test-concurrency=1 test/*.test.js
