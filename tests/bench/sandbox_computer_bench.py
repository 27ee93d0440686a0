#!/usr/bin/python3
"""Runs sandbox_computer_bench.mjs against a gateway with real sandboxes
(docs/benchmarks.md, "Processes and ports"). Needs root, node and the e2e
npm packages (ws). --short: smaller runs (a smoke test).

usage: SANDGATE_BUILD_DIR=build tests/bench/sandbox_computer_bench.py [--short]
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from sandgate_fixture import Gateway  # noqa: E402


def main():
    gw = Gateway(name="sandbox-computer-bench", sandboxed=True)
    try:
        env = dict(os.environ, SANDGATE_URL=gw.url, SANDGATE_TOKEN=gw.token, SANDGATE_GATEWAY_PID=str(gw.pid))
        print("| what | Sandgate | floor | notes |\n|---|---|---|---|", flush=True)
        code = subprocess.run(["node", os.path.join(HERE, "sandbox_computer_bench.mjs"), *sys.argv[1:]], env=env).returncode
    finally:
        gw.stop()
    sys.exit(code)


if __name__ == "__main__":
    main()
