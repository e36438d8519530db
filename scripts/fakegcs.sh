#!/usr/bin/env bash
# Start or stop a throw-away fake-gcs-server (Google Cloud Storage's JSON
# and XML APIs) for the tests.
#
#   eval "$(scripts/fakegcs.sh start DIR)"   # prints export TEST_GCS_URL=...
#   scripts/fakegcs.sh stop DIR
#
# fake-gcs-server is built once with `go install` at a pinned version
# into a cache directory outside the repository
# (${XDG_CACHE_HOME:-~/.cache}/claimcheck) and reused from there. The
# server keeps its objects in DIR/fakegcs/data, listens on 127.0.0.1
# only, on a free port, and gets one bucket, "claimcheck-test". It checks
# no credentials; V4 URLs are signed with a key made here
# (DIR/fakegcs/signer.pem), which the URL names.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

FAKEGCS_VERSION=v1.56.1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/fake-gcs-server-$FAKEGCS_VERSION"
bucket=claimcheck-test
signer=claimcheck-test@claimcheck-test.iam.gserviceaccount.com

binary() {
  if [ -x "$cache/fake-gcs-server" ]; then echo "$cache/fake-gcs-server"; return 0; fi
  log "building fake-gcs-server $FAKEGCS_VERSION into $cache (once; takes a few minutes)"
  mkdir -p "$cache"
  # Outside the repository, so go.work and go.mod do not apply.
  (cd "$cache" && GOWORK=off GOFLAGS= GOBIN="$cache/bin.tmp" go install "github.com/fsouza/fake-gcs-server@$FAKEGCS_VERSION") >&2
  mv "$cache/bin.tmp/fake-gcs-server" "$cache/fake-gcs-server"
  rmdir "$cache/bin.tmp"
  echo "$cache/fake-gcs-server"
}

start() {
  local dir=$1
  local bin; bin=$(binary)
  # A throw-away server: whatever an earlier one left is dropped.
  rm -rf "$dir/fakegcs/data"
  mkdir -p "$dir/fakegcs/data"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/fakegcs/signer.pem" 2>/dev/null
  local port tries=0 pid
  while :; do
    port=$(free_port)
    # -public-host: the host of the signed URLs the store makes, so the
    # server takes their PUTs; -cors-headers: the header a signed PUT
    # from a browser sends besides Content-Type.
    setsid "$bin" -scheme http -host 127.0.0.1 -port "$port" -public-host "127.0.0.1:$port" \
      -external-url "http://127.0.0.1:$port" -backend filesystem -filesystem-root "$dir/fakegcs/data" \
      -cors-headers X-Goog-Content-Length-Range,X-Goog-If-Generation-Match -log-level error \
      >"$dir/fakegcs/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/fakegcs/pid"
    local i
    for i in $(seq 1 300); do
      if curl -fs "http://127.0.0.1:$port/storage/v1/b" >/dev/null 2>&1; then break; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1 # polling a starting server
    done
    if curl -fs "http://127.0.0.1:$port/storage/v1/b" >/dev/null 2>&1; then break; fi
    kill "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$dir/fakegcs/server.log" >&2
      return 1
    fi
  done
  if ! curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$bucket\"}" \
    "http://127.0.0.1:$port/storage/v1/b?project=claimcheck-test" >/dev/null; then
    stop "$dir" # not left running without its bucket
    return 1
  fi
  log "fake-gcs-server on 127.0.0.1:$port (objects in $dir/fakegcs/data, bucket $bucket)"
  echo "export TEST_GCS_URL='gs://$bucket?endpoint=http://127.0.0.1:$port&anonymous=true&access_id=$signer&private_key_path=$dir/fakegcs/signer.pem'"
}

stop() {
  stop_recorded "$1/fakegcs/pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
