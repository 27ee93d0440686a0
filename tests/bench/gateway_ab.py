#!/usr/bin/python3
"""Two builds of the gateway side by side, A/B: the same sandgate-python
kernel (build A's) behind each gateway, unsandboxed, rounds alternating
A, B, A, B, ... so that the machine's drift falls on both alike.

Each round starts a fresh gateway and runs, through it:
  stream   gateway_bench --target rest --measurements stream --stream-mib N
  execute  gateway_bench --target rest --measurements one-kernel --starts 1
           --warmup 200 --executes M          (execute p50 and executes/s)

  gateway_ab.py --a BUILD_DIR --b BUILD_DIR [--rounds 3] [--stream-mib 50]
                [--executes 2000] [--label-a before] [--label-b after]

Prints a Markdown table of every round's numbers and their medians; the
gateway's CPU is its threads' schedstat run time over the timed part. Nothing is built here;
each build dir needs bin/sandgate, and build A also tests/bench/gateway_bench
and bin/sandgate-python.
"""

import argparse
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def start_gateway(build, kernelspec_dir, token):
    state = tempfile.mkdtemp(prefix="sandgate-ab-")
    env = dict(os.environ, SANDGATE_AUTH_TOKEN=token)
    proc = subprocess.Popen([os.path.join(build, "bin", "sandgate"), "--port", "0", "--state-dir", state,
                             "--unsandboxed-kernels", "*", "--kernel-path", kernelspec_dir,
                             "--shutdown-kernels-on-exit"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1)), state
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit(f"{build}: the gateway did not say where it listens")


def run_bench(bench, port, pid, token, args):
    env = dict(os.environ, GATEWAY_BENCH_TOKEN=token)
    out = subprocess.run([bench, "--target", "rest", "--port", str(port), "--pid", str(pid),
                          "--kernel-name", "python", *args],
                         env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"gateway_bench failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def one_round(build, bench, kernelspec_dir, stream_mib, executes):
    token = secrets.token_hex(16)
    proc, port, state = start_gateway(build, kernelspec_dir, token)
    try:
        stream = run_bench(bench, port, proc.pid, token,
                           ["--measurements", "stream", "--stream-mib", str(stream_mib)])
        execute = run_bench(bench, port, proc.pid, token,
                            ["--measurements", "one-kernel", "--starts", "1", "--warmup", "200",
                             "--executes", str(executes)])
    finally:
        proc.terminate()
        proc.wait(30)
        subprocess.run(["rm", "-rf", state], check=False)
    return {"stream_mb_s": stream["stream"]["mb_s"], "p50_ms": execute["execute"]["p50_ms"],
            "per_s": execute["execute"]["per_s"],
            "cpu_us_per_exec": execute["execute"].get("server_cpu_us_per_exec_schedstat", float("nan")),
            "cpu_ms_per_mib": stream["stream"].get("server_cpu_us_per_mib_schedstat", float("nan")) / 1000}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stream-mib", type=int, default=50)
    ap.add_argument("--executes", type=int, default=2000)
    args = ap.parse_args()
    bench = os.path.join(args.a, "tests", "bench", "gateway_bench")
    kernelspecs = os.path.join(args.a, "share", "jupyter", "kernels")
    results = {args.label_a: [], args.label_b: []}
    for i in range(args.rounds):
        for label, build in ((args.label_a, args.a), (args.label_b, args.b)):
            r = one_round(build, bench, kernelspecs, args.stream_mib, args.executes)
            results[label].append(r)
            print(f"round {i + 1} {label}: {r}", file=sys.stderr, flush=True)
    columns = (("stream (MB/s)", "stream_mb_s", "{:.0f}"), ("execute p50 (ms)", "p50_ms", "{:.3f}"),
               ("executes/s", "per_s", "{:.0f}"), ("gateway CPU per execute (µs)", "cpu_us_per_exec", "{:.0f}"),
               ("gateway CPU per MiB of stream (ms)", "cpu_ms_per_mib", "{:.2f}"))
    print("| gateway | " + " | ".join(title for title, _, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for label, rounds in results.items():
        cells = []
        for _, key, fmt in columns:
            values = [r[key] for r in rounds]
            cells.append(", ".join(fmt.format(v) for v in values) + " (median " +
                         fmt.format(statistics.median(values)) + ")")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
