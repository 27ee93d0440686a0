#!/usr/bin/python3
"""Integration tests of the supervisor's process API (control_protocol.hpp,
"Processes"; process_stream.hpp): processes whose output goes to rings,
attachments that copy their end of a socketpair out of the supervisor with
pidfd_getfd as the gateway does, stdin, terminals, what a late attachment
gets, and that an attached reader loses nothing however slow it is; against
a real sandgate-sandbox over its control socket (as root).

usage: test_processes.py SANDGATE_SANDBOX POLICY_JSON [unittest args]
"""
import ctypes
import json
import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import test_sandbox as base  # noqa: E402
from test_sandbox import host_processes_with, supervised  # noqa: E402

LIBC = ctypes.CDLL(None, use_errno=True)
SYS_PIDFD_GETFD = 438
STDIN, STDOUT, STDERR, EVENT, CONTROL = range(5)


def copy_fd(pid, fd):
    """The supervisor's descriptor `fd`, copied into this process (pidfd_getfd)."""
    pidfd = os.pidfd_open(pid)
    try:
        copy = LIBC.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if copy < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        return copy
    finally:
        os.close(pidfd)


class attachment:
    """The gateway's side of one attachment."""

    def __init__(self, s, process_id, since=None):
        fields = {"id": process_id}
        if since is not None:
            fields["since"] = since
        r = s.client.request("attach", **fields)
        assert r["ok"], r
        self.sock = socket.socket(fileno=copy_fd(s.ready["pid"], r["data"]["fd"]))
        self.sock.setblocking(True)
        self.sock.settimeout(5)
        assert s.client.request("release_fd", fd=r["data"]["fd"])["ok"]
        self.buffer = b""
        self.out = [bytearray(), bytearray(), bytearray()]
        self.events = []

    def frame(self):
        """The next frame (kind, payload), or None at the end."""
        while len(self.buffer) < 5 or len(self.buffer) < 5 + struct.unpack(">I", self.buffer[1:5])[0]:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                assert self.buffer == b"", "the stream ended inside a frame"
                self.sock.close()
                return None
            self.buffer += chunk
        kind, n = self.buffer[0], struct.unpack(">I", self.buffer[1:5])[0]
        payload, self.buffer = self.buffer[5:5 + n], self.buffer[5 + n:]
        return kind, payload

    def read(self, until=None, timeout=30):
        """Reads frames until `until(self)` holds (or the end); returns self."""
        deadline = time.time() + timeout
        while until is None or not until(self):
            assert time.time() < deadline, f"not within {timeout} s; got {bytes(self.out[1])[-300:]!r}"
            f = self.frame()
            if f is None:
                break
            kind, payload = f
            if kind == EVENT:
                self.events.append(json.loads(payload))
            else:
                self.out[kind].extend(payload)
        return self

    def send(self, kind, payload):
        self.sock.sendall(bytes([kind]) + struct.pack(">I", len(payload)) + payload)

    def control(self, **op):
        self.send(CONTROL, json.dumps(op).encode())

    def exit(self):
        return next((e for e in self.events if e["event"] == "exit"), None)


def spawn(s, pid_name, argv, env=None, **streams):
    r = s.client.request("spawn", id=pid_name, argv=argv, cwd="/workspace", env=env or {}, streams=streams)
    assert r["ok"], r
    return r["data"]


class processes(unittest.TestCase):
    def test_stdin_lines_echo_back_and_close_ends_the_process(self):
        with supervised() as s:
            code = "import sys\nfor line in sys.stdin:\n    print('echo', line.strip(), flush=True)\nprint('bye')"
            record = spawn(s, "p1", ["/usr/bin/python3", "-c", code], stdin=True)
            self.assertTrue(record["running"])
            self.assertTrue(record["stdin"])
            a = attachment(s, "p1")
            a.read(lambda a: a.events)
            self.assertEqual(a.events[0]["event"], "attached")
            self.assertEqual(a.events[0]["stdout"], {"from": 0, "dropped": 0})
            for word in ("one", "two"):
                a.send(STDIN, f"{word}\n".encode())
                a.read(lambda a: f"echo {word}\n".encode() in a.out[1])
            a.control(op="close_stdin")
            a.read()  # to the end: the exit, then EOF
            self.assertEqual(bytes(a.out[1]), b"echo one\necho two\nbye\n")
            self.assertEqual(a.exit()["code"], 0)
            self.assertEqual(a.exit()["stdout_bytes"], len(a.out[1]))
            done = s.client.request("wait", id="p1")
            self.assertFalse(done["data"]["running"], done)
            self.assertEqual(done["data"]["exit"]["code"], 0)

    def test_a_late_attachment_gets_the_tail_and_what_was_dropped(self):
        with supervised() as s:
            spawn(s, "big", ["/bin/bash", "-c", "head -c 10485760 /dev/zero | tr '\\0' x; echo -n END >&2"],
                  buffer_bytes=1 << 20)
            done = s.client.request("wait", id="big", timeout_ms=30000)
            self.assertFalse(done["data"]["running"], done)
            self.assertEqual(done["data"]["stdout"], {"bytes": 10 << 20, "held": 1 << 20, "dropped": 9 << 20})
            a = attachment(s, "big").read()
            self.assertEqual(a.events[0]["stdout"], {"from": 9 << 20, "dropped": 9 << 20})
            self.assertEqual(bytes(a.out[1]), b"x" * (1 << 20))
            self.assertEqual(bytes(a.out[2]), b"END")
            # From where an earlier attachment stopped: only what it missed, nothing dropped.
            b = attachment(s, "big", since=[(10 << 20) - 5, 0]).read()
            self.assertEqual(b.events[0]["stdout"], {"from": (10 << 20) - 5, "dropped": 0})
            self.assertEqual(bytes(b.out[1]), b"xxxxx")

    def test_an_attached_reader_loses_nothing_however_slow(self):
        total = 40 << 20
        with supervised() as s:
            spawn(s, "flood", ["/bin/bash", "-c", f"head -c {total} /dev/urandom | tee >(sha256sum >&2)"],
                  buffer_bytes=256 << 10)
            a = attachment(s, "flood")
            a.read(lambda a: len(a.out[1]) >= 1 << 20)
            # The reader stops: the process waits on its pipe, a ring (and socket buffers) ahead.
            poll_until(lambda: stalled(s, "flood"), 30, "the process to wait for its reader")
            record = next(p for p in s.client.request("processes")["data"]["processes"] if p["id"] == "flood")
            self.assertTrue(record["running"])
            self.assertLess(record["stdout"]["bytes"], total // 2, record)
            a.read(timeout=120)
            import hashlib
            self.assertEqual(len(a.out[1]), total)
            self.assertEqual(a.out[2].decode().split()[0], hashlib.sha256(a.out[1]).hexdigest())
            self.assertEqual(a.exit()["code"], 0)

    def test_output_waiting_for_a_stalled_reader_when_the_process_exits_is_kept(self):
        # Outputs about as large as the attachment's socket buffer, a 64 KiB ring and a pipe
        # together: the process writes its last bytes into the pipe and exits while the reader
        # reads nothing for longer than the supervisor waits for a pipe's end after an exit.
        with supervised() as s:
            for kib in (256, 320, 384):
                name = f"burst{kib}"
                spawn(s, name, ["/bin/bash", "-c", f"head -c {kib * 1024} /dev/zero | tr '\\0' z"],
                      buffer_bytes=64 << 10)
                a = attachment(s, name)
                a.read(lambda a: a.events)
                poll_until(lambda: stalled(s, name), 30, "the output to wait for the reader")
                time.sleep(2.5)  # longer than the 1 s the supervisor gives a pipe after the exit
                a.read(timeout=60)
                self.assertEqual(len(a.out[1]), kib * 1024, kib)
                self.assertEqual(a.exit()["code"], 0)

    def test_a_terminal_resizes_and_interrupts_the_foreground_job_only(self):
        with supervised() as s:
            spawn(s, "tty", ["/bin/bash", "--norc", "--noprofile", "-i"],
                  env={"TERM": "xterm", "PATH": "/usr/bin:/bin"}, pty={"cols": 80, "rows": 24})
            a = attachment(s, "tty")
            a.send(STDIN, b"tput cols; tty\n")
            a.read(lambda a: b"\r80\r\n/dev/pts/" in a.out[1])
            a.control(op="resize", cols=132, rows=40)
            a.send(STDIN, b"tput cols\n")
            a.read(lambda a: b"\r132\r\n" in a.out[1])
            a.send(STDIN, b"sleep 100\n")
            poll_until(lambda: host_processes_with("sleep 100"), 30, "sleep to run")
            a.send(STDIN, b"\x03")  # Ctrl-C: the line discipline interrupts the foreground job
            a.send(STDIN, b"echo status-$? still-$((20+22))\n")  # and the shell goes on
            a.read(lambda a: b"status-130 still-42" in a.out[1])  # sleep ended by SIGINT (128 + 2)
            self.assertFalse(host_processes_with("sleep 100"))
            a.control(op="close_stdin")  # end-of-file at the prompt: bash exits
            a.read()
            self.assertEqual(a.exit()["code"], 0, a.events)

    def test_processes_outlive_the_gateway_connection(self):
        with supervised() as s:
            spawn(s, "long", ["/bin/bash", "-c", "echo before; read x; echo got $x"], stdin=True)
            s.client.close()
            s.client = base.control_client(s.control)
            ready = s.client.receive()
            self.assertIn("long", ready["children"])
            listed = s.client.request("processes")["data"]["processes"]
            self.assertEqual([p["id"] for p in listed], ["long"])
            self.assertTrue(s.client.request("write_stdin", id="long", data="aGkK", close=True)["ok"])  # "hi\n"
            a = attachment(s, "long").read()
            self.assertEqual(bytes(a.out[1]), b"before\ngot hi\n")

    def test_bad_requests_are_refused_and_change_nothing(self):
        with supervised() as s:
            spawn(s, "quiet", ["/bin/sleep", "100"])
            for op, fields, text in (("attach", {"id": "nope"}, "no process named"),
                                     ("write_stdin", {"id": "quiet", "data": "eA=="}, "without stdin"),
                                     ("resize", {"id": "quiet", "cols": 80, "rows": 24}, "no terminal"),
                                     ("spawn", {"id": "quiet", "argv": ["/bin/true"], "streams": {}}, "running"),
                                     ("spawn", {"id": "t", "argv": ["/bin/true"],
                                                "streams": {"pty": {"cols": 0, "rows": 5}}}, "1 to 10000"),
                                     ("spawn", {"id": "t", "argv": ["/bin/true"],
                                                "streams": {"buffer_bytes": 1 << 30}}, "64 MiB")):
                r = s.client.request(op, **fields)
                self.assertFalse(r["ok"], (op, r))
                self.assertIn(text, r["error"], (op, r))
            self.assertTrue(s.client.request("forget", id="quiet")["ok"])
            self.assertEqual(s.client.request("processes")["data"]["processes"], [])


class files(unittest.TestCase):
    """The file ops, done by the supervisor as the sandbox user."""

    def fd_content(self, s, reply):
        fd = copy_fd(s.ready["pid"], reply["data"]["fd"])
        self.assertTrue(s.client.request("release_fd", fd=reply["data"]["fd"])["ok"])
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def test_read_list_stat_write_rename_delete_as_the_sandbox_user(self):
        with supervised() as s:
            r = s.client.request("file_open", path="/etc/os-release")
            self.assertTrue(r["ok"], r)
            self.assertIn(b"ID=debian", self.fd_content(s, r))
            r = s.client.request("file_open", path="/proc/1/environ")  # the supervisor's: not the user's to read
            self.assertFalse(r["ok"])
            self.assertEqual(r["data"]["errno"], 13, r)  # EACCES: the sandbox user cannot, so neither can the API
            r = s.client.request("file_create", path="/usr/bin/planted")
            self.assertIn(r["data"]["errno"], (13, 30), r)  # EACCES or EROFS
            r = s.client.request("file_create", path="notes/a.txt")  # relative: in /workspace, parents made
            self.assertTrue(r["ok"], r)
            fd = copy_fd(s.ready["pid"], r["data"]["fd"])
            os.write(fd, b"one\ntwo\nthree\n")
            os.close(fd)
            s.client.request("release_fd", fd=r["data"]["fd"])
            self.assertTrue(s.client.request("file_commit", temp=r["data"]["temp"], path="notes/a.txt")["ok"])
            st = s.client.request("file_stat", path="/workspace/notes/a.txt")["data"]
            self.assertEqual((st["type"], st["size"], st["uid"]), ("file", 14, 1000), st)
            lines = s.client.request("file_lines", path="/workspace/notes/a.txt", start=2, end=3)
            self.assertEqual(self.fd_content(s, lines), b"two\nthree\n")
            listing = json.loads(self.fd_content(s, s.client.request("file_list", path="/workspace/notes")))
            self.assertEqual([(e["name"], e["type"]) for e in listing], [("a.txt", "file")])
            self.assertFalse(s.client.request("file_rename", **{"from": "notes/a.txt", "to": "/etc/x"})["ok"])
            r = s.client.request("file_rename", **{"from": "notes/a.txt", "to": "/tmp/b.txt"})
            self.assertEqual(r["data"]["errno"], 18, r)  # EXDEV: another filesystem; nothing moved
            self.assertTrue(s.client.request("file_rename", **{"from": "notes/a.txt", "to": "b.txt"})["ok"])
            self.assertEqual(s.client.request("file_stat", path="notes/a.txt")["data"]["errno"], 2)
            self.assertTrue(s.client.request("file_delete", path="/workspace/b.txt")["ok"])
            self.assertTrue(s.client.request("file_delete", path="/workspace/notes")["ok"])  # empty now
            # A symlink the sandbox planted is followed inside the sandbox's own root only.
            c = s.client.request("spawn", id="ln", argv=["/bin/ln", "-s", "/", "/workspace/root"], cwd="/workspace")
            self.assertTrue(c["ok"], c)
            s.client.wait_event("exit", "ln")
            st = s.client.request("file_stat", path="/workspace/root", follow=False)["data"]
            self.assertEqual((st["type"], st["target"]), ("symlink", "/"))
            listing = json.loads(self.fd_content(s, s.client.request("file_list", path="/workspace/root/")))
            self.assertIn("workspace", [e["name"] for e in listing])  # the sandbox's /, not the host's


def poll_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def stalled(s, pid_name):
    """True when the process's output count stays put for a moment."""
    def count():
        return next(p for p in s.client.request("processes")["data"]["processes"]
                    if p["id"] == pid_name)["stdout"]["bytes"]
    first = count()
    time.sleep(0.3)
    return count() == first


if __name__ == "__main__":
    base.SANDBOX = os.path.abspath(sys.argv[1])
    base.POLICY = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
