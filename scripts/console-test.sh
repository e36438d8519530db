#!/usr/bin/env bash
# The operator console's suite (server/console/web), as scripts/test.sh
# runs it: its npm dependencies from the committed lockfile, a build of
# the pages compared with the committed server/console/dist (the binary
# embeds dist/, so a change to the sources must come with its build:
# `npm run build` in server/console/web), then the Chromium suite against
# a real `claimcheck serve` built from this tree. Screenshots go to
# $CLAIMCHECK_TEST_ARTIFACTS/console when it is set. The browser is the
# system's Chromium, as for scripts/js-test.sh (which installs it when
# missing); without Node the suite is skipped, and without a Chromium
# the browser part is, each saying why.
#   ./scripts/console-test.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
cd "$here/../server/console/web"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "SKIP: node and npm not found; the console's suite did not run (install Node 20+)"
  exit 0
fi
for c in "${CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$c" ] && command -v "$c" >/dev/null; then export CHROMIUM; CHROMIUM=$(command -v "$c"); break; fi
done

# The locked dependencies only; the browser is the system's.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# The committed build is what the sources and the lockfile build.
node build.mjs "$bin/dist"
if ! diff -r ../dist "$bin/dist" >/dev/null; then
  diff -r ../dist "$bin/dist" | head -20 >&2 || true
  log "FAIL: server/console/dist differs from what server/console/web builds (run npm run build in server/console/web and commit dist/)"
  exit 1
fi

(cd ../../.. && go build -o "$bin/claimcheck" ./cmd/claimcheck)
CLAIMCHECK_TEST_BIN="$bin/claimcheck" node --test --test-concurrency=1 test/*.test.js
