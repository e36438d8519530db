#!/usr/bin/env bash
# Release builds of the claimcheck command: static binaries (CGO off,
# -trimpath, no build id) for linux, darwin and windows on amd64 and
# arm64, named claimcheck_<os>_<arch>[.exe], each with a CycloneDX SBOM of
# the Go modules linked into it (claimcheck_<os>_<arch>.cdx.json, read
# from the binary's own build information), and SHA256SUMS over all of
# them. The version is the VERSION file's, as `claimcheck version` prints
# it. The same commit builds the same bytes: nothing of the machine, the
# time or the build directory goes into a binary or an SBOM.
#   scripts/release.sh OUTDIR [OS/ARCH...]   # default: every platform
#   scripts/release.sh --check               # CI: linux/amd64 built twice, same sha256; version and SBOM checked
set -euo pipefail
cd "$(dirname "$0")/.."

version=v$(cat VERSION)
# The commit, also stamped by hand: the go command records it only where
# it recognises the checkout (not in a git worktree).
commit=$(git rev-parse HEAD 2>/dev/null || true)
commit_time=$(git log -1 --format=%cI 2>/dev/null || true)
modified=false
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then modified=true; fi
pkg=github.com/claimcheck/claimcheck/internal/cli
all=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)

die() { echo "release.sh: $*" >&2; exit 1; }

# build OUT OS/ARCH: one binary and its SBOM.
build() {
  local out=$1 os=${2%/*} arch=${2#*/} name
  name=claimcheck_${os}_${arch}
  [ "$os" = windows ] && name=$name.exe
  # GOWORK=off: the binary is built from the root module's go.mod alone,
  # as `go install …/cmd/claimcheck@version` builds it, never with the
  # versions the integration modules of go.work would select.
  GOWORK=off CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= \
    go build -trimpath -buildvcs=auto \
      -ldflags "-s -w -buildid= -X $pkg.version=$version -X $pkg.commit=$commit -X $pkg.commitTime=$commit_time -X $pkg.modified=$modified" \
      -o "$out/$name" ./cmd/claimcheck
  sbom "$out/$name" > "$out/claimcheck_${os}_${arch}.cdx.json"
}

# sbom BINARY: a CycloneDX 1.5 JSON document of the modules the binary
# links, from `go version -m` (its embedded build information): the main
# module as the described component, every dependency (after replace
# directives) as a library with its package URL and go.sum hash. The
# timestamp is the commit's, so the document is reproducible too.
sbom() {
  local when
  when=$(git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
  go version -m "$1" | awk -v when="$when" -v version="$version" -v file="$(basename "$1")" '
    function flush() {
      if (name == "") return
      printf "%s\n    {\"type\": \"library\", \"bom-ref\": \"pkg:golang/%s@%s\", \"name\": \"%s\", \"version\": \"%s\", \"purl\": \"pkg:golang/%s@%s\"", sep, name, ver, name, ver, name, ver
      if (sum != "") printf ", \"properties\": [{\"name\": \"go:sum\", \"value\": \"%s\"}]", sum
      printf "}"
      sep = ","; name = ""
    }
    NR == 1 { sub(/.*: /, ""); gover = $0 }
    $1 == "mod" { main = $2 }
    $1 == "dep" { flush(); name = $2; ver = $3; sum = $4 }
    $1 == "=>" { name = $2; ver = $3; sum = $4 }
    $1 == "build" && $2 ~ /^(GOOS|GOARCH)=/ { split($2, kv, "="); plat[kv[1]] = kv[2] }
    BEGIN {
      print "{"
      print "  \"bomFormat\": \"CycloneDX\","
      print "  \"specVersion\": \"1.5\","
      print "  \"version\": 1,"
      printf "  \"components\": ["
    }
    END {
      flush()
      print "\n  ],"
      print "  \"metadata\": {"
      printf "    \"timestamp\": \"%s\",\n", when
      printf "    \"tools\": {\"components\": [{\"type\": \"application\", \"name\": \"go version -m\", \"version\": \"%s\"}]},\n", gover
      printf "    \"component\": {\"type\": \"application\", \"bom-ref\": \"pkg:golang/%s@%s\", \"name\": \"%s\", \"version\": \"%s\", \"purl\": \"pkg:golang/%s@%s\",\n", main, version, main, version, main, version
      printf "      \"properties\": [{\"name\": \"file\", \"value\": \"%s\"}, {\"name\": \"GOOS\", \"value\": \"%s\"}, {\"name\": \"GOARCH\", \"value\": \"%s\"}]}\n", file, plat["GOOS"], plat["GOARCH"]
      print "  }"
      print "}"
    }'
}

# sums OUT: SHA256SUMS of everything else in OUT, as sha256sum -c reads it.
sums() {
  (cd "$1" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
}

if [ "${1:-}" = --check ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir "$work/a" "$work/b"
  build "$work/a" linux/amd64
  build "$work/b" linux/amd64
  sums "$work/a"; sums "$work/b"
  if ! cmp -s "$work/a/SHA256SUMS" "$work/b/SHA256SUMS"; then
    diff "$work/a/SHA256SUMS" "$work/b/SHA256SUMS" >&2 || true
    die "two builds of linux/amd64 differ: the release is not reproducible"
  fi
  if [ "$(go env GOOS)/$(go env GOARCH)" = linux/amd64 ]; then
    got=$("$work/a/claimcheck_linux_amd64" version --json)
    case $got in *"\"version\":\"$version\""*) ;; *) die "claimcheck version --json says $got, want version $version" ;; esac
  fi
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["bomFormat"]=="CycloneDX" and d["components"], d' \
    "$work/a/claimcheck_linux_amd64.cdx.json" || die "the SBOM is not a CycloneDX JSON document with components"
  (cd "$work/a" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not check"
  echo "release.sh: linux/amd64 built twice, identical: $(cut -c1-16 "$work/a/SHA256SUMS" | head -1)…; version $version; SBOM of $(grep -c '"library"' "$work/a/claimcheck_linux_amd64.cdx.json") modules"
  exit 0
fi

[ $# -ge 1 ] || die "usage: scripts/release.sh OUTDIR [OS/ARCH...] | --check"
out=$1; shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
mkdir -p "$out"
for t in "${targets[@]}"; do
  case " ${all[*]} " in *" $t "*) ;; *) die "unknown target $t (want one of ${all[*]})" ;; esac
  echo "release.sh: $t" >&2
  build "$out" "$t"
done
sums "$out"
echo "release.sh: $version in $out" >&2
