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

    # Both gateways run at once and the two modes alternate run by run, so
    # that the load of a busy machine falls on both alike.
    modes = ("sandboxed", "unsandboxed")
    load_before = os.getloadavg()
    gws = {}
    results = {m: {"start": [], "rtt": [], "outer": [], "sup": [], "pss": []} for m in modes}
    try:
        for mode in modes:
            gws[mode] = Gateway(policy=default_policy, unsandboxed=("python3",) if mode == "unsandboxed" else (),
                                name=f"bench-{mode}")
        for _ in range(args.starts):
            for mode in modes:
                t = time.monotonic()
                kid = gws[mode].start_kernel()
                results[mode]["start"].append(time.monotonic() - t)
                gws[mode].delete_kernel(kid)
        kernels = {m: Kernel(gws[m], gws[m].start_kernel()) for m in modes}
        for _ in range(5):
            for mode in modes:
                kernels[mode].execute("1")
        for _ in range(args.executes):
            for mode in modes:
                t = time.monotonic()
                r = kernels[mode].execute("1")
                results[mode]["rtt"].append(time.monotonic() - t)
                assert r["status"] == "ok", r
        for mode in modes:
            kernels[mode].close()
            gws[mode].delete_kernel(kernels[mode].id)
        # Memory with several kernels resident.
        for mode in modes:
            gw = gws[mode]
            resident = [gw.start_kernel() for _ in range(args.resident)]
            time.sleep(2)
            gw_kids = descendants(gw.pid)
            res = results[mode]
            for kid in resident:
                if mode == "sandboxed":
                    info = gw.sandbox_info(kid)
                    for pid in set(info["outer"]):
                        rss = kib(pid, "status", "VmRSS")
                        (res["sup"] if pid in info["all"] else res["outer"]).append(rss)
                    pys = [p for p in set(info["all"]) if (comm(p) or "").startswith("python")]
                else:
                    pys = [p for p in gw_kids if (comm(p) or "").startswith("python")
                           and kid.encode() in open(f"/proc/{p}/environ", "rb").read()]
                for p in pys[:1]:
                    res["pss"].append(kib(p, "smaps_rollup", "Pss"))
            res["gw_rss"] = kib(gw.pid, "status", "VmRSS")
            for kid in resident:
                gw.delete_kernel(kid)
        # Sandbox setup alone: the gateway's kernel_starting → sandbox_ready log events.
        import datetime
        def ts(e):
            return datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
        events = gws["sandboxed"].log_events()
        began = {e["kernel_id"]: ts(e) for e in events if e.get("event") == "kernel_starting"}
        setup = [ts(e) - began[e["sandbox_id"]] for e in events
                 if e.get("event") == "sandbox_ready" and e.get("sandbox_id") in began]
    finally:
        for gw in gws.values():
            gw.stop()
    load_after = os.getloadavg()

    def ms(v):
        return f"{v * 1000:.1f}"

    def mib(v):
        v = [x for x in v if x]
        return f"{statistics.median(v) / 1024:.1f}" if v else "n/a"

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}")
    print(f"runs: {args.starts} starts, {args.executes} executes, {args.resident} resident kernels per mode, "
          f"modes interleaved; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    print("| | sandboxed | unsandboxed |")
    print("|---|---|---|")
    s, u = results["sandboxed"], results["unsandboxed"]
    print(f"| kernel start, POST → 201, p50 (p90) ms | {ms(pct(s['start'], .5))} ({ms(pct(s['start'], .9))}) "
          f"| {ms(pct(u['start'], .5))} ({ms(pct(u['start'], .9))}) |")
    if setup:
        print(f"| of which sandbox setup (kernel_starting → sandbox_ready in the log), p50 (p90) ms | "
              f"{ms(pct(setup, .5))} ({ms(pct(setup, .9))}) | — |")
    print(f"| execute round trip, p50 (p90) ms | {ms(pct(s['rtt'], .5))} ({ms(pct(s['rtt'], .9))}) "
          f"| {ms(pct(u['rtt'], .5))} ({ms(pct(u['rtt'], .9))}) |")
    print(f"| outer sandgate-sandbox VmRSS, MiB | {mib(s['outer'])} | — |")
    print(f"| supervisor sandgate-sandbox VmRSS, MiB | {mib(s['sup'])} | — |")
    print(f"| kernel (ipykernel) Pss, MiB | {mib(s['pss'])} | {mib(u['pss'])} |")
    print(f"| gateway VmRSS with {args.resident} kernels, MiB | {s['gw_rss'] / 1024:.1f} | {u['gw_rss'] / 1024:.1f} |")


if __name__ == "__main__":
    main()
