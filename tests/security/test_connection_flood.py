"""Connection floods from an unauthenticated client: thousands of TCP
connections that send nothing, or half a request head and then a byte now
and then, from one address and from many (loopback is 127.0.0.0/8: the
client binds 127.0.0.2, 127.0.0.3, ...), while a real client with the token
keeps creating sandboxes and running code in a kernel. The gateway must
refuse a connection over its address's limit at once with a 503 and count
it, make room at its total limit by closing the connection that has waited
longest for a head, close every head that is not whole by its deadline
however it trickles in, keep descriptors for its own work (the real client's
sandboxes and kernel), not spin when descriptors run out, and give back the
memory a flood used once it is over. A TLS connection gets the same
deadlines for its handshake and its head."""

import json
import os
import resource
import selectors
import socket
import ssl
import tempfile
import threading
import time
import unittest

from procfs import rss_kib
from sandgate_fixture import ARTIFACTS, Gateway, TestCertificates, wait_until
from security_case import SandboxTestCase, sandbox_gateway

HEAD_TIMEOUT_S = 2  # --http-header-timeout-s, short so that the test runs fast
PER_ADDRESS = 300  # --max-connections-per-address
MAX_KERNELS = 4
# The gateway's open-file limit: the total of client connections is what it
# leaves after the descriptors kept for MAX_KERNELS kernels and the gateway.
OPEN_FILES = 6000
DESCRIPTORS_PER_KERNEL = 16  # what the gateway keeps per kernel (docs/architecture.md)
REQUEST_TIMEOUT_S = 10  # the real client's bound on each request
ROUND_PAUSE_S = 0.5  # between the real client's rounds: a user, not a benchmark
# A flood that fills the total costs the gateway a few KiB a connection:
# with the table full its resident memory is at least this much above its
# level before the flood, and once the flood is over at most RSS_ALLOWANCE_KIB
# above it.
FLOOD_COST_MIN_KIB = 8 * 1024
RSS_ALLOWANCE_KIB = 3 * 1024
PARTIAL_HEAD = b"GET /api/kernels HTTP/1.1\r\nHost: sandgate\r\n"
IP_BIND_ADDRESS_NO_PORT = 24  # <linux/in.h>: the port is chosen at connect, per destination


def metrics(gw):
    """{'name' or 'name{labels}': value} of the gateway's /metrics."""
    r = gw.request("GET", "metrics", timeout=REQUEST_TIMEOUT_S)
    if r.status != 200:
        raise AssertionError(f"GET /metrics: {r}")
    out = {}
    for line in r.body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def cpu_seconds(pid):
    """User and system CPU time a process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Conn:
    def __init__(self, sock, source, trickle):
        self.sock = sock
        self.source = source
        self.trickle = trickle  # sends a byte now and then
        self.opened = time.monotonic()
        self.closed = None  # when the gateway closed it
        self.data = b""


class Flood:
    """Connections to a gateway from source addresses of the test's choice,
    none of which ever sends a whole request head; records what the gateway
    sends each and when it closes it."""

    def __init__(self, host, port):
        self.address = (host, port)
        self.selector = selectors.DefaultSelector()
        self.conns = []

    def open(self, source, n, first=b"", trickle=False):
        made = []
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            s.bind((source, 0))
            s.settimeout(5)
            s.connect(self.address)
            if first:
                s.sendall(first)
            s.setblocking(False)
            c = Conn(s, source, trickle)
            self.selector.register(s, selectors.EVENT_READ, c)
            self.conns.append(c)
            made.append(c)
        return made

    def _closed(self, c):
        c.closed = time.monotonic()
        self.selector.unregister(c.sock)
        c.sock.close()

    def pump(self, seconds, trickle_every=0.25):
        """Reads what arrives for `seconds`, sending one byte to each
        trickling connection every `trickle_every` seconds."""
        end = time.monotonic() + seconds
        next_trickle = time.monotonic() + trickle_every
        while True:
            now = time.monotonic()
            if now >= end:
                return
            if now >= next_trickle:
                next_trickle = now + trickle_every
                for c in self.open_conns():
                    if c.trickle:
                        try:
                            c.sock.send(b"X")
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError:  # reset: the gateway closed it
                            self._closed(c)
            if not self.selector.get_map():
                time.sleep(min(end, next_trickle) - now)
                continue
            for key, _ in self.selector.select(max(0.0, min(end, next_trickle) - now)):
                c = key.data
                try:
                    chunk = c.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                if chunk:
                    c.data += chunk
                else:
                    self._closed(c)

    def pump_until(self, predicate, seconds, what):
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {seconds} s waiting for {what}")
            self.pump(0.05)

    def open_conns(self, of=None):
        return [c for c in (self.conns if of is None else of) if c.closed is None]

    def close_all(self):
        for c in self.open_conns():
            self.selector.unregister(c.sock)
            c.sock.close()
            c.closed = time.monotonic()
        self.selector.close()


def read_to_end(sock, seconds=10):
    """What a socket receives until the gateway closes it (a TLS socket's
    end without close_notify included); closes it."""
    sock.settimeout(seconds)
    data = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (ssl.SSLEOFError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return data


def refused_503(c):
    """The gateway answered this connection with its 503 and closed it."""
    head, _, body = c.data.partition(b"\r\n\r\n")
    return (c.closed is not None and head.startswith(b"HTTP/1.1 503 ")
            and json.loads(body).get("reason") == "too_many_connections")


class RealClient(threading.Thread):
    """What a user with the token does meanwhile, in rounds: creates a
    sandbox and deletes it, runs a cell on the kernel's WebSocket and one
    through POST /api/kernels/{id}/execute, asks GET /api. Each request must
    answer within REQUEST_TIMEOUT_S."""

    def __init__(self, gw, kernel):
        super().__init__(daemon=True)
        self.gw = gw
        self.kernel = kernel
        self.rounds = 0
        self.errors = []
        self.stop = threading.Event()

    def expect(self, method, path, status, body=None):
        r = self.gw.request(method, path, body, timeout=REQUEST_TIMEOUT_S)
        if r.status != status:
            raise AssertionError(f"{method} {path}: {r}")
        return r

    def one_round(self):
        sid = self.expect("POST", "api/sandboxes", 201, {}).json()["id"]
        self.expect("DELETE", f"api/sandboxes/{sid}", 204)
        reply, iopub = self.kernel.execute("print(6 * 7)", timeout=REQUEST_TIMEOUT_S)
        out = "".join(m.content.get("text", "") for m in iopub if m.msg_type == "stream")
        if reply.content["status"] != "ok" or out.strip() != "42":
            raise AssertionError(f"WebSocket execute: {reply.content} {out!r}")
        r = self.expect("POST", f"api/kernels/{self.kernel.kernel_id}/execute", 200,
                        {"code": "print(7 * 6)", "timeout_s": REQUEST_TIMEOUT_S})
        if r.json()["stdout"].strip() != "42":
            raise AssertionError(f"REST execute: {r}")
        self.expect("GET", "api", 200)

    def run(self):
        while not self.stop.is_set():
            try:
                self.one_round()
                self.rounds += 1
            except Exception as e:  # noqa: BLE001 (reported by the test)
                self.errors.append(f"round {self.rounds + 1}: {e!r}")
                return
            self.stop.wait(ROUND_PAUSE_S)

    def wait_rounds(self, n, seconds, flood=None):
        """Waits until `n` more rounds have ended, pumping `flood` meanwhile."""
        target = self.rounds + n
        done = lambda: self.rounds >= target or self.errors or not self.is_alive()  # noqa: E731
        if flood:
            flood.pump_until(done, seconds, f"{n} rounds of the real client")
        else:
            wait_until(done, seconds, f"{n} rounds of the real client")

    def finish(self, test):
        if self.stop.is_set():
            return
        self.stop.set()
        self.join(3 * REQUEST_TIMEOUT_S)
        test.assertFalse(self.is_alive(), "the real client's round did not end")
        test.assertEqual(self.errors, [], "the real client's requests failed during the flood")


class ConnectionFlood(SandboxTestCase):
    gateway_args = ("--max-kernels", str(MAX_KERNELS), "--max-connections", "100000",
                    "--max-connections-per-address", str(PER_ADDRESS),
                    "--http-header-timeout-s", str(HEAD_TIMEOUT_S))

    @classmethod
    def setUpClass(cls):
        cls.gw = sandbox_gateway(*cls.gateway_args, name=cls.__name__, open_files=(OPEN_FILES, OPEN_FILES))
        cls._class_kernels = []
        cls.kernel = cls.class_kernel()
        cls.kernel.execute("print('warm')", timeout=60)

    def setUp(self):
        self.client = RealClient(self.gw, self.kernel)
        self.client.start()
        self.client.wait_rounds(1, 60)  # warm: sandboxes and executes have run once
        self.flood = Flood(self.gw.host, self.gw.port)
        self.addCleanup(self.flood.close_all)
        self.before = metrics(self.gw)

    def tearDown(self):
        self.client.finish(self)
        self.assertGatewayUp()
        events = self.gw.log_events()
        self.assertEqual([e for e in events if "Too many open files" in json.dumps(e)], [])

    def delta(self, name):
        return metrics(self.gw).get(name, 0) - self.before.get(name, 0)

    def test_one_address_over_its_limit_is_refused_at_once(self):
        extra = 100
        admitted = (self.flood.open("127.0.0.2", PER_ADDRESS // 2)
                    + self.flood.open("127.0.0.2", PER_ADDRESS - PER_ADDRESS // 2, first=PARTIAL_HEAD))
        over = self.flood.open("127.0.0.2", extra)
        self.flood.pump_until(lambda: all(c.closed for c in over), HEAD_TIMEOUT_S,
                              "the connections over the address's limit to be closed")
        self.assertTrue(all(refused_503(c) for c in over), [c.data[:200] for c in over if not refused_503(c)])
        self.assertEqual(self.flood.open_conns(admitted), admitted, "closed before their head's deadline")
        self.client.wait_rounds(1, 3 * REQUEST_TIMEOUT_S, self.flood)  # 127.0.0.1 is another address
        self.flood.pump_until(lambda: not self.flood.open_conns(admitted), HEAD_TIMEOUT_S + 5,
                              "the head deadline to close the admitted connections")
        for c in admitted:
            self.assertEqual(c.data, b"", "a connection without a head got an answer")
            self.assertGreaterEqual(c.closed - c.opened, HEAD_TIMEOUT_S - 0.5)
        self.assertEqual(self.delta('sandgate_connections_refused_total{reason="per_address"}'), extra)
        self.assertEqual(self.delta('sandgate_connection_timeouts_total{phase="request_head"}'), PER_ADDRESS)

    def test_a_body_without_a_valid_token_is_never_read(self):
        # A slow body behind a head without a valid token would hold a busy connection for the
        # idle timeout: the gateway answers at the head and closes, reading none of it.
        for auth, status in ((b"", b"401"), (b"Authorization: token wrong\r\n", b"403")):
            s = socket.create_connection((self.gw.host, self.gw.port), source_address=("127.0.0.5", 0))
            s.sendall(b"POST " + self.gw.base_path.encode() + b"api/sandboxes HTTP/1.1\r\nHost: x\r\n" + auth +
                      b"Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{")
            answer = read_to_end(s, REQUEST_TIMEOUT_S)
            self.assertTrue(answer.startswith(b"HTTP/1.1 " + status), answer[:200])
            self.assertIn(b"Connection: close", answer)

    def test_slow_heads_are_closed_at_their_deadline(self):
        # A kept-alive connection: between requests the idle timeout applies,
        # and its second head has the head's time from its first byte.
        kept = socket.create_connection((self.gw.host, self.gw.port), source_address=("127.0.0.3", 0))
        self.addCleanup(kept.close)
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: sandgate\r\n\r\n")
        kept.settimeout(REQUEST_TIMEOUT_S)
        self.assertTrue(kept.recv(4096).startswith(b"HTTP/1.1 200 "))
        kept.setblocking(False)
        second = Conn(kept, "127.0.0.3", True)
        self.flood.selector.register(kept, selectors.EVENT_READ, second)
        self.flood.pump(HEAD_TIMEOUT_S + 0.5)  # idle longer than a head may take
        self.assertIsNone(second.closed, "an idle kept-alive connection was closed by the head's deadline")
        second.opened = time.monotonic()
        kept.send(PARTIAL_HEAD)
        self.flood.conns.append(second)
        # Heads from the connection's accept, a byte every quarter second.
        slow = self.flood.open("127.0.0.3", 50, first=PARTIAL_HEAD, trickle=True)
        self.flood.pump_until(lambda: not self.flood.open_conns(slow + [second]), HEAD_TIMEOUT_S + 5,
                              "the head deadline to close the slow heads")
        for c in slow + [second]:
            self.assertEqual(c.data, b"")
            self.assertGreaterEqual(c.closed - c.opened, HEAD_TIMEOUT_S - 0.5)
            self.assertLess(c.closed - c.opened, HEAD_TIMEOUT_S + 4, "the trickle pushed the deadline back")
        self.assertEqual(self.delta('sandgate_connection_timeouts_total{phase="request_head"}'), 51)

    def test_many_addresses_fill_the_total_and_memory_returns(self):
        limit = int(self.before["sandgate_connections_limit"])
        self.assertLess(limit, 100000, "--max-connections was not held within the open-file limit")
        self.assertGreaterEqual(OPEN_FILES - limit, DESCRIPTORS_PER_KERNEL * MAX_KERNELS,
                                "the connection limit leaves no descriptors for the kernels")
        open_before = self.before["sandgate_connections"]
        rss_before = rss_kib(self.gw.pid)
        # Enough addresses, each within its own limit, to pass the total.
        sources = [f"127.0.1.{i}" for i in range(1, limit // PER_ADDRESS + 3)]
        per_source = {s: [] for s in sources}

        def refill():
            for s in sources:
                alive = self.flood.open_conns(per_source[s])
                per_source[s] = alive + self.flood.open(s, PER_ADDRESS - len(alive),
                                                        first=PARTIAL_HEAD if s.endswith("1") else b"")

        refill()
        self.flood.pump_until(lambda: self.delta("sandgate_connections_displaced_total") >= 1, 10,
                              "a waiting connection to make room for a new one")
        rss_full = rss_kib(self.gw.pid)  # the table is full
        # The attacker keeps the table full, through a few head deadlines,
        # while the real client goes on.
        target = self.client.rounds + 3
        busy_until = time.monotonic() + 2 * HEAD_TIMEOUT_S
        deadline = time.monotonic() + 6 * REQUEST_TIMEOUT_S
        while (self.client.rounds < target or time.monotonic() < busy_until) and not self.client.errors:
            self.assertLess(time.monotonic(), deadline, "the real client made no progress during the flood")
            refill()
            self.assertLessEqual(metrics(self.gw)["sandgate_connections"], limit)
            self.flood.pump(0.2)
        # The real client's own work ends first: what it holds in flight is
        # not the flood's.
        self.client.finish(self)
        self.flood.close_all()
        wait_until(lambda: metrics(self.gw)["sandgate_connections"] <= open_before, 10,
                   "the gateway to see the flood's connections closed")
        self.assertGreaterEqual(rss_full - rss_before, FLOOD_COST_MIN_KIB, "the flood cost no memory")
        wait_until(lambda: rss_kib(self.gw.pid) <= rss_before + RSS_ALLOWANCE_KIB, 15,
                   lambda: f"RSS back near its level before the flood: {rss_before} KiB before, "
                           f"{rss_full} KiB with the table full, {rss_kib(self.gw.pid)} KiB now")
        self.assertGreaterEqual(self.delta("sandgate_connections_displaced_total"), 1)


class DeadlinesAndDescriptors(unittest.TestCase):
    """Gateways without sandboxes: the TLS handshake's deadline, and
    descriptors running out under the accept loop."""

    log_dir = os.path.join(ARTIFACTS, "security")

    def test_tls_handshake_and_head_deadlines(self):
        with tempfile.TemporaryDirectory() as d:
            gw = Gateway("--handshake-timeout-s", "1", "--http-header-timeout-s", str(HEAD_TIMEOUT_S),
                         name="TlsDeadlines", tls=TestCertificates(d), log_dir=self.log_dir)
            with gw:
                silent = socket.create_connection((gw.host, gw.port))
                start = time.monotonic()
                self.assertEqual(read_to_end(silent), b"")  # no handshake: closed
                self.assertGreaterEqual(time.monotonic() - start, 0.5)
                self.assertLess(time.monotonic() - start, 1 + 3)
                context = gw.tls.client_context()
                raw = socket.create_connection((gw.host, gw.port))
                tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
                start = time.monotonic()
                tls.sendall(PARTIAL_HEAD)
                self.assertEqual(read_to_end(tls), b"")  # the head never completed: closed
                self.assertGreaterEqual(time.monotonic() - start, HEAD_TIMEOUT_S - 0.5)
                self.assertLess(time.monotonic() - start, HEAD_TIMEOUT_S + 3)
                self.assertEqual(gw.request("GET", "api").status, 200)
                m = metrics(gw)
                self.assertEqual(m['sandgate_connection_timeouts_total{phase="tls_handshake"}'], 1)
                self.assertEqual(m['sandgate_connection_timeouts_total{phase="request_head"}'], 1)

    def test_out_of_descriptors_does_not_spin(self):
        with socket.socket() as probe:  # a free port for the agent-check listener, which runs out too
            probe.bind(("127.0.0.1", 0))
            agent_port = probe.getsockname()[1]
        gw = Gateway("--http-header-timeout-s", "10", "--agent-check-port", str(agent_port),
                     name="OutOfDescriptors", log_dir=self.log_dir)
        with gw:
            limits = resource.prlimit(gw.pid, resource.RLIMIT_NOFILE)
            in_use = len(os.listdir(f"/proc/{gw.pid}/fd"))
            resource.prlimit(gw.pid, resource.RLIMIT_NOFILE, (in_use + 4, limits[1]))
            flood = Flood(gw.host, gw.port)
            try:
                conns = flood.open("127.0.0.4", 40)
                flood.pump_until(lambda: len(flood.open_conns(conns)) <= 8, 5,
                                 "connections without a descriptor to be closed")
                wait_until(lambda: any(e.get("event") == "out_of_descriptors" for e in gw.log_events()), 5,
                           "out_of_descriptors in the log")
                more = flood.open("127.0.0.4", 10)  # they keep coming while descriptors are out
                checks = [socket.create_connection((gw.host, agent_port)) for _ in range(3)]
                used = cpu_seconds(gw.pid)
                flood.pump(1.0)
                self.assertLess(cpu_seconds(gw.pid) - used, 0.3, "the accept loop spins")
                self.assertEqual(flood.open_conns(more), [], "a connection waits with no descriptor for it")
            finally:
                flood.close_all()
                resource.prlimit(gw.pid, resource.RLIMIT_NOFILE, limits)
            for check in checks:  # waited in the backlog; answered once descriptors are back
                check.settimeout(5)
                self.assertRegex(check.makefile("rb").readline(), rb"^(ready \d+%|drain)\n$")
                check.close()
            self.assertEqual(gw.request("GET", "api").status, 200)
            refused = metrics(gw)['sandgate_connections_refused_total{reason="descriptors"}']
            self.assertGreaterEqual(refused, 40 + 10 - 8)
            failed = [e for e in gw.log_events() if e.get("event") == "accept_failed"]
            self.assertEqual(failed, [])
            agent_failed = [e for e in gw.log_events() if e.get("event") == "agent_check_accept_failed"]
            self.assertLessEqual(len(agent_failed), 1, "one line per streak of failed accepts")


if __name__ == "__main__":
    unittest.main()
