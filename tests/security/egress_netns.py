"""A host of the test's own in a network namespace it creates: a veth pair
between the host's namespace and a new one, a /30 of 203.0.113.0/24 (a
documentation range, so egress refuses it unless a ceiling names it) not
routed on this host yet, and egress_servers.py serving HTTP and HTTPS on the
namespace's address. Everything is undone by close(), whatever happened
before; a failed setup undoes what it did before raising. The namespace's
name holds the test's pid: one left by a run that was killed (no close())
is removed by the next run (its veth pair goes with it)."""

import ipaddress
import os
import secrets
import select
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RANGE = ipaddress.ip_network("203.0.113.0/24")


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def free_subnet():
    """A /30 of RANGE that no route on this host covers (another run may hold one)."""
    routed = [ipaddress.ip_network(line.split()[0], strict=False)
              for line in ip("-4", "route", "show", "table", "all").stdout.splitlines()
              if line and line.split()[0][0].isdigit()]
    for candidate in RANGE.subnets(new_prefix=30):
        if not any(candidate.overlaps(r) for r in routed):
            return candidate
    raise AssertionError(f"every /30 of {RANGE} is routed on this host already")


def remove_stale():
    """Namespaces of earlier runs whose process is gone."""
    for line in ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == "sgt" and parts[1].isdigit() and not os.path.exists(f"/proc/{parts[1]}"):
            ip("netns", "del", name, check=False)


class NetnsHost:
    def __init__(self, cert, key):
        remove_stale()
        tag = secrets.token_hex(3)
        self.netns, self.host_if, self.ns_if = f"sgt-{os.getpid()}-{tag}", f"sgh{tag}", f"sgn{tag}"
        self.subnet = free_subnet()
        self.host_address, self.address = (str(a) for a in list(self.subnet.hosts())[:2])
        self.server = None
        self.created = []
        try:
            self._setup(cert, key)
        except BaseException:
            self.close()
            raise

    def _setup(self, cert, key):
        prefix = self.subnet.prefixlen
        ip("netns", "add", self.netns)
        self.created.append("netns")
        ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        self.created.append("link")
        ip("link", "set", self.ns_if, "netns", self.netns)
        ip("addr", "add", f"{self.host_address}/{prefix}", "dev", self.host_if)
        ip("link", "set", self.host_if, "up")
        ip("-n", self.netns, "addr", "add", f"{self.address}/{prefix}", "dev", self.ns_if)
        ip("-n", self.netns, "link", "set", self.ns_if, "up")
        ip("-n", self.netns, "link", "set", "lo", "up")
        self.server = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, sys.executable, os.path.join(HERE, "egress_servers.py"),
             self.address, cert, key],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        ready, _, _ = select.select([self.server.stdout], [], [], 30)
        line = self.server.stdout.readline().decode().split() if ready else ["(nothing within 30 s)"]
        if len(line) != 3 or line[0] != "ready":
            raise AssertionError(f"the server in {self.netns} did not start: {line}")
        self.http_port, self.https_port = int(line[1]), int(line[2])

    def close(self):
        if self.server:
            self.server.stdin.close()
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, 9)
                self.server.wait(5)
            self.server.stdout.close()
            self.server = None
        if "link" in self.created:  # either end takes the pair with it
            ip("link", "del", self.host_if, check=False)
            ip("-n", self.netns, "link", "del", self.ns_if, check=False)
        if "netns" in self.created:
            ip("netns", "del", self.netns, check=False)
        self.created = []

    def gone(self):
        """True once nothing of it is left on the host."""
        links = ip("-o", "link", "show").stdout
        return self.netns not in ip("netns", "list").stdout and self.host_if not in links
