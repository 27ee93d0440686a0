#!/usr/bin/python3
"""MCP against the REST API it is built on (docs/benchmarks.md, "MCP"): the
p50 of `tools/call` run_code of `1+1` over /mcp and of the same code over
`POST /api/kernels/{id}/execute` in the same kernel, interleaved in one run
on kept-alive connections; and the gateway's resident memory per open MCP
session (N initialized sessions, RSS before and after). Needs root (real
sandboxes). --short: a smoke run under CTest.

usage: SANDGATE_BUILD_DIR=build tests/bench/mcp_bench.py [--short]
"""
import http.client
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from sandgate_fixture import Gateway, rss_kib  # noqa: E402


class Conn:
    def __init__(self, gw):
        self.gw = gw
        self.http = http.client.HTTPConnection(gw.host, gw.port, timeout=60)

    def post(self, path, body, headers=None):
        h = {"Authorization": f"Bearer {self.gw.token}", "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        self.http.request("POST", self.gw.base_path + path, body=json.dumps(body), headers=h)
        r = self.http.getresponse()
        data = r.read()
        if r.status != 200:
            raise SystemExit(f"POST {path}: {r.status} {data[:300]!r}")
        return r, json.loads(data)


def initialize(conn):
    r, _ = conn.post("mcp", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "1"}}})
    return {"Mcp-Session-Id": r.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}


def p(values, q):
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def main():
    short = "--short" in sys.argv
    rounds, sessions = (50, 50) if short else (1000, 1000)
    gw = Gateway(name="mcp-bench", sandboxed=True)
    try:
        mcp, rest = Conn(gw), Conn(gw)
        session = initialize(mcp)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": "1+1"}}}
        _, first = mcp.post("mcp", call, session)
        kernel = first["result"]["structuredContent"]["kernel_id"]
        over_mcp, over_rest = [], []
        for i in range(rounds + 20):  # 20 warm-up rounds, interleaved
            t = time.perf_counter()
            _, a = mcp.post("mcp", call, session)
            m = time.perf_counter() - t
            t = time.perf_counter()
            _, b = rest.post(f"api/kernels/{kernel}/execute", {"code": "1+1"})
            e = time.perf_counter() - t
            assert a["result"]["structuredContent"]["result"] == "2" and b["result"] == "2", (a, b)
            if i >= 20:
                over_mcp.append(m)
                over_rest.append(e)
        print("| measure | MCP `tools/call` | REST execute | difference |\n|---|---|---|---|")
        for q in (50, 90):
            print(f"| `1+1`, p{q} | {p(over_mcp, q):.2f} ms | {p(over_rest, q):.2f} ms | "
                  f"{p(over_mcp, q) - p(over_rest, q):+.2f} ms |")
        before = rss_kib(gw.pid)
        conns = [Conn(gw) for _ in range(4)]
        for i in range(sessions):
            initialize(conns[i % 4])
        after = rss_kib(gw.pid)
        print(f"| gateway RSS per open MCP session ({sessions} sessions) | {(after - before) * 1024 / sessions:.0f} bytes "
              f"| | RSS {before} → {after} KiB |")
    finally:
        gw.stop()


if __name__ == "__main__":
    main()
