#!/usr/bin/python3
"""Kernels of several languages side by side, each sandboxed by the gateway
with the shipped default policy (docs/benchmarks.md, "Kernels per language").

    SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/bench/language_bench.py \\
        [--languages python,javascript,typescript,ir] [--runs 10] [--executes 200] [--pool-creates 10] \\
        [--code 1]

Per kernelspec:
- cold start: `POST /api/kernels` until `201 Created` on a gateway with no
  pool (the gateway answers once the kernel replied to kernel_info: the
  sandbox is made, the kernel exec'd and ready);
- pool-hit start: the same on a second gateway started with
  `--pool NAME=2,...`, each create made once the pool has 2 ready kernels of
  that kernelspec again (so every create is a hit, checked on /metrics);
- execute: `--code` (`1`; for bash `:`) as an execute_request over the channels
  WebSocket (legacy JSON) until both its execute_reply and its idle status
  are in, `--executes` times one after the other: p50 and p90 of one, and
  executes/s (how many per second one client gets, one at a time);
- idle memory: 1 s after the last execute, VmRSS and Pss summed over the
  kernel's processes in its sandbox (the kernel and its children, e.g. Node
  for sandgate-javascript; not the sandbox's two sandgate-sandbox
  processes).
Runs alternate which kernelspec goes first, after one warm-up start of
each. Run as root.
"""

import argparse
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))

from sandgate_fixture import Gateway, sandbox_processes, wait_until  # noqa: E402

CODE = {"bash": ":"}  # what "execute 1" is where `1` is no code
POOL_DEPTH = 2


def pct(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def kernel_memory_kib(gw, sandbox_id):
    """(VmRSS, Pss) in KiB summed over the processes of one sandbox that are
    not sandgate-sandbox: the kernel and what it started."""
    rss = pss = 0
    for pid in sandbox_processes(gw, sandbox_id):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if os.path.basename(f.read().split(b"\0")[0]) == b"sandgate-sandbox":
                    continue
            with open(f"/proc/{pid}/status") as f:
                rss += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            with open(f"/proc/{pid}/smaps_rollup") as f:
                pss += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    if rss == 0:
        raise AssertionError(f"no kernel process in sandbox {sandbox_id}")
    return rss, pss


def timed_create(gw, name):
    t0 = time.monotonic()
    r = gw.request("POST", "api/kernels", {"name": name}, timeout=120)
    took_ms = (time.monotonic() - t0) * 1000
    if r.status != 201:
        raise AssertionError(f"POST /api/kernels {name}: {r}")
    return r.json(), took_ms


def one_run(gw, name, executes, code):
    """(cold start ms, [execute ms], executes/s, (rss, pss) KiB)."""
    kernel, start_ms = timed_create(gw, name)
    ks = gw.connect(kernel["id"])
    code = CODE.get(name, code)
    ks.execute(code)  # the first one pays for the connection
    times = []
    t_all = time.monotonic()
    for _ in range(executes):
        t = time.monotonic()
        reply, _ = ks.execute(code)
        times.append((time.monotonic() - t) * 1000)
        assert reply.content["status"] == "ok", reply.content
    per_s = executes / (time.monotonic() - t_all)
    time.sleep(1)
    memory = kernel_memory_kib(gw, kernel["sandbox_id"])
    ks.close()
    gw.delete_kernel(kernel["id"])
    return start_ms, times, per_s, memory


def pool_metric(gw, name, metric):
    r = gw.request("GET", "metrics")
    prefix = f'sandgate_pool_{metric}{{kernel="{name}"}} '
    for line in r.body.decode().splitlines():
        if line.startswith(prefix):
            return int(line[len(prefix):])
    return 0


def pool_hit(gw, name):
    wait_until(lambda: pool_metric(gw, name, "ready") >= POOL_DEPTH, 300, f"{POOL_DEPTH} ready {name} kernels")
    claims = pool_metric(gw, name, "claims_total")
    kernel, took_ms = timed_create(gw, name)
    if pool_metric(gw, name, "claims_total") != claims + 1:
        raise AssertionError(f"a {name} create was not a pool hit")
    gw.delete_kernel(kernel["id"])
    return took_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--languages", default="python,javascript,typescript,ir",
                    help="kernelspecs, comma-separated")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--executes", type=int, default=200)
    ap.add_argument("--pool-creates", type=int, default=10, help="pool-hit creates per kernelspec; 0: none")
    ap.add_argument("--code", default="1", help="the code each execute runs (bash runs `:`)")
    args = ap.parse_args()
    names = args.languages.split(",")
    starts, execs, rates, rss, pss, hits = ({n: [] for n in names} for _ in range(6))

    with Gateway(name="language-bench", sandboxed=True) as gw:
        for n in names:
            one_run(gw, n, 5, args.code)  # warm-up: file caches
        for run in range(args.runs):
            for n in (names if run % 2 == 0 else names[::-1]):
                s, t, per_s, (r, p) = one_run(gw, n, args.executes, args.code)
                starts[n].append(s)
                execs[n].extend(t)
                rates[n].append(per_s)
                rss[n].append(r)
                pss[n].append(p)
    if args.pool_creates:
        pools = ",".join(f"{n}={POOL_DEPTH}" for n in names)
        with Gateway("--pool", pools, name="language-bench-pool", sandboxed=True) as gw:
            for i in range(args.pool_creates):
                for n in (names if i % 2 == 0 else names[::-1]):
                    hits[n].append(pool_hit(gw, n))

    load = os.getloadavg()
    print(f"{platform.node()}: {os.cpu_count()} CPUs, Linux {platform.release()}; load average at the end "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.runs} runs, {args.executes} executes each, "
          f"{args.pool_creates} pool-hit creates; code {args.code!r}")
    print("| kernelspec | cold start p50 (p90) ms | pool-hit start p50 (p90) ms | execute p50 (p90) ms "
          "| executes/s, one client | idle kernel VmRSS / Pss p50 MiB |")
    print("|---|---|---|---|---|---|")
    for n in names:
        hit = f"{pct(hits[n], .5):.1f} ({pct(hits[n], .9):.1f})" if hits[n] else "-"
        print(f"| `{n}` | {pct(starts[n], .5):.0f} ({pct(starts[n], .9):.0f}) | {hit} | "
              f"{pct(execs[n], .5):.2f} ({pct(execs[n], .9):.2f}) | {statistics.median(rates[n]):.0f} | "
              f"{statistics.median(rss[n]) / 1024:.1f} / {statistics.median(pss[n]) / 1024:.1f} |")


if __name__ == "__main__":
    main()
