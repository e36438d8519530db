#!/usr/bin/env bash
# The benchmark set, measured side by side in one run, as one table of
# ratios against their targets (docs/PERFORMANCE.md keeps the last table).
# It starts PostgreSQL and MinIO the way scripts/test.sh does (or uses
# TEST_DATABASE_URL / TEST_S3_URL when set) and stops them on exit.
#
#   ./scripts/bench.sh               # a few minutes: 100,000-claim sweeper backlog
#   BENCH_FULL=1 ./scripts/bench.sh  # the 1,000,000-claim backlog, more rounds
#
# Every user-facing figure is measured through the interface a user uses:
# the real `claimcheck serve` binary with the Go client or curl over
# loopback. Each benchmark interleaves a case with its baseline round by
# round, so both see the same machine load; ratios, not absolute times,
# are what compare across runs on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

rounds=50
claims=100000
if [ "${BENCH_FULL:-}" = 1 ]; then rounds=200; claims=1000000; fi

work=$(mktemp -d)
services_started=
goaws_started=
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$services_started" ]; then
    ./scripts/fakegcs.sh stop "$work" >/dev/null 2>&1 || true
    ./scripts/azurite.sh stop "$work" >/dev/null 2>&1 || true
    ./scripts/minio.sh stop "$work" >/dev/null 2>&1 || true
    ./scripts/postgres.sh stop "$work" >/dev/null 2>&1 || true
  fi
  if [ -n "$goaws_started" ]; then ./scripts/goaws.sh stop "$work" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${TEST_DATABASE_URL:-}" ] || [ -z "${TEST_S3_URL:-}" ] || [ -z "${TEST_GCS_URL:-}" ] || [ -z "${TEST_AZURE_URL:-}" ]; then
  services_started=1
  if [ -z "${TEST_DATABASE_URL:-}" ]; then env=$(./scripts/postgres.sh start "$work"); eval "$env"; fi
  if [ -z "${TEST_S3_URL:-}" ]; then env=$(./scripts/minio.sh start "$work"); eval "$env"; fi
  if [ -z "${TEST_GCS_URL:-}" ]; then env=$(./scripts/fakegcs.sh start "$work"); eval "$env"; fi
  if [ -z "${TEST_AZURE_URL:-}" ] && command -v npm >/dev/null; then env=$(./scripts/azurite.sh start "$work"); eval "$env"; fi
fi

rows=()
# row NAME MEASURE VALUE TARGET OP: one line of the table; OP is ">=" or
# "<=" and says which side of the target passes.
row() {
  local ok=no
  if [ -z "$3" ]; then
    rows+=("$(printf '| %s | %s | (not measured) | %s %s | no |' "$1" "$2" "$5" "$4")")
    return
  fi
  if awk -v v="$3" -v t="$4" -v op="$5" 'BEGIN { exit !((op == ">=" && v >= t) || (op == "<=" && v <= t)) }'; then ok=yes; fi
  rows+=("$(printf '| %s | %s | %.2f | %s %s | %s |' "$1" "$2" "$3" "$5" "$4" "$ok")")
}

# metric FILE BENCH UNIT prints the value reported with UNIT on the line
# of benchmark BENCH (a prefix of its name) in a go test -bench output.
metric() {
  awk -v b="$2" -v u="$3" 'index($1, b) == 1 { for (i = 2; i < NF; i++) if ($(i+1) == u) { print $i; exit } }' "$1"
}

bench() { # bench OUT PKG PATTERN BENCHTIME [env...]
  local out=$1 pkg=$2 pattern=$3 benchtime=$4
  shift 4
  log "go test -bench $pattern -benchtime $benchtime $pkg"
  env "$@" go test -run '^$' -bench "$pattern" -benchtime "$benchtime" -timeout 60m "$pkg" | tee "$out" >&2
}

bench "$work/serve.txt" ./internal/systemtest 'ServeUserPaths$' "${rounds}x"
row "dedup hit over HTTP, Go client (1 MiB)" "hit / miss" "$(metric "$work/serve.txt" BenchmarkServeUserPaths hit/miss)" 0.3 "<="

# curl against the real server: a miss (fresh bytes) and a hit (the same
# bytes again), digest first with Expect: 100-continue, interleaved.
log "curl: dedup hit and miss through claimcheck serve"
go build -o "$work/claimcheck" ./cmd/claimcheck
"$work/claimcheck" serve --data "$work/data" --listen 127.0.0.1:0 2> "$work/server.log" &
server_pid=$!
url=$(serve_url "$work/server.log")
head -c $((1 << 20)) /dev/urandom > "$work/payload"
curl_put() {
  curl -sS -o /dev/null -w '%{time_total}\n' -X PUT -H 'Expect: 100-continue' \
    -H "Claimcheck-Digest: sha256:$(sha256sum "$1" | cut -d' ' -f1)" \
    --data-binary "@$1" "$url/v1/namespaces/bench/claims"
}
miss=0 hit=0
for i in $(seq 1 "$rounds"); do
  printf '%016d' "$i" | dd of="$work/payload" conv=notrunc status=none # fresh bytes
  miss=$(awk -v a="$miss" -v b="$(curl_put "$work/payload")" 'BEGIN { print a + b }')
  hit=$(awk -v a="$hit" -v b="$(curl_put "$work/payload")" 'BEGIN { print a + b }')
done
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
row "dedup hit over HTTP, curl (1 MiB)" "hit / miss" "$(awk -v h="$hit" -v m="$miss" 'BEGIN { print h / m }')" 0.3 "<="

# Anchored: S3PutRedeem1MiB (below) would match 'PutRedeem1MiB$' too. The
# floor rows are the best ratio any store that hashes what it stores and
# verifies what it hands out could reach on this machine (ADR 0155).
bench "$work/putredeem.txt" ./engine '^Benchmark(PutRedeem1MiB|StreamFloor1MiB)$' "${rounds}x"
row "floor: raw stream + two sha256 passes, sequential" "÷ raw stream" "$(metric "$work/putredeem.txt" BenchmarkStreamFloor1MiB sequential/raw-stream)" 0.5 ">="
row "floor: raw stream + two sha256 passes beside the I/O" "÷ raw stream" "$(metric "$work/putredeem.txt" BenchmarkStreamFloor1MiB pipelined/raw-stream)" 0.5 ">="
row "engine put + redeem (1 MiB)" "÷ raw stream" "$(metric "$work/putredeem.txt" BenchmarkPutRedeem1MiB engine/raw-stream)" 0.5 ">="
row "HTTP put + redeem (1 MiB, in-process server)" "÷ raw stream" "$(metric "$work/putredeem.txt" BenchmarkPutRedeem1MiB http/raw-stream)" 0.35 ">="

bench "$work/minio.txt" ./internal/systemtest 'VersusMinIO$' "$((rounds / 2))x"
for c in json-1MiB random-1MiB 64KiB-16w 64KiB-64w; do
  row "serve (embedded) vs MinIO: $c" "× MinIO" "$(metric "$work/minio.txt" "BenchmarkVersusMinIO/embedded/$c" ratio)" 1.2 ">="
done
for c in json-1MiB random-1MiB 64KiB-16w 64KiB-64w; do
  row "serve (PostgreSQL + MinIO) vs MinIO: $c" "× MinIO" "$(metric "$work/minio.txt" "BenchmarkVersusMinIO/postgres-minio/$c" ratio)" 0.8 ">="
done

# Google Cloud Storage and Azure Blob Storage on their emulators:
# `claimcheck serve` (PostgreSQL + the emulator) against the cloud's own
# Go SDK on the same emulator.
bench "$work/clouds.txt" ./internal/systemtest 'VersusCloudEmulators$' "$((rounds / 2))x"
for cl in gcs azure; do
  for c in json-1MiB random-1MiB; do
    row "serve (PostgreSQL + $cl emulator) vs its SDK: $c" "× SDK" "$(metric "$work/clouds.txt" "BenchmarkVersusCloudEmulators/$cl/$c" ratio)" 0.8 ">="
  done
done

bench "$work/s3.txt" ./engine 'S3PutRedeem1MiB$' "${rounds}x"
row "engine on PostgreSQL + MinIO (1 MiB)" "× raw AWS SDK" "$(metric "$work/s3.txt" BenchmarkS3PutRedeem1MiB ratio)" 0.8 ">="

bench "$work/sweeper.txt" ./meta/sqlmeta 'SweeperMillion$' 1x "CLAIMCHECK_BENCH_CLAIMS=$claims"
kclaims() { awk -v v="$(metric "$work/sweeper.txt" "BenchmarkSweeperMillion/$1" claims/s)" 'BEGIN { if (v != "") print v / 1000 }'; }
row "sweeper, $claims due claims (SQLite, time-ordered ids)" "claims/s ÷ 1000" "$(kclaims sqlite/ordered)" 10 ">="
row "sweeper, $claims due claims (PostgreSQL, time-ordered ids)" "claims/s ÷ 1000" "$(kclaims postgres/ordered)" 10 ">="
row "sweeper, $claims due claims (SQLite, ids spread as random ones)" "claims/s ÷ 1000" "$(kclaims sqlite/spread)" 10 ">="
row "sweeper, $claims due claims (PostgreSQL, ids spread as random ones)" "claims/s ÷ 1000" "$(kclaims postgres/spread)" 10 ">="

# SQS: the envelope against the same round by hand with the SDKs, through
# goaws with the payloads in MinIO (integrations/sqs, its own module).
if [ -z "${TEST_SQS_ENDPOINT:-}" ]; then goaws_started=1; env=$(./scripts/goaws.sh start "$work"); eval "$env"; fi
bench "$work/sqs.txt" ./integrations/sqs 'RoundTrip$' "$((rounds / 2))x"
for m in 1 10; do
  row "SQS send + receive + delete, envelope vs by hand ($m MiB)" "× SDK round" "$(metric "$work/sqs.txt" "BenchmarkRoundTrip/${m}MiB" envelope/sdk-speed)" 0.8 ">="
done

echo
echo "| benchmark | measure | value | target | met |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
