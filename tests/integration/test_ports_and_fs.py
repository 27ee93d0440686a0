"""Ports and the whole file tree (docs/api.md "Ports", "The sandbox's file
tree") through a real gateway and real sandboxes: python3 -m http.server in a
sandbox reached by host name and by path, with the owner's token (which the
program never sees) or a signed URL traded for a cookie; a WebSocket server
in the sandbox through the proxy; a JSON 502 when nothing listens; 401 for an
expired, forged or other port's token; the file tree read and written as
the sandbox user (system dirs read-only, lines and ranges, listings,
renames, deletes). Needs root (as CI runs)."""

import base64
import datetime
import hashlib
import http.client
import json
import os
import socket
import time
import unittest
import urllib.parse

import websocket  # python3-websocket (websocket-client)
from sandgate_fixture import GatewayTestCase, wait_until

# A server in the sandbox: GET echoes what it was sent (path, headers) as JSON;
# /ws is a WebSocket that answers each text message upper-cased.
SERVER = r"""
import base64, hashlib, json, socketserver, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/ws":
            key = self.headers["Sec-WebSocket-Key"]
            accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.wfile.flush()
            while True:
                head = self.rfile.read(2)
                if len(head) < 2 or head[0] & 0x0F == 8:
                    return
                n = head[1] & 0x7F
                if n == 126:
                    n = int.from_bytes(self.rfile.read(2), "big")
                mask = self.rfile.read(4)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n))).decode().upper().encode()
                self.wfile.write(bytes([0x81, len(data)]) + data)
                self.wfile.flush()
        body = json.dumps({"path": self.path, "headers": dict(self.headers)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        data = self.rfile.read(int(self.headers["Content-Length"]))
        body = hashlib.sha256(data).hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class Ports(GatewayTestCase):
    sandboxed = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.sandbox()
        cls.serve(cls.sid, 8000)

    @classmethod
    def sandbox(cls):
        return cls.gw.create_sandbox()

    @classmethod
    def serve(cls, sid, port):
        r = cls.gw.request("PUT", f"api/sandboxes/{sid}/files/server.py", raw=SERVER.encode())
        assert r.status == 201, r
        r = cls.gw.request("POST", f"api/sandboxes/{sid}/processes", {"cmd": ["python3", "server.py", str(port)]})
        assert r.status == 201, r
        wait_until(lambda: {"port": port, "address": "127.0.0.1"} in cls.gw.request(
            "GET", f"api/sandboxes/{sid}/ports").json(), 30, "the server to listen")

    def get(self, host, path, headers=None, method="GET", body=None):
        conn = http.client.HTTPConnection(self.gw.host, self.gw.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def host(self, port=8000, sid=None):
        return f"{port}-{sid or self.sid}.localhost:{self.gw.port}"

    def test_by_host_name_with_the_owners_token_which_the_program_never_sees(self):
        auth = {"Authorization": f"token {self.gw.token}", "Cookie": "theirs=1"}
        status, headers, body = self.get(self.host(), "/a/b?c=d", auth)
        self.assertEqual(status, 200, body)
        seen = json.loads(body)
        self.assertEqual(seen["path"], "/a/b?c=d")
        self.assertNotIn("Authorization", seen["headers"])
        self.assertNotIn(self.gw.token, body.decode())
        self.assertEqual(seen["headers"]["Cookie"], "theirs=1")
        self.assertEqual(seen["headers"]["X-Forwarded-Host"], self.host())
        # A body goes through whole.
        data = os.urandom(3 << 20)
        status, _, body = self.get(self.host(), "/upload", auth, "POST", data)
        self.assertEqual((status, body.decode()), (200, hashlib.sha256(data).hexdigest()))

    def test_by_path(self):
        path = f"/api/sandboxes/{self.sid}/ports/8000"
        status, headers, _ = self.get(f"127.0.0.1:{self.gw.port}", path, {"Authorization": f"token {self.gw.token}"})
        self.assertEqual((status, headers["Location"]), (308, path + "/"))
        r = self.gw.request("GET", f"api/sandboxes/{self.sid}/ports/8000/x?y=1")
        self.assertEqual(r.status, 200, r)
        seen = r.json()
        self.assertEqual(seen["path"], "/x?y=1")
        self.assertEqual(seen["headers"]["X-Forwarded-Prefix"], path)

    def test_a_signed_url_is_traded_for_a_cookie_of_that_port_alone(self):
        r = self.gw.request("POST", f"api/sandboxes/{self.sid}/port-urls", {"port": 8000, "ttl_s": 60})
        self.assertEqual(r.status, 201, r)
        url = urllib.parse.urlparse(r.json()["url"])
        self.assertEqual(url.hostname, f"8000-{self.sid}.localhost")
        token = r.json()["token"]
        nav = {"Sec-Fetch-Mode": "navigate", "Accept": "text/html"}
        status, headers, _ = self.get(self.host(), f"/page?{url.query}&keep=1", nav)
        self.assertEqual(status, 303)
        self.assertEqual(headers["Location"], "/page?keep=1")
        cookie = headers["Set-Cookie"]
        self.assertTrue(cookie.startswith(f"sandgate_port={token};"), cookie)
        self.assertIn("HttpOnly", cookie)
        self.assertIn("Path=/", cookie)
        status, _, body = self.get(self.host(), "/page?keep=1", {"Cookie": f"sandgate_port={token}; app=2"})
        self.assertEqual(status, 200, body)
        seen = json.loads(body)
        self.assertEqual(seen["headers"]["Cookie"], "app=2")  # the gateway's cookie never reaches the program
        # A program (not a browser's navigation) may send the token with each request.
        status, _, body = self.get(self.host(), f"/api?{url.query}")
        self.assertEqual((status, json.loads(body)["path"]), (200, "/api"))

    def test_a_token_of_another_port_or_sandbox_or_expired_or_forged_is_refused(self):
        other = self.sandbox()
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{other}")
        self.serve(other, 8000)
        mine = self.gw.request("POST", f"api/sandboxes/{self.sid}/port-urls", {"port": 8000}).json()["token"]
        other_port = self.gw.request("POST", f"api/sandboxes/{self.sid}/port-urls", {"port": 8001}).json()["token"]
        expiring = self.gw.request("POST", f"api/sandboxes/{self.sid}/port-urls", {"port": 8000, "ttl_s": 1}).json()
        forged = mine[:-4] + ("0000" if not mine.endswith("0000") else "1111")
        expires = datetime.datetime.fromisoformat(expiring["expires_at"]).timestamp()  # RFC 3339
        wait_until(lambda: time.time() > expires, 5, "the token to expire")
        for host, token in ((self.host(sid=other), mine), (self.host(), other_port), (self.host(), forged),
                            (self.host(), expiring["token"])):
            for how in ({"Cookie": f"sandgate_port={token}"}, None):
                path = "/x" if how else f"/x?sandgate_port_token={token}"
                status, _, body = self.get(host, path, how)
                self.assertEqual(status, 401, (host, token, body))
        # Without anything, or with a wrong token in the header.
        self.assertEqual(self.get(self.host(), "/x")[0], 401)
        self.assertEqual(self.get(self.host(), "/x", {"Authorization": "token wrong"})[0], 403)

    def test_a_websocket_to_a_server_in_the_sandbox(self):
        token = self.gw.request("POST", f"api/sandboxes/{self.sid}/port-urls", {"port": 8000}).json()["token"]
        ws = websocket.create_connection(f"ws://127.0.0.1:{self.gw.port}/ws?sandgate_port_token={token}",
                                         host=self.host(), timeout=30)
        for word in ("hello", "again"):
            ws.send(word)
            self.assertEqual(ws.recv(), word.upper())
        ws.close()

    def test_nothing_listening_is_a_json_502_at_once(self):
        started = time.monotonic()
        status, headers, body = self.get(self.host(port=8999), "/", {"Authorization": f"token {self.gw.token}"})
        self.assertEqual(status, 502)
        self.assertEqual(json.loads(body)["reason"], "port_not_listening")
        self.assertLess(time.monotonic() - started, 5)
        for bad in ("0", "65536", "99999"):
            status, _, _ = self.get(f"{bad}-{self.sid}.localhost", "/", {"Authorization": f"token {self.gw.token}"})
            self.assertEqual(status, 400, bad)
        status, _, body = self.get(self.host(sid="00000000-0000-8000-8000-000000000000"), "/",
                                   {"Authorization": f"token {self.gw.token}"})
        self.assertEqual(status, 404, body)


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class FileTree(GatewayTestCase):
    sandboxed = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.gw.create_sandbox()

    def fs(self, method, what="", status=None, raw=None, body=None, headers=None, **query):
        path = f"api/sandboxes/{self.sid}/fs" + (f"/{what}" if what else "") + "?" + urllib.parse.urlencode(query)
        r = self.gw.request(method, path, raw=raw, body=body, headers=headers)
        if status is not None:
            self.assertEqual(r.status, status, r)
        return r

    def test_read_anywhere_the_sandbox_user_may_and_nowhere_else(self):
        self.assertIn(b"ID=debian", self.fs("GET", path="/etc/os-release", status=200).body)
        self.assertIn("Permission denied", self.assertError(self.fs("GET", path="/proc/1/environ"), 403)["message"])
        self.assertError(self.fs("GET", path="/no/such/file"), 404)
        self.assertError(self.fs("GET", path="/etc"), 409)
        self.assertError(self.fs("GET", path="/dev/zero"), 400)
        self.assertError(self.fs("PUT", path="/usr/bin/planted", raw=b"x"), 403)
        self.assertError(self.fs("PUT", path="/etc/passwd", raw=b"x"), 403)
        self.assertError(self.gw.request("GET", f"api/sandboxes/{self.sid}/fs?path=a%00b"), 400)
        st = self.fs("GET", "stat", path="/etc/hostname", status=200).json()
        self.assertEqual(st["type"], "file")

    def test_write_read_lines_ranges_list_rename_delete(self):
        data = b"".join(f"line {i}\n".encode() for i in range(1, 5001))
        self.assertEqual(self.fs("PUT", path="/tmp/deep/down/lines.txt", raw=data, status=201).json(),
                         {"path": "/tmp/deep/down/lines.txt", "size": len(data)})
        self.assertEqual(self.fs("GET", path="/tmp/deep/down/lines.txt", status=200).body, data)
        self.assertEqual(self.fs("GET", path="/tmp/deep/down/lines.txt", start_line=3, end_line=4, status=200).body,
                         b"line 3\nline 4\n")
        self.assertEqual(self.fs("GET", path="/tmp/deep/down/lines.txt", start_line=4999, end_line=9999,
                                 status=200).body, b"line 4999\nline 5000\n")
        r = self.fs("GET", path="/tmp/deep/down/lines.txt", headers={"Range": "bytes=7-12"}, status=206)
        self.assertEqual(r.body, data[7:13])
        st = self.fs("GET", "stat", path="/tmp/deep/down/lines.txt", status=200).json()
        self.assertEqual((st["size"], st["uid"]), (len(data), 1000))  # the sandbox user's
        listing = self.fs("GET", "list", path="/tmp/deep", status=200).json()
        self.assertEqual([(e["name"], e["type"]) for e in listing], [("down", "directory")])
        self.fs("POST", "mkdir", body={"path": "notes/a/b", "parents": True}, status=201)
        self.fs("POST", "rename", body={"from": "/tmp/deep/down/lines.txt", "to": "/tmp/lines.txt"}, status=200)
        self.assertError(self.fs("POST", "rename", body={"from": "/tmp/lines.txt", "to": "/workspace/x"}), 409)
        self.assertError(self.fs("DELETE", path="/tmp/deep"), 409)  # not empty
        self.fs("DELETE", path="/tmp/deep", recursive="true", status=204)
        self.fs("DELETE", path="/tmp/lines.txt", status=204)
        self.assertError(self.fs("GET", "stat", path="/tmp/lines.txt"), 404)
        # A 20 MiB upload into the workspace goes through whole; what the sandbox sees is what was sent.
        big = os.urandom(20 << 20)
        self.fs("PUT", path="big.bin", raw=big, status=201)
        r = self.gw.request("POST", f"api/sandboxes/{self.sid}/commands", {"cmd": "sha256sum big.bin", "timeout_s": 30})
        self.assertEqual(r.json()["stdout"].split()[0], hashlib.sha256(big).hexdigest())


if __name__ == "__main__":
    unittest.main()
