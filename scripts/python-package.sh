#!/usr/bin/env bash
# The Python client installs as a package, without network: pip builds
# clients/python with the system's setuptools (Debian's python3-setuptools
# and python3-wheel; no build isolation, nothing fetched from an index)
# into a throw-away venv, and the installed package imports, outside the
# source tree, with the version of the VERSION file. As root, the Debian
# packages it needs (python3-setuptools, python3-wheel, python3-pip,
# python3-venv) are installed with apt-get when missing; otherwise it
# skips, saying why.
#   scripts/python-package.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
root="$here/.."

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
# The system's setuptools is the build backend: the venv sees the
# system's packages, and pip takes nothing from an index.
# The system's pip installs into the venv (--python), which saves a copy
# of pip in it.
"$py" -m venv --without-pip --system-site-packages "$work/venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip --python "$work/venv/bin/python" install -q \
  --no-build-isolation --no-index --no-cache-dir "$root/clients/python"
want=$(cat "$root/VERSION")
(cd "$work" && "$work/venv/bin/python" - "$want" "$work/venv" <<'PY'
import os, sys
import claimcheck
want, venv = sys.argv[1], sys.argv[2]
assert claimcheck.__file__.startswith(venv), f"imported {claimcheck.__file__}, not the installed package"
assert claimcheck.__version__ == want, f"claimcheck.__version__ {claimcheck.__version__}, VERSION {want}"
assert os.path.exists(os.path.join(os.path.dirname(claimcheck.__file__), "py.typed")), "py.typed is not installed"
print(f"python-package.sh: claimcheck {claimcheck.__version__} installed without network")
PY
)
