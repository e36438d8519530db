#!/usr/bin/env bash
# The Python client installs as a package, without network, as
# clients/python/README.md says: its ```sh offline block runs as written,
# in a throw-away directory beside the repository's clients/python, with
# the system's python3 first on PATH. pip builds the package with the
# system's setuptools (Debian's python3-setuptools and python3-wheel; no
# build isolation, nothing fetched from an index) into the venv the block
# makes, and the installed package imports, outside the source tree, with
# the version of the VERSION file. As root, the Debian
# packages it needs (python3-setuptools, python3-wheel, python3-pip,
# python3-venv) are installed with apt-get when missing; otherwise it
# skips, saying why.
#   scripts/python-package.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
root="$here/.."
die() { log "$*"; exit 1; }

# The system's Python (Debian's /usr/bin/python3, whose packages are the
# build backend), else the first python3 on PATH.
py=python3
if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; fi
have() { command -v "$py" >/dev/null && "$py" -c 'import setuptools, wheel, venv, pip' 2>/dev/null; }
if ! have; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing python3-setuptools, python3-wheel, python3-pip and python3-venv with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-setuptools python3-wheel python3-pip python3-venv >&2
    py=/usr/bin/python3
  else
    log "SKIP: python3 with setuptools, wheel and venv not found; the Python package was not built (install python3-setuptools python3-wheel python3-pip python3-venv)"
    exit 0
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The README's lines: between the ```sh offline fence and the next fence.
steps=$(awk '/^```sh offline$/ { on = 1; next } on && /^```/ { exit } on' "$root/clients/python/README.md")
case $steps in
  *"venv"*"pip install"*) ;;
  *) die "clients/python/README.md has no \`\`\`sh offline block that makes a venv and pip installs into it" ;;
esac
mkdir -p "$work/clients"
ln -s "$(cd "$root/clients/python" && pwd)" "$work/clients/python"
(cd "$work" && PATH="$(dirname "$py"):$PATH" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_QUIET=1 \
  PYTHONDONTWRITEBYTECODE=1 bash -euo pipefail -c "$steps") >&2 ||
  die "the offline install of clients/python/README.md failed: $steps"
venv=$work/.venv
[ -x "$venv/bin/python" ] || die "the README's offline install made no .venv"
want=$(cat "$root/VERSION")
(cd "$work" && "$venv/bin/python" - "$want" "$venv" <<'PY'
import os, sys
import claimcheck
want, venv = sys.argv[1], sys.argv[2]
assert claimcheck.__file__.startswith(venv), f"imported {claimcheck.__file__}, not the installed package"
assert claimcheck.__version__ == want, f"claimcheck.__version__ {claimcheck.__version__}, VERSION {want}"
assert os.path.exists(os.path.join(os.path.dirname(claimcheck.__file__), "py.typed")), "py.typed is not installed"
print(f"python-package.sh: claimcheck {claimcheck.__version__} installed without network")
PY
)
