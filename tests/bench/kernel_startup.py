#!/usr/bin/python3
"""Kernel start-up time: process start to kernel_info_reply, median of N runs.

    JUPYTER_PATH=<build>/share/jupyter /usr/bin/python3 tests/bench/kernel_startup.py [--runs 7]

Each run writes a fresh connection file (ipc transport in a temp dir), starts
the kernel with the argv of its kernelspec (plus extra arguments), sends
kernel_info_request right away (ZeroMQ queues it until the kernel binds) and
stops the clock at the reply. The kernel is then shut down with
shutdown_request; the CPU column is the kernel process's user+system time over
its whole life (start, one kernel_info, shutdown), which depends less on other
load than the wall-clock time does. Prints a Markdown table.
"""

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
import uuid

from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.kernelspec import KernelSpecManager

CASES = [
    ("python", []),
    ("python", ["--preload", "numpy,pandas,matplotlib"]),
    ("bash", []),
]


def start_once(spec, extra, workdir):
    conn_file = os.path.join(workdir, f"kernel-{uuid.uuid4().hex}.json")
    write_connection_file(conn_file, transport="ipc", ip=os.path.join(workdir, uuid.uuid4().hex[:8]),
                          key=uuid.uuid4().hex.encode())
    argv = [a.replace("{connection_file}", conn_file) for a in spec.argv] + extra
    env = dict(os.environ, **spec.env)
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = BlockingKernelClient(connection_file=conn_file)
    client.load_connection_file()
    client.start_channels()
    try:
        client.kernel_info()
        reply = client.get_shell_msg(timeout=60)  # raises queue.Empty if the kernel died
        elapsed = time.perf_counter() - started
        assert reply["msg_type"] == "kernel_info_reply", reply["msg_type"]
        client.shutdown()
        cpu = wait_cpu_seconds(process, timeout_s=20)
    finally:
        client.stop_channels()
        if process.poll() is None:
            process.kill()
            process.wait()
    return elapsed, cpu


def wait_cpu_seconds(process, timeout_s):
    """Reaps the kernel and returns its user+system CPU time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid, _status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            process.returncode = 0
            return usage.ru_utime + usage.ru_stime
        time.sleep(0.01)
    raise TimeoutError("kernel did not exit after shutdown_request")


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    specs = KernelSpecManager()
    print(f"machine: {os.cpu_count()} CPUs ({cpu_model()}), {platform.platform()}")
    print(f"runs per row: {args.runs} (after one warm-up run); load average before: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| kernel | arguments | median (s) | min (s) | max (s) | CPU median (s) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="sandgate-bench-") as workdir:
        for name, extra in CASES:
            spec = specs.get_kernel_spec(name)
            start_once(spec, extra, workdir)  # warm the page cache
            runs = [start_once(spec, extra, workdir) for _ in range(args.runs)]
            times = [wall for wall, _cpu in runs]
            cpu = statistics.median(cpu for _wall, cpu in runs)
            print(f"| {name} ({os.path.basename(spec.argv[0])}) | {' '.join(extra) or '-'} | "
                  f"{statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} | {cpu:.3f} |",
                  flush=True)


if __name__ == "__main__":
    main()
