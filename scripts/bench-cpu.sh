#!/usr/bin/env bash
# The server's CPU time per 1 KiB put and per redeem over HTTP with the Go
# client (docs/PERFORMANCE.md, "Server CPU per request"): the server built
# at BASE (default: the merge base with main) and this tree's, side by side
# in the same rounds, on SQLite and files and on PostgreSQL and files. It
# starts PostgreSQL (scripts/postgres.sh) unless TEST_DATABASE_URL is set.
#
#   ./scripts/bench-cpu.sh                   # 10 rounds of 500 puts and 500 redeems per server
#   BASE=<commit> ROUNDS=20 BATCH=1000 ./scripts/bench-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

base=${BASE:-$(git merge-base HEAD main)}
rounds=${ROUNDS:-10}
work=$(mktemp -d)
pg_started=
cleanup() {
  if [ -n "$pg_started" ]; then ./scripts/postgres.sh stop "$work" >/dev/null 2>&1 || true; fi
  remove_base_worktree "$work"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build_base_server "$base" "$work"
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  pg_started=1
  env=$(./scripts/postgres.sh start "$work"); eval "$env"
fi
CLAIMCHECK_BENCH_BASELINE="$work/claimcheck-base" CLAIMCHECK_BENCH_CPU_BATCH="${BATCH:-500}" TEST_DATABASE_URL="$TEST_DATABASE_URL" \
  go test -run '^$' -bench ServeCPU -benchtime "${rounds}x" -count 1 -timeout 60m ./internal/systemtest
