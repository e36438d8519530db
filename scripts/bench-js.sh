#!/usr/bin/env bash
# The JavaScript client (Node) against the Go client (the CLI), same
# server, same file: put, redeem and direct upload of SIZE_MB (default
# 100) random bytes through `claimcheck serve` on loopback, with file
# storage and compression off (the server would otherwise spend the time
# compressing incompressible bytes). Prints MB/s and the peak RSS of
# each client process (/usr/bin/time).
#
#   ./scripts/bench-js.sh
#   SIZE_MB=500 ./scripts/bench-js.sh
#
# Everything lives in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
size_mb=${SIZE_MB:-100}
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/claimcheck" ./cmd/claimcheck
(cd clients/js && [ -d node_modules ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
head -c "$((size_mb << 20))" /dev/urandom > "$work/payload"

CLAIMCHECK_DEFAULTS__COMPRESSION=none "$work/claimcheck" serve --data "$work/data" --listen 127.0.0.1:0 2> "$work/server.log" &
server_pid=$!
url=$(serve_url "$work/server.log")

# run NAME CMD…: time CMD, print MB/s and peak RSS.
run() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$work/rss" "$@"
  t1=$(date +%s.%N)
  awk -v n="$name" -v mb="$size_mb" -v t0="$t0" -v t1="$t1" -v rss="$(tail -1 "$work/rss")" \
    'BEGIN { printf "%-22s %7.1f MB/s  %6.1f s  peak RSS %6.1f MiB\n", n, mb * 1.048576 / (t1 - t0), t1 - t0, rss / 1024 }' >&3
}
exec 3>&1 # the results, whatever a command's stdout is redirected to

printf 'payload: %d MiB of random bytes; node %s, %s\n' "$size_mb" "$(node --version)" "$(go version | cut -d' ' -f3)"
op=clients/js/bench/op.mjs
run "go put"         "$work/claimcheck" put --server "$url" --ns bench "$work/payload" > "$work/ref-go.json"
run "go redeem"      "$work/claimcheck" get --server "$url" "@$work/ref-go.json" -o "$work/copy-go"
run "go upload"      "$work/claimcheck" upload --server "$url" --ns bench "$work/payload" > "$work/up-go.json"
rm -f "$work/copy-go"
run "node put"       node "$op" put "$url" "$work/payload" > "$work/ref-node.json"
run "node redeem"    node "$op" redeem "$url" "$work/ref-node.json" "$work/copy-node"
run "node upload"    node "$op" upload "$url" "$work/payload" > "$work/up-node.json"
cmp "$work/payload" "$work/copy-node"
