#!/usr/bin/env bash
# The fleet's fault scenarios in their long mode, for as long as asked: a
# schedule of scenarios drawn at random from a seed, each run with its
# long settings and a seed of its own drawn from the same one, every
# history checked by the lifecycle checker (internal/history) and its
# report kept. The seed is printed first; SEED=N repeats a run's
# schedule. It stops by itself once DURATION is over (the scenario under
# way finishes first) and exits 1 if any scenario failed.
#   ./scripts/fleet-faults.sh [DURATION]        # default 1h; e.g. 20m, 3h
#   SEED=12345 ./scripts/fleet-faults.sh 1h     # the same schedule again
# It starts PostgreSQL, MinIO and, where Debian's patroni and etcd can be
# installed, the Patroni cluster, as scripts/test.sh does; the network
# namespace scenarios need root. Reports: $FLEET_FAULTS_DIR (default a
# directory under /tmp, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

duration=${1:-1h}
case "$duration" in
  *[0-9]h) seconds=$(( ${duration%h} * 3600 )) ;;
  *[0-9]m) seconds=$(( ${duration%m} * 60 )) ;;
  *[0-9]s) seconds=${duration%s} ;;
  *) echo "usage: $0 [DURATION: a whole number of s, m or h, like 90m]" >&2; exit 2 ;;
esac
seed=${SEED:-$(( (RANDOM << 15) | RANDOM ))}
RANDOM=$seed
out=${FLEET_FAULTS_DIR:-$(mktemp -d /tmp/fleet-faults.XXXXXX)}
mkdir -p "$out"
echo "== fleet faults: seed $seed, for $duration, reports in $out"

work=$(mktemp -d)
cleanup() {
  ./scripts/patroni.sh stop "$work" || true
  ./scripts/minio.sh stop "$work" || true
  ./scripts/postgres.sh stop "$work" || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "${TEST_DATABASE_URL:-}" ]; then eval "$(./scripts/postgres.sh start "$work")"; fi
if [ -z "${TEST_S3_URL:-}" ]; then eval "$(./scripts/minio.sh start "$work")"; fi
if [ -z "${TEST_PATRONI_DSN:-}" ]; then
  if env=$(./scripts/patroni.sh start "$work"); then eval "$env"; else log "no Patroni cluster: its scenario skips"; fi
fi

# name|test|long settings (the scenario's seed is added to each run).
scenarios=(
  "replicas-kill9|TestReplicasConcurrent|CLAIMCHECK_TEST_REPLICAS_LOAD=60s"
  "rolling-restart|TestRollingRestartWithStreams|CLAIMCHECK_TEST_ROLLING_RESTARTS=10"
  "rolling-upgrade|TestRollingUpgradeFromPreviousRelease|CLAIMCHECK_TEST_UPGRADE_LOAD=20s"
  "stalled-commit|TestStalledCommitAnswers503|"
  "shred|TestShreddingUnderLoad|"
  "patroni-failover|TestPatroniFailover|CLAIMCHECK_TEST_PATRONI_ROUNDS=3"
  "distributed-minio|TestDistributedMinio|CLAIMCHECK_TEST_FAULT_DURATION=5m"
  "partitions|TestPartitions|CLAIMCHECK_TEST_FAULT_DURATION=3m"
)

end=$(( $(date +%s) + seconds ))
round=0 failed=0
while [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  pick=${scenarios[$(( RANDOM % ${#scenarios[@]} ))]}
  IFS='|' read -r name test settings <<<"$pick"
  run_seed=$(( (RANDOM << 15) | RANDOM ))
  dir="$out/$(printf '%04d' "$round")-$name"
  mkdir -p "$dir"
  echo "-- round $round: $name (seed $run_seed) $settings"
  # shellcheck disable=SC2086 # settings are NAME=VALUE words
  if ! env $settings CLAIMCHECK_TEST_FAULT_SEED="$run_seed" TEST_HISTORY_DIR="$dir" \
    go test -count=1 -timeout 30m -run "^${test}\$" -v ./internal/systemtest/ >"$dir/go-test.log" 2>&1; then
    failed=$((failed + 1))
    echo "FAIL: round $round ($name, seed $run_seed); log: $dir/go-test.log"
    grep -E -- '--- FAIL|violations: [1-9]|_test.go:[0-9]+:' "$dir/go-test.log" | head -20 || true
  fi
  grep -h 'violations:' "$dir"/*.report 2>/dev/null | sed "s/^/   $name: /" || true
done
violations=$(cat "$out"/*/*.report 2>/dev/null | grep -c 'violations: [1-9]' || true)
echo "== fleet faults: seed $seed, $round rounds, $failed failed, $violations histories with violations (reports in $out)"
[ "$failed" -eq 0 ] && [ "$violations" -eq 0 ]
