#!/bin/sh
# `pip install` of the Python client (share/python) into a fresh venv,
# offline, as a user on Debian 12 does it (python3-venv, python3-pip,
# python3-setuptools, python3-wheel; --no-build-isolation because an
# isolated build would download setuptools): the package imports from
# outside the source tree, ships py.typed, and, where mypy is installed, a
# program that uses it type-checks against the installed copy. The build
# runs on a copy, so nothing is written into the source tree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import ensurepip, venv, setuptools, wheel' 2>/dev/null; then
  echo "test_install: needs python3-venv, python3-setuptools and python3-wheel: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/../../share/python" "$work/src"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-build-isolation --no-index "$work/src"

cd "$work"
"$work/venv/bin/python" - <<'PY'
import importlib.metadata, os, sys
import sandgate
where = os.path.dirname(sandgate.__file__)
assert where.startswith(sys.prefix), f"imported {where}, not the venv's copy"
assert os.path.exists(os.path.join(where, "py.typed")), "py.typed is not installed"
assert importlib.metadata.version("sandgate") == sandgate.__version__
assert importlib.metadata.requires("sandgate") is None, importlib.metadata.requires("sandgate")
print(f"test_install: sandgate {sandgate.__version__} installed in {where}")
PY

if "$work/venv/bin/python" -c 'import mypy' 2>/dev/null; then
  printf 'from sandgate import Sandbox\nsb: Sandbox = Sandbox.connect("id")\ntext: str = sb.files.read("a.txt")\n' \
    > "$work/uses.py"
  "$work/venv/bin/python" -m mypy --strict --cache-dir=/dev/null "$work/uses.py"
fi
