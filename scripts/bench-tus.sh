#!/usr/bin/env bash
# A resumable upload over tus (`claimcheck upload --resume`) against a
# plain streaming put (`claimcheck put`) of the same file, each into a
# fresh `claimcheck serve` on the embedded defaults (SQLite, files,
# zstd) on loopback: peak RSS of the server (VmHWM) and of the CLI, and
# MB/s of the whole command (hashing included: both hash the file first).
#
#   ./scripts/bench-tus.sh                    # 1 GiB of random bytes
#   SIZE_MB=256 ./scripts/bench-tus.sh
#   COMPRESSION=none ./scripts/bench-tus.sh   # the namespace stores as sent
#
# Everything lives in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
size_mb=${SIZE_MB:-1024}
compression=${COMPRESSION:-}
work=$(mktemp -d)
server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=
}
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/claimcheck" ./cmd/claimcheck
head -c "$((size_mb << 20))" /dev/urandom > "$work/payload"

start_server() {
  rm -rf "$work/data" "$work/server.log"
  env ${compression:+CLAIMCHECK_DEFAULTS__COMPRESSION="$compression"} \
    "$work/claimcheck" serve --data "$work/data" --listen 127.0.0.1:0 2> "$work/server.log" &
  server_pid=$!
  url=$(serve_url "$work/server.log")
}

kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

# measure NAME CLI-ARGS...: one fresh server, one command, one row.
measure() {
  local name=$1
  shift
  start_server
  local t0 t1
  t0=$(date +%s.%N)
  XDG_CACHE_HOME="$work/cache" /usr/bin/time -f '%M' -o "$work/cli.rss" \
    "$work/claimcheck" "$@" --server "$url" --ns bench "$work/payload" > "$work/ref.json"
  t1=$(date +%s.%N)
  "$work/claimcheck" get --server "$url" "@$work/ref.json" -o "$work/copy"
  cmp "$work/payload" "$work/copy"
  rm -f "$work/copy"
  local server_kib
  server_kib=$(kib "$server_pid")
  stop_server
  printf '| %s | %s | %s | %s |\n' "$name" \
    "$(awk -v s="$size_mb" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", s * 1.048576 / (b - a) }')" \
    "$(mib "$server_kib")" "$(mib "$(cat "$work/cli.rss")")"
}

printf 'payload: %d MiB (random bytes), compression: %s\n\n' "$size_mb" "${compression:-the default (zstd)}"
echo '| command | MB/s | server peak RSS | CLI peak RSS |'
echo '|---|---|---|---|'
measure 'put (one streaming PUT)' put
measure 'upload --resume (tus, 16 MiB chunks)' upload --resume
