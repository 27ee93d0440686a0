"""Network: a kernel reaches neither the gateway's port nor any other host
listener on 127.0.0.1, resolves no names, and gets no raw or packet sockets.
Probes only go to 127.0.0.1 ports this test opened (and the gateway's)."""

import os
import socket
import threading
import unittest
import uuid

from security_case import SandboxTestCase


class HostListener:
    """A TCP and a UDP socket on 127.0.0.1 that record whatever reaches them."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.tcp.settimeout(0.2)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self.port = self.tcp.getsockname()[1]
        self.udp_port = self.udp.getsockname()[1]
        self.accepted = 0
        self.datagrams = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                c, _ = self.tcp.accept()
                self.accepted += 1
                c.close()
            except OSError:
                pass
            try:
                self.udp.recvfrom(2048)
                self.datagrams += 1
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.tcp.close()
        self.udp.close()


class Network(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.k = cls.class_kernel()
        cls.other = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)

    def test_loopback_listeners_unreachable(self):
        lst = HostListener()
        self.addCleanup(lst.close)
        res = self.probe(self.k, f'''
def tcp(port, host="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        return "connected"
    finally:
        s.close()
def tcp6(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(("::1", port))
        return "connected"
    finally:
        s.close()
def udp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        return s.sendto(b"hello", ("127.0.0.1", port))
    finally:
        s.close()
_report({{"gateway": _probe(lambda: tcp({self.gw.port})),
         "gateway6": _probe(lambda: tcp6({self.gw.port})),
         "listener": _probe(lambda: tcp({lst.port})),
         "listener_any": _probe(lambda: tcp({lst.port}, "0.0.0.0")),
         "udp": _probe(lambda: udp({lst.udp_port}))}})
''')
        for what in ("gateway", "gateway6", "listener", "listener_any"):
            self.assertRefused(res[what], f"TCP connect to the host's {what} port", errnos=None)
        # A datagram to a down loopback fails at once; if it were "sent", it
        # must at least not arrive.
        import time
        time.sleep(0.5)
        self.assertEqual(lst.accepted, 0, "a connection from the sandbox reached the host listener")
        self.assertEqual(lst.datagrams, 0, "a datagram from the sandbox reached the host listener")

    def test_no_interfaces_and_no_dns(self):
        res = self.probe(self.k, r'''
_report({"dns": _probe(lambda: socket.getaddrinfo("example.com", 80)),
         "dns_localhost_gw": _probe(lambda: socket.getaddrinfo("_gateway", 80)),
         "ifaces": _probe(lambda: [n for _, n in socket.if_nameindex()]),
         "sys": _probe(lambda: os.listdir("/sys/class/net")),
         "route": _probe(lambda: open("/proc/net/route").read())})
''', timeout=60)
        self.assertRefused(res["dns"], "resolving example.com", errnos=None)
        self.assertRefused(res["dns_localhost_gw"], "resolving _gateway", errnos=None)
        if "ok" in res["ifaces"]:
            self.assertEqual(res["ifaces"]["ok"], ["lo"], "network interfaces inside the sandbox")
        if "ok" in res["route"]:
            routes = res["route"]["ok"].strip().splitlines()[1:]  # below the header
            self.assertEqual(routes, [], "routes inside the sandbox")

    def test_raw_and_packet_sockets_refused(self):
        res = self.probe(self.k, r'''
out = {}
out["raw4"] = _probe(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close())
out["raw4_tcp"] = _probe(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP).close())
out["raw6"] = _probe(lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6).close())
out["packet"] = _probe(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300).close())
out["packet_dgram"] = _probe(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0x0300).close())
out["ping_dgram"] = _probe(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close())
out["netlink_audit"] = _probe(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9).close())
out["netlink_uevent"] = _probe(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15).close())
out["vsock"] = _probe(lambda: socket.socket(40, socket.SOCK_STREAM).close())
out["bluetooth"] = _probe(lambda: socket.socket(31, socket.SOCK_RAW, 0).close())
out["alg"] = _probe(lambda: socket.socket(38, socket.SOCK_SEQPACKET, 0).close())
out["inet_seqpacket_sctp"] = _probe(lambda: socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, 132).close())
_report(out)
''')
        for what in ("raw4", "raw4_tcp", "raw6", "packet", "packet_dgram", "netlink_audit", "netlink_uevent",
                     "vsock", "bluetooth", "alg", "inet_seqpacket_sctp"):
            self.assertRefused(res[what], f"socket {what}", errnos=(1, 13, 38, 97, 93, 94))
        # ICMP datagram ("ping") sockets are harmless without a route, but note them.
        self.assertNotIn("ok", res["ping_dgram"], f"ICMP ping socket allowed: {res['ping_dgram']}")

    def test_host_unix_sockets_unreachable(self):
        name = "sandgate-sec-" + uuid.uuid4().hex[:12]
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind("\0" + name)
        srv.listen(1)
        self.addCleanup(srv.close)
        paths = [p for p in ("/run/systemd/private", "/run/dbus/system_bus_socket", "/var/run/docker.sock",
                             "/run/containerd/containerd.sock") if os.path.exists(p)]
        res = self.probe(self.k, f'''
def conn(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        return "connected"
    finally:
        s.close()
out = {{"abstract": _probe(lambda: conn("\\0{name}"))}}
for p in {paths!r}:
    out[p] = _probe(lambda: conn(p))
_report(out)
''')
        self.assertRefused(res["abstract"], "connecting to a host abstract unix socket", errnos=(111, 2))
        for p in paths:
            self.assertRefused(res[p], f"connecting to host socket {p}", errnos=None)


if __name__ == "__main__":
    unittest.main()
