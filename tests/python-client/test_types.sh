#!/bin/sh
# mypy --strict over the Python client (share/python/sandgate), and over a
# program that uses it, checking the types its calls give back. Exits 77
# (skipped) without mypy: on Debian, apt-get install python3-mypy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../share/python" && pwd)
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import mypy' 2>/dev/null; then
  echo "test_types: mypy is not installed (apt-get install python3-mypy): skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# No cache: nothing is written into the source tree.
mypy() { (cd "$work" && MYPYPATH="$src" "$python" -m mypy --strict --cache-dir=/dev/null "$@"); }

mypy --python-version 3.9 -p sandgate
mypy -p sandgate

cat > "$work/uses_sandgate.py" <<'PY'
"""A program that uses the client as its README shows."""
from typing import Iterator, List, Optional, Union

from typing_extensions import assert_type

import sandgate
from sandgate import CommandResult, EntryInfo, Execution, NetworkPolicy, Result, Sandbox, SandboxInfo


def use() -> None:
    with Sandbox.create(ttl_s=600, metadata={"user": "u-1"}, network="none") as sb:
        execution = sb.run_code("1 + 1", on_stdout=lambda m: print(m.line), timeout=30)
        assert_type(execution, Execution)
        assert_type(execution.text, Optional[str])
        assert_type(execution.logs.stdout, List[str])
        first: Result = execution.results[0]
        assert_type(first.png, Optional[bytes])
        if execution.error:
            assert_type(execution.error.name, str)
        assert_type(sb.files.read("a.txt"), str)
        assert_type(sb.files.read("a.bin", format="bytes"), bytes)
        assert_type(sb.files.read("a.bin", format="stream"), Iterator[bytes])
        assert_type(sb.files.list("."), List[EntryInfo])
        assert_type(sb.commands.run("ls", check=False), CommandResult)
        assert_type(sb.get_network(), Union[str, NetworkPolicy])
        assert_type(sb.set_timeout(60), SandboxInfo)
    assert_type(Sandbox.list(metadata={"user": "u-1"}), List[SandboxInfo])
    try:
        Sandbox.connect("id")
    except sandgate.NotFoundError as e:
        assert_type(e.status, Optional[int])
        assert_type(e.reason, Optional[str])
    except sandgate.TimeoutError as e:
        assert_type(e.execution, Optional[Execution])
PY
mypy uses_sandgate.py
echo "test_types: mypy --strict is clean"
