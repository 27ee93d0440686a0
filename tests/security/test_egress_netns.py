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
import socket
import subprocess
import tempfile
import threading
import unittest

import egress_servers
from egress_netns import NetnsHost, free_subnet
from sandgate_fixture import wait_until
from security_case import TEST_POLICY, sandbox_gateway

WORK = tempfile.mkdtemp(prefix="sandgate-egress-netns-")
BLOB = 8 << 20
# An address of the documentation prefix 3fff::/20 that no interface has yet.
SPARE_V6 = "3fff:0:1b::2"


class AnyAddressServer(egress_servers.Server):
    """The HTTP test server on every address of the host, IPv4 and IPv6."""
    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


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
        # An address the host does not have yet, in a second /30 no route covers, and one of 3fff::/20,
        # both named by the ceiling; a server on every address of the host answers them once they are
        # the host's.
        spare_subnet = free_subnet()
        cls.spare = str(list(spare_subnet.hosts())[0])
        cls.any_server = AnyAddressServer(("::", 0), egress_servers.Handler)
        threading.Thread(target=cls.any_server.serve_forever, daemon=True).start()
        cls.any_port = cls.any_server.server_address[1]
        hosts_file = os.path.join(WORK, "hosts")
        with open(hosts_file, "w") as f:
            f.write(f"{h.address} {host_name}\n{cls.spare} spare.test\n{SPARE_V6} spare6.test\n")
        ports = [h.http_port, h.https_port, cls.any_port]
        # Ranges, not the addresses themselves: a cidr naming exactly one address of the host (a /32)
        # would allow it on purpose.
        cls.spare_cidrs = [str(spare_subnet), "3fff:0:1b::/64"]
        # Named: the ceiling holds the test's /30. Unnamed: the same hosts and ports, no cidrs.
        named = {"mode": "allow", "hosts": ["*.test"], "cidrs": [cls.range] + cls.spare_cidrs, "ports": ports}
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
        if getattr(cls, "any_server", None):
            cls.any_server.shutdown()
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

    def test_an_address_the_host_gains_while_the_gateway_runs_is_refused_at_once(self):
        """The proxy reads the host's own addresses again whenever the kernel reports a
        change: an address added to an interface of the host while the gateway runs is
        refused by the very next request naming it (an IP literal or a name resolving to it,
        by GET and by CONNECT), although the sandbox's cidrs name it and a server on the host
        would answer; once removed, it is no longer the host's."""
        sid = self.make_sandbox(self.gw, dict(self.net, hosts=[self.name, "spare.test", "spare6.test"],
                                              cidrs=[self.range] + self.spare_cidrs))
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        link = self.host.host_if  # the host's end of the test's veth pair
        own = "is an address of the gateway's host"
        port = self.any_port
        subprocess.run(["ip", "addr", "add", f"{self.spare}/32", "dev", link], check=True)
        self.addCleanup(subprocess.run, ["ip", "addr", "del", f"{self.spare}/32", "dev", link], check=False)
        subprocess.run(["ip", "-6", "addr", "add", f"{SPARE_V6}/128", "dev", link, "nodad"], check=True)
        self.addCleanup(subprocess.run, ["ip", "-6", "addr", "del", f"{SPARE_V6}/128", "dev", link], check=False)
        for url, extra in ((f"http://{self.spare}:{port}/own", ""), (f"http://spare.test:{port}/own", ""),
                           (f"http://spare.test:{port}/own", "-p"), (f"http://[{SPARE_V6}]:{port}/own", ""),
                           (f"http://spare6.test:{port}/own", "-p")):
            r = self.cmd(self.gw, sid, f"curl -sS -m 30 {extra} -o /tmp/body -w '%{{http_code}} %{{http_connect}}'"
                                       f" '{url}'; echo; cat /tmp/body")
            codes, _, body = r["stdout"].partition("\n")
            if extra == "-p":  # the CONNECT is refused; curl shows its status, the reason is in the audit line
                self.assertEqual(codes.split()[1], "403", (url, r))
            else:
                self.assertEqual(codes.split()[0], "403", (url, r))
                self.assertIn(own, body, (url, r))
        self.assertNotIn("/own", [path for _, path in egress_servers.Handler.seen])
        def refused_connects():
            with open(os.path.join(self.gw.state_dir, "audit.log")) as f:
                lines = [json.loads(line) for line in f if '"egress.refused"' in line and sid in line]
            return [e for e in lines if e["method"] == "CONNECT" and own in e["reason"]]

        connects = wait_until(lambda: len(refused_connects()) >= 2 and refused_connects(), 10, "the audit lines")
        self.assertEqual(sorted(e["host"] for e in connects), ["spare.test", "spare6.test"], connects)
        subprocess.run(["ip", "addr", "del", f"{self.spare}/32", "dev", link], check=True)
        r = self.cmd(self.gw, sid, f"curl -sS -m 30 -o /tmp/body -w '%{{http_code}}' 'http://{self.spare}:{port}/gone';"
                                   " echo; cat /tmp/body")
        self.assertNotIn(own, r["stdout"], r)


if __name__ == "__main__":
    unittest.main()
