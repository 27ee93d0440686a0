"""Starts three sandgate nodes behind HAProxy (test_cluster.Cluster), runs a
command with SANDGATE_URL, SANDGATE_WS_URL, SANDGATE_TOKEN and
SANDGATE_KERNELS pointing at HAProxy, then stops everything and fails if a
node died meanwhile.

usage: run_with_cluster.py [--timeout S] [--block N] -- COMMAND ARGS...
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from sandgate_fixture import kernel_names  # noqa: E402
from test_cluster import TOKEN, Cluster  # noqa: E402


def main():
    args = sys.argv[1:]
    timeout, block = 600.0, 4
    while args[:1] in (["--timeout"], ["--block"]):
        if args[0] == "--timeout":
            timeout = float(args[1])
        else:
            block = int(args[1])
        args = args[2:]
    if args[:1] != ["--"] or len(args) < 2:
        raise SystemExit(__doc__)
    command = args[1:]
    cluster = Cluster(block)
    code = 1
    try:
        host, port = cluster.lb.bind
        env = dict(os.environ, SANDGATE_URL=f"http://{host}:{port}/", SANDGATE_WS_URL=f"ws://{host}:{port}/",
                   SANDGATE_TOKEN=TOKEN, SANDGATE_KERNELS=",".join(kernel_names()))
        try:
            code = subprocess.run(command, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            print(f"run_with_cluster: {command} ran over {timeout} s", file=sys.stderr)
        for node, gw in cluster.nodes.items():
            if not gw.alive():
                print(f"run_with_cluster: node {node} died:\n{gw.log_tail()}", file=sys.stderr)
                code = code or 1
    finally:
        cluster.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
