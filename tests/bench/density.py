#!/usr/bin/python3
"""Memory of N idle sandboxed Python kernels started through the gateway.

    SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/bench/density.py --kernels 50 [--preload-kernels 20] [--markdown]

Starts one gateway (`<build>/bin/sandgate`, the shipped default policy,
--max-kernels above N) and N kernels with `POST /api/kernels
{"name": "python"}` (each in a sandbox of its own), --concurrency at a time.
Once all are up, it waits until they are idle and their memory has settled
(the sum of their PSS moves by less than 0.5% over two seconds; a deadline
bounds the wait) and reads, for every sandbox:
- PSS (`/proc/<pid>/smaps_rollup`) of the kernel and of the two
  sandgate-sandbox processes (outer waiter and the supervisor, pid 1 inside),
  summed: the figure asked for, "MiB per sandbox";
- the private part alone (Private_Clean + Private_Dirty of the three): what
  one more sandbox adds however many run, the basis of the extrapolation;
- the sandbox's memory cgroup usage (cgroup v1 memory.usage_in_bytes, or v2
  memory.current), which also counts its tmpfs pages (run dir, iopub journal)
  and kernel memory charged to it.
(The machine's MemAvailable is not used: on a shared machine other work moves
it by more than N kernels do.)
With --preload-kernels M (> 0), the same again for M kernels of a copy of
the kernelspec whose argv adds `--preload numpy,pandas,matplotlib`, after the
first set is deleted. Every kernel is deleted and the gateway stopped at the
end (its state dir removed). Run as root.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
PRELOAD = "numpy,pandas,matplotlib"
MiB = 1024 * 1024


def smaps_rollup_kib(pid):
    """{field: KiB} of /proc/<pid>/smaps_rollup, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = {}
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    fields[parts[0].rstrip(":")] = int(parts[1])
            return fields
    except OSError:
        return None


def meminfo_kib(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def memory_cgroup_bytes(pid):
    """Usage of the memory cgroup a process is in (v1 or v2), or None."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidates = [f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes"]
        elif controllers == "":
            candidates = [f"/sys/fs/cgroup{path}/memory.current"]
        else:
            continue
        for c in candidates:
            try:
                with open(c) as f:
                    return int(f.read())
            except OSError:
                pass
    return None


def sandbox_processes(gw, kid, comm):
    """(outer pid, supervisor pid, kernel pid) of a kernel's sandbox."""
    info = gw.sandbox_info(kid)
    # Both sandgate-sandbox processes name the sandbox; the outer one is the
    # one that is not a descendant of another.
    outers = [p for p in info["outer"] if p not in info["all"]]
    if len(outers) != 1:
        raise AssertionError(f"kernel {kid}: outer sandgate-sandbox processes {outers}")
    outer = outers[0]
    inner = [p for p in set(info["all"]) if (comm(p) or "").startswith("sandgate-sandb")]
    kernels = [p for p in set(info["all"]) if (comm(p) or "").startswith("sandgate-python")]
    if len(inner) != 1 or len(kernels) != 1:
        raise AssertionError(f"kernel {kid}: supervisor {inner}, kernel {kernels}")
    return outer, inner[0], kernels[0]


def measure(procs):
    """Per sandbox: {pss, private, kernel_pss} in KiB, and the cgroup usage."""
    rows = []
    for outer, sup, kern in procs:
        maps = [smaps_rollup_kib(p) for p in (outer, sup, kern)]
        if any(m is None for m in maps):
            raise AssertionError(f"a process of sandbox {outer} is gone")
        rows.append({
            "pss": sum(m["Pss"] for m in maps),
            "private": sum(m["Private_Clean"] + m["Private_Dirty"] for m in maps),
            "kernel_pss": maps[2]["Pss"],
            "sandbox_pss": maps[0]["Pss"] + maps[1]["Pss"],
            "cgroup": memory_cgroup_bytes(kern),
        })
    return rows


def settle(procs, deadline_s):
    """Waits until the summed PSS changes by less than 0.5% over 2 s (or the
    deadline); returns the last reading and whether it settled."""
    deadline = time.monotonic() + deadline_s
    last = measure(procs)
    while time.monotonic() < deadline:
        time.sleep(2)
        now = measure(procs)
        a, b = sum(r["pss"] for r in last), sum(r["pss"] for r in now)
        last = now
        if abs(b - a) <= 0.005 * a:
            return now, True
    return last, False


def run_set(gw, name, count, concurrency, settle_s, comm):
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        kids = list(pool.map(lambda _: gw.start_kernel(name), range(count)))
    start_s = time.monotonic() - t0
    try:
        procs = [sandbox_processes(gw, kid, comm) for kid in kids]
        rows, settled = settle(procs, settle_s)
        gateway_pss = smaps_rollup_kib(gw.pid)["Pss"]
    finally:
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(gw.delete_kernel, kids))
    return {
        "kernels": count,
        "start_s": start_s,
        "settled": settled,
        "rows": rows,
        "gateway_pss_kib": gateway_pss,
    }


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def report(label, result, machine_gib, markdown):
    rows = result["rows"]
    n = result["kernels"]
    pss = sum(r["pss"] for r in rows) / n / 1024
    private = sum(r["private"] for r in rows) / n / 1024
    kernel = sum(r["kernel_pss"] for r in rows) / n / 1024
    sandbox = sum(r["sandbox_pss"] for r in rows) / n / 1024
    cgroup = median([r["cgroup"] for r in rows])
    line = {
        "kernels": str(n),
        "PSS per sandbox, MiB (kernel + 2 sandgate-sandbox)": f"{pss:.1f} ({kernel:.1f} + {sandbox:.2f})",
        "private per sandbox, MiB": f"{private:.1f}",
        "memory cgroup per sandbox (median), MiB": f"{cgroup / MiB:.1f}" if cgroup else "n/a",
        "sandboxes per GiB (PSS)": f"{1024 / pss:.1f}",
        f"sandboxes in {machine_gib} GiB at this PSS": f"{machine_gib * 1024 / pss:.0f}",
        f"sandboxes in {machine_gib} GiB at the private size": f"{machine_gib * 1024 / private:.0f}",
        "gateway PSS with these kernels, MiB": f"{result['gateway_pss_kib'] / 1024:.1f}",
        "start of all, s": f"{result['start_s']:.0f}",
        "settled": "yes" if result["settled"] else "no (deadline)",
    }
    if markdown:
        return label, line
    print(f"{label}:")
    for k, v in line.items():
        print(f"  {k}: {v}")
    return label, line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("SANDGATE_BUILD_DIR", "build"))
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--preload-kernels", type=int, default=0,
                    help=f"also measure this many kernels started with --preload {PRELOAD}")
    ap.add_argument("--concurrency", type=int, default=2, help="starts in flight at once")
    ap.add_argument("--settle-s", type=float, default=120, help="deadline for the memory to settle")
    ap.add_argument("--machine-gib", type=int, default=24, help="machine size for the extrapolation")
    ap.add_argument("--kernel-binary", help="run this sandgate-python instead of the build's (to compare builds)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="add to the kernels' environment (a kernelspec copy), for experiments")
    ap.add_argument("--markdown", action="store_true", help="print one Markdown table")
    args = ap.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    os.environ["SANDGATE_BUILD_DIR"] = build_dir
    sys.path.insert(0, os.path.join(HERE, "..", "support"))
    sys.path.insert(0, os.path.join(HERE, "..", "security"))
    from sandgate_fixture import comm  # noqa: E402
    from security_case import sandbox_gateway  # noqa: E402

    with open(os.path.join(ROOT, "share", "sandgate", "policies", "default.json")) as f:
        policy = json.load(f)
    specs = tempfile.mkdtemp(prefix="sandgate-density-specs-")
    with open(os.path.join(build_dir, "share", "jupyter", "kernels", "python", "kernel.json")) as f:
        spec = json.load(f)
    spec["env"] = {**spec.get("env", {}), **dict(e.split("=", 1) for e in args.env)}
    if args.kernel_binary:
        spec["argv"][0] = os.path.abspath(args.kernel_binary)
    plain = "python-env" if args.env or args.kernel_binary else "python"
    preload = dict(spec, argv=spec["argv"] + ["--preload", PRELOAD], display_name=f"Python (preload {PRELOAD})")
    for name, body in ((plain, spec), ("python-preload", preload)):
        os.makedirs(os.path.join(specs, name), exist_ok=True)
        with open(os.path.join(specs, name, "kernel.json"), "w") as f:
            json.dump(body, f)

    started = datetime.datetime.now(datetime.timezone.utc)
    load = [os.getloadavg()[0]]
    most = max(args.kernels, args.preload_kernels)
    results = []
    gw = sandbox_gateway("--kernel-path", specs, "--max-kernels", str(most + 8), policy=policy, name="density")
    try:
        label = " ".join(["python", *args.env] + ([args.kernel_binary] if args.kernel_binary else []))
        results.append((label, run_set(gw, plain, args.kernels, args.concurrency, args.settle_s, comm)))
        load.append(os.getloadavg()[0])
        if args.preload_kernels > 0:
            results.append((f"python --preload {PRELOAD}",
                            run_set(gw, "python-preload", args.preload_kernels, args.concurrency, args.settle_s,
                                    comm)))
            load.append(os.getloadavg()[0])
    finally:
        gw.stop()
        shutil.rmtree(specs, ignore_errors=True)

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, "
          f"{meminfo_kib('MemTotal') / MiB:.1f} GiB, Linux {platform.release()}; {started:%Y-%m-%d %H:%M} UTC; "
          f"load average (1 min) {min(load):.1f}-{max(load):.1f}\n")
    lines = [report(label, r, args.machine_gib, args.markdown) for label, r in results]
    if args.markdown:
        keys = list(lines[0][1])
        print("| | " + " | ".join(label for label, _ in lines) + " |")
        print("|---|" + "---|" * len(lines))
        for k in keys:
            print(f"| {k} | " + " | ".join(line[k] for _, line in lines) + " |")


if __name__ == "__main__":
    main()
