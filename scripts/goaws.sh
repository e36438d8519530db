#!/usr/bin/env bash
# Start or stop a throw-away goaws server (an SQS and SNS emulator) for
# the tests of integrations/sqs.
#
#   eval "$(scripts/goaws.sh start DIR)"   # prints export TEST_SQS_ENDPOINT=...
#   scripts/goaws.sh stop DIR
#
# goaws is built once from scripts/goaws (a small command around goaws's
# router that listens on 127.0.0.1 only; its go.sum pins goaws) into a
# cache directory outside the repository (${XDG_CACHE_HOME:-~/.cache}/claimcheck)
# and reused from there. goaws v0.5.4 is the first release that speaks the
# JSON protocol the current AWS SDK for Go uses for SQS. The server keeps
# its queues in memory, listens on a free port of 127.0.0.1, names its
# queues http://127.0.0.1:PORT/ACCOUNT/NAME (so that SDKs that send to a
# queue's URL reach it), and takes messages of up to 1 MiB (SQS's limit).
# The tests create their own queues and topics; any access key and region
# are accepted.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

GOAWS_VERSION=v0.5.4
# The build is cached under the version and a digest of the command's
# source, so that a change of scripts/goaws builds anew.
source_digest=$(cat "$here/goaws/main.go" "$here/goaws/go.mod" "$here/goaws/go.sum" | sha256sum | cut -c1-12)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/goaws-$GOAWS_VERSION-$source_digest"

binary() {
  if [ -x "$cache/goaws" ]; then echo "$cache/goaws"; return 0; fi
  log "building goaws $GOAWS_VERSION into $cache (once)"
  mkdir -p "$cache"
  # A failed download is retried: the module proxy is a network service.
  local tries=0
  until (cd "$here/goaws" && GOWORK=off GOFLAGS=-mod=readonly go build -o "$cache/goaws.tmp" .) >&2; do
    tries=$((tries + 1))
    if [ $tries -ge 3 ]; then
      log "could not build goaws $GOAWS_VERSION"
      return 1
    fi
    log "retrying the build of goaws"
    sleep $((tries * 5)) # a pause before asking the network again
  done
  mv "$cache/goaws.tmp" "$cache/goaws"
  echo "$cache/goaws"
}

start() {
  local dir=$1
  local bin; bin=$(binary)
  mkdir -p "$dir/goaws"
  local port tries=0 pid
  while :; do
    port=$(free_port)
    # Queue URLs are made of Host and Port, so they name this server
    # (scripts/goaws/main.go clears the region goaws would put before the
    # host; ARNs have an empty region field).
    cat >"$dir/goaws/goaws.yaml" <<YAML
Local:
  Host: 127.0.0.1
  Port: "$port"
  AccountId: "100010001000"
  LogToFile: false
  EnableDuplicates: false
  QueueAttributeDefaults:
    VisibilityTimeout: 30
    ReceiveMessageWaitTimeSeconds: 0
    MaximumMessageSize: 1048576
YAML
    setsid "$bin" -config "$dir/goaws/goaws.yaml" -listen "127.0.0.1:$port" \
      >"$dir/goaws/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/goaws/pid"
    local i
    for i in $(seq 1 100); do
      if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1 # polling a starting server's health endpoint
    done
    if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
    kill "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$dir/goaws/server.log" >&2
      return 1
    fi
  done
  log "goaws on 127.0.0.1:$port"
  echo "export TEST_SQS_ENDPOINT='http://127.0.0.1:$port'"
}

stop() {
  stop_recorded "$1/goaws/pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
