"""The doors a sandbox has besides its kernels (processes, ports, the whole
file tree), tried as an attacker would: from inside one sandbox against
another, from one principal against another's sandbox, and from a
sandbox's program against the host. Every server a test opens listens on
the host's 127.0.0.1 only; nothing outside is ever contacted."""

import hashlib
import http.client
import json
import os
import socket
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid

from sandgate_fixture import wait_until
from security_case import SandboxTestCase, sandbox_gateway

TOKENS = {name: f"{name}-{uuid.uuid4().hex}" for name in ("alice", "mallory")}


def tokens_file():
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"principals": [{"name": n, "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
                                  for n, t in TOKENS.items()]}, f)
    return path


TOKENS_PATH = tokens_file()


class SandboxDoors(SandboxTestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = sandbox_gateway("--tokens-file", TOKENS_PATH, name=cls.__name__)
        cls._class_kernels = []
        cls.a = cls.sandbox_of("alice")
        cls.b = cls.sandbox_of("mallory")

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()

    @classmethod
    def sandbox_of(cls, who):
        r = cls.gw.request("POST", "api/sandboxes", {"ttl_s": 600}, token=TOKENS[who], timeout=60)
        assert r.status == 201, r
        return r.json()["id"]

    def as_(self, who, method, path, body=None, **kw):
        return self.gw.request(method, path, body, token=TOKENS[who], **kw)

    def command(self, who, sid, cmd):
        r = self.as_(who, "POST", f"api/sandboxes/{sid}/commands", {"cmd": cmd, "timeout_s": 60}, timeout=90)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_a_process_cannot_be_seen_or_signalled_from_another_sandbox_or_principal(self):
        marker = "sg-door-" + uuid.uuid4().hex[:8]
        p = self.as_("alice", "POST", f"api/sandboxes/{self.a}/processes",
                     {"cmd": f"exec -a {marker} sleep 600"}).json()
        self.addCleanup(self.as_, "alice", "DELETE", f"api/sandboxes/{self.a}/processes/{p['id']}")
        pid = p["pid"]
        # Mallory, through the API: every path to alice's process is a 404, as for any of her resources.
        for method, rest, body in (("GET", "", None), ("POST", "/signal", {"signal": "KILL"}), ("DELETE", "", None),
                                   ("GET", "/wait?timeout_s=0", None), ("POST", "/stdin", None)):
            r = self.as_("mallory", method, f"api/sandboxes/{self.a}/processes/{p['id']}{rest}", body)
            self.assertEqual(r.status, 404, (method, rest, r))
            # Nor with her own sandbox's id in the path: process ids belong to their sandbox.
            r = self.as_("mallory", method, f"api/sandboxes/{self.b}/processes/{p['id']}{rest}", body)
            self.assertEqual(r.status, 404, (method, rest, r))
        self.assertEqual(self.as_("mallory", "GET", f"api/sandboxes/{self.a}/processes").status, 404)
        # From inside her sandbox: no trace of it, and no signal reaches it.
        seen = self.command("mallory", self.b, f"ps -eo args | grep -c '^{marker}' || true; kill -9 {pid}; echo rc=$?")
        self.assertEqual(seen["stdout"].splitlines()[0], "0", seen)
        me = self.as_("alice", "GET", f"api/sandboxes/{self.a}/processes/{p['id']}").json()
        self.assertEqual(me["status"], "running")

    def test_a_port_request_reaches_neither_the_hosts_loopback_nor_another_sandbox(self):
        # A server on the host's 127.0.0.1, on a port nothing in the sandbox listens on.
        host_server = socket.create_server(("127.0.0.1", 0))
        port = host_server.getsockname()[1]
        host_server.settimeout(0.2)
        accepted = []

        def accept():
            end = time.time() + 8
            while time.time() < end:
                try:
                    accepted.append(host_server.accept())
                except OSError:
                    pass

        t = threading.Thread(target=accept)
        t.start()
        conn = http.client.HTTPConnection(self.gw.host, self.gw.port, timeout=15)
        conn.request("GET", "/", headers={"Host": f"{port}-{self.a}.localhost", "Authorization": f"token {TOKENS['alice']}"})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        t.join()
        host_server.close()
        self.assertEqual(r.status, 502, body)  # the sandbox's loopback, where nothing listens
        self.assertEqual(accepted, [], "the host's listener was reached")
        # Mallory's server in her sandbox, not reachable with alice's token or URL.
        self.command("mallory", self.b, "true")
        p = self.as_("mallory", "POST", f"api/sandboxes/{self.b}/processes",
                     {"cmd": "python3 -m http.server 8080 --bind 127.0.0.1"}).json()
        self.addCleanup(self.as_, "mallory", "DELETE", f"api/sandboxes/{self.b}/processes/{p['id']}")
        wait_until(lambda: self.as_("mallory", "GET", f"api/sandboxes/{self.b}/ports").json(), 30, "the server")
        alice_url = self.as_("alice", "POST", f"api/sandboxes/{self.a}/port-urls", {"port": 8080}).json()["token"]
        for headers in ({"Authorization": f"token {TOKENS['alice']}"}, {"Cookie": f"sandgate_port={alice_url}"}):
            conn = http.client.HTTPConnection(self.gw.host, self.gw.port, timeout=15)
            conn.request("GET", "/", headers={"Host": f"8080-{self.b}.localhost", **headers})
            r = conn.getresponse()
            r.read()
            conn.close()
            self.assertIn(r.status, (401, 404), headers)
        # And alice cannot mint a URL for mallory's sandbox.
        self.assertEqual(self.as_("alice", "POST", f"api/sandboxes/{self.b}/port-urls", {"port": 8080}).status, 404)

    def test_the_file_api_reaches_only_the_sandboxs_own_view(self):
        host_secret = tempfile.NamedTemporaryFile(prefix="sandgate-host-secret-", delete=False)
        host_secret.write(b"host-only")
        host_secret.close()
        self.addCleanup(os.unlink, host_secret.name)

        def fs(path, who="alice", sid=None):
            return self.as_(who, "GET", f"api/sandboxes/{sid or self.a}/fs?" + urllib.parse.urlencode({"path": path}))

        self.assertEqual(fs(host_secret.name).status, 404)  # the host's /tmp is not the sandbox's
        # The supervisor's own magic links (its root, its descriptors) are never followed.
        for path in ("/proc/1/root/etc/hostname", "/proc/self/root/etc/hostname", "/proc/1/fd/0", "/proc/1/cwd"):
            self.assertIn(fs(path).status, (400, 403), path)
        self.assertEqual(fs(self.gw.state_dir + "/registry.db").status, 404)
        # Links the sandbox plants resolve in its own root, whatever they say.
        self.command("alice", self.a, "ln -sf /../../../../../etc/hostname up; ln -sf /proc/1/fd/3 fd")
        self.assertIn(fs("/workspace/fd").status, (400, 403))
        for link in ("/workspace/up",):
            r = fs(link)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body, self.command("alice", self.a, "cat /etc/hostname")["stdout"].encode())
        # Another principal: 404 for every file operation on alice's sandbox.
        for method, what in (("GET", ""), ("GET", "/stat"), ("GET", "/list"), ("DELETE", "")):
            r = self.as_("mallory", method, f"api/sandboxes/{self.a}/fs{what}?path=/workspace")
            self.assertEqual(r.status, 404, (method, what))
        r = self.gw.request("PUT", f"api/sandboxes/{self.a}/fs?path=/workspace/x", raw=b"x", token=TOKENS["mallory"])
        self.assertEqual(r.status, 404)
        self.assertGatewayUp()


if __name__ == "__main__":
    unittest.main()
