#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, vet, and the tests of
# every module of the workspace (go.work) under the race detector.
#   ./scripts/test.sh
# Long stress and fuzz modes: CLAIMCHECK_TEST_LONG=1 ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

# Every module joined by go.work: the root and the integrations.
mapfile -t modules < <(go list -m -f '{{.Dir}}')
mapfile -t paths < <(go list -m -f '{{.Path}}')

echo "== go vet"
for dir in "${modules[@]}"; do
  (cd "$dir" && go vet ./...)
done

short=-short
if [ "${CLAIMCHECK_TEST_LONG:-}" = 1 ]; then short=; fi

echo "== go test -race $short"
for i in "${!modules[@]}"; do
  echo "-- ${paths[$i]}"
  (cd "${modules[$i]}" && go test -race $short -count=1 -timeout 30m ./...)
done

# The stress tests at full size, without the race detector (which slows
# the pure-Go SQLite driver tenfold); -race above ran them at short size.
echo "== stress tests at full size"
go test -count=1 -timeout 30m -run 'Stress|RandomDeadlines|Concurrent' ./...
