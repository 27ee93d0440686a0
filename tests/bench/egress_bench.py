#!/usr/bin/python3
"""Egress through sandgate-egress vs directly on the host, on loopback only.

A local HTTP server on 127.0.0.1 serves N MiB; curl fetches it on the host
(direct) and from a command in a sandbox whose policy allows bench.test
(-> 127.0.0.1 via --egress-hosts-file), through the proxy, which accepts on
the sandbox's 127.0.0.1:3128 (proxied); and, for what a sandbox costs by
itself, a server inside the sandbox serves the same to a curl beside it over
the sandbox's own loopback (no proxy: "inside"); and, as the floor for any
relay outside the sandbox, through the cheapest relay there is: a few lines
on the host that splice(2) each direction through a 1 MiB pipe, no policy,
no parsing ("floor"). The four in turn, each run. The sandbox may use
every CPU (limits.cpu), so that its CPU limit does not bound it where the
host's curl has none. Reports throughput (median of the runs), time to first
byte of a tiny response (p50 of many), the proxy's and the supervisor's CPU
per MiB moved (the supervisor relays nothing; builds before the proxy
accepted in the sandbox had it forward every byte), and the load average around it. Needs root (sandboxes).

usage: SANDGATE_BUILD_DIR=build tests/bench/egress_bench.py [--mib 100] [--runs 3] [--ttfb 200]
"""

import argparse
import copy
import fcntl
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "security"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import egress_servers  # noqa: E402
from sandgate_fixture import host_processes, parent_pid  # noqa: E402
from security_case import TEST_POLICY, sandbox_gateway  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

# The same bytes as egress_servers' /bytes/N, from inside the sandbox: port 0, told through a file.
INSIDE_SERVER = r"""
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
open("/tmp/bench-port.tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename("/tmp/bench-port.tmp", "/tmp/bench-port")
chunk = b"b" * (1 << 20)
while True:
    c, _ = s.accept()
    c.recv(65536)
    n = N
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
    while n > 0:
        c.sendall(chunk[:min(n, len(chunk))])
        n -= min(n, len(chunk))
    c.close()
"""


def floor_relay(upstream_port):
    """A relay on 127.0.0.1 of the host to upstream_port that does nothing but
    splice(2) bytes each way, 1 MiB per call: what relaying costs by itself.
    Returns its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(src, dst):
        r, w = os.pipe()
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
        try:
            while (n := os.splice(src.fileno(), w, 1 << 20)) > 0:
                while n > 0:
                    n -= os.splice(r, dst.fileno(), n)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            os.close(r)
            os.close(w)

    def serve():
        while True:
            client, _ = listener.accept()
            upstream = socket.create_connection(("127.0.0.1", upstream_port))
            down = threading.Thread(target=pump, args=(upstream, client), daemon=True)
            down.start()
            threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
            down.join()
            client.close()
            upstream.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


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
    relay_port = floor_relay(port)
    work = tempfile.mkdtemp(prefix="sandgate-egress-bench-")
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 bench.test\n")
    net = {"mode": "allow", "hosts": ["bench.test"], "cidrs": ["127.0.0.1/32"], "ports": [port],
           "bytes_per_second": 1 << 40}
    policy = copy.deepcopy(TEST_POLICY)
    policy["limits"]["memory_bytes"] = 1 << 30
    policy["limits"]["cpu"] = float(os.cpu_count())
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
        in_sandbox(f"curl -sS -o /dev/null http://bench.test:{port}/hello")  # the path works
        proxy = [p for p, cmd, _ in host_processes()
                 if b"sandgate-egress" in cmd.split(b"\0")[0] and parent_pid(p) == gw.pid][0]
        outer = [p for p, cmd, _ in host_processes() if sid.encode() in cmd and b"sandgate-sandbox" in cmd][0]
        supervisor = int(open(f"/proc/{outer}/task/{outer}/children").read().split()[0])
        fmt = "-w '%{speed_download} %{time_starttransfer}\\n'"
        load_before = os.getloadavg()
        direct, proxied, inside, floor, cpu_proxy, cpu_sup = [], [], [], [], [], []
        server_inside = INSIDE_SERVER.replace("N\n", f"{args.mib << 20}\n")
        inside_cmd = (f"rm -f /tmp/bench-port; python3 -c '{server_inside}' & "
                      "for i in $(seq 500); do [ -e /tmp/bench-port ] && break; sleep 0.01; done; "
                      f"curl -sS -o /dev/null {fmt} --noproxy '*' http://127.0.0.1:$(cat /tmp/bench-port)/; kill %1")
        for _ in range(args.runs):
            out = subprocess.run(f"curl -sS -o /dev/null {fmt} http://127.0.0.1:{port}{big}", shell=True,
                                 capture_output=True, text=True, check=True).stdout
            direct.append(float(out.split()[0]))
            p0, s0 = cpu_s(proxy), cpu_s(supervisor)
            out = in_sandbox(f"curl -sS -o /dev/null {fmt} http://bench.test:{port}{big}")
            proxied.append(float(out.split()[0]))
            cpu_proxy.append((cpu_s(proxy) - p0) / args.mib)
            cpu_sup.append((cpu_s(supervisor) - s0) / args.mib)
            inside.append(float(in_sandbox(inside_cmd).split()[0]))
            out = subprocess.run(f"curl -sS -o /dev/null {fmt} http://127.0.0.1:{relay_port}{big}", shell=True,
                                 capture_output=True, text=True, check=True).stdout
            floor.append(float(out.split()[0]))
        loop = f"for i in $(seq {args.ttfb}); do curl -sS -o /dev/null -w '%{{time_starttransfer}}\\n' URL; done"
        host_ttfb = subprocess.run(loop.replace("URL", f"http://127.0.0.1:{port}/hello"), shell=True,
                                   capture_output=True, text=True, check=True).stdout.split()
        box_ttfb = in_sandbox(loop.replace("URL", f"http://bench.test:{port}/hello")).split()
        d, p = statistics.median(direct) / 2**20, statistics.median(proxied) / 2**20
        i = statistics.median(inside) / 2**20
        f = statistics.median(floor) / 2**20
        h50, b50 = statistics.median(map(float, host_ttfb)) * 1e3, statistics.median(map(float, box_ttfb)) * 1e3
        result = {
            "mib": args.mib, "runs": args.runs,
            "direct_mib_s": round(d, 1),
            "proxied_mib_s": round(p, 1), "ratio": round(p / d, 2),
            "floor_mib_s": round(f, 1), "floor_ratio": round(f / d, 2), "proxied_vs_floor": round(p / f, 2),
            "inside_mib_s": round(i, 1), "inside_ratio": round(i / d, 2), "proxied_vs_inside": round(p / i, 2),
            "runs_mib_s": {"direct": [round(x / 2**20) for x in direct],
                           "proxied": [round(x / 2**20) for x in proxied],
                           "inside": [round(x / 2**20) for x in inside],
                           "floor": [round(x / 2**20) for x in floor]},
            "ttfb_direct_p50_ms": round(h50, 3), "ttfb_proxied_p50_ms": round(b50, 3),
            "ttfb_added_p50_ms": round(b50 - h50, 3),
            "proxy_cpu_ms_per_mib": round(statistics.median(cpu_proxy) * 1e3, 3),
            "supervisor_cpu_ms_per_mib": round(statistics.median(cpu_sup) * 1e3, 3),
            "load_average_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
        }
        print("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in result.items()) + "\n}")
    finally:
        gw.stop()


if __name__ == "__main__":
    main()
