#!/usr/bin/python3
"""The R kernel (`ir`, Debian's R + IRkernel) beside sandgate-python
(`python`), both sandboxed by one gateway with the shipped default policy.

    SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/bench/r_kernel_bench.py [--runs 10] [--executes 200]

For each run and kernelspec (alternating which goes first, after one
warm-up start of each):
- cold start: `POST /api/kernels` until `201 Created` (the gateway answers
  once the kernel replied to kernel_info: the sandbox is made, the kernel
  exec'd and ready), nothing pre-started;
- `1+1`: execute_request over the channels WebSocket (legacy JSON) until
  both the execute_reply and the idle status are in, `--executes` times;
- idle RSS: VmRSS of the kernel process 1 s after its last execute;
then the kernel is deleted. Prints p50/p90 per kernelspec. Run as root.
"""

import argparse
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))

from sandgate_fixture import Gateway  # noqa: E402

# What names each kernel's own process (not its sandbox's supervisor).
MARKERS = {"python": b"sandgate-python", "ir": b"IRkernel::main()"}
CODE = {"python": "1+1", "ir": "1+1"}


def pct(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def kernel_rss_kib(gw, name):
    """VmRSS of the gateway's `name` kernel: below one of its supervisors
    (whose command line names the state dir; a sandboxed kernel's does not)."""
    for pid in gw.sandbox_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARKERS[name] not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
    raise AssertionError(f"no {name} kernel process")


def one_run(gw, name, executes):
    t0 = time.monotonic()
    kid = gw.start_kernel(name, timeout=120)
    start_ms = (time.monotonic() - t0) * 1000
    ks = gw.connect(kid)
    ks.execute(CODE[name])  # the first one pays for the connection
    times = []
    for _ in range(executes):
        t = time.monotonic()
        reply, _ = ks.execute(CODE[name])
        times.append((time.monotonic() - t) * 1000)
        assert reply.content["status"] == "ok", reply.content
    time.sleep(1)
    rss = kernel_rss_kib(gw, name)
    ks.close()
    gw.delete_kernel(kid)
    return start_ms, times, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--executes", type=int, default=200)
    args = ap.parse_args()
    names = ["python", "ir"]
    starts = {n: [] for n in names}
    execs = {n: [] for n in names}
    rss = {n: [] for n in names}
    with Gateway(name="r-kernel-bench", sandboxed=True) as gw:
        for n in names:
            one_run(gw, n, 5)  # warm-up: file caches
        for run in range(args.runs):
            for n in (names if run % 2 == 0 else names[::-1]):
                s, t, r = one_run(gw, n, args.executes)
                starts[n].append(s)
                execs[n].extend(t)
                rss[n].append(r)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, Linux {platform.release()}; "
          f"{args.runs} runs, {args.executes} executes each")
    print("| kernelspec | cold start p50 (p90) ms | `1+1` execute p50 (p90) ms | idle kernel VmRSS p50 MiB |")
    print("|---|---|---|---|")
    for n in names:
        print(f"| `{n}` | {pct(starts[n], .5):.0f} ({pct(starts[n], .9):.0f}) | "
              f"{pct(execs[n], .5):.2f} ({pct(execs[n], .9):.2f}) | {statistics.median(rss[n]) / 1024:.1f} |")


if __name__ == "__main__":
    main()
