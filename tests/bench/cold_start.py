#!/usr/bin/python3
"""Cold start of a sandboxed Python kernel, step by step, beside an
unsandboxed xpython.

    SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/bench/cold_start.py [--runs 10]

One gateway (`<build>/bin/sandgate`, the shipped default policy) serves two
kernelspecs: sandgate-python in a sandbox of its own (a copy of the build's
`python` kernelspec whose env adds SANDGATE_KERNEL_TIMING=1) and Debian's
`xpython` on the host (apt package `xpython`, its kernelspec as installed,
exempted with `--unsandboxed-kernels`). A start is `POST /api/kernels` until `201 Created` (the gateway
answers once the kernel replied to kernel_info); each kernel is deleted
before the next start. The two modes alternate run by run (which one goes
first alternates too), after one warm-up start of each, so the machine's
load falls on both alike. Nothing is pre-started: every start makes its
sandbox, execs its kernel and imports everything (file caches are warm).

The breakdown of a sandboxed start comes from three clocks, all on this
machine: the gateway's JSON log (`kernel_starting`, `sandbox_ready`,
`kernel_ready`; wall clock, ms), the kernel's own start-up marks
(SANDGATE_KERNEL_TIMING, CLOCK_MONOTONIC, read from the kernel's log in its
run dir) and the client's clock around the POST. Where the sandbox's setup
time goes is measured apart, with `sandgate-sandbox -- /bin/date` runs and
SANDGATE_SANDBOX_TIMING=1 (as `sandbox_overhead.py --setup-only`), and what
the imports cost with one start whose kernel runs with
PYTHONPROFILEIMPORTTIME=1. Run as root.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TIMED = "python-timed"
IMPORTS = "python-importtime"
XPYTHON = "xpython"  # /usr/share/jupyter/kernels/xpython, as Debian installs it

# The kernel's marks, in order: (mark, name of the step that ends there).
KERNEL_STEPS = [
    ("main", "spawn: request, fork, cgroup, rlimits, privileges, seccomp, exec, dynamic linking"),
    ("python initialized", "Python initialization (site)"),
    ("configure", "kernel object: connection file, ZeroMQ sockets, threads"),
    ("ipython shell made", "xeus-python's IPython shell (imports, shell init)"),
    ("configured", "start-up script, matplotlib setup, SIGINT handler"),
]


def pct(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def wall(event):
    return datetime.datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()


def kernelspec_copy(build_dir, dest, name, extra_env, binary=None):
    src = os.path.join(build_dir, "share", "jupyter", "kernels", "python")
    with open(os.path.join(src, "kernel.json")) as f:
        spec = json.load(f)
    if binary:
        spec["argv"][0] = os.path.abspath(binary)
    spec["env"] = {**spec.get("env", {}), **extra_env}
    spec["display_name"] = name
    os.makedirs(os.path.join(dest, name))
    with open(os.path.join(dest, name, "kernel.json"), "w") as f:
        json.dump(spec, f)


def kernel_log(gw, kid):
    """Text of the kernel's stdout/stderr log in its sandbox's run dir."""
    for run_dir in gw.run_dirs(kid):
        for path in glob.glob(os.path.join(run_dir, "*.log")):
            with open(path, errors="replace") as f:
                return f.read()
    return ""


def kernel_marks(text):
    """{mark: wall-clock seconds} from a kernel's SANDGATE_KERNEL_TIMING lines."""
    offset = time.time() - time.monotonic()
    marks = {}
    for line in text.splitlines():
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[1] == "timing":
            marks.setdefault(parts[4], int(parts[3]) / 1e9 + offset)
    return marks


def events_of(gw, kid, sid):
    found = {}
    for e in gw.log_events():
        if e.get("kernel_id") == kid or (e.get("sandbox_id") == sid and "kernel_id" not in e):
            found.setdefault(e.get("event"), wall(e))
    return found


def sandboxed_start(gw, results):
    t0 = time.time()
    kid = gw.start_kernel(TIMED)
    t1 = time.time()
    ev = events_of(gw, kid, gw.sandbox_id(kid))
    marks = kernel_marks(kernel_log(gw, kid))
    gw.delete_kernel(kid)
    points = [("POST sent", t0), ("kernel_starting", ev.get("kernel_starting")),
              ("sandbox_ready", ev.get("sandbox_ready"))]
    if marks:  # a kernel binary without marks: its steps are one
        points += [(m, marks.get(m)) for m, _ in KERNEL_STEPS]
    points += [("kernel_ready", ev.get("kernel_ready")), ("201 received", t1)]
    if any(t is None for _, t in points):
        raise AssertionError(f"missing marks: {[n for n, t in points if t is None]}; log {gw.log_tail(10)}")
    for (_, a), (name, b) in zip(points, points[1:]):
        results.setdefault(name, []).append((b - a) * 1000)
    results.setdefault("total", []).append((t1 - t0) * 1000)
    results.setdefault("gateway: kernel_starting → kernel_ready", []).append(
        (ev["kernel_ready"] - ev["kernel_starting"]) * 1000)


def xpython_start(gw, results):
    t0 = time.time()
    kid = gw.start_kernel(XPYTHON)
    t1 = time.time()
    ev = events_of(gw, kid, gw.sandbox_id(kid))
    gw.delete_kernel(kid)
    results.setdefault("total", []).append((t1 - t0) * 1000)
    results.setdefault("gateway: kernel_starting → kernel_ready", []).append(
        (ev["kernel_ready"] - ev["kernel_starting"]) * 1000)


def import_profile(gw, top):
    """(total import ms, module count, [(cumulative ms, module)]) of one start."""
    kid = gw.start_kernel(IMPORTS)
    text = kernel_log(gw, kid)
    gw.delete_kernel(kid)
    rows = []
    for line in text.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line[len("import time:"):].split("|")
            rows.append((int(cumulative) / 1000, len(name) - len(name.lstrip()), name.strip()))
    top_level = [(ms, name) for ms, depth, name in rows if depth == 1]
    return sum(ms for ms, _ in top_level), len(rows), sorted(top_level, reverse=True)[:top]


def setup_steps(build_dir, runs):
    """Median ms of each sandgate-sandbox setup step (standalone, /bin/date)."""
    from sandbox_overhead import setup_run_standalone  # noqa: E402
    sandbox = os.path.join(build_dir, "bin", "sandgate-sandbox")
    policy = os.path.join(ROOT, "share", "sandgate", "policies", "default.json")
    steps, execs = {}, []
    setup_run_standalone(sandbox, policy)
    for _ in range(runs):
        exec_ms, _, marks = setup_run_standalone(sandbox, policy)
        execs.append(exec_ms)
        for (t_prev, _), (t, step) in zip(marks, marks[1:]):
            steps.setdefault(step, []).append((t - t_prev) / 1e6)
    return {k: statistics.median(v) for k, v in steps.items()}, statistics.median(execs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("SANDGATE_BUILD_DIR", "build"))
    ap.add_argument("--runs", type=int, default=10, help="starts of each kind")
    ap.add_argument("--kernel-binary", help="run this sandgate-python instead of the build's (to compare builds)")
    ap.add_argument("--setup-runs", type=int, default=20, help="standalone sandgate-sandbox runs")
    args = ap.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    os.environ["SANDGATE_BUILD_DIR"] = build_dir
    sys.path.insert(0, os.path.join(HERE, "..", "support"))
    sys.path.insert(0, os.path.join(HERE, "..", "security"))
    sys.path.insert(0, HERE)
    from security_case import sandbox_gateway  # noqa: E402
    if not shutil.which("xpython"):
        raise SystemExit("xpython is not installed (Debian package xpython)")

    with open(os.path.join(ROOT, "share", "sandgate", "policies", "default.json")) as f:
        policy = json.load(f)
    specs = tempfile.mkdtemp(prefix="sandgate-coldstart-specs-")
    kernelspec_copy(build_dir, specs, TIMED, {"SANDGATE_KERNEL_TIMING": "1"}, args.kernel_binary)
    kernelspec_copy(build_dir, specs, IMPORTS, {"PYTHONPROFILEIMPORTTIME": "1"}, args.kernel_binary)
    load = [os.getloadavg()[0]]
    started = datetime.datetime.now(datetime.timezone.utc)
    sandboxed, xpython = {}, {}
    gw = sandbox_gateway("--kernel-path", specs, policy=policy, unsandboxed=(XPYTHON,), name="cold-start")
    try:
        sandboxed_start(gw, {})  # warm-up
        xpython_start(gw, {})
        for i in range(args.runs):
            order = (sandboxed_start, xpython_start) if i % 2 == 0 else (xpython_start, sandboxed_start)
            for run in order:
                run(gw, sandboxed if run is sandboxed_start else xpython)
            load.append(os.getloadavg()[0])
        imports_ms, module_count, top_imports = import_profile(gw, 8)
    finally:
        gw.stop()
        shutil.rmtree(specs, ignore_errors=True)
    steps, exec_ms = setup_steps(build_dir, args.setup_runs)
    load.append(os.getloadavg()[0])

    s_total, x_total = statistics.median(sandboxed["total"]), statistics.median(xpython["total"])
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, Linux {platform.release()}; "
          f"{started:%Y-%m-%d %H:%M} UTC; {args.runs} starts of each, alternating; "
          f"load average (1 min) {min(load):.1f}-{max(load):.1f}\n")
    print("| step of a sandboxed sandgate-python start | p50 ms | p90 ms |")
    print("|---|---|---|")
    labels = {"kernel_starting": "gateway: request → kernel_starting",
              "sandbox_ready": "sandbox setup (kernel_starting → sandbox_ready)",
              "kernel_ready": "kernel_info answered (configured → gateway's kernel_ready)",
              "201 received": "gateway: kernel_ready → 201 received"}
    labels.update({m: f"{name} (→ kernel mark `{m}`)" for m, name in KERNEL_STEPS})
    labels["kernel_ready"] += "" if "configured" in sandboxed else " (kernel without marks: from sandbox_ready)"
    for key in ["kernel_starting", "sandbox_ready", *[m for m, _ in KERNEL_STEPS], "kernel_ready", "201 received",
                "total"]:
        if key not in sandboxed:
            continue
        v = sandboxed[key]
        print(f"| {labels.get(key, '**POST → 201, total**')} | {pct(v, .5):.1f} | {pct(v, .9):.1f} |")
    print("\n| kernel | POST → 201 p50 (p90) ms | kernel_starting → kernel_ready p50 ms |")
    print("|---|---|---|")
    for name, r in (("sandgate-python, sandboxed", sandboxed), ("xpython, unsandboxed", xpython)):
        g = r["gateway: kernel_starting → kernel_ready"]
        print(f"| {name} | {pct(r['total'], .5):.0f} ({pct(r['total'], .9):.0f}) | {pct(g, .5):.0f} |")
    pairs = [s / x for s, x in zip(sandboxed["total"], xpython["total"])]
    print(f"\nratio sandboxed / xpython: {s_total / x_total:.2f} (medians); "
          f"per pair of runs p50 {pct(pairs, .5):.2f}, p90 {pct(pairs, .9):.2f}")
    print(f"\nsandbox setup alone ({args.setup_runs} runs of `sandgate-sandbox -- /bin/date`, "
          f"SANDGATE_SANDBOX_TIMING=1): start → exec p50 {exec_ms:.1f} ms\n")
    print("| sandgate-sandbox step | p50 ms |")
    print("|---|---|")
    for step, ms in steps.items():
        print(f"| {step} | {ms:.2f} |")
    print(f"\nimports of one sandboxed start (PYTHONPROFILEIMPORTTIME=1, which slows them): {module_count} "
          f"modules, {imports_ms:.0f} ms at top level; the largest:\n")
    print("| top-level import | cumulative ms |")
    print("|---|---|")
    for ms, name in top_imports:
        print(f"| {name} | {ms:.0f} |")


if __name__ == "__main__":
    main()
