"""Egress: a sandbox whose network policy allows hosts reaches them through
sandgate-egress (outside the sandbox) and nothing else. Every server is on
127.0.0.1 of the host, which the test's ceiling names explicitly
(cidrs ["127.0.0.1/32"]); names come from a hosts file the proxy alone reads
(--egress-hosts-file), then from the test's DNS server (--egress-resolver,
egress_dns.py), whose answers change between lookups. No other address is
ever contacted: refused targets are refused before any connect, and a
program ignoring the proxy has no route. Servers in a network namespace:
test_egress_netns.py."""

import copy
import http.client
import json
import os
import signal
import socket
import tempfile
import threading
import time
import unittest

import egress_dns
import egress_servers
from sandgate_fixture import host_processes, parent_pid, process_tree, remove_state_dir, wait_until
from security_case import TEST_POLICY, SandboxTestCase, sandbox_gateway

WORK = tempfile.mkdtemp(prefix="sandgate-egress-test-")
HOSTS_FILE = os.path.join(WORK, "hosts")
with open(HOSTS_FILE, "w") as f:
    f.write("127.0.0.1 files.test evil.test secure.test\n127.0.0.2 rebind.test\n")

DNS = egress_dns.DnsServer()
HTTP = egress_servers.serve()
HTTPS, CA_FILE = egress_servers.tls_server(WORK, ["secure.test"])
P, PS = HTTP.server_address[1], HTTPS.server_address[1]
# A server that speaks first (a banner, as SMTP or SSH do), then echoes one line.
BANNER = socket.create_server(("127.0.0.1", 0))
PB = BANNER.getsockname()[1]


def banner_loop():
    while True:
        c, _ = BANNER.accept()
        with c:
            c.sendall(b"220 banner\n")
            c.sendall(b"echo " + c.recv(100))


threading.Thread(target=banner_loop, daemon=True).start()
# A server that says nothing and records every byte each connection brought, until it ended.
RECORDER = socket.create_server(("127.0.0.1", 0))
PR = RECORDER.getsockname()[1]
RECORDED = []


def recorder_loop():
    while True:
        c, _ = RECORDER.accept()
        threading.Thread(target=record, args=(c,), daemon=True).start()


def record(c):
    data = b""
    with c:
        c.settimeout(30)
        try:
            while chunk := c.recv(65536):
                data += chunk
        except OSError:
            pass
    RECORDED.append(data)


threading.Thread(target=recorder_loop, daemon=True).start()
egress_servers.Handler.redirect_to = f"http://evil.test:{P}/hello"

CEILING = {"mode": "allow", "hosts": ["*.test"], "cidrs": ["127.0.0.1/32"], "ports": [P, PS, PB, PR],
           "non_tls_ports": [PB], "max_connections": 16, "bytes_per_second": 1 << 30}
# A: the test servers by name (the banner's port for other protocols than TLS). B: the same
# names but no cidrs, so loopback is refused.
NET_A = {"mode": "allow", "hosts": ["files.test", "secure.test", "rebind.test", "flip.test", "flop.test"],
         "cidrs": ["127.0.0.1/32"], "ports": [P, PS, PB, PR], "non_tls_ports": [PB]}
NET_B = {"mode": "allow", "hosts": ["*.test"], "ports": [P, PS]}
FORCE_PROXY = "--noproxy '' -x http://127.0.0.1:3128"
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"]
# The proxy variables a program gets, then what a connect to 127.0.0.1:3128 gives (an errno, or "connected").
PROXY_PROBE = ("python3 -c '\nimport os, socket\n"
               "print(str(sorted(k for k in os.environ if k.lower().endswith(\"_proxy\"))).replace(\" \", \"\"))\n"
               "try:\n    socket.create_connection((\"127.0.0.1\", 3128), timeout=5).close()\n"
               "    print(\"connected\")\nexcept OSError as e:\n    print(e.errno)'")


# Through a tunnel to secure.test, a TLS hello naming each argument ("-": none); prints
# "NAME => " and the status line, or the error.
SNI_PROBE = """
import socket, ssl, sys
port = int(sys.argv[1])
def attempt(name):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT secure.test:%d HTTP/1.1\\r\\nHost: secure.test\\r\\n\\r\\n" % port)
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    if not head.startswith(b"HTTP/1.1 200"):
        return head.decode()
    ctx = ssl.create_default_context(cafile="/workspace/ca.pem")
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=None if name == "-" else name)
        t.sendall(b"GET /sni HTTP/1.0\\r\\nHost: secure.test\\r\\n\\r\\n")
        return t.recv(300).split(b"\\r\\n")[0].decode()
    except (ssl.SSLError, OSError) as e:
        return type(e).__name__ + ": " + str(e)
for name in sys.argv[2:]:
    print(name, "=>", attempt(name))
"""


# Through tunnels to files.test on the recorder's port, the first bytes of each named case,
# then the client's end closed; prints "CASE => " and the hex of all it got back.
FIRST_BYTES_PROBE = """
import socket, ssl, sys
port = int(sys.argv[1])
def hello(name):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    out = ssl.MemoryBIO()
    obj = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()
evil = hello("evil.test")
body = evil[5:]
cases = {
    "clean": hello("files.test"),
    "alert": b"\\x15\\x03\\x01\\x00\\x02\\x01\\x5a" + evil,
    "close-notify": b"\\x15\\x03\\x03\\x00\\x02\\x01\\x00" + evil,
    "change-cipher-spec": b"\\x14\\x03\\x03\\x00\\x01\\x01" + evil,
    "empty-record": b"\\x16\\x03\\x01\\x00\\x00" + evil,
    "application-data": b"\\x17\\x03\\x03\\x00\\x01z" + evil,
    "version-0": b"\\x16\\x00\\x01" + evil[3:],
    "sslv2": b"\\x80\\x2e\\x01\\x03\\x01\\x00\\x15\\x00\\x00\\x00\\x10" + b"a" * 37,
    "bytewise-records": b"".join(b"\\x16\\x03\\x01\\x00\\x01" + body[i:i + 1] for i in range(len(body))),
    "not-tls": b"GET / HTTP/1.0\\r\\nHost: evil.test\\r\\n\\r\\n",
}
def attempt(data, one_byte_writes):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"CONNECT files.test:%d HTTP/1.1\\r\\nHost: files.test\\r\\n\\r\\n" % port)
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    if not head.startswith(b"HTTP/1.1 200"):
        return head.decode()
    try:
        if one_byte_writes:
            for i in range(len(data)):
                s.sendall(data[i:i + 1])
        else:
            s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except OSError:
        pass
    return got.hex()
for name in sys.argv[2:]:
    print(name, "=>", attempt(cases[name.removesuffix("/bytes")], name.endswith("/bytes")))
"""
TLS_ACCESS_DENIED = "15030300020231"


def egress_policy():
    p = copy.deepcopy(TEST_POLICY)
    p["network_ceiling"] = CEILING
    return p


class Egress(SandboxTestCase):
    gateway_args = ("--egress-hosts-file", HOSTS_FILE, "--egress-resolver", DNS.endpoint)
    policy = egress_policy()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = cls.make_sandbox(NET_A)
        cls.b = cls.make_sandbox(NET_B)
        with open(CA_FILE, "rb") as f:
            cls.put_file(cls.a, "ca.pem", f.read())

    @classmethod
    def make_sandbox(cls, network):
        status, body = cls.gw.request("POST", "api/sandboxes", {"network": network})
        if status != 201:
            raise AssertionError(f"POST /api/sandboxes: {status} {body[:400]!r}")
        return json.loads(body)["id"]

    @classmethod
    def put_file(cls, sid, path, data):
        conn = http.client.HTTPConnection(cls.gw.host, cls.gw.port, timeout=30)
        conn.request("PUT", f"{cls.gw.base_path}api/sandboxes/{sid}/files/{path}", body=data,
                     headers={"Authorization": f"token {cls.gw.token}"})
        r = conn.getresponse()
        r.read()
        conn.close()
        assert r.status in (200, 201, 204), r.status

    def cmd(self, sid, cmd, timeout_s=30, env=None):
        status, body = self.gw.request("POST", f"api/sandboxes/{sid}/commands",
                                       {"cmd": cmd, "timeout_s": timeout_s, "env": env or {}},
                                       timeout=timeout_s + 30)
        self.assertEqual(status, 200, body[:400])
        return json.loads(body)

    def curl(self, sid, url, extra=""):
        """(http code, body) of a curl through the proxy; code 0 when curl got no response."""
        r = self.cmd(sid, f"curl -sS -m 10 {extra} -o /tmp/body -w '%{{http_code}}' '{url}'; echo \" $?\";"
                          " cat /tmp/body 2>/dev/null")
        first, _, body = r["stdout"].partition("\n")
        code, rc = first.split()
        return int(code), body, int(rc), r["stderr"]

    def slow_download(self, sid, tag):
        """A command downloading /slow (4 KiB every 50 ms for a minute) in a thread, once the
        server has its request; (thread, the dict the command's result goes into)."""
        result = {}
        t = threading.Thread(target=lambda: result.update(self.cmd(
            sid, f"curl -sS -o /dev/null -w '%{{size_download}}' http://files.test:{P}/slow/?{tag}", 60)))
        t.start()
        wait_until(lambda: (f"files.test:{P}", f"/slow/?{tag}") in egress_servers.Handler.seen, 20,
                   "the download to reach the server")
        return t, result

    def audit_lines(self, event):
        with open(os.path.join(self.gw.state_dir, "audit.log")) as f:
            return [json.loads(line) for line in f if f'"event":"{event}"' in line]

    # --- allowed ----------------------------------------------------------------------------
    def test_allowed_host_with_curl_and_urllib(self):
        code, body, rc, err = self.curl(self.a, f"http://files.test:{P}/hello")
        self.assertEqual((code, rc), (200, 0), err)
        self.assertEqual(body, f"hello from files.test:{P} /hello")
        r = self.cmd(self.a, f"python3 -c 'import urllib.request; print(urllib.request.urlopen("
                             f"\"http://files.test:{P}/py\", timeout=10).read().decode())'")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].strip(), f"hello from files.test:{P} /py")

    def test_https_through_connect(self):
        code, body, rc, err = self.curl(self.a, f"https://secure.test:{PS}/tls", "--cacert /workspace/ca.pem")
        self.assertEqual((code, rc), (200, 0), err)
        self.assertEqual(body, f"hello from secure.test:{PS} /tls")
        r = self.cmd(self.a, f"python3 -c 'import urllib.request; print(urllib.request.urlopen("
                             f"\"https://secure.test:{PS}/py\", timeout=10).read().decode())'",
                     env={"SSL_CERT_FILE": "/workspace/ca.pem"})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].strip(), f"hello from secure.test:{PS} /py")

    def test_git_pip_and_npm_use_the_proxy_unchanged(self):
        # Each asks the test server for something it does not have (a 404): what matters is that
        # the request arrived, which only the proxy can carry (there is no route).
        self.cmd(self.a, f"git ls-remote http://files.test:{P}/missing/repo.git", 60)
        pip = self.cmd(self.a, f"/usr/bin/python3 -m pip download --no-deps -d /tmp/dl --cert /workspace/ca.pem "
                         f"--index-url https://secure.test:{PS}/missing/simple/ sandgate-nothing", 60)
        self.cmd(self.a, f"npm view sandgate-nothing --registry http://files.test:{P}/missing/npm/ "
                         "--fetch-retries 0", 60)
        paths = [path for host, path in egress_servers.Handler.seen if host.split(":")[0].endswith(".test")]
        self.assertTrue(any(p.startswith("/missing/repo.git/info/refs") for p in paths), paths)
        self.assertTrue(any(p.startswith("/missing/simple/sandgate-nothing") for p in paths), (paths, pip))
        self.assertTrue(any(p.startswith("/missing/npm/sandgate-nothing") for p in paths), paths)

    def test_environment_names_the_proxy(self):
        r = self.cmd(self.a, "env | grep -i _proxy= | sort")
        env = dict(line.split("=", 1) for line in r["stdout"].split())
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            self.assertEqual(env.get(name), "http://127.0.0.1:3128", r)
        self.assertEqual(env.get("NO_PROXY"), "localhost,127.0.0.1")
        self.assertEqual(env.get("no_proxy"), "localhost,127.0.0.1")

    def test_model_shows_the_policy(self):
        status, body = self.gw.request("GET", f"api/sandboxes/{self.a}")
        self.assertEqual(status, 200)
        net = json.loads(body)["network"]
        self.assertEqual(net["mode"], "allow")
        self.assertEqual(net["hosts"], NET_A["hosts"])
        self.assertEqual(net["cidrs"], ["127.0.0.1/32"])
        self.assertEqual(net["ports"], sorted([P, PS, PB, PR]))
        self.assertEqual(net["non_tls_ports"], [PB])

    def test_the_proxy_starts_with_the_gateway(self):
        # Its ceiling allows egress: the proxy runs before any sandbox asks for it.
        events = [e.get("event") for e in self.gw.log_events()]
        self.assertNotIn("egress_proxy_failed", events)
        self.assertLess(events.index("egress_proxy_started"), events.index("sandbox_created"), events[:20])

    def test_a_tls_hello_naming_a_server_not_allowed_gets_an_alert(self):
        """A tunnel to an allowed name whose TLS hello names a server the policy does not
        allow (a shared address reached under another name) gets a TLS alert and never
        reaches the host; a hello naming the tunnel's host (in any case, with a final dot),
        another allowed host, or no server at all goes through."""
        self.put_file(self.a, "sni.py", SNI_PROBE.encode())
        names = ["secure.test", "SECURE.Test.", "files.test", "evil.test", "-"]
        seen_before = len(egress_servers.Handler.seen)
        r = self.cmd(self.a, f"python3 /workspace/sni.py {PS} " + " ".join(names))
        self.assertEqual(r["exit_code"], 0, r)
        got = dict(line.split(" => ", 1) for line in r["stdout"].splitlines())
        for name in ["secure.test", "SECURE.Test.", "files.test", "-"]:
            self.assertEqual(got[name], "HTTP/1.1 200 OK", name)
        self.assertIn("SSLError", got["evil.test"])
        self.assertIn("access denied", got["evil.test"].lower())
        # Four requests reached the server, the refused hello's never did.
        self.assertEqual(len([h for h in egress_servers.Handler.seen[seen_before:] if h[1] == "/sni"]), 4)
        def entries():
            return [e for e in self.audit_lines("egress.refused")
                    if "TLS server name evil.test" in e.get("reason", "") and e["host"] == "secure.test"]

        entry = wait_until(entries, 10, "the audit entry")[0]
        self.assertEqual((entry["host"], entry["server_name"], entry["sandbox_id"]), ("secure.test", "evil.test", self.a))
        self.assertIn("not in the sandbox's allowed hosts", entry["reason"])

    def test_a_hello_behind_what_a_lenient_server_skips_never_reaches_the_host(self):
        """A tunnel's first bytes must be one clean TLS ClientHello: a hello naming a server
        the policy does not allow, behind records some TLS stacks skip before a hello (Go's
        crypto/tls takes a warning alert, or a record of version 0.x; OpenSSL empty records),
        in an SSLv2 record, or bytes of another protocol on a port not in non_tls_ports, all
        get the TLS access_denied alert; the server behind the tunnel gets none of their
        bytes, whether they came in one write or one byte at a time. A clean hello naming
        the tunnel's host goes through, byte for byte."""
        self.put_file(self.a, "first_bytes.py", FIRST_BYTES_PROBE.encode())
        refused = ["alert", "close-notify", "change-cipher-spec", "empty-record", "application-data",
                   "version-0", "sslv2", "bytewise-records", "not-tls", "alert/bytes", "version-0/bytes"]
        before = len(RECORDED)
        r = self.cmd(self.a, f"python3 /workspace/first_bytes.py {PR} clean clean/bytes " + " ".join(refused))
        self.assertEqual(r["exit_code"], 0, r)
        got = dict(line.split(" => ", 1) for line in r["stdout"].splitlines())
        self.assertEqual(got["clean"], "", r)  # the recorder answers nothing, and ends at the sandbox's end
        for name in refused:
            self.assertEqual(got[name], TLS_ACCESS_DENIED, name)
        # Every tunnel reached the recorder's accept (the host side connects first); only the
        # two clean hellos brought it any bytes, and no byte of evil.test ever arrived.
        streams = wait_until(lambda: RECORDED[before:] if len(RECORDED) - before == 2 + len(refused) else None,
                             20, lambda: f"{len(RECORDED) - before} recorded connections")
        self.assertEqual(len([d for d in streams if d]), 2, streams)
        self.assertFalse([d for d in streams if b"evil.test" in d])
        self.assertTrue(all(b"files.test" in d and d[0] == 0x16 for d in streams if d))

        def reasons():
            lines = [e for e in self.audit_lines("egress.refused") if e.get("port") == PR]
            return lines if len(lines) >= len(refused) else None

        why = " | ".join(e["reason"] for e in wait_until(reasons, 10, "the audit lines"))
        for text in ("an alert record before the ClientHello", "a change_cipher_spec record before",
                     "an empty TLS record", "a TLS record of version 0.x", "an SSLv2-format ClientHello",
                     "the TLS server name evil.test is not the tunnel's host files.test",
                     f"not a TLS ClientHello, and port {PR} is not in the sandbox's non_tls_ports"):
            self.assertIn(text, why)

    def test_a_tunnel_to_a_server_that_speaks_first(self):
        """The host's first bytes reach the sandbox before it sends any (the proxy holds
        only the sandbox's side until it knows whether a TLS hello comes), and another
        protocol than TLS goes through on a port of non_tls_ports only: on the same port
        in a sandbox whose policy does not name it there, the banner arrives, the
        sandbox's first bytes get the TLS alert and never reach the server."""
        script = ("import socket\n"
                  "s = socket.create_connection((\"127.0.0.1\", 3128), timeout=10)\n"
                  f"s.sendall(b\"CONNECT files.test:{PB} HTTP/1.1\\r\\n\\r\\n\")\n"
                  "f = s.makefile(\"rb\")\n"
                  "assert f.readline().startswith(b\"HTTP/1.1 200\")\n"
                  "while f.readline() != b\"\\r\\n\": pass\n"
                  "print(f.readline().decode().strip())\n"
                  "s.sendall(b\"hi\\n\")\n"
                  "print(f.readline().decode().strip())\n")
        self.put_file(self.a, "banner.py", script.encode())
        r = self.cmd(self.a, "python3 /workspace/banner.py")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].splitlines(), ["220 banner", "echo hi"])
        sid = self.make_sandbox(dict(NET_A, non_tls_ports=[]))
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        self.put_file(sid, "banner.py", script.encode())
        r = self.cmd(sid, "python3 /workspace/banner.py")
        self.assertEqual(r["stdout"].splitlines()[0], "220 banner", r)
        self.assertNotIn("echo", r["stdout"])  # the server never got "hi"
        entry = wait_until(lambda: [e for e in self.audit_lines("egress.refused") if e["sandbox_id"] == sid], 10,
                           "the audit line")[0]
        self.assertEqual(entry["port"], PB)
        self.assertIn(f"port {PB} is not in the sandbox's non_tls_ports", entry["reason"])

    # --- refused ----------------------------------------------------------------------------
    def test_host_outside_the_list_gets_403_naming_it(self):
        code, body, _, _ = self.curl(self.a, f"http://evil.test:{P}/hello")
        self.assertEqual(code, 403)
        self.assertIn("evil.test", body)
        self.assertIn("not in the sandbox's allowed hosts", body)

    def test_literals_and_special_addresses_refused(self):
        for sid, url, why in [
                # Not in B's cidrs (and a documentation range): refused before any connect.
                (self.b, f"http://198.51.100.7:{P}/", "198.51.100.7 is a documentation address"),
                (self.b, f"http://127.0.0.1:{P}/", "loopback"),
                (self.b, f"http://localhost:{P}/", "not in the sandbox's allowed hosts"),
                (self.b, f"http://127.0.0.2:{P}/", "loopback"),
                (self.b, f"http://169.254.169.254:{P}/", "link-local"),
                (self.b, f"http://[::1]:{P}/", "loopback"),
                (self.b, f"http://[::ffff:127.0.0.1]:{P}/", "loopback"),
                (self.a, f"http://127.0.0.2:{P}/", "loopback"),
                (self.a, f"http://[::ffff:127.0.0.2]:{P}/", "loopback"),
                (self.a, f"http://0.0.0.0:{P}/", "unspecified")]:
            code, body, _, err = self.curl(sid, url, FORCE_PROXY)
            self.assertEqual(code, 403, f"{url}: {err}")
            self.assertIn(why, body, url)

    def test_names_that_resolve_to_loopback_refused(self):
        code, body, _, _ = self.curl(self.a, f"http://rebind.test:{P}/")  # 127.0.0.2, not in A's cidrs
        self.assertEqual(code, 403)
        self.assertIn("rebind.test resolves only to refused addresses: 127.0.0.2 is a loopback address", body)
        code, body, _, _ = self.curl(self.b, f"http://files.test:{P}/")  # B names no loopback range
        self.assertEqual(code, 403)
        self.assertIn("127.0.0.1 is a loopback address", body)

    def test_redirect_to_a_refused_host_refused_at_the_second_hop(self):
        code, body, _, _ = self.curl(self.a, f"http://files.test:{P}/redirect", "-L")
        self.assertEqual(code, 403)
        self.assertIn("evil.test", body)
        r = self.cmd(self.a, f"python3 -c 'import urllib.request; urllib.request.urlopen("
                             f"\"http://files.test:{P}/redirect\", timeout=10)'")
        self.assertNotEqual(r["exit_code"], 0)
        self.assertIn("HTTP Error 403", r["stderr"])

    def test_connect_to_a_refused_port_refused(self):
        code, body, rc, err = self.curl(self.a, "https://files.test:9/", FORCE_PROXY)
        self.assertNotEqual(rc, 0)
        self.assertIn("403", err)

    def test_a_program_ignoring_the_proxy_is_refused_at_once(self):
        r = self.cmd(self.a, "python3 -c '\nimport socket, time\nt = time.monotonic()\ntry:\n"
                             "    socket.create_connection((\"198.51.100.7\", 80), timeout=20)\n"
                             "except OSError as e:\n    print(e.errno, round(time.monotonic() - t, 2))'")
        errno_, seconds = r["stdout"].split()
        self.assertEqual(int(errno_), 101, r)  # ENETUNREACH: no route, nothing sent
        self.assertLess(float(seconds), 1.0)

    def test_each_sandbox_is_served_by_its_own_socket_only(self):
        # The proxy accepts on each sandbox's own 127.0.0.1:3128, in that sandbox's network
        # namespace: nothing else reaches it, no path in the sandbox's files names it, and the
        # socket a connection came in on decides whose policy applies.
        request = (f"GET http://files.test:{P}/ HTTP/1.1\\r\\nHost: files.test\\r\\n\\r\\n")
        raw = ("python3 -c \'\nimport socket\ns = socket.create_connection((\"127.0.0.1\", 3128))\n"
               f"s.sendall(b\"{request}\")\nprint(s.recv(4096).decode().splitlines()[0])\'")
        self.assertEqual(self.cmd(self.a, raw)["stdout"].strip(), "HTTP/1.1 200 OK")
        self.assertEqual(self.cmd(self.b, raw)["stdout"].strip(), "HTTP/1.1 403 Forbidden")  # no loopback cidr
        r = self.cmd(self.b, "find / -xdev -type s 2>/dev/null; ls -A /run/sandgate")
        self.assertNotIn("egress", r["stdout"], r)
        self.assertFalse(os.path.exists(os.path.join(self.gw.state_dir, "run", self.a, "egress.sock")))

    def test_the_socket_cannot_be_taken_or_shared_from_inside(self):
        # What the proxy accepts on is pid 1's socket: a program inside can neither copy it out
        # of pid 1 (pidfd_getfd, /proc/1/fd), nor bind beside it (SO_REUSEPORT), nor listen on it.
        attack = ("python3 -c '\nimport ctypes, os, socket\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "try:\n    pidfd = os.pidfd_open(1)\n"
                  "    print(\"getfd\", libc.syscall(438, pidfd, 3, 0), ctypes.get_errno())\n"
                  "except OSError as e:\n    print(\"pidfd_open\", e.errno)\n"
                  "try:\n    print(\"fds\", os.listdir(\"/proc/1/fd\"))\nexcept OSError as e:\n"
                  "    print(\"fds\", e.errno)\n"
                  "s = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
                  "try:\n    s.bind((\"127.0.0.1\", 3128))\n    print(\"bound\")\nexcept OSError as e:\n"
                  "    print(\"bind\", e.errno)\n'")
        lines = self.cmd(self.a, attack)["stdout"].splitlines()
        self.assertEqual(len(lines), 3, lines)
        took = lines[0].split()
        self.assertTrue(took[0] == "pidfd_open" or took[1] == "-1", lines)  # refused, whichever way
        self.assertEqual(lines[1], "fds 13", lines)  # EACCES
        self.assertEqual(lines[2], "bind 98", lines)  # EADDRINUSE

    # --- the ceiling and KERNEL_NETWORK -----------------------------------------------------
    def test_create_above_the_ceiling_is_403_naming_the_host(self):
        status, body = self.gw.request("POST", "api/sandboxes",
                                       {"network": {"mode": "allow", "hosts": ["files.example.org"]}})
        self.assertEqual(status, 403, body)
        self.assertIn("files.example.org", json.loads(body)["message"])
        status, body = self.gw.request("POST", "api/sandboxes", {"network": "open"})
        self.assertEqual(status, 403, body)
        status, body = self.gw.request("POST", "api/sandboxes", {"network": {"mode": "allow", "hosts": ["a b"]}})
        self.assertEqual(status, 400, body)
        self.assertIn("network.hosts[0]", json.loads(body)["message"])

    def test_kernel_network_from_a_kernel_start_request(self):
        status, body = self.gw.request("POST", "api/kernels",
                                       {"name": "python3", "env": {"KERNEL_NETWORK": json.dumps(NET_A)}})
        self.assertEqual(status, 201, body)
        kid = json.loads(body)["id"]
        k = self.gw.connect(kid)
        self.addCleanup(self._delete_quietly, k)
        r = k.attempt(f"import urllib.request\nprint(urllib.request.urlopen('http://files.test:{P}/k').read())")
        self.assertEqual(r["status"], "ok", r)
        self.assertIn(f"hello from files.test:{P} /k", r["stdout"])
        status, body = self.gw.request("POST", "api/kernels",
                                       {"name": "python3", "env": {"KERNEL_NETWORK": "open"}})
        self.assertEqual(status, 403, body)

    # --- PATCH ------------------------------------------------------------------------------
    def test_patch_closes_a_download_in_progress(self):
        sid = self.make_sandbox(NET_A)
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        t, result = self.slow_download(sid, "patch")
        patched = time.monotonic()
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network",
                                       {"mode": "allow", "hosts": ["secure.test"], "cidrs": ["127.0.0.1/32"],
                                        "ports": [P, PS]})
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["network"]["hosts"], ["secure.test"])
        t.join(20)
        self.assertFalse(t.is_alive(), "the download went on after its host was removed")
        self.assertLess(time.monotonic() - patched, 5)
        self.assertNotEqual(result["exit_code"], 0, result)
        # The proxy reports the connection once it has closed it: the line follows within moments.
        closed = wait_until(lambda: [e for e in self.audit_lines("egress.closed") if e["sandbox_id"] == sid], 10,
                            "the egress.closed audit line")
        self.assertIn("files.test", closed[0]["reason"] + closed[0]["host"], closed)
        code, body, _, _ = self.curl(sid, f"http://files.test:{P}/hello")  # new connections: refused
        self.assertEqual(code, 403)

    def test_patch_is_bounded_by_the_ceiling_and_the_start(self):
        status, body = self.gw.request("PATCH", f"api/sandboxes/{self.b}/network",
                                       {"mode": "allow", "hosts": ["files.example.org"], "ports": [P]})
        self.assertEqual(status, 403, body)
        self.assertIn("files.example.org", json.loads(body)["message"])
        status, body = self.gw.request("PATCH", f"api/sandboxes/{self.b}/network", "open")
        self.assertEqual(status, 403, body)
        status, body = self.gw.request("PATCH", f"api/sandboxes/{self.b}/network", {"mode": "allow", "ports": [0]})
        self.assertEqual(status, 400, body)
        sid = self.make_sandbox("none")
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network", "loopback")
        self.assertEqual(status, 409, body)  # lo stays as it started unless egress opens
        self.assertIn("has never had egress", json.loads(body)["message"])
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network",
                                       {"mode": "allow", "hosts": ["files.example.org"], "ports": [P]})
        self.assertEqual(status, 403, body)  # opening egress is bounded by the ceiling too
        self.assertIn("files.example.org", json.loads(body)["message"])
        status, body = self.gw.request("GET", f"api/sandboxes/{sid}")
        self.assertEqual(json.loads(body)["network"], "none")
        status, body = self.gw.request("GET", f"api/sandboxes/{self.b}")
        self.assertEqual(json.loads(body)["network"]["hosts"], ["*.test"])  # unchanged by the refusals

    def test_patch_opens_egress_in_a_sandbox_started_without_it(self):
        sid = self.make_sandbox("none")
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        status, body = self.gw.request("POST", "api/kernels", {"name": "python3", "sandbox_id": sid})
        self.assertEqual(status, 201, body)
        k = self.gw.connect(json.loads(body)["id"])
        self.addCleanup(self._delete_quietly, k)
        # Before: no proxy variables, and nothing to reach on 127.0.0.1:3128 (lo is down).
        r = self.cmd(sid, PROXY_PROBE)
        self.assertEqual(r["stdout"].split(), ["[]", "101"], r)  # ENETUNREACH
        self.assertEqual(k.attempt("import os; print(os.environ.get('HTTP_PROXY'))")["stdout"].strip(), "None")
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network", NET_A)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["network"]["hosts"], NET_A["hosts"])
        # A command started after the PATCH answered: the variables, and curl through the proxy.
        r = self.cmd(sid, PROXY_PROBE)
        self.assertEqual(r["stdout"].split()[0], str(sorted(PROXY_VARIABLES)).replace(" ", ""), r)
        code, body, rc, err = self.curl(sid, f"http://files.test:{P}/opened")
        self.assertEqual((code, rc), (200, 0), err)
        self.assertEqual(body, f"hello from files.test:{P} /opened")
        # The kernel that was already running got them too (a silent execute ahead of this one).
        r = k.attempt(f"import os, urllib.request\nprint(os.environ['HTTP_PROXY'], os.environ['no_proxy'])\n"
                      f"print(urllib.request.urlopen('http://files.test:{P}/kernel', timeout=10).read().decode())")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"].splitlines(),
                         ["http://127.0.0.1:3128 localhost,127.0.0.1", f"hello from files.test:{P} /kernel"])
        # Back to none: the download in progress is closed, the proxy refuses what comes next.
        t, result = self.slow_download(sid, "none")
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network", "none")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["network"], "none")
        t.join(20)
        self.assertFalse(t.is_alive(), "the download went on after egress was closed")
        self.assertNotEqual(result["exit_code"], 0, result)
        code, body, _, _ = self.curl(sid, f"http://files.test:{P}/closed")
        self.assertEqual(code, 403)
        self.assertIn("egress is off for this sandbox", body)

    def test_a_kernel_starting_at_the_patch_gets_the_variables_once_it_runs(self):
        sid = self.make_sandbox("none")
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        supervisor = supervisor_of(sid)
        # The supervisor holds the kernel's spawn until after the PATCH: the kernel process
        # starts without the variables, and is still starting when egress opens.
        os.kill(supervisor, signal.SIGSTOP)
        self.addCleanup(os.kill, supervisor, signal.SIGCONT)
        started = {}
        t = threading.Thread(target=lambda: started.update(zip(("status", "body"), self.gw.request(
            "POST", "api/kernels", {"name": "python3", "sandbox_id": sid}, timeout=120))))
        t.start()

        def starting():
            status, body = self.gw.request("GET", "api/kernels")
            return [k for k in json.loads(body) if k["execution_state"] == "starting"] if status == 200 else None
        wait_until(starting, 30, "the kernel to be starting")
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network", NET_A)
        self.assertEqual(status, 200, body)
        os.kill(supervisor, signal.SIGCONT)
        t.join(120)
        self.assertEqual(started.get("status"), 201, started)
        k = self.gw.connect(json.loads(started["body"])["id"])
        self.addCleanup(self._delete_quietly, k)
        r = k.attempt("import os\nprint(os.environ.get('HTTP_PROXY'), os.environ.get('NO_PROXY'))")
        self.assertEqual(r["stdout"].strip(), "http://127.0.0.1:3128 localhost,127.0.0.1", r)

    def test_patch_opens_egress_in_a_loopback_sandbox_whose_port_was_kept(self):
        sid = self.make_sandbox("loopback")
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        # Nothing listens on 127.0.0.1:3128, and no program inside can take the port first.
        r = self.cmd(sid, "python3 -c '\nimport socket\nfor op in (\"bind\", \"connect\"):\n"
                          "    s = socket.socket()\n    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                          "    try:\n        getattr(s, op)((\"127.0.0.1\", 3128))\n        print(op)\n"
                          "    except OSError as e:\n        print(e.errno)'")
        self.assertEqual(r["stdout"].split(), ["98", "111"], r)  # EADDRINUSE, ECONNREFUSED
        status, body = self.gw.request("PATCH", f"api/sandboxes/{sid}/network", NET_A)
        self.assertEqual(status, 200, body)
        code, body, rc, err = self.curl(sid, f"http://files.test:{P}/from-loopback")
        self.assertEqual((code, rc), (200, 0), err)

    # --- DNS answers that change between lookups (rebinding) ------------------------------
    def test_an_answer_that_turns_to_loopback_is_refused_and_never_connected_to(self):
        DNS.set("flip.test", ["127.0.0.1"], ["127.0.0.2"])  # allowed (A's cidr), then loopback
        code, body, _, err = self.curl(self.a, f"http://flip.test:{P}/first")
        self.assertEqual(code, 200, err)
        self.assertEqual(body, f"hello from flip.test:{P} /first")
        # One lookup for the request: the proxy connected to the address it checked. A second
        # lookup would have answered 127.0.0.2, where nothing listens.
        self.assertEqual(DNS.count("flip.test"), 1)
        code, body, _, _ = self.curl(self.a, f"http://flip.test:{P}/second")
        self.assertEqual(code, 403)
        self.assertIn("flip.test resolves only to refused addresses: 127.0.0.2 is a loopback address", body)
        self.assertEqual(DNS.count("flip.test"), 2)
        self.assertNotIn((f"flip.test:{P}", "/second"), egress_servers.Handler.seen)
        lines = wait_until(lambda: self.flip_audit("flip.test", 2), 10, "both audit lines of flip.test")
        self.assertEqual([(e["verdict"], e["address"]) for e in lines],
                         [("allowed", "127.0.0.1"), ("refused", "127.0.0.2")])

    def test_an_answer_that_turns_to_an_allowed_address_is_decided_afresh(self):
        DNS.set("flop.test", ["127.0.0.2"], ["127.0.0.2", "127.0.0.1"])
        code, body, _, _ = self.curl(self.a, f"http://flop.test:{P}/first")
        self.assertEqual(code, 403)
        self.assertIn("127.0.0.2 is a loopback address", body)
        # The second answer holds both: the refused one is dropped, the allowed one connected to.
        code, body, _, err = self.curl(self.a, f"http://flop.test:{P}/second")
        self.assertEqual(code, 200, err)
        self.assertEqual(body, f"hello from flop.test:{P} /second")
        self.assertEqual(DNS.count("flop.test"), 2)
        lines = wait_until(lambda: self.flip_audit("flop.test", 2), 10, "both audit lines of flop.test")
        self.assertEqual([(e["verdict"], e["address"]) for e in lines],
                         [("refused", "127.0.0.2"), ("allowed", "127.0.0.1")])

    def test_a_name_the_dns_server_does_not_know(self):
        code, body, _, _ = self.curl(self.b, f"http://nowhere.test:{P}/")
        self.assertEqual(code, 502)
        self.assertIn("cannot resolve nowhere.test: no such name (NXDOMAIN)", body)

    def flip_audit(self, host, n):
        """The allowed and refused audit lines of `host` in the log's order, once there are n."""
        with open(os.path.join(self.gw.state_dir, "audit.log")) as f:
            lines = [e for e in map(json.loads, f)
                     if e.get("event") in ("egress.allowed", "egress.refused") and e.get("host") == host]
        return lines if len(lines) >= n else None

    # --- limits -----------------------------------------------------------------------------
    def test_connection_and_rate_limits(self):
        sid = self.make_sandbox(dict(NET_A, max_connections=2, bytes_per_second=1 << 20))
        self.addCleanup(self.gw.request, "DELETE", f"api/sandboxes/{sid}")
        r = self.cmd(sid, f"curl -s -o /dev/null http://files.test:{P}/slow & curl -s -o /dev/null "
                          f"http://files.test:{P}/slow & sleep 1.5; curl -sS -o /tmp/b -w '%{{http_code}}\n' "
                          f"http://files.test:{P}/hello; cat /tmp/b; kill %1 %2")
        code, _, body = r["stdout"].partition("\n")
        self.assertEqual(code, "429", r)
        self.assertIn("connections open, its most", body)
        # 3 MiB at 1 MiB/s (a 0.1 s burst): about 3 s, not the loopback's milliseconds.
        r = self.cmd(sid, f"sleep 0.5; curl -sS -o /tmp/c -w '%{{time_total}}' http://files.test:{P}/bytes/{3 << 20}; head -c 300 /tmp/c >&2")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertGreater(float(r["stdout"]), 2.5, r)
        self.assertLess(float(r["stdout"]), 8, r)

    # --- audit and metrics ------------------------------------------------------------------
    def test_audit_and_metrics(self):
        self.curl(self.a, f"http://files.test:{P}/audited")
        self.curl(self.a, f"http://evil.test:{P}/audited")
        def found():
            allowed = [e for e in self.audit_lines("egress.allowed") if e["host"] == "files.test"]
            refused = [e for e in self.audit_lines("egress.refused") if e["host"] == "evil.test"]
            return (allowed, refused) if allowed and refused else None
        allowed, refused = wait_until(found, 10, "egress audit lines")
        e = allowed[-1]
        self.assertEqual((e["sandbox_id"], e["port"], e["address"], e["verdict"]), (self.a, P, "127.0.0.1", "allowed"))
        self.assertGreater(e["bytes_received"], 0)
        self.assertIsNotNone(e["principal"])
        self.assertIn("not in the sandbox's allowed hosts", refused[-1]["reason"])
        status, body = self.gw.request("GET", "metrics")
        text = body.decode()
        for name in ('sandgate_egress_connections_total{verdict="allowed"}',
                     'sandgate_egress_connections_total{verdict="refused"}',
                     "sandgate_egress_bytes_received_total", "sandgate_egress_proxy_restarts_total"):
            self.assertIn(name, text)

    # --- a proxy that dies ------------------------------------------------------------------
    def in_sandbox_netns(self, sid):
        """A host pid of a process in the sandbox's network namespace."""
        own = os.readlink("/proc/self/ns/net")
        outer = [pid for pid, cmd, _ in host_processes()
                 if sid.encode() in cmd and b"sandgate-sandbox" in cmd.split(b"\0")[0]]
        for pid in process_tree(outer):
            try:
                if os.readlink(f"/proc/{pid}/ns/net") != own:
                    return pid
            except OSError:
                continue
        raise AssertionError(f"no process of sandbox {sid} found")

    def test_zz_a_proxy_that_dies_is_restarted_and_serves_what_waited(self):
        pids = [pid for pid, cmd, _ in host_processes() if b"sandgate-egress" in cmd.split(b"\0")[0]
                and parent_pid(pid) == self.gw.pid]
        self.assertEqual(len(pids), 1, pids)
        inside = self.in_sandbox_netns(self.a)
        # A download in progress ends when the proxy that relayed it dies (reset, not a hang).
        t, result = self.slow_download(self.a, "proxy-dies")
        os.kill(pids[0], signal.SIGSTOP)
        # A request made while the proxy cannot accept waits in the sandbox's socket's backlog,
        # which nothing else can take from.
        waited = {}
        w = threading.Thread(target=lambda: waited.update(zip(("code", "body", "rc", "err"),
                                                              self.curl(self.a, f"http://files.test:{P}/waited"))))
        w.start()
        wait_until(lambda: (waiting_connections(inside) or 0) >= 1, 20, "the request to wait in the backlog")
        os.kill(pids[0], signal.SIGKILL)
        wait_until(lambda: not os.path.exists(f"/proc/{pids[0]}/fd/0"), 5, "the proxy to die", 0.005)
        t.join(30)
        self.assertFalse(t.is_alive(), "the download outlived the proxy")
        self.assertLess(int(result["stdout"] or 0), 4096 * 1200, result)  # not the whole minute of it
        w.join(40)
        self.assertEqual((waited.get("code"), waited.get("rc")), (200, 0), waited)
        self.assertEqual(waited["body"], f"hello from files.test:{P} /waited")
        self.assertGatewayUp()
        status, body = self.gw.request("GET", "metrics")
        self.assertIn("sandgate_egress_proxy_restarts_total 1", body.decode())


class EgressAcrossARestart(unittest.TestCase):
    """A sandbox outlives its gateway: while no gateway runs, its supervisor answers 503 on
    127.0.0.1:3128 (never a hang, never an open route); the next gateway serves it again."""

    PROBE = f"""
import threading, time, urllib.error, urllib.request
def probe():
    seen = []
    with open('/workspace/egress-log', 'a', buffering=1) as log:
        end = time.monotonic() + 240
        while time.monotonic() < end and not ('503' in seen and seen[-1] == '200'):
            try:
                with urllib.request.urlopen('http://files.test:{P}/restart', timeout=10) as r:
                    seen.append(str(r.status))
            except urllib.error.HTTPError as e:
                seen.append(str(e.code))
            except Exception as e:
                seen.append(type(e).__name__)
            log.write(seen[-1] + '\\n')
            time.sleep(0.05)  # the probe's pace
threading.Thread(target=probe, daemon=True).start()
"""

    def start(self, **kw):
        gw = sandbox_gateway(*Egress.gateway_args, policy=egress_policy(), keep_kernels=True,
                             name="EgressAcrossARestart", **kw)
        self.addCleanup(lambda: gw.stopped or gw.crash())
        return gw

    def log(self, gw, sid):
        status, body = gw.request("GET", f"api/sandboxes/{sid}/files/egress-log")
        return body.decode().split() if status == 200 else []

    def test_the_supervisor_answers_503_while_no_gateway_runs(self):
        gw = self.start()
        gw.owns_state = False
        self.addCleanup(remove_state_dir, gw.state_dir)
        status, body = gw.request("POST", "api/sandboxes", {"network": NET_A, "ttl_s": 900})
        self.assertEqual(status, 201, body)
        sid = json.loads(body)["id"]
        status, body = gw.request("POST", "api/kernels", {"name": "python3", "sandbox_id": sid}, timeout=120)
        self.assertEqual(status, 201, body)
        kid = json.loads(body)["id"]
        status, body = gw.request("POST", f"api/kernels/{kid}/execute", {"code": self.PROBE}, timeout=120)
        self.assertEqual(status, 200, body)
        wait_until(lambda: "200" in self.log(gw, sid), 30, "the probe to get through")
        log_path = f"/proc/{supervisor_of(sid)}/root/workspace/egress-log"  # seen from the host
        gw.crash()  # its proxy ends with it
        def statuses():
            with open(log_path) as f:
                return f.read().split()
        wait_until(lambda: "503" in statuses(), 30, "the supervisor's 503 while no gateway runs")
        gw2 = self.start(state_dir=gw.state_dir, token=gw.token)
        wait_until(lambda: self.log(gw2, sid)[-1:] == ["200"] and "503" in self.log(gw2, sid), 60,
                   "the next gateway's proxy to serve the sandbox again")
        seen = self.log(gw2, sid)
        self.assertEqual(set(seen), {"200", "503"}, seen)  # no timeout, no other error
        first_503 = seen.index("503")
        self.assertIn("200", seen[:first_503])
        self.assertEqual(seen[-1], "200")
        gw2.request("DELETE", f"api/sandboxes/{sid}")


def supervisor_of(sid):
    """The host pid of the sandbox's supervisor (pid 1 inside): the sandgate-sandbox process
    naming the sandbox whose parent is the outer one."""
    named = [pid for pid, cmd, _ in host_processes()
             if sid.encode() in cmd and b"sandgate-sandbox" in cmd.split(b"\0")[0]]
    inner = [pid for pid in named if parent_pid(pid) in named]
    if len(inner) != 1:
        raise AssertionError(f"no single supervisor for {sid}: {named}")
    return inner[0]


def waiting_connections(pid, port=3128):
    """Connections waiting to be accepted on 127.0.0.1:port in pid's network namespace."""
    with open(f"/proc/{pid}/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # LISTEN
                return int(fields[4].split(":")[1], 16)
    return None


if __name__ == "__main__":
    unittest.main()
