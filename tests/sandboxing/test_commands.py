#!/usr/bin/python3
"""Integration tests of commands with captured output, the kill op, TTL
extension and egress opened while a sandbox runs, against a real
sandgate-sandbox over its control socket (as root).

usage: test_commands.py SANDGATE_SANDBOX POLICY_JSON [unittest args]
"""
import base64
import ctypes
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import test_sandbox as base  # noqa: E402
from procfs import rss_kib  # noqa: E402
from test_sandbox import host_processes_with, make_policy, supervised  # noqa: E402


def poll_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what() if callable(what) else what}")
        time.sleep(0.02)


def sandbox_sessions(command):
    """(pid, sid, pgid) of host processes whose whole command line is command
    (not the shell or setsid on their way to exec it, whose arguments hold it too)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,pgid=,args="], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        pid, sid, pgid, args = line.split(None, 3)
        if args == command:
            rows.append((int(pid), int(sid), int(pgid)))
    return rows


class command:
    """One spawn with capture: its reply, then every event about it up to its exit.
    Without argv, the events of a child spawned already."""

    def __init__(self, client, child_id, argv=None, timeout=60, **fields):
        self.started = time.time()
        self.reply = None if argv is None else client.request("spawn", id=child_id, argv=argv, capture=True,
                                                              **fields)
        self.client = client
        self.id = child_id
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.chunks = []
        self.exit = None
        self.timeout = timeout

    def wait(self):
        assert self.reply is None or self.reply["ok"], self.reply
        while self.exit is None:
            event = self.client.next_event_of(self.id, timeout=self.timeout)
            if event["event"] == "output":
                raw = base64.b64decode(event["data"], validate=True)
                self.chunks.append(len(raw))
                (self.stdout if event["stream"] == "stdout" else self.stderr).extend(raw)
            elif event["event"] == "exit":
                self.exit = event
                self.ended = time.time()
        return self


def no_output_after_exit(test, client, child_id):
    """After the exit event nothing more about the child arrives (a ping flushes the stream)."""
    test.assertTrue(client.request("ping")["ok"])
    test.assertEqual([m for m in client.events if m.get("id") == child_id], [])


class capture_tests(unittest.TestCase):
    def test_stdout_and_stderr_of_bash_are_captured_separately(self):
        with supervised() as s:
            c = command(s.client, "c1", ["/bin/bash", "-c", "echo out; echo err >&2; printf tail; exit 3"]).wait()
            self.assertEqual(bytes(c.stdout), b"out\ntail")
            self.assertEqual(bytes(c.stderr), b"err\n")
            self.assertEqual(c.exit["code"], 3)
            self.assertNotIn("truncated", c.exit)
            self.assertNotIn("timed_out", c.exit)
            no_output_after_exit(self, s.client, "c1")
            # without stdin, the child's stdin is /dev/null
            c = command(s.client, "c2", ["/bin/cat"]).wait()
            self.assertEqual((bytes(c.stdout), c.exit["code"]), (b"", 0))

    def test_binary_output_arrives_whole_in_chunks_of_at_most_64_kib(self):
        with supervised() as s:
            data = bytes(range(256)) * 1200  # 300 KiB, every byte value
            code = "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 1200)\n"
            c = command(s.client, "bin", ["/usr/bin/python3", "-c", code]).wait()
            self.assertEqual(c.exit["code"], 0)
            self.assertEqual(bytes(c.stdout), data)
            self.assertGreater(len(c.chunks), 1)
            self.assertLessEqual(max(c.chunks), 64 << 10)

    def test_stdin_is_passed_through_then_closed(self):
        with supervised() as s:
            data = os.urandom(200 << 10)  # more than a pipe holds: written as the child reads
            c = command(s.client, "cat", ["/bin/cat"], stdin=base64.b64encode(data).decode()).wait()
            self.assertEqual(c.exit["code"], 0, "cat saw the end of its input")
            self.assertEqual(bytes(c.stdout), data)

    def test_output_limit_truncates_but_the_child_runs_to_its_end(self):
        with supervised() as s:
            code = ("import sys\nsys.stdout.write('x' * 300000); sys.stdout.flush()\n"
                    "sys.stderr.write('done'); sys.exit(5)\n")
            c = command(s.client, "big", ["/usr/bin/python3", "-c", code], output_limit=100000).wait()
            self.assertEqual(c.exit["code"], 5, "the child was not blocked nor killed by the limit")
            self.assertTrue(c.exit.get("truncated"), c.exit)
            self.assertEqual(bytes(c.stdout), b"x" * 100000)
            self.assertEqual(bytes(c.stderr), b"done")
            # exactly at the limit is not truncated
            c = command(s.client, "exact", ["/usr/bin/printf", "12345"], output_limit=5).wait()
            self.assertEqual(bytes(c.stdout), b"12345")
            self.assertNotIn("truncated", c.exit)

    def test_a_stream_past_its_limit_never_blocks_even_when_the_gateway_lags(self):
        with supervised() as s:
            # b writes 2 MiB past a 10-byte limit while a's forwarded output
            # fills the connection and this client reads nothing
            b_script = "sleep 1; head -c 2000000 /dev/zero; touch /run/sandgate/b.done"
            self.assertTrue(s.client.request("spawn", id="b", argv=["/bin/sh", "-c", b_script], capture=True,
                                             output_limit=10)["ok"])
            a_code = "import sys\nb = b'a' * 65536\nfor i in range(480): sys.stdout.buffer.write(b)\n"
            self.assertTrue(s.client.request("spawn", id="a", argv=["/usr/bin/python3", "-c", a_code],
                                             capture=True, output_limit=64 << 20)["ok"])
            poll_until(lambda: os.path.exists(os.path.join(s.run_dir, "b.done")), 30,
                       "b ran to its end although nobody read the connection")
            a = command(s.client, "a").wait()
            self.assertEqual(len(a.stdout), 480 * 65536)
            b_exit = s.client.wait_event("exit", "b")
            self.assertEqual(b_exit.get("code"), 0, b_exit)
            self.assertTrue(b_exit.get("truncated"), b_exit)

    def test_malformed_capture_fields_are_refused(self):
        with supervised() as s:
            bad = s.client.request("spawn", id="x", argv=["/bin/true"], capture=True, stdin="not base64!")
            self.assertFalse(bad["ok"])
            self.assertIn("stdin", bad["error"])
            bad = s.client.request("spawn", id="x", argv=["/bin/true"], timeout_ms=-1)
            self.assertFalse(bad["ok"])
            self.assertTrue(s.client.request("ping")["ok"])


class kill_tests(unittest.TestCase):
    def test_timeout_kills_the_child_and_a_setsid_daemon(self):
        with supervised() as s:
            marker = f"10{os.getpid()}"
            script = f"setsid sleep {marker}1 >/dev/null 2>&1 & echo started; sleep 100"
            c = command(s.client, "t", ["/bin/bash", "-c", script], timeout_ms=1500)
            poll_until(lambda: len(sandbox_sessions(f"sleep {marker}1")) == 1, 20, "the daemon started")
            (daemon_pid, daemon_sid, _), = sandbox_sessions(f"sleep {marker}1")
            self.assertEqual(daemon_pid, daemon_sid, "the grandchild leads a session of its own")
            c.wait()
            self.assertEqual(c.exit.get("signal"), 9, c.exit)
            self.assertTrue(c.exit.get("timed_out"), c.exit)
            self.assertGreaterEqual(c.ended - c.started, 1.4)
            self.assertEqual(bytes(c.stdout), b"started\n")
            poll_until(lambda: not host_processes_with(f"sleep {marker}1"), 10, "the setsid daemon is gone")
            self.assertTrue(s.client.request("ping")["ok"])

    def test_kill_reaches_a_grandchild_that_left_with_setsid(self):
        with supervised() as s:
            marker = f"20{os.getpid()}"
            script = f"(setsid sleep {marker}1 >/dev/null 2>&1 &); sleep {marker}2"
            c = command(s.client, "k", ["/bin/bash", "-c", script])
            poll_until(lambda: len(sandbox_sessions(f"sleep {marker}1")) == 1
                       and len(sandbox_sessions(f"sleep {marker}2")) == 1, 20, "both sleeps started")
            (_, daemon_sid, daemon_pgid), = sandbox_sessions(f"sleep {marker}1")
            (_, child_sid, child_pgid), = sandbox_sessions(f"sleep {marker}2")
            self.assertNotEqual(daemon_sid, child_sid)
            self.assertNotEqual(daemon_pgid, child_pgid, "a process-group kill would miss it")
            self.assertTrue(s.client.request("kill", id="k")["ok"])
            c.wait()
            self.assertEqual(c.exit.get("signal"), 9, c.exit)
            self.assertNotIn("timed_out", c.exit)
            poll_until(lambda: not host_processes_with(f"sleep {marker}"), 10, "the whole tree is gone")
            self.assertTrue(s.client.request("kill", id="k")["ok"], "ok even after it ended")
            self.assertTrue(s.client.request("kill", id="never-spawned")["ok"])

    def test_kill_works_for_children_without_capture(self):
        with supervised() as s:
            marker = f"30{os.getpid()}"
            script = f"(setsid sleep {marker} &); exec sleep 1000"
            self.assertTrue(s.client.request("spawn", id="plain", argv=["/bin/sh", "-c", script])["ok"])
            poll_until(lambda: host_processes_with(f"sleep {marker}"), 20, "the daemon started")
            self.assertTrue(s.client.request("kill", id="plain")["ok"])
            self.assertEqual(s.client.wait_event("exit", "plain")["signal"], 9)
            poll_until(lambda: not host_processes_with(f"sleep {marker}"), 10, "the daemon is gone")

    def test_a_daemon_holding_stdout_does_not_hold_back_the_exit(self):
        with supervised() as s:
            marker = f"40{os.getpid()}"
            script = f"setsid sleep {marker} & echo hi"
            c = command(s.client, "d", ["/bin/bash", "-c", script]).wait()
            self.assertEqual(c.exit.get("code"), 0, c.exit)
            self.assertEqual(bytes(c.stdout), b"hi\n")
            self.assertLess(c.ended - c.started, 10, "the wait for the daemon's end of the pipe is capped")
            poll_until(lambda: not host_processes_with(f"sleep {marker}"), 10,
                       "the daemon that kept the pipe open was killed")
            no_output_after_exit(self, s.client, "d")

    def test_children_may_reuse_an_id_after_its_exit(self):
        with supervised() as s:
            for _ in range(3):
                c = command(s.client, "same", ["/bin/echo", "again"]).wait()
                self.assertEqual(bytes(c.stdout), b"again\n")


class extend_tests(unittest.TestCase):
    def test_an_extended_sandbox_outlives_its_first_ttl_and_the_outer_backstop(self):
        policy = make_policy(ttl_s=3)
        with supervised(policy) as s:
            first = s.ready["expires_at"]
            new = int(time.time()) + 30
            self.assertTrue(s.client.request("extend", expires_at=new)["ok"])
            # past the old TTL (3 s) and past the outer process's backstop for it (TTL + 10 s)
            target = first + 14
            while time.time() < target:
                self.assertTrue(s.client.request("ping")["ok"])
                self.assertIsNone(s.proc.poll())
                time.sleep(0.5)
            self.assertTrue(s.client.request("ping")["ok"])
            self.assertIsNone(s.proc.poll(), "the outer process did not kill the extended sandbox")
            s.client.close()
            s.client = base.control_client(s.control)
            self.assertEqual(s.client.receive()["expires_at"], new)

    def test_a_shortened_sandbox_ends(self):
        with supervised() as s:
            self.assertGreater(s.ready["expires_at"], time.time() + 3600)
            self.assertTrue(s.client.request("spawn", id="k", argv=["/bin/sleep", "1008"])["ok"])
            self.assertTrue(s.client.request("extend", expires_at=int(time.time()) + 2)["ok"])
            s.proc.communicate(timeout=20)
            self.assertEqual(s.proc.returncode, 124)
            self.assertEqual(host_processes_with("sleep 1008"), [])

    def test_nonsense_deadlines_are_refused(self):
        with supervised() as s:
            self.assertFalse(s.client.request("extend", expires_at=0)["ok"])
            self.assertFalse(s.client.request("extend", expires_at=int(time.time()) + 400 * 86400)["ok"])
            self.assertFalse(s.client.request("extend")["ok"])
            self.assertTrue(s.client.request("ping")["ok"])


def statically_linked(path):
    """True when the ELF file has no program interpreter (the product build; sanitizer builds are dynamic)."""
    import struct
    with open(path, "rb") as f:
        header = f.read(64)
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))  # PT_INTERP


class memory_tests(unittest.TestCase):
    def setUp(self):
        if not statically_linked(base.SANDBOX):
            self.skipTest("a dynamically linked (sanitizer) build: the memory target is for the static program")

    def test_outer_and_supervisor_settle_under_1_mib_once_quiet(self):
        # The target is 2 MiB each; once quiet they drop the pages their setup
        # touched (release_idle_memory) and stay far below it.
        limit = 1 << 10  # KiB
        with supervised() as s:
            outer, sup = s.ready["outer_pid"], s.ready["pid"]
            self.assertTrue(s.client.request("spawn", id="k", argv=["/bin/sleep", "1000"])["ok"])
            code = "import sys\nb = b'y' * 65536\nfor i in range(128): sys.stdout.buffer.write(b)\n"
            c = command(s.client, "burst", ["/usr/bin/python3", "-c", code], output_limit=16 << 20).wait()
            self.assertEqual(len(c.stdout), 8 << 20)
            poll_until(lambda: rss_kib(outer) < limit and rss_kib(sup) < limit, 10,
                       lambda: f"outer ({rss_kib(outer)} KiB) and supervisor ({rss_kib(sup)} KiB) "
                               "below 1 MiB once quiet")
            # and they still work from there
            self.assertTrue(s.client.request("ping")["ok"])
            c = command(s.client, "after", ["/bin/echo", "still"]).wait()
            self.assertEqual(bytes(c.stdout), b"still\n")


# The proxy variables a child sees, HTTP_PROXY's value, then what a proxy request to
# 127.0.0.1:3128 gets: the first line of an answer, or the errno of the connect.
EGRESS_PROBE = ["/usr/bin/python3", "-c", """
import os, socket
print(sorted(k for k in os.environ if k.lower().endswith("_proxy")))
print(os.environ.get("HTTP_PROXY"))
s = socket.socket()
try:
    s.connect(("127.0.0.1", 3128))
    s.sendall(b"GET http://x.test/ HTTP/1.1\\r\\nHost: x.test\\r\\n\\r\\n")
    print(s.recv(200).split(b"\\r\\n")[0].decode())
except OSError as e:
    print(e.errno)
"""]


def copy_descriptor(pid, fd):
    """A copy of descriptor fd of process pid (pidfd_getfd), as the gateway takes the egress socket."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        copy = libc.syscall(438, pidfd, fd, 0)  # SYS_pidfd_getfd, the same number on every architecture
        if copy < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        return copy
    finally:
        os.close(pidfd)


class egress_tests(unittest.TestCase):
    def test_open_egress_listens_for_whoever_holds_the_socket_outside(self):
        with supervised() as s:  # the default policy: network "none"
            before = command(s.client, "before", EGRESS_PROBE).wait()
            self.assertEqual(bytes(before.stdout).decode().splitlines(), ["[]", "None", "101"])  # ENETUNREACH
            self.assertTrue(s.client.request("open_egress")["ok"])
            self.assertTrue(s.client.request("open_egress")["ok"])  # once open, it stays
            # The socket the supervisor names, copied out as the gateway does for the egress proxy,
            # and served here, outside the sandbox's network namespace.
            listener = socket.socket(fileno=copy_descriptor(s.ready["pid"], s.ready["egress_fd"]))
            self.addCleanup(listener.close)
            listener.settimeout(10)  # it stays non-blocking: the supervisor shares the open file
            self.assertEqual(listener.getsockname(), ("127.0.0.1", 3128))
            requests = []

            def serve():
                conn, _ = listener.accept()
                with conn:
                    requests.append(conn.recv(200))
                    conn.sendall(b"HTTP/1.1 204 Served Outside\r\n\r\n")
            server = threading.Thread(target=serve)
            server.start()
            after = command(s.client, "after", EGRESS_PROBE).wait()
            server.join(10)
            self.assertEqual(bytes(after.stdout).decode().splitlines(),
                             ["['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']",
                              "http://127.0.0.1:3128", "HTTP/1.1 204 Served Outside"], bytes(after.stderr))
            self.assertTrue(requests and requests[0].startswith(b"GET http://x.test/ HTTP/1.1"), requests)

    def test_without_a_gateway_the_supervisor_answers_egress_503(self):
        with supervised() as s:
            self.assertTrue(s.client.request("open_egress")["ok"])
            # The request waits in the backlog while a gateway is connected (its proxy would take
            # it), and is answered by the supervisor once no gateway is: never a hang.
            probe = ("import socket, traceback\ntry:\n"
                     "    s = socket.create_connection((\"127.0.0.1\", 3128), timeout=30)\n"
                     "    s.sendall(b\"GET http://x.test/ HTTP/1.1\\r\\nHost: x.test\\r\\n\\r\\n\")\n"
                     "    answer = s.recv(300)\nexcept Exception:\n    answer = traceback.format_exc().encode()\n"
                     "open(\"/tmp/answer\", \"wb\").write(answer)\n")
            self.assertTrue(s.client.request("spawn", id="waiting", argv=["/usr/bin/python3", "-c", probe])["ok"])
            poll_until(lambda: host_processes_with("/tmp/answer"), 30, "the probe to run")
            s.client.close()
            # The probe ends once answered (its marker: the answer file's name); then a gateway comes back.
            poll_until(lambda: not host_processes_with("/tmp/answer"), 30, "the probe to be answered")
            s.client = base.control_client(s.control)
            self.assertEqual(s.client.receive()["event"], "ready")
            exit_event = s.client.wait_event("exit", "waiting", timeout=40)
            answer = command(s.client, "cat", ["/bin/cat", "/tmp/answer"]).wait()
            self.assertEqual(exit_event.get("code"), 0, (exit_event, bytes(answer.stdout)))
            head, _, body = bytes(answer.stdout).partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 503 Service Unavailable"), head)
            self.assertIn(b"X-Sandgate-Egress: refused", head)
            self.assertIn(b"no gateway is connected", body)

    def test_a_policy_value_wins_over_the_proxy_variables(self):
        policy = make_policy(env={"set": {"PATH": "/usr/bin:/bin", "HTTP_PROXY": "http://127.0.0.1:9"}})
        try:
            with supervised(policy) as s:
                self.assertTrue(s.client.request("open_egress")["ok"])
                c = command(s.client, "c", ["/usr/bin/printenv", "HTTP_PROXY"]).wait()
                self.assertEqual(bytes(c.stdout).decode(), "http://127.0.0.1:9\n")
        finally:
            os.unlink(policy)


if __name__ == "__main__":
    base.SANDBOX = os.path.abspath(sys.argv[1])
    base.POLICY = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
