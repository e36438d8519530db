#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, vet, and every test of
# every module under the race detector. Run from anywhere:
#   ./scripts/test.sh
# Set CLAIMCHECK_TEST_LONG=1 for the long stress and fuzz modes.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 30m ./...
