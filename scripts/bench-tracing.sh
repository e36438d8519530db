#!/usr/bin/env bash
# What tracing costs a 1 KiB put and redeem over HTTP (docs/PERFORMANCE.md,
# "Tracing"): the server built at BASE (default: the merge base with main,
# the tree before tracing), this tree's server with tracing off, and with
# every request sampled exporting over OTLP to a local Jaeger
# (scripts/jaeger.sh), side by side in one run.
#
#   ./scripts/bench-tracing.sh                 # 20 rounds of 100 put+redeem pairs per server
#   BASE=<commit> ROUNDS=40 ./scripts/bench-tracing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

base=${BASE:-$(git merge-base HEAD main)}
rounds=${ROUNDS:-20}
work=$(mktemp -d)
cleanup() {
  ./scripts/jaeger.sh stop "$work" >/dev/null 2>&1 || true
  remove_base_worktree "$work"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build_base_server "$base" "$work"
if [ -z "${TEST_JAEGER_OTLP:-}" ]; then env=$(./scripts/jaeger.sh start "$work"); eval "$env"; fi
CLAIMCHECK_BENCH_BASE_BIN="$work/claimcheck-base" TEST_JAEGER_OTLP="$TEST_JAEGER_OTLP" \
  go test -run '^$' -bench TracingOverhead -benchtime "${rounds}x" -count 1 -timeout 30m ./internal/systemtest
