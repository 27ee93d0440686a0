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

    /usr/bin/python3 tests/bench/sandbox_overhead.py --setup-only --runs 50 \
        --sandbox build/bin/sandgate-sandbox [--sandbox /tmp/old/sandgate-sandbox]

times the sandbox setup alone, without a gateway, for one or more
sandgate-sandbox binaries (runs interleaved, so that a busy machine's load
falls on all alike), with the shipped default policy:
- standalone `-- /bin/date +%s%N`: from just before the process is started to
  the clock reading of `date` inside (i.e. start -> command exec, plus date's
  own start-up of about a millisecond), and to the exit of sandgate-sandbox;
- control mode (--control): from just before the start to the `ready` event
  read from the control socket (what the gateway's kernel_starting ->
  sandbox_ready measures), then a shutdown;
- with SANDGATE_SANDBOX_TIMING=1 (binaries that support it), the median time
  of every setup step, from sandgate-sandbox's own per-step marks;
- resident memory: VmRSS of the outer process and the supervisor of a
  control-mode sandbox running `sleep`, 1.5 s after the start, and 1.5 s after
  a child (spawned with capture where the binary supports it) wrote 8 MiB.
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


def setup_run_standalone(sandbox, policy):
    """One standalone run: (start -> exec ms, start -> exit ms, [(step, ns)])."""
    import subprocess
    env = {**os.environ, "SANDGATE_SANDBOX_TIMING": "1"}
    t0 = time.time_ns()
    m0 = time.monotonic_ns()
    r = subprocess.run([sandbox, "--policy", policy, "--", "/bin/date", "+%s%N"], capture_output=True,
                       text=True, env=env)
    m1 = time.monotonic_ns()
    if r.returncode != 0:
        raise RuntimeError(f"{sandbox}: exit {r.returncode}: {r.stderr}")
    exec_ms = (int(r.stdout.strip()) - t0) / 1e6
    marks = [(m0, "start")]
    for line in r.stderr.splitlines():
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[:2] == ["sandgate-sandbox", "timing"]:
            marks.append((int(parts[3]), parts[4]))
    marks.sort()
    return exec_ms, (m1 - m0) / 1e6, marks


def baseline_run():
    """The same command without a sandbox: start -> exec (ms), start -> exit (ms)."""
    import subprocess
    t0 = time.time_ns()
    m0 = time.monotonic_ns()
    r = subprocess.run(["/bin/date", "+%s%N"], capture_output=True, text=True, check=True)
    m1 = time.monotonic_ns()
    return (int(r.stdout.strip()) - t0) / 1e6, (m1 - m0) / 1e6


def setup_run_control(sandbox, policy):
    """One control-mode run: start -> ready event (ms)."""
    import socket
    import struct
    import subprocess
    import tempfile
    tmp = tempfile.mkdtemp(prefix="sandgate-bench-")
    path = os.path.join(tmp, "ctl.sock")
    t0 = time.monotonic()
    proc = subprocess.Popen([sandbox, "--policy", policy, "--control", path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        while True:
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                break
            except OSError:
                sock.close()
                if proc.poll() is not None:
                    raise RuntimeError(f"{sandbox}: exit {proc.returncode}: {proc.stderr.read()}")
                time.sleep(0.0005)
        header = sock.recv(4, socket.MSG_WAITALL)
        n = struct.unpack(">I", header)[0]
        ready = json.loads(sock.recv(n, socket.MSG_WAITALL))
        t1 = time.monotonic()
        assert ready["event"] == "ready", ready
        body = json.dumps({"op": "shutdown", "req": 1}).encode()
        sock.sendall(struct.pack(">I", len(body)) + body)
        proc.wait(timeout=30)
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.rmdir(tmp)
    return (t1 - t0) * 1000


def vm_rss_kib(pid):
    return kib(pid, "status", "VmRSS")


def memory_run(sandbox, policy):
    """VmRSS (KiB) of outer and supervisor: idle with a child, then after 8 MiB of output."""
    import socket
    import struct
    import subprocess
    import tempfile
    tmp = tempfile.mkdtemp(prefix="sandgate-bench-")
    path = os.path.join(tmp, "ctl.sock")
    proc = subprocess.Popen([sandbox, "--policy", policy, "--control", path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    buffer = b""

    def send(message):
        body = json.dumps(message).encode()
        sock.sendall(struct.pack(">I", len(body)) + body)

    def receive():
        nonlocal buffer
        while len(buffer) < 4 or len(buffer) < 4 + struct.unpack(">I", buffer[:4])[0]:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise EOFError
            buffer += chunk
        n = struct.unpack(">I", buffer[:4])[0]
        message = json.loads(buffer[4:4 + n])
        buffer = buffer[4 + n:]
        return message

    try:
        for _ in range(2000):
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                break
            except OSError:
                sock.close()
                time.sleep(0.005)
        ready = receive()
        outer, sup = ready["outer_pid"], ready["pid"]
        send({"op": "spawn", "req": 1, "id": "k", "argv": ["/bin/sleep", "1000"]})
        while receive().get("req") != 1:
            pass
        time.sleep(1.5)
        idle = (vm_rss_kib(outer), vm_rss_kib(sup))
        code = "import sys\nb = b'y' * 65536\nfor i in range(128): sys.stdout.buffer.write(b)\n"
        send({"op": "spawn", "req": 2, "id": "burst", "argv": ["/usr/bin/python3", "-c", code], "capture": True,
              "output_limit": 16 << 20})
        while True:
            m = receive()
            if m.get("event") == "exit" and m.get("id") == "burst":
                break
        time.sleep(1.5)
        burst = (vm_rss_kib(outer), vm_rss_kib(sup))
        send({"op": "shutdown", "req": 3})
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return idle, burst


def setup_benchmark(args):
    here = os.path.dirname(os.path.abspath(__file__))
    policy = os.path.join(here, "..", "..", "share", "sandgate", "policies", "default.json")
    sandboxes = [os.path.abspath(p) for p in args.sandbox]
    results = {p: {"exec": [], "exit": [], "ready": [], "steps": {}} for p in sandboxes}
    baseline = {"exec": [], "exit": []}
    load_before = os.getloadavg()
    for p in sandboxes:  # warm-up: page cache, cgroup parent
        setup_run_standalone(p, policy)
    for _ in range(args.runs):
        time.sleep(args.pause_ms / 1000)
        exec_ms, exit_ms = baseline_run()
        baseline["exec"].append(exec_ms)
        baseline["exit"].append(exit_ms)
        for p in sandboxes:
            time.sleep(args.pause_ms / 1000)  # let the last sandbox's teardown (netns, mounts) finish
            exec_ms, exit_ms, marks = setup_run_standalone(p, policy)
            res = results[p]
            res["exec"].append(exec_ms)
            res["exit"].append(exit_ms)
            for (t_prev, _), (t, step) in zip(marks, marks[1:]):
                res["steps"].setdefault(step, []).append((t - t_prev) / 1e6)
        for p in sandboxes:
            time.sleep(args.pause_ms / 1000)
            results[p]["ready"].append(setup_run_control(p, policy))
    load_after = os.getloadavg()
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, Linux {platform.release()}; "
          f"{args.runs} runs of each, interleaved, {args.pause_ms} ms apart; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after\n")
    print("| sandgate-sandbox | start → exec p50 (p90) ms | start → exit p50 (p90) ms | "
          "start → ready (control) p50 (p90) ms |")
    print("|---|---|---|---|")
    print(f"| no sandbox (`/bin/date` started directly) | {pct(baseline['exec'], .5):.1f} "
          f"({pct(baseline['exec'], .9):.1f}) | {pct(baseline['exit'], .5):.1f} ({pct(baseline['exit'], .9):.1f}) "
          f"| — |")
    for p in sandboxes:
        r = results[p]
        print(f"| {p} | {pct(r['exec'], .5):.1f} ({pct(r['exec'], .9):.1f}) | "
              f"{pct(r['exit'], .5):.1f} ({pct(r['exit'], .9):.1f}) | "
              f"{pct(r['ready'], .5):.1f} ({pct(r['ready'], .9):.1f}) |")
    print("\n| sandgate-sandbox | outer VmRSS, idle (after 8 MiB of output) KiB | "
          "supervisor VmRSS, idle (after 8 MiB of output) KiB |")
    print("|---|---|---|")
    for p in sandboxes:
        (outer_idle, sup_idle), (outer_burst, sup_burst) = memory_run(p, policy)
        print(f"| {p} | {outer_idle} ({outer_burst}) | {sup_idle} ({sup_burst}) |")
    for p in sandboxes:
        steps = results[p]["steps"]
        if len(steps) <= 1:
            continue
        print(f"\nsteps of {p} (median ms since the previous mark, in the order of the first run):\n")
        print("| step | p50 ms |")
        print("|---|---|")
        for step, values in steps.items():
            print(f"| {step} | {statistics.median(values):.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("SANDGATE_BUILD_DIR", "build"))
    ap.add_argument("--starts", type=int, default=8)
    ap.add_argument("--executes", type=int, default=100)
    ap.add_argument("--resident", type=int, default=3)
    ap.add_argument("--setup-only", action="store_true", help="time sandgate-sandbox's setup alone")
    ap.add_argument("--sandbox", action="append", default=[], help="sandgate-sandbox binary (--setup-only)")
    ap.add_argument("--runs", type=int, default=30, help="runs per binary (--setup-only)")
    ap.add_argument("--pause-ms", type=int, default=100, help="pause before each run (--setup-only)")
    args = ap.parse_args()
    if args.setup_only:
        if not args.sandbox:
            args.sandbox = [os.path.join(args.build_dir, "bin", "sandgate-sandbox")]
        return setup_benchmark(args)
    os.environ["SANDGATE_BUILD_DIR"] = os.path.abspath(args.build_dir)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "support"))
    sys.path.insert(0, os.path.join(here, "..", "security"))
    from sandgate_fixture import comm, descendants  # noqa: E402
    from security_case import sandbox_gateway  # noqa: E402

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
            gws[mode] = sandbox_gateway(policy=default_policy,
                                        unsandboxed=("python3",) if mode == "unsandboxed" else (),
                                        name=f"bench-{mode}")
        for _ in range(args.starts):
            for mode in modes:
                t = time.monotonic()
                kid = gws[mode].start_kernel()
                results[mode]["start"].append(time.monotonic() - t)
                gws[mode].delete_kernel(kid)
        kernels = {m: gws[m].connect(gws[m].start_kernel()) for m in modes}
        for _ in range(5):
            for mode in modes:
                kernels[mode].attempt("1")
        for _ in range(args.executes):
            for mode in modes:
                t = time.monotonic()
                r = kernels[mode].attempt("1")
                results[mode]["rtt"].append(time.monotonic() - t)
                assert r["status"] == "ok", r
        for mode in modes:
            kernels[mode].close()
            gws[mode].delete_kernel(kernels[mode].kernel_id)
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
