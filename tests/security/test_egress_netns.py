"""Egress to a host outside the gateway's loopback: HTTP and HTTPS servers in a
network namespace this test creates (a veth pair, a /30 of the documentation
range 203.0.113.0/24 that egress refuses unless a ceiling names it; see
egress_netns.py). One gateway's ceiling names that /30, another's does not:
the first lets a sandbox reach the host by name and by IP literal (cidrs),
bytes intact over HTTP and HTTPS; the second refuses both. The namespace,
the veth pair and the server are removed whatever the outcome."""

import copy
import hashlib
import json
import os
import tempfile
import unittest

import egress_servers
from egress_netns import NetnsHost
from security_case import TEST_POLICY, sandbox_gateway

WORK = tempfile.mkdtemp(prefix="sandgate-egress-netns-")
BLOB = 8 << 20


def policy_with(ceiling):
    p = copy.deepcopy(TEST_POLICY)
    p["network_ceiling"] = ceiling
    return p


class EgressToANamespace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.host = None
        cls.gateways = []
        try:
            cls._start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _start(cls):
        host_name = "netns.test"
        ca, cert, key = egress_servers.make_ca(WORK, [host_name])
        with open(ca, "rb") as f:
            cls.ca = f.read()
        cls.host = NetnsHost(cert, key)
        h = cls.host
        cls.name, cls.range = host_name, str(h.subnet)
        hosts_file = os.path.join(WORK, "hosts")
        with open(hosts_file, "w") as f:
            f.write(f"{h.address} {host_name}\n")
        ports = [h.http_port, h.https_port]
        # Named: the ceiling holds the test's /30. Unnamed: the same hosts and ports, no cidrs.
        named = {"mode": "allow", "hosts": ["*.test"], "cidrs": [cls.range], "ports": ports}
        unnamed = {"mode": "allow", "hosts": ["*.test"], "ports": ports}
        cls.gw = sandbox_gateway("--egress-hosts-file", hosts_file, policy=policy_with(named), name="EgressNetnsNamed")
        cls.gateways.append(cls.gw)
        cls.gw_unnamed = sandbox_gateway("--egress-hosts-file", hosts_file, policy=policy_with(unnamed),
                                         name="EgressNetnsUnnamed")
        cls.gateways.append(cls.gw_unnamed)
        cls.net = {"mode": "allow", "hosts": [host_name], "cidrs": [cls.range], "ports": ports}
        cls.sid = cls.make_sandbox(cls.gw, cls.net)
        cls.env = {k: "/workspace/ca.pem" for k in ("SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE")}

    @classmethod
    def tearDownClass(cls):
        for gw in cls.gateways:
            gw.stop()
        if cls.host:
            cls.host.close()
            assert cls.host.gone(), f"{cls.host.netns} is still there"

    @classmethod
    def make_sandbox(cls, gw, network):
        status, body = gw.request("POST", "api/sandboxes", {"network": network})
        if status != 201:
            raise AssertionError(f"POST /api/sandboxes: {status} {body[:400]!r}")
        sid = json.loads(body)["id"]
        status, body = gw.request("POST", f"api/sandboxes/{sid}/commands",
                                  {"cmd": "cat > /workspace/ca.pem", "stdin": cls.ca.decode(), "timeout_s": 30})
        if status != 200 or json.loads(body)["exit_code"] != 0:
            raise AssertionError(f"writing the CA into the sandbox: {status} {body[:400]!r}")
        return sid

    def cmd(self, gw, sid, cmd, env=None):
        status, body = gw.request("POST", f"api/sandboxes/{sid}/commands",
                                  {"cmd": cmd, "timeout_s": 60, "env": env or self.env}, timeout=90)
        self.assertEqual(status, 200, body[:400])
        return json.loads(body)

    def fetch(self, gw, sid, url):
        """(http code, sha256 of the body, its size) of a curl through the proxy."""
        r = self.cmd(gw, sid, f"curl -sS -m 30 -o /tmp/body -w '%{{http_code}}' '{url}'; echo;"
                              " sha256sum < /tmp/body; stat -c %s /tmp/body")
        lines = r["stdout"].split("\n")
        self.assertGreaterEqual(len(lines), 3, r)
        return int(lines[0]), lines[1].split()[0], int(lines[2]), r

    def test_a_name_in_the_list_reaches_the_namespace_host_bytes_intact(self):
        expected = hashlib.sha256(egress_servers.blob(BLOB, "http")).hexdigest()
        h = self.host
        code, digest, size, r = self.fetch(self.gw, self.sid, f"http://{self.name}:{h.http_port}/blob/{BLOB}/http")
        self.assertEqual((code, size, digest), (200, BLOB, expected), r)
        expected = hashlib.sha256(egress_servers.blob(BLOB, "tls")).hexdigest()
        code, digest, size, r = self.fetch(self.gw, self.sid, f"https://{self.name}:{h.https_port}/blob/{BLOB}/tls")
        self.assertEqual((code, size, digest), (200, BLOB, expected), r)
        r = self.cmd(self.gw, self.sid, f"python3 -c 'import urllib.request; print(urllib.request.urlopen("
                                        f"\"https://{self.name}:{h.https_port}/py\", timeout=20).read().decode())'")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].strip(), f"hello from {self.name}:{h.https_port} /py")

    def test_an_upload_arrives_intact(self):
        h = self.host
        for url in (f"http://{self.name}:{h.http_port}/upload", f"https://{self.name}:{h.https_port}/upload"):
            r = self.cmd(self.gw, self.sid, f"head -c {BLOB} /dev/urandom > /tmp/up; sha256sum < /tmp/up;"
                                            f" curl -sS -m 30 --data-binary @/tmp/up '{url}'")
            sent, _, received = r["stdout"].partition("\n")
            self.assertEqual(received.strip(), sent.split()[0], (url, r))

    def test_an_ip_literal_needs_the_range_in_cidrs(self):
        h = self.host
        code, digest, size, r = self.fetch(self.gw, self.sid, f"http://{h.address}:{h.http_port}/blob/4096/lit")
        self.assertEqual((code, digest), (200, hashlib.sha256(egress_servers.blob(4096, "lit")).hexdigest()), r)
        # The same gateway, a sandbox whose own list names the host but no cidrs.
        sid = self.make_sandbox(self.gw, dict(self.net, cidrs=[]))
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        code, _, _, r = self.fetch(self.gw, sid, f"http://{h.address}:{h.http_port}/hello")
        self.assertEqual(code, 403, r)
        r = self.cmd(self.gw, sid, "cat /tmp/body")
        self.assertIn(f"{h.address} is a documentation address", r["stdout"])
        code, _, _, r = self.fetch(self.gw, sid, f"http://{self.name}:{h.http_port}/hello")
        self.assertEqual(code, 403, r)
        r = self.cmd(self.gw, sid, "cat /tmp/body")
        self.assertIn(f"{self.name} resolves only to refused addresses: {h.address} is a documentation address",
                      r["stdout"])

    def test_a_ceiling_without_the_range_refuses_it(self):
        h = self.host
        status, body = self.gw_unnamed.request("POST", "api/sandboxes", {"network": self.net})
        self.assertEqual(status, 403, body)
        self.assertIn(f"cidr {self.range} is outside this gateway's network ceiling", json.loads(body)["message"])
        sid = self.make_sandbox(self.gw_unnamed, dict(self.net, cidrs=[]))
        for url in (f"http://{self.name}:{h.http_port}/hello", f"http://{h.address}:{h.http_port}/hello",
                    f"https://{self.name}:{h.https_port}/hello"):
            code, _, _, r = self.fetch(self.gw_unnamed, sid, url)
            self.assertNotEqual(code, 200, (url, r))
            self.assertIn("403", f"{code} {r['stderr']}", (url, r))


if __name__ == "__main__":
    unittest.main()
