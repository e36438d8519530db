#!/usr/bin/env bash
# Run every fuzz target of the repository for a while, one after the other.
#
#   scripts/fuzz.sh [FUZZTIME] [PARALLEL]     # defaults: 60s, 1 worker
#
# The normal `go test` (and scripts/test.sh) runs each target on its seed
# corpus only; this is the long mode. Targets are found by name
# (func FuzzXxx in *_test.go) in every module of go.work. New crashers are
# written by Go to the package's testdata/fuzz/FuzzXxx/ and fail the run:
# keep them (they become seeds) and fix the bug. At the end a table gives
# each target's executions, as reported by the fuzzer.
set -euo pipefail

fuzztime=${1:-60s}
parallel=${2:-1}
cd "$(dirname "$0")/.."

results=$(mktemp)
trap 'rm -f "$results"' EXIT
failed=0

while IFS= read -r file; do
  dir=$(dirname "$file")
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/'); do
    echo "== $dir $name ($fuzztime)"
    log=$(mktemp)
    if (cd "$dir" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" .) >"$log" 2>&1; then
      status=ok
    else
      status=FAIL
      failed=1
      cat "$log"
    fi
    # The fuzzer's last progress line: "fuzz: elapsed: 1m0s, execs: 123456 (2057/sec), new interesting: 3 (total: 20)".
    # Its count is what the workers reported back; the final rate is
    # often printed as 0/sec, so the summary gives the total only.
    last=$(grep -E '^fuzz: elapsed: .*execs: [0-9]+' "$log" | tail -1 || true)
    elapsed=$(sed -E 's/^fuzz: elapsed: ([^,]+),.*/\1/' <<<"$last")
    execs=$(grep -oE 'execs: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
    printf '%s\t%s\t%s\t%s\t%s\n' "$dir" "$name" "${elapsed:-?}" "${execs:-?}" "$status" | tee -a "$results"
    rm -f "$log"
  done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' | sort)

echo
echo "== summary ($fuzztime per target, -parallel $parallel): package, target, elapsed, executions, result"
column -t -s $'\t' "$results"
exit $failed
