#!/usr/bin/python3
"""Egress through sandgate-egress vs directly on the host, on loopback only.

A local HTTP server on 127.0.0.1 serves N MiB; curl fetches it on the host
(direct) and from a command in a sandbox whose policy allows bench.test
(-> 127.0.0.1 via --egress-hosts-file), through the forwarder and the proxy.
Reports throughput, time to first byte of a tiny response (p50 of many), and
the proxy's and the supervisor's CPU per MiB moved. Needs root (sandboxes).

usage: SANDGATE_BUILD_DIR=build tests/bench/egress_bench.py [--mib 100] [--runs 3] [--ttfb 200]
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "security"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import egress_servers  # noqa: E402
from sandgate_fixture import host_processes  # noqa: E402
from security_case import TEST_POLICY, sandbox_gateway  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ttfb", type=int, default=200)
    args = ap.parse_args()
    srv = egress_servers.serve()
    port = srv.server_address[1]
    work = tempfile.mkdtemp(prefix="sandgate-egress-bench-")
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 bench.test\n")
    net = {"mode": "allow", "hosts": ["bench.test"], "cidrs": ["127.0.0.1/32"], "ports": [port],
           "bytes_per_second": 1 << 40}
    policy = copy.deepcopy(TEST_POLICY)
    policy["limits"]["memory_bytes"] = 1 << 30
    policy["network_ceiling"] = net
    gw = sandbox_gateway("--egress-hosts-file", hosts, policy=policy, name="egress-bench")
    try:
        status, body = gw.request("POST", "api/sandboxes", {"network": net})
        assert status == 201, body
        sid = json.loads(body)["id"]

        def in_sandbox(cmd, timeout=600):
            status, body = gw.request("POST", f"api/sandboxes/{sid}/commands", {"cmd": cmd, "timeout_s": timeout},
                                      timeout=timeout + 30)
            assert status == 200, body
            r = json.loads(body)
            assert r["exit_code"] == 0, r
            return r["stdout"]

        big = f"/bytes/{args.mib << 20}"
        in_sandbox(f"curl -sS -o /dev/null http://bench.test:{port}/hello")  # the proxy starts
        proxy = [p for p, cmd, _ in host_processes() if b"sandgate-egress" in cmd.split(b"\0")[0]][0]
        outer = [p for p, cmd, _ in host_processes() if sid.encode() in cmd and b"sandgate-sandbox" in cmd][0]
        supervisor = int(open(f"/proc/{outer}/task/{outer}/children").read().split()[0])
        fmt = "-w '%{speed_download} %{time_starttransfer}\\n'"
        direct, proxied, cpu_proxy, cpu_sup = [], [], [], []
        for _ in range(args.runs):
            out = subprocess.run(f"curl -sS -o /dev/null {fmt} http://127.0.0.1:{port}{big}", shell=True,
                                 capture_output=True, text=True, check=True).stdout
            direct.append(float(out.split()[0]))
            p0, s0 = cpu_s(proxy), cpu_s(supervisor)
            out = in_sandbox(f"curl -sS -o /dev/null {fmt} http://bench.test:{port}{big}")
            proxied.append(float(out.split()[0]))
            cpu_proxy.append((cpu_s(proxy) - p0) / args.mib)
            cpu_sup.append((cpu_s(supervisor) - s0) / args.mib)
        loop = f"for i in $(seq {args.ttfb}); do curl -sS -o /dev/null -w '%{{time_starttransfer}}\\n' URL; done"
        host_ttfb = subprocess.run(loop.replace("URL", f"http://127.0.0.1:{port}/hello"), shell=True,
                                   capture_output=True, text=True, check=True).stdout.split()
        box_ttfb = in_sandbox(loop.replace("URL", f"http://bench.test:{port}/hello")).split()
        d, p = statistics.median(direct) / 2**20, statistics.median(proxied) / 2**20
        h50, b50 = statistics.median(map(float, host_ttfb)) * 1e3, statistics.median(map(float, box_ttfb)) * 1e3
        result = {
            "mib": args.mib, "runs": args.runs,
            "direct_mib_s": round(d, 1), "proxied_mib_s": round(p, 1), "ratio": round(p / d, 2),
            "ttfb_direct_p50_ms": round(h50, 3), "ttfb_proxied_p50_ms": round(b50, 3),
            "ttfb_added_p50_ms": round(b50 - h50, 3),
            "proxy_cpu_ms_per_mib": round(statistics.median(cpu_proxy) * 1e3, 3),
            "forwarder_cpu_ms_per_mib": round(statistics.median(cpu_sup) * 1e3, 3),
        }
        print(json.dumps(result, indent=2))
    finally:
        gw.stop()


if __name__ == "__main__":
    main()
