#!/usr/bin/python3
"""Checks share/cluster/haproxy.cfg with the real HAProxy and fake nodes.

Each fake node is a small HTTP server (a child process, on its own loopback
address, port 8888) that answers GET /health with 200, any other request with
JSON saying which node it is, what it got (method, path with query, body) and,
when told it is full, a POST with 503 + Retry-After: 1, as a full Sandgate
node answers creates; an upgrade request with 101. Its agent (port 8889) writes
the line it is told ("ready 100%" by default) and closes. The test talks to a
node directly on /_fake/ to set that state and read its counters.

Shown: id routing for kernels, sandboxes and sessions paths and a WebSocket
upgrade; a create that gets 503 is retried on another node with its body
intact; the ids of a killed node get a JSON 404 within 2 s; a node id with no
slot reaches some node; a spare slot joins at run time; drain, by the agent
and by the runtime API, keeps creates away but not the node's ids. Then, as
in Kubernetes, slots named by DNS (a fake DNS server on loopback, put in
/etc/resolv.conf of a private mount namespace; skipped unless root): a name
that starts to resolve brings its slot up, a changed address is followed.
Last, the config is valid with and without its options, and
share/cluster/kubernetes carries it unchanged (skipped without python3-yaml).

Every wait polls with a deadline; the whole run takes about 25 s.
Runs with /usr/bin/python3 (standard library; python3-yaml optional). Exit 0:
passed; 1: failed; 77: skipped, /usr/sbin/haproxy is missing (CTest
SKIP_RETURN_CODE 77).
"""

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import haproxy_fixture  # noqa: E402
from sandgate_fixture import wait_until  # noqa: E402

HTTP_PORT = 8888
AGENT_PORT = 8889
# A loopback /24 of its own per run, so two runs at once do not meet.
NET = "127.%d.%d" % (random.randint(100, 250), random.randint(1, 250))
NODES = {n: "%s.%d" % (NET, 10 + n) for n in (1, 2, 3, 4)}
TIMEOUT = 10  # seconds any single request may take


def node_id_uuid(node, tail="abcd-1234-8123-9abc-0123456789ab"):
    """An id of node `node`: its number in the first 4 hex digits."""
    return "%04x%s" % (node, tail)


# ---------------------------------------------------------------- fake node

def fake_node_main(node, addr, http_port, agent_port):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lock = threading.Lock()
    state = {"full": False, "agent": "ready 100%", "agent_checks": 0, "requests": 0,
             "rejected": 0, "creates": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle(self):
            try:
                super().handle()
            except (ConnectionError, TimeoutError):
                pass  # HAProxy's checks reset their connections

        def reply(self, code, obj, headers=()):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            if self.path.startswith("/_fake/"):
                with lock:
                    if body:
                        state.update(json.loads(body))
                    snapshot = dict(state)
                return self.reply(200, snapshot)
            if self.path == "/health":
                return self.reply(200, {"version": "fake"})
            with lock:
                state["requests"] += 1
                full = state["full"]
            if self.headers.get("Upgrade", "").lower() == "websocket":
                self.send_response(101)
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept",
                                 websocket_accept(self.headers.get("Sec-WebSocket-Key", "")))
                self.send_header("X-Fake-Node", str(node))
                self.end_headers()
                self.close_connection = True
                return
            if self.command == "POST" and self.path.split("?")[0] in (
                    "/api/kernels", "/api/sandboxes", "/api/sessions"):
                with lock:
                    if full:
                        state["rejected"] += 1
                    else:
                        state["creates"] += 1
                if full:
                    return self.reply(503, {"reason": "node_full", "message": "node %d is full" % node},
                                      [("Retry-After", "1")])
            self.reply(200, {"node": node, "method": self.command, "path": self.path, "body": body})

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = serve

    server = ThreadingHTTPServer((addr, http_port), Handler)
    server.daemon_threads = True

    agent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    agent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    agent.bind((addr, agent_port))
    agent.listen(64)

    def agent_loop():
        while True:
            conn, _ = agent.accept()
            with lock:
                state["agent_checks"] += 1
                line = state["agent"]
            try:
                conn.sendall(line.encode() + b"\n")
            except OSError:
                pass
            conn.close()

    threading.Thread(target=agent_loop, daemon=True).start()
    print("listening", flush=True)
    server.serve_forever()


class FakeNode:
    def __init__(self, node, addr):
        self.node, self.addr = node, addr
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--fake-node", str(node), addr,
             str(HTTP_PORT), str(AGENT_PORT)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.errors)
        # Bounded: the child prints this once it listens, or exits (bind error).
        line = self.proc.stdout.readline()
        if line.strip() != b"listening":
            self.errors.seek(0)
            errors = self.errors.read().decode(errors="replace")
            self.kill()
            raise RuntimeError("fake node %d on %s did not start: %s" % (node, addr, errors))

    def control(self, **changes):
        conn = http.client.HTTPConnection(self.addr, HTTP_PORT, timeout=TIMEOUT)
        try:
            body = json.dumps(changes) if changes else ""
            conn.request("POST", "/_fake/state", body=body, headers={"Content-Length": str(len(body))})
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.proc.stdout.close()
        self.errors.close()


# ---------------------------------------------------------------- client

class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


def request(url, method="GET", path="/", body=None, headers=None):
    host, port = url[len("http://"):].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        data = body.encode() if isinstance(body, str) else body
        hdrs = dict(headers or {})
        if data is not None:
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode())
    finally:
        conn.close()


def raw_exchange(url, data, pause_after=None):
    """Sends data (bytes) on a new connection, optionally in two parts with a
    pause at byte pause_after (headers first, body later), and returns the
    status code and the answer's head and body (a 101's head only)."""
    host, port = url[len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as s:
        if pause_after is None:
            s.sendall(data)
        else:
            s.sendall(data[:pause_after])
            time.sleep(0.2)  # the body comes in a later packet, as slow clients send it
            s.sendall(data[pause_after:])
        out = b""
        while b"\r\n\r\n" not in out:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        head, _, body = out.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while status != 101 and len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    return status, (head + b"\r\n\r\n" + body).decode(errors="replace")


def websocket_accept(key):
    return base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode())
                            .digest()).decode()


# ---------------------------------------------------------------- tests

class HAProxyConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nodes = {}
        cls.lb = None
        try:
            for n in (1, 2, 3, 4):
                cls.nodes[n] = FakeNode(n, NODES[n])
            cls.lb = haproxy_fixture.LoadBalancer(
                {n: (NODES[n], HTTP_PORT) for n in (1, 2, 3)},
                bind=("%s.1" % NET, 0), agent_port=AGENT_PORT)
            cls.wait_ready(1, 2, 3)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.lb is not None:
            cls.lb.stop()
        for node in cls.nodes.values():
            node.kill()

    @classmethod
    def wait_ready(cls, *ids):
        """The nodes are UP in both backends and their agents have reported
        (two checks begun after they were UP: the first one's line applied)."""
        for n in ids:
            cls.lb.wait_server_state(n, "UP", timeout=5, backend="slot")
            cls.lb.wait_server_state(n, "UP", timeout=5)
        checks = {n: cls.nodes[n].control()["agent_checks"] for n in ids}
        for n in ids:
            wait_until(lambda: cls.nodes[n].control()["agent_checks"] >= checks[n] + 2, 5,
                       "two agent checks of node %d" % n)

    def setUp(self):
        for n in (1, 2, 3):
            self.nodes[n].control(full=False, agent="ready 100%")

    def create(self, body='{"name": "python"}', path="/api/kernels"):
        return request(self.lb.url, "POST", path, body=body)

    # -- id routing

    def test_id_routing(self):
        paths = [
            ("GET", "/api/kernels/{id}"),
            ("DELETE", "/api/kernels/{id}"),
            ("POST", "/api/kernels/{id}/interrupt"),
            ("POST", "/api/kernels/{id}/restart"),
            ("POST", "/api/kernels/{id}/execute"),
            ("GET", "/api/kernels/{id}/executions/0f0e0d0c-aaaa-4bbb-8ccc-111122223333"),
            ("GET", "/api/kernels/{id}/channels?session_id=s1&token=secret"),
            ("GET", "/api/sandboxes/{id}"),
            ("PATCH", "/api/sandboxes/{id}"),
            ("PUT", "/api/sandboxes/{id}/files/data/a%20b.txt"),
            ("GET", "/api/sandboxes/{id}/files/data/?token=secret"),
            ("POST", "/api/sandboxes/{id}/commands"),
            ("GET", "/api/sessions/{id}"),
            ("PATCH", "/api/sessions/{id}?token=secret"),
        ]
        for n in (1, 2, 3):
            for method, template in paths:
                path = template.format(id=node_id_uuid(n))
                body = '{"code": "1 + 1"}' if method in ("POST", "PUT", "PATCH") else None
                with self.subTest(node=n, method=method, path=path):
                    r = request(self.lb.url, method, path, body=body)
                    self.assertEqual(r.status, 200, r.body)
                    got = r.json()
                    self.assertEqual(got["node"], n)
                    self.assertEqual(got["path"], path)  # query intact
                    self.assertEqual(got["method"], method)
                    self.assertEqual(got["body"], body or "")

    def test_ports_route_by_host_name_and_by_path(self):
        for n in (1, 2, 3):
            sid = node_id_uuid(n)
            with self.subTest(node=n):
                # By host name, whatever the path (even one that names another node's id).
                path = "/api/kernels/%s/app?x=1" % node_id_uuid(4 - n if n != 2 else 1)
                r = request(self.lb.url, "GET", path, headers={"Host": "3000-%s.localhost:8080" % sid.upper()})
                self.assertEqual((r.status, r.json()["node"], r.json()["path"]), (200, n, path))
                r = request(self.lb.url, "GET", "/api/sandboxes/%s/ports/3000/index.html" % sid)
                self.assertEqual((r.status, r.json()["node"]), (200, n))
                req = ("GET /ws HTTP/1.1\r\nHost: 8080-%s.sandboxes.example\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n" % sid).encode()
                status, answer = raw_exchange(self.lb.url, req)
                self.assertEqual(status, 101, answer)
                self.assertIn("x-fake-node: %d" % n, answer.lower())

    def test_each_request_of_a_connection_routed_on_its_own(self):
        conn = http.client.HTTPConnection(self.lb.url[len("http://"):], timeout=TIMEOUT)
        try:
            for n in (1, 2, 3, 2, 1):
                conn.request("GET", "/api/sessions/%s" % node_id_uuid(n))
                r = conn.getresponse()
                self.assertEqual((r.status, json.loads(r.read())["node"]), (200, n))
                self.assertFalse(r.will_close)
        finally:
            conn.close()

    def test_id_routing_ignores_case_of_hex(self):
        r = request(self.lb.url, "GET", "/api/kernels/0002ABCD-1234-8123-9ABC-0123456789AB")
        self.assertEqual((r.status, r.json()["node"]), (200, 2))

    def test_websocket_upgrade_reaches_owner(self):
        for n in (1, 2, 3):
            path = "/api/kernels/%s/channels?token=secret" % node_id_uuid(n)
            req = ("GET %s HTTP/1.1\r\nHost: lb\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   % path).encode()
            with self.subTest(node=n):
                status, answer = raw_exchange(self.lb.url, req)
                self.assertEqual(status, 101, answer)
                self.assertIn("x-fake-node: %d" % n, answer.lower())

    def test_everything_else_reaches_some_node(self):
        for path in ("/api", "/api/kernels", "/api/kernelspecs", "/api/kernelspecs/python",
                     "/kernelspecs/python/logo-64x64.png", "/metrics", "/api/sandboxes",
                     "/api/sessions", "/api/kernels/not-a-uuid"):
            with self.subTest(path=path):
                r = request(self.lb.url, "GET", path)
                self.assertEqual(r.status, 200, r.body)
                if path != "/api":
                    self.assertIn(r.json()["node"], (1, 2, 3, 4))

    def test_node_without_slot_reaches_some_node(self):
        for n in (9, 0x102, 0xFFFF):
            path = "/api/kernels/%s/channels?token=t" % node_id_uuid(n)
            with self.subTest(node=n):
                r = request(self.lb.url, "GET", path)
                self.assertEqual(r.status, 200, r.body)
                self.assertIn(r.json()["node"], (1, 2, 3, 4))
                self.assertEqual(r.json()["path"], path)

    # -- creates

    def test_create_retried_on_another_node_after_503(self):
        # The race an agent cannot close: nodes 1 and 2 say "ready" but are
        # full, so creates they get come back 503 and go on to node 3.
        self.nodes[1].control(full=True)
        self.nodes[2].control(full=True)
        before = {n: self.nodes[n].control() for n in (1, 2, 3)}
        body = json.dumps({"name": "python", "env": {"X": "y" * 2000}})
        for i in range(6):
            r = self.create(body)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["node"], 3)
            self.assertEqual(r.json()["body"], body)
        after = {n: self.nodes[n].control() for n in (1, 2, 3)}
        rejected = sum(after[n]["rejected"] - before[n]["rejected"] for n in (1, 2))
        self.assertGreater(rejected, 0, "no create met a full node, so none was retried")
        self.assertEqual(after[3]["creates"] - before[3]["creates"], 6)

    def test_create_with_late_body_retried(self):
        # Headers first, the body 200 ms later: HAProxy must have it all
        # before the first try to replay it (option http-buffer-request).
        self.nodes[1].control(full=True)
        self.nodes[2].control(full=True)
        before = sum(self.nodes[n].control()["rejected"] for n in (1, 2))
        body = b'{"name": "python", "metadata": {"k": "v"}}'
        head = (b"POST /api/sandboxes?token=secret HTTP/1.1\r\nHost: lb\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % len(body))
        for i in range(4):
            status, answer = raw_exchange(self.lb.url, head + body, pause_after=len(head))
            self.assertEqual(status, 200, answer)
            got = json.loads(answer.split("\r\n\r\n", 1)[1])
            self.assertEqual((got["node"], got["body"], got["path"]),
                             (3, body.decode(), "/api/sandboxes?token=secret"))
        after = sum(self.nodes[n].control()["rejected"] for n in (1, 2))
        self.assertGreater(after, before)

    def test_all_full_passes_the_nodes_503_on(self):
        for n in (1, 2, 3):
            self.nodes[n].control(full=True)
        before = sum(self.nodes[n].control()["rejected"] for n in (1, 2, 3))
        r = self.create()
        self.assertEqual(r.status, 503)
        self.assertEqual(r.json()["reason"], "node_full")
        self.assertEqual(r.headers.get("retry-after"), "1")
        # The first try and 3 retries, each on another node than the last.
        after = sum(self.nodes[n].control()["rejected"] for n in (1, 2, 3))
        self.assertEqual(after - before, 4)

    # -- drain

    def creates_spread(self, count):
        seen = {}
        for i in range(count):
            r = self.create()
            self.assertEqual(r.status, 200, r.body)
            seen[r.json()["node"]] = seen.get(r.json()["node"], 0) + 1
        return seen

    def assert_ids_reach(self, n):
        r = request(self.lb.url, "POST", "/api/kernels/%s/execute" % node_id_uuid(n), body='{"code": "1"}')
        self.assertEqual((r.status, r.json()["node"]), (200, n), r.body)
        req = ("GET /api/kernels/%s/channels HTTP/1.1\r\nHost: lb\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % node_id_uuid(n)).encode()
        status, answer = raw_exchange(self.lb.url, req)
        self.assertEqual(status, 101, answer)
        self.assertIn("x-fake-node: %d" % n, answer.lower())

    def test_drain_by_agent(self):
        self.assertEqual(self.lb.server_weight(2), 100)
        self.nodes[2].control(agent="drain")
        self.lb.wait_server_state(2, "DRAIN")
        self.assertEqual(self.lb.server_state(2, backend="slot"), "UP")
        self.assertNotIn(2, self.creates_spread(9))
        self.assert_ids_reach(2)
        # "ready 50%" ends the drain and sets half the weight.
        self.nodes[2].control(agent="ready 50%")
        self.lb.wait_server_state(2, "UP")
        wait_until(lambda: self.lb.server_weight(2) == 50, 5, "weight 50")
        self.nodes[2].control(agent="ready 100%")
        wait_until(lambda: self.lb.server_weight(2) == 100, 5, "weight 100")
        self.assertIn(2, self.creates_spread(9))

    def test_drain_by_runtime_api(self):
        self.lb.drain(1)
        try:
            self.lb.wait_server_state(1, "DRAIN")
            self.lb.wait_server_state(1, "DRAIN", backend="slot")
            # The node's agent keeps saying "ready 100%": two of its checks
            # later the drain holds.
            checks = self.nodes[1].control()["agent_checks"]
            wait_until(lambda: self.nodes[1].control()["agent_checks"] >= checks + 2, 5,
                       "two agent checks of node 1")
            self.assertEqual(self.lb.server_state(1), "DRAIN")
            self.assertNotIn(1, self.creates_spread(9))
            self.assert_ids_reach(1)
        finally:
            self.lb.ready(1)
        self.lb.wait_server_state(1, "UP")
        self.assertIn(1, self.creates_spread(9))

    # -- nodes leaving and joining

    def test_killed_node_ids_get_json_404(self):
        node = self.nodes[3]
        node.kill()
        killed = time.monotonic()
        path = "/api/kernels/%s/channels?token=t" % node_id_uuid(3)
        try:
            while True:
                r = request(self.lb.url, "GET", path)
                if r.status == 404:
                    break
                # Between the death and the check that sees it: HAProxy's own
                # JSON 503 for this node.
                self.assertEqual(r.status, 503, r.body)
                self.assertEqual(r.json()["reason"], "node_unreachable")
                self.assertLess(time.monotonic() - killed, 2.0, "still no 404 after 2 s")
                time.sleep(0.02)
            took = time.monotonic() - killed
            self.assertLess(took, 2.0)
            self.assertEqual(r.headers["content-type"], "application/json")
            self.assertEqual(r.json(), {"reason": "node_gone", "message": "Node 0003 is not reachable"})
            self.assertEqual(self.lb.server_state(3), "DOWN")
            # Other nodes' ids and creates go on.
            self.assertEqual(request(self.lb.url, "GET", "/api/sessions/%s" % node_id_uuid(1)).json()["node"], 1)
            self.assertNotIn(3, self.creates_spread(6))
            print("\nkilled node's ids: 404 node_gone after %.2f s" % took, file=sys.stderr)
        finally:
            self.nodes[3] = FakeNode(3, NODES[3])
            self.wait_ready(3)
        self.assertEqual(request(self.lb.url, "GET", path).json()["node"], 3)

    def test_spare_slot_joins_at_run_time(self):
        self.assertEqual(self.lb.server_state(4, backend="slot"), "MAINT")
        r = request(self.lb.url, "GET", "/api/kernels/%s" % node_id_uuid(4))
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["reason"], "node_gone")
        self.lb.join(4, NODES[4], HTTP_PORT)
        self.wait_ready(4)
        for path in ("/api/kernels/%s/restart", "/api/sandboxes/%s/files/x", "/api/sessions/%s"):
            r = request(self.lb.url, "GET", path % node_id_uuid(4))
            self.assertEqual((r.status, r.json()["node"]), (200, 4), r.body)
        self.assert_ids_reach(4)
        # With the others drained, every create goes to the new node.
        for n in (1, 2, 3):
            self.nodes[n].control(agent="drain")
        try:
            for n in (1, 2, 3):
                self.lb.wait_server_state(n, "DRAIN")
            self.assertEqual(self.creates_spread(4), {4: 4})
        finally:
            for n in (1, 2, 3):
                self.nodes[n].control(agent="ready 100%")
            for n in (1, 2, 3):
                self.lb.wait_server_state(n, "UP")
            # Back to a spare, for the other tests: its ids answer node_gone.
            self.lb.runtime("disable server node_0004/node4")
            self.lb.wait_server_state(4, "MAINT")
        r = request(self.lb.url, "GET", "/api/kernels/%s" % node_id_uuid(4))
        self.assertEqual((r.status, r.json()["reason"]), (404, "node_gone"))


# ---------------------------------------------------------------- DNS mode

DNS_DOMAIN = "sandgate.test.svc.cluster.local"


def fake_dns(addr, names):
    """A DNS server on addr:53 (UDP) answering A queries from `names`
    ({name: ipv4}, looked up at each query) and NXDOMAIN for other names."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, 53))

    def serve():
        while True:
            data, peer = sock.recvfrom(4096)
            try:
                tid = struct.unpack(">H", data[:2])[0]
                i, labels = 12, []
                while data[i]:
                    labels.append(data[i + 1:i + 1 + data[i]].decode())
                    i += 1 + data[i]
                qtype = struct.unpack(">H", data[i + 1:i + 3])[0]
                question = data[12:i + 5]
                ip = names.get(".".join(labels).lower())
            except (IndexError, struct.error, UnicodeDecodeError):
                continue
            if ip is None:  # NXDOMAIN
                head, answer = struct.pack(">HHHHHH", tid, 0x8183, 1, 0, 0, 0), b""
            elif qtype == 1:  # A
                head = struct.pack(">HHHHHH", tid, 0x8180, 1, 1, 0, 0)
                answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 1, 4) + socket.inet_aton(ip)
            else:  # the name exists, without that type
                head, answer = struct.pack(">HHHHHH", tid, 0x8180, 1, 0, 0, 0), b""
            sock.sendto(head + question + answer, peer)

    threading.Thread(target=serve, daemon=True).start()


def dns_check_main():
    """Runs inside a private mount namespace whose /etc/resolv.conf names
    the fake DNS server at NET.53 (see DnsMode): the Kubernetes setup, slots
    named by DNS, with SANDGATE_LB_DNS. Exits 0 when all went as expected."""
    names = {"sandgate-0." + DNS_DOMAIN: "%s.31" % NET}
    fake_dns("%s.53" % NET, names)
    nodes = {1: FakeNode(1, "%s.31" % NET), 2: FakeNode(2, "%s.32" % NET)}
    lb = haproxy_fixture.LoadBalancer(
        {1: ("sandgate-0." + DNS_DOMAIN, HTTP_PORT), 2: ("sandgate-1." + DNS_DOMAIN, HTTP_PORT)},
        bind=("%s.2" % NET, 0), agent_port=AGENT_PORT, env={"SANDGATE_LB_DNS": "1"})

    def owner(n):
        r = request(lb.url, "GET", "/api/kernels/%s" % node_id_uuid(n))
        return r.status, r.json().get("node", r.json().get("reason"))

    try:
        lb.wait_server_state(1, "UP", 10, backend="slot")
        assert owner(1) == (200, 1), owner(1)
        # sandgate-1 does not resolve yet (a pod not created): down.
        assert lb.server_state(2, backend="slot") == "MAINT", lb.server_state(2, backend="slot")
        assert owner(2) == (404, "node_gone"), owner(2)
        # The StatefulSet scales up: the name resolves, the slot comes up.
        names["sandgate-1." + DNS_DOMAIN] = "%s.32" % NET
        took = lb.wait_server_state(2, "UP", 15, backend="slot")
        lb.wait_server_state(2, "UP", 5)
        assert owner(2) == (200, 2), owner(2)
        print("dns: a new pod's slot up after %.1f s" % took, file=sys.stderr)
        # A pod comes back with another IP: followed.
        nodes[1].kill()
        lb.wait_server_state(1, "DOWN", 5, backend="slot")
        nodes[1] = FakeNode(1, "%s.41" % NET)
        names["sandgate-0." + DNS_DOMAIN] = "%s.41" % NET
        took = lb.wait_server_state(1, "UP", 20, backend="slot")
        lb.wait_server_state(1, "UP", 5)
        assert owner(1) == (200, 1), owner(1)
        print("dns: a pod's new IP followed after %.1f s" % took, file=sys.stderr)
        for n in (1, 2):
            addr = lb.stat()[(haproxy_fixture.slot_backend(n), haproxy_fixture.server_name(n))]["addr"]
            assert addr == "%s:%d" % (nodes[n].addr, HTTP_PORT), addr
    except BaseException:
        print(lb.log()[-4000:], file=sys.stderr)
        raise
    finally:
        lb.stop()
        for node in nodes.values():
            node.kill()
    return 0


class DnsMode(unittest.TestCase):
    """SANDGATE_LB_DNS, as in Kubernetes: HAProxy resolves the node names
    through /etc/resolv.conf. Here a private mount namespace (unshare, as
    root) puts a resolv.conf naming a fake DNS server on loopback in place,
    so no query leaves the machine."""

    def test_names_resolved_and_followed(self):
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root and unshare(1) for a private /etc/resolv.conf")
        with tempfile.TemporaryDirectory() as tmp:
            resolv = os.path.join(tmp, "resolv.conf")
            with open(resolv, "w") as f:
                f.write("nameserver %s.53\n" % NET)
            script = 'mount --bind "$1" /etc/resolv.conf && exec "$2" "$3" --dns-check "$4"'
            r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                                resolv, sys.executable, os.path.abspath(__file__), NET],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0 and "mount" in out and "ermission" in out:
            self.skipTest("no private mounts here: " + out.strip()[-200:])
        self.assertEqual(r.returncode, 0, out)
        sys.stderr.write("\n" + out)


class ShippedConfig(unittest.TestCase):
    KUBE = os.path.join(haproxy_fixture.REPO, "share", "cluster", "kubernetes")

    def haproxy_check(self, config, env):
        base = {k: v for k, v in os.environ.items() if not k.startswith("SANDGATE_")}
        r = subprocess.run([haproxy_fixture.HAPROXY, "-c", "-f", config], env=dict(base, **env),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=30)
        out = r.stdout.decode(errors="replace")
        self.assertEqual(r.returncode, 0, out)
        self.assertNotIn("[ALERT]", out)
        self.assertNotIn("[WARNING]", out)

    def test_config_valid_with_and_without_options(self):
        variants = [
            {},
            {"SANDGATE_NODE1": "127.0.0.1:8888", "SANDGATE_NODE8": "127.0.0.8:8888"},
            {"SANDGATE_NODE1": "sandgate-0.sandgate.ns.svc.cluster.local:8888", "SANDGATE_LB_DNS": "1",
             "SANDGATE_LB_BIND": ":8080", "SANDGATE_LB_SOCKET": "ipv4@127.0.0.1:9999"},
        ]
        for env in variants:
            with self.subTest(env=env):
                self.haproxy_check(haproxy_fixture.CONFIG, env)

    def manifests(self, name):
        try:
            import yaml
        except ImportError:
            self.skipTest("python3-yaml is not installed")
        with open(os.path.join(self.KUBE, name)) as f:
            return list(yaml.safe_load_all(f))

    def test_kubernetes_manifests(self):
        sandgate = {d["kind"]: d for d in self.manifests("sandgate.yaml")}
        lb = {d["kind"]: d for d in self.manifests("haproxy.yaml")}
        self.assertEqual(set(sandgate), {"Namespace", "ConfigMap", "Service", "StatefulSet"})
        self.assertEqual(set(lb), {"ConfigMap", "Deployment", "Service"})
        # The ConfigMap carries the shipped config as it is.
        with open(haproxy_fixture.CONFIG) as f:
            self.assertEqual(lb["ConfigMap"]["data"]["haproxy.cfg"], f.read())
        # ... and HAProxy takes it with the Deployment's environment.
        container = lb["Deployment"]["spec"]["template"]["spec"]["containers"][0]
        env = {}
        for e in container["env"]:
            if "value" in e:
                env[e["name"]] = e["value"].replace("$(POD_NAMESPACE)", "sandgate")
        self.assertEqual(env["SANDGATE_NODE4"], "sandgate-3.sandgate.sandgate.svc.cluster.local:8888")
        with tempfile.NamedTemporaryFile("w", suffix=".cfg") as f:
            f.write(lb["ConfigMap"]["data"]["haproxy.cfg"])
            f.flush()
            self.haproxy_check(f.name, env)
        # The peers file names the StatefulSet's pods by their DNS names.
        peers = sandgate["ConfigMap"]["data"]["peers"].split("\n")
        service = sandgate["StatefulSet"]["spec"]["serviceName"]
        namespace = sandgate["StatefulSet"]["metadata"]["namespace"]
        for k, line in enumerate(p for p in peers if p and not p.startswith("#")):
            self.assertEqual(line, "%d http://sandgate-%d.%s.%s.svc.cluster.local:8888"
                             % (k + 1, k, service, namespace))
        pod = sandgate["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]
        self.assertTrue(pod["securityContext"]["privileged"])
        self.assertIn("--agent-check-port=8889", pod["args"])


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--fake-node":
        fake_node_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--dns-check":
        NET = sys.argv[2]
        sys.exit(dns_check_main())
    if not os.access(haproxy_fixture.HAPROXY, os.X_OK):
        print("haproxy_config_check: %s missing, skipped" % haproxy_fixture.HAPROXY, file=sys.stderr)
        sys.exit(77)
    unittest.main()
