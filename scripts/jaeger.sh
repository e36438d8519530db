#!/usr/bin/env bash
# Start or stop a throw-away Jaeger (all in one: an OTLP receiver and the
# query API, traces in memory) for the tracing tests.
#
#   eval "$(scripts/jaeger.sh start DIR)"   # prints export TEST_JAEGER_OTLP=... TEST_JAEGER_QUERY=...
#   scripts/jaeger.sh stop DIR
#
# Jaeger is built once at a pinned version into a cache directory outside
# the repository (${XDG_CACHE_HOME:-~/.cache}/claimcheck). `go install`
# refuses it (its go.mod has replace directives), so the build adds it as
# a tool of a small module of its own there and builds that package; the
# first build takes several minutes. The server listens on 127.0.0.1
# only, on free ports: OTLP over HTTP (TEST_JAEGER_OTLP, the base URL an
# OTEL_EXPORTER_OTLP_ENDPOINT takes) and the query API (TEST_JAEGER_QUERY,
# /api/traces/{id}).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

# A version known to build with the project's Go toolchain.
JAEGER_VERSION=v1.76.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/jaeger-$JAEGER_VERSION"

binary() {
  if [ -x "$cache/jaeger" ]; then echo "$cache/jaeger"; return 0; fi
  log "building Jaeger $JAEGER_VERSION into $cache (once; takes several minutes)"
  mkdir -p "$cache/src"
  # Outside the repository, so go.work and go.mod do not apply.
  (
    cd "$cache/src"
    [ -f go.mod ] || GOWORK=off go mod init claimcheck.local/jaegerbuild
    GOWORK=off GOFLAGS= go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION"
    GOWORK=off GOFLAGS= go build -o "$cache/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
  ) >&2
  mv "$cache/jaeger.tmp" "$cache/jaeger"
  echo "$cache/jaeger"
}

# config writes Jaeger's configuration: the OTLP receiver, memory
# storage, the query API and a health check, each on its own port, and
# no telemetry endpoint of its own. The batch processor flushes at once,
# so a test reads a trace back as soon as it was exported.
config() {
  cat <<YAML
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:$3
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:$2
    grpc:
      endpoint: 127.0.0.1:$4
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$1
processors:
  batch:
    timeout: 10ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
YAML
}

start() {
  local dir=$1
  local bin; bin=$(binary)
  mkdir -p "$dir/jaeger"
  local otlp query health grpc tries=0 pid
  while :; do
    otlp=$(free_port); query=$(free_port); health=$(free_port); grpc=$(free_port)
    config "$otlp" "$query" "$health" "$grpc" >"$dir/jaeger/config.yaml"
    setsid "$bin" --config "$dir/jaeger/config.yaml" >"$dir/jaeger/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/jaeger/pid"
    local i
    for i in $(seq 1 300); do
      if curl -fs "http://127.0.0.1:$query/api/services" >/dev/null 2>&1 &&
        curl -s -o /dev/null "http://127.0.0.1:$otlp/v1/traces" 2>/dev/null; then break; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1 # polling a starting server
    done
    if curl -fs "http://127.0.0.1:$query/api/services" >/dev/null 2>&1; then break; fi
    # Not answering: a port taken meanwhile, or a slow start. Retry on
    # new ports a few times, then fail with the server's own words.
    kill "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      log "Jaeger $JAEGER_VERSION did not answer on 127.0.0.1 (query API /api/services, OTLP /v1/traces) after $tries starts of 30s; its log ($dir/jaeger/server.log):"
      cat "$dir/jaeger/server.log" >&2
      return 1
    fi
    log "Jaeger did not answer (start $tries of 5); retrying on new ports"
  done
  log "Jaeger on 127.0.0.1: OTLP/HTTP $otlp, query $query"
  echo "export TEST_JAEGER_OTLP='http://127.0.0.1:$otlp' TEST_JAEGER_QUERY='http://127.0.0.1:$query'"
}

stop() {
  stop_recorded "$1/jaeger/pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
