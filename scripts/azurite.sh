#!/usr/bin/env bash
# Start or stop a throw-away Azurite (Azure Blob Storage's emulator) for
# the tests.
#
#   eval "$(scripts/azurite.sh start DIR)"   # prints export TEST_AZURE_URL=... and the connection string
#   scripts/azurite.sh stop DIR
#
# Azurite is installed once with `npm ci` from the lockfile committed in
# scripts/azurite/ into a cache directory outside the repository
# (${XDG_CACHE_HOME:-~/.cache}/claimcheck) and reused from there. The
# server keeps its blobs in DIR/azurite, listens on 127.0.0.1 only, on a
# free port, with one account, "claimcheck", whose key is made here, and
# one container, "claimcheck-test".
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

AZURITE_VERSION=$(sed -n 's/.*"azurite": "\(.*\)".*/\1/p' "$here/azurite/package.json")
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/azurite-$AZURITE_VERSION"
account=claimcheck
container=claimcheck-test

binary() {
  if [ -x "$cache/node_modules/.bin/azurite-blob" ] && cmp -s "$here/azurite/package-lock.json" "$cache/package-lock.json"; then
    echo "$cache/node_modules/.bin/azurite-blob"; return 0
  fi
  if ! command -v npm >/dev/null; then
    log "npm not found: install Node 20+ to run Azurite"
    return 1
  fi
  log "installing Azurite $AZURITE_VERSION into $cache (once)"
  mkdir -p "$cache"
  cp "$here/azurite/package.json" "$here/azurite/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error --ignore-scripts) >&2
  echo "$cache/node_modules/.bin/azurite-blob"
}

# create_container PORT KEY makes the container with one Shared Key
# signed request (no Azure client needed).
create_container() {
  local port=$1 key=$2 date sig
  date=$(LC_ALL=C TZ=GMT date '+%a, %d %b %Y %H:%M:%S GMT')
  local sts
  sts=$(printf 'PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:2021-08-06\n/%s/%s/%s\nrestype:container' "$date" "$account" "$account" "$container")
  sig=$(printf '%s' "$sts" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(printf '%s' "$key" | base64 -d | od -An -tx1 | tr -d ' \n')" -binary | base64)
  curl -fsS -X PUT -H "x-ms-date: $date" -H "x-ms-version: 2021-08-06" -H "Content-Length: 0" \
    -H "Authorization: SharedKey $account:$sig" "http://127.0.0.1:$port/$account/$container?restype=container" >/dev/null
}

start() {
  local dir=$1
  local bin; bin=$(binary)
  # A throw-away server: whatever an earlier one left is dropped.
  rm -rf "$dir/azurite/data"
  mkdir -p "$dir/azurite/data"
  local key; key=$(head -c 64 /dev/urandom | base64 -w0)
  local port tries=0 pid
  while :; do
    port=$(free_port)
    AZURITE_ACCOUNTS="$account:$key" setsid "$bin" --blobHost 127.0.0.1 --blobPort "$port" \
      --location "$dir/azurite/data" --silent --disableTelemetry --skipApiVersionCheck \
      >"$dir/azurite/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/azurite/pid"
    local i
    for i in $(seq 1 300); do
      if create_container "$port" "$key" 2>/dev/null; then break; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1 # polling a starting server
    done
    if kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; then break; fi
    kill "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$dir/azurite/server.log" >&2
      return 1
    fi
  done
  log "Azurite on 127.0.0.1:$port (blobs in $dir/azurite/data, account $account, container $container)"
  echo "export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$port/$account;'"
  echo "export TEST_AZURE_URL='azblob://$container'"
}

stop() {
  stop_recorded "$1/azurite/pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
