#!/usr/bin/env bash
# Build claimcheck's container image (deploy/container/Containerfile) with
# podman, or buildah when podman is missing.
#
#   scripts/image.sh [--binary PATH] [--tag NAME:TAG] [--version V] [--smoke]
#
# --binary is a static linux binary, e.g. scripts/release.sh's
# claimcheck_linux_arm64; the image gets that binary's architecture.
# Without it the script builds one for linux/<host arch> exactly as the
# release is built, by scripts/release.sh (static, -trimpath, -ldflags
# "-s -w" and the VERSION file's version stamped where `claimcheck
# version` reads it): the image from source is the release's binary.
# --tag defaults to claimcheck:<version>, --version (the image's version
# label) to the VERSION file's. Prints the tag when done.
#
# --smoke then runs the image with podman on a free port of 127.0.0.1,
# puts a payload, redeems it with curl and compares, and removes the
# container and its volume (the check scripts/test.sh runs where podman
# works).
#
# Neither tool present: as root the script installs podman with apt-get
# (Debian's package); otherwise it says what to install. The CA bundle
# S3 over TLS needs comes from the host's ca-certificates package.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
root="$(cd "$here/.." && pwd)"

binary= tag= version=$(cat "$root/VERSION") smoke=
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --tag) tag=${2:?--tag needs NAME:TAG}; shift 2 ;;
    --version) version=${2:?--version needs a value}; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
tag=${tag:-claimcheck:$version}

# apt_install PACKAGE installs a Debian package when running as root.
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    return 1
  fi
  log "installing $1 with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2
}

tool=
if command -v podman >/dev/null; then tool=podman
elif command -v buildah >/dev/null; then tool=buildah
elif apt_install podman; then tool=podman
else
  echo "image.sh: neither podman nor buildah is installed: install one (Debian: apt-get install podman)" >&2
  exit 1
fi

ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$ca" ] && ! apt_install ca-certificates; then
  echo "image.sh: $ca is missing: install the ca-certificates package" >&2
  exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

if [ -z "$binary" ]; then
  arch=$(go env GOARCH)
  log "building claimcheck for linux/$arch as the release does (scripts/release.sh)"
  "$root/scripts/release.sh" "$ctx/release" "linux/$arch"
  mv "$ctx/release/claimcheck_linux_$arch" "$ctx/claimcheck"
  rm -rf "$ctx/release"
else
  if [ ! -f "$binary" ]; then
    echo "image.sh: --binary $binary: no such file" >&2; exit 1
  fi
  # The build info the Go toolchain embeds says what the binary is for;
  # a scratch image runs only a static linux one.
  info=$(go version -m "$binary" 2>/dev/null) || {
    echo "image.sh: --binary $binary: not a Go binary with build info" >&2; exit 1; }
  setting() { awk -v k="$1" '$1 == "build" { split($2, kv, "="); if (kv[1] == k) print substr($2, length(k) + 2) }' <<<"$info"; }
  if [ "$(setting GOOS)" != linux ]; then
    echo "image.sh: --binary $binary is built for GOOS=$(setting GOOS), want linux" >&2; exit 1
  fi
  if [ "$(setting CGO_ENABLED)" != 0 ]; then
    echo "image.sh: --binary $binary is not static (CGO_ENABLED=$(setting CGO_ENABLED)); build it with CGO_ENABLED=0" >&2; exit 1
  fi
  arch=$(setting GOARCH)
  cp "$binary" "$ctx/claimcheck"
fi
chmod 0755 "$ctx/claimcheck"
cp "$ca" "$ctx/ca-certificates.crt"
cp "$root/deploy/container/claimcheck.yaml" "$ctx/claimcheck.yaml"
mkdir -p "$ctx/state/data"

file="$root/deploy/container/Containerfile"
log "building $tag for linux/$arch with $tool"
case $tool in
  podman) podman build --arch "$arch" --os linux --build-arg "VERSION=$version" -t "$tag" -f "$file" "$ctx" >&2 ;;
  buildah) buildah build --arch "$arch" --os linux --build-arg "VERSION=$version" -t "$tag" -f "$file" "$ctx" >&2 ;;
esac

if [ -n "$smoke" ]; then
  if [ "$tool" != podman ]; then
    echo "image.sh: --smoke runs the image with podman, which is not installed" >&2; exit 1
  fi
  run=(podman)
  # crun, podman's default runtime, refuses hosts that mount cgroup v1
  # and v2 side by side ("cgroups in hybrid mode not supported"); runc
  # runs there.
  if [ -d /sys/fs/cgroup/unified ]; then
    command -v runc >/dev/null || apt_install runc || {
      echo "image.sh: --smoke on a host with hybrid cgroups needs runc (Debian: apt-get install runc)" >&2; exit 1; }
    run+=(--runtime runc)
  fi
  name=claimcheck-smoke-$$
  port=$(free_port)
  cleanup_smoke() {
    "${run[@]}" rm -f -v "$name" >/dev/null 2>&1 || true
    rm -rf "$ctx"
  }
  trap cleanup_smoke EXIT
  # Limits below the host's: raising one needs CAP_SYS_RESOURCE, which
  # sandboxes and CI runners often lack, and podman raises both by default.
  # Read-only root and no capabilities, as the Helm chart runs it: the
  # server writes only to the data volume.
  "${run[@]}" run -d --name "$name" --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    --read-only --cap-drop=all --security-opt no-new-privileges \
    -p "127.0.0.1:$port:8080" "$tag" >/dev/null
  url=http://127.0.0.1:$port
  for _ in $(seq 1 100); do
    curl -fsS -m 2 "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  head -c 100000 /dev/urandom >"$ctx/payload"
  ref=$(curl -fsS -m 30 -X PUT --data-binary "@$ctx/payload" "$url/v1/namespaces/smoke/claims") || {
    "${run[@]}" logs "$name" >&2; echo "image.sh: put through the image failed" >&2; exit 1; }
  id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' <<<"$ref")
  curl -fsS -m 30 "$url/v1/claims/$id" -o "$ctx/redeemed"
  cmp -s "$ctx/payload" "$ctx/redeemed" || { echo "image.sh: the redeemed payload differs from the put" >&2; exit 1; }
  log "smoke: put and redeemed $id through $tag on $url"
fi
echo "$tag"
