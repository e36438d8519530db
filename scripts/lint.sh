#!/usr/bin/env bash
# golangci-lint over every Go module of the repository, with the committed
# configuration (.golangci.yml at the root); fails on any issue.
#
#   ./scripts/lint.sh
#
# golangci-lint is built once with `go install` at a pinned version into a
# cache directory outside the repository
# (${XDG_CACHE_HOME:-~/.cache}/claimcheck) and reused from there; the
# first build takes a minute or two. A different version may report
# different issues, so the version is part of the configuration: change
# both together.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
root="$(cd "$here/.." && pwd)"
cd "$root"

# A version known to build with the project's Go toolchain.
GOLANGCI_LINT_VERSION=v2.15.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/golangci-lint-$GOLANGCI_LINT_VERSION"

binary() {
  if [ -x "$cache/golangci-lint" ]; then echo "$cache/golangci-lint"; return 0; fi
  log "building golangci-lint $GOLANGCI_LINT_VERSION into $cache (once)"
  mkdir -p "$cache"
  # Outside the repository, so go.work and go.mod do not apply. A failed
  # download is retried: the module proxy is a network service.
  local tries=0
  until (cd "$cache" && GOWORK=off GOFLAGS= GOBIN="$cache/bin.tmp" \
    go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION") >&2; do
    tries=$((tries + 1))
    if [ $tries -ge 3 ]; then
      log "could not build golangci-lint $GOLANGCI_LINT_VERSION"
      return 1
    fi
    log "retrying the build of golangci-lint"
    sleep $((tries * 5)) # a pause before asking the network again
  done
  mv "$cache/bin.tmp/golangci-lint" "$cache/golangci-lint"
  rmdir "$cache/bin.tmp"
  echo "$cache/golangci-lint"
}

bin=$(binary)

# Every module joined by go.work (the root and the integrations), then the
# modules kept out of it, which build alone (GOWORK=off): deploy/ needs
# Prometheus itself, deploy/helm Helm and the Kubernetes API types,
# scripts/sqlitebench a cgo SQLite driver, scripts/goaws the goaws
# emulator the SQS tests run.
mapfile -t modules < <(go list -m -f '{{.Dir}}')
standalone=(deploy deploy/helm scripts/sqlitebench scripts/goaws)

failed=()
lint() {
  local dir=$1; shift
  local name=.
  if [ "$dir" != "$root" ]; then name=${dir#"$root"/}; fi
  log "$name"
  if ! (cd "$dir" && env "$@" "$bin" run --config "$root/.golangci.yml" ./...); then
    failed+=("$name")
  fi
}
for dir in "${modules[@]}"; do
  lint "$dir"
done
for dir in "${standalone[@]}"; do
  lint "$root/$dir" GOWORK=off
done

if [ ${#failed[@]} -gt 0 ]; then
  log "issues in: ${failed[*]}"
  exit 1
fi
log "no issues"
