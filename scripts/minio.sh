#!/usr/bin/env bash
# Start or stop a throw-away MinIO server (S3) for the tests.
#
#   eval "$(scripts/minio.sh start DIR)"   # prints export TEST_S3_URL=..., TEST_S3_DATA_DIR and the AWS keys
#   scripts/minio.sh stop DIR
#   scripts/minio.sh path                  # where the binary is kept (built or not)
#
# MinIO is built once with `go install` at a pinned version into a cache
# directory outside the repository (${XDG_CACHE_HOME:-~/.cache}/claimcheck)
# and reused from there; the first build takes a few minutes. The server
# keeps its objects in DIR/minio, listens on 127.0.0.1 only, on free ports,
# and gets one bucket, "claimcheck-test".
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

# A version known to build and work with the project's Go toolchain.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/minio-$MINIO_VERSION"
bucket=claimcheck-test
user=claimcheck
secret=claimcheck-secret-key

binary() {
  if [ -x "$cache/minio" ]; then echo "$cache/minio"; return 0; fi
  log "building MinIO $MINIO_VERSION into $cache (once; takes a few minutes)"
  mkdir -p "$cache"
  # Outside the repository, so go.work and go.mod do not apply.
  (cd "$cache" && GOWORK=off GOFLAGS= GOBIN="$cache/bin.tmp" go install "github.com/minio/minio@$MINIO_VERSION") >&2
  mv "$cache/bin.tmp/minio" "$cache/minio"
  rmdir "$cache/bin.tmp"
  echo "$cache/minio"
}

start() {
  local dir=$1
  local bin; bin=$(binary)
  mkdir -p "$dir/minio/data"
  local port cport tries=0 pid
  while :; do
    port=$(free_port)
    cport=$(free_port)
    MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$secret MINIO_BROWSER=off \
      MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
      setsid "$bin" server --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$cport" \
      "$dir/minio/data" >"$dir/minio/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/minio/pid"
    local i
    for i in $(seq 1 300); do
      if curl -fs "http://127.0.0.1:$port/minio/health/ready" >/dev/null 2>&1; then break; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1 # polling a starting server's health endpoint
    done
    if curl -fs "http://127.0.0.1:$port/minio/health/ready" >/dev/null 2>&1; then break; fi
    kill "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$dir/minio/server.log" >&2
      return 1
    fi
  done
  # Create the bucket with a signed S3 request (no MinIO client needed).
  # A MinIO that just passed its readiness probe may still answer 503
  # (its object layer starting, or a loaded machine): retry while it does.
  local code
  for i in $(seq 1 100); do
    code=$(curl -sS -o "$dir/minio/mkbucket.out" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
      --user "$user:$secret" -X PUT "http://127.0.0.1:$port/$bucket" || echo 000)
    case "$code" in
      200 | 409) break ;; # created, or there already (a restart on the same DIR)
      503 | 500 | 000) sleep 0.2 ;; # retrying a starting server's refusal
      *) cat "$dir/minio/mkbucket.out" >&2; return 1 ;;
    esac
  done
  if [ "$code" != 200 ] && [ "$code" != 409 ]; then
    log "MinIO kept answering $code to the bucket's creation"
    cat "$dir/minio/mkbucket.out" >&2
    return 1
  fi
  log "MinIO on 127.0.0.1:$port (objects in $dir/minio/data, bucket $bucket)"
  echo "export AWS_ACCESS_KEY_ID='$user' AWS_SECRET_ACCESS_KEY='$secret' AWS_REGION=us-east-1"
  echo "export TEST_S3_URL='s3://$bucket?endpoint=http://127.0.0.1:$port&region=us-east-1&use_path_style=true'"
  # Where MinIO keeps its buckets (one directory each), for the tests
  # that damage an object.
  echo "export TEST_S3_DATA_DIR='$(cd "$dir/minio/data" && pwd)'"
}

stop() {
  stop_recorded "$1/minio/pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  path) echo "$cache/minio" ;; # the distributed MinIO test runs it in namespaces of its own
  *) echo "usage: $0 start|stop DIR | path" >&2; exit 2 ;;
esac
