#!/usr/bin/python3
"""Sandbox overhead: the same gateway and kernelspec (ipykernel's python3),
with every kernel in a sandgate-sandbox (the shipped default policy) and
with the kernelspec exempted (--unsandboxed-kernels python3).

    /usr/bin/python3 tests/bench/sandbox_overhead.py --build-dir build-gw [--starts 8] [--executes 100]

Measures, for each mode:
- kernel start: POST /api/kernels until 201 (the gateway answers once the
  kernel replied to kernel_info), p50 and p90 of --starts kernels started one
  after the other (each deleted before the next);
- execute round trip: execute_request of `1` until both the execute_reply and
  the idle status arrived over the legacy JSON WebSocket, p50 and p90 of
  --executes runs on one kernel (after 5 warm-up runs);
- memory per sandbox, with --resident kernels alive at once: VmRSS of the two
  sandgate-sandbox processes (outer waiter and supervisor) from
  /proc/<pid>/status, and the kernel's Pss from /proc/<pid>/smaps_rollup.
Prints a Markdown table. Run as root (sandboxes need it).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time


def pct(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def kib(pid, path, field):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("SANDGATE_BUILD_DIR", "build"))
    ap.add_argument("--starts", type=int, default=8)
    ap.add_argument("--executes", type=int, default=100)
    ap.add_argument("--resident", type=int, default=3)
    args = ap.parse_args()
    os.environ["SANDGATE_BUILD_DIR"] = os.path.abspath(args.build_dir)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "security"))
    from security_fixture import Gateway, Kernel, comm, descendants  # noqa: E402

    with open(os.path.join(here, "..", "..", "share", "sandgate", "policies", "default.json")) as f:
        default_policy = json.load(f)

    results = {}
    for mode in ("sandboxed", "unsandboxed"):
        gw = Gateway(policy=default_policy, unsandboxed=("python3",) if mode == "unsandboxed" else (),
                     name=f"bench-{mode}")
        try:
            starts = []
            for _ in range(args.starts):
                t = time.monotonic()
                kid = gw.start_kernel()
                starts.append(time.monotonic() - t)
                gw.delete_kernel(kid)
            kid = gw.start_kernel()
            k = Kernel(gw, kid)
            for _ in range(5):
                k.execute("1")
            rtts = []
            for _ in range(args.executes):
                t = time.monotonic()
                r = k.execute("1")
                rtts.append(time.monotonic() - t)
                assert r["status"] == "ok", r
            k.close()
            gw.delete_kernel(kid)
            # Memory with several kernels resident.
            kernels = [gw.start_kernel() for _ in range(args.resident)]
            time.sleep(2)
            outer_rss, sup_rss, kernel_pss = [], [], []
            gw_kids = descendants(gw.pid)
            for kid in kernels:
                if mode == "sandboxed":
                    info = gw.sandbox_info(kid)
                    for pid in set(info["outer"]):
                        rss = kib(pid, "status", "VmRSS")
                        (sup_rss if pid in info["all"] else outer_rss).append(rss)
                    pys = [p for p in set(info["all"]) if (comm(p) or "").startswith("python")]
                else:
                    pys = [p for p in gw_kids if (comm(p) or "").startswith("python")
                           and kid.encode() in open(f"/proc/{p}/environ", "rb").read()]
                for p in pys[:1]:
                    kernel_pss.append(kib(p, "smaps_rollup", "Pss"))
            gw_rss = kib(gw.pid, "status", "VmRSS")
            for kid in kernels:
                gw.delete_kernel(kid)
            results[mode] = {"start": starts, "rtt": rtts, "outer": outer_rss, "sup": sup_rss,
                             "pss": kernel_pss, "gw_rss": gw_rss}
        finally:
            gw.stop()

    def ms(v):
        return f"{v * 1000:.1f}"

    def mib(v):
        v = [x for x in v if x]
        return f"{statistics.median(v) / 1024:.1f}" if v else "n/a"

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}")
    print(f"runs: {args.starts} starts, {args.executes} executes, {args.resident} resident kernels per mode\n")
    print("| | sandboxed | unsandboxed |")
    print("|---|---|---|")
    s, u = results["sandboxed"], results["unsandboxed"]
    print(f"| kernel start, POST → 201, p50 (p90) ms | {ms(pct(s['start'], .5))} ({ms(pct(s['start'], .9))}) "
          f"| {ms(pct(u['start'], .5))} ({ms(pct(u['start'], .9))}) |")
    print(f"| execute round trip, p50 (p90) ms | {ms(pct(s['rtt'], .5))} ({ms(pct(s['rtt'], .9))}) "
          f"| {ms(pct(u['rtt'], .5))} ({ms(pct(u['rtt'], .9))}) |")
    print(f"| outer sandgate-sandbox VmRSS, MiB | {mib(s['outer'])} | — |")
    print(f"| supervisor sandgate-sandbox VmRSS, MiB | {mib(s['sup'])} | — |")
    print(f"| kernel (ipykernel) Pss, MiB | {mib(s['pss'])} | {mib(u['pss'])} |")
    print(f"| gateway VmRSS with {args.resident} kernels, MiB | {s['gw_rss'] / 1024:.1f} | {u['gw_rss'] / 1024:.1f} |")


if __name__ == "__main__":
    main()
