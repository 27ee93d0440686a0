"""Starts a sandgate and a Notebook 6 with --gateway-url in front of it,
runs a command with NOTEBOOK_URL, NOTEBOOK_TOKEN, NOTEBOOK_DIR,
SANDGATE_ARTIFACTS and SANDGATE_KERNELS in its environment, then stops
both and checks that sandgate exits 0 on SIGTERM.

usage: run_with_notebook.py [--timeout S] [--sandboxed] -- COMMAND ARGS...

--sandboxed runs kernels in real sandboxes (needs root).
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from notebook_fixture import Notebook  # noqa: E402
from sandgate_fixture import ARTIFACTS, Gateway, kernel_names  # noqa: E402


def main():
    args = sys.argv[1:]
    timeout = 600
    if args[:1] == ["--timeout"]:
        timeout = float(args[1])
        args = args[2:]
    sandboxed = args[:1] == ["--sandboxed"]
    if sandboxed:
        args = args[1:]
    if args[:1] != ["--"] or len(args) < 2:
        raise SystemExit(__doc__)
    command = args[1:]
    gw = Gateway(name="e2e-" + os.path.basename(command[-1]), sandboxed=sandboxed)
    nb = None
    code = 1
    try:
        nb = Notebook(gw)
        env = dict(os.environ, NOTEBOOK_URL=nb.url, NOTEBOOK_TOKEN=nb.token, NOTEBOOK_DIR=nb.root,
                   SANDGATE_ARTIFACTS=ARTIFACTS, SANDGATE_KERNELS=",".join(kernel_names()))
        try:
            code = subprocess.run(command, env=env, timeout=timeout,
                                  cwd=os.path.dirname(os.path.abspath(__file__))).returncode
        except subprocess.TimeoutExpired:
            print(f"run_with_notebook: {command} ran over {timeout} s", file=sys.stderr)
            code = 1
        if not gw.alive():
            print("run_with_notebook: the gateway died during the run:\n" + gw.log_tail(), file=sys.stderr)
            code = code or 1
    finally:
        if nb:
            nb.stop()
        stop_code, _ = gw.stop()
    if stop_code != 0:
        print(f"run_with_notebook: sandgate exited {stop_code} on SIGTERM", file=sys.stderr)
        code = code or 1
    if code != 0:
        print(f"run_with_notebook: logs at {gw.log_path} and {nb.log_path if nb else '-'}", file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
