#!/usr/bin/env bash
# Peak memory of the server and of the CLI while putting and redeeming one
# large file through `claimcheck serve` on loopback. The target is a peak
# RSS under 64 MiB for each process with a 1 GiB payload.
#
#   ./scripts/bench-rss.sh            # 1 GiB of random bytes
#   SIZE_MB=256 ./scripts/bench-rss.sh
#   STORAGE="$TEST_GCS_URL" ./scripts/bench-rss.sh     # on another storage
#   STORAGE="$TEST_AZURE_URL" ./scripts/bench-rss.sh   # (scripts/fakegcs.sh, azurite.sh)
#
# Everything lives in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
size_mb=${SIZE_MB:-1024}
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/claimcheck" ./cmd/claimcheck
head -c "$((size_mb << 20))" /dev/urandom > "$work/payload"

if [ -n "${STORAGE:-}" ]; then export CLAIMCHECK_STORAGE="$STORAGE"; fi
"$work/claimcheck" serve --data "$work/data" --listen 127.0.0.1:0 2> "$work/server.log" &
server_pid=$!
url=$(serve_url "$work/server.log")

kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

/usr/bin/time -f '%M' -o "$work/put.rss" "$work/claimcheck" put --server "$url" --ns bench "$work/payload" > "$work/ref.json"
/usr/bin/time -f '%M' -o "$work/get.rss" "$work/claimcheck" get --server "$url" "@$work/ref.json" -o "$work/copy"
cmp "$work/payload" "$work/copy"
server_kib=$(kib "$server_pid")

printf 'payload: %d MiB (random bytes, default zstd policy), storage: %s\n' "$size_mb" "${STORAGE:-files}"
mib() { awk -v k="$1" 'BEGIN { printf "%6.1f MiB", k / 1024 }'; }
echo "peak RSS  server: $(mib "$server_kib")"
echo "peak RSS  put:    $(mib "$(cat "$work/put.rss")")"
echo "peak RSS  get:    $(mib "$(cat "$work/get.rss")")"
