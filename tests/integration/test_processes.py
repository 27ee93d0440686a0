"""Processes (docs/api.md "Processes") through a real gateway whose sandboxes
run them: stdin and output over the attach WebSocket, what a late attachment
gets from the supervisor's ring, terminals (a resize that tput sees, Python's
REPL, Ctrl-C), the REST calls and their refusals, 1 GiB through cat with the
gateway's memory bounded, a process that outlives a gateway killed with
SIGKILL, and one that ends with its sandbox. Needs root (as CI runs)."""

import hashlib
import json
import os
import threading
import time
import unittest
import urllib.parse

import websocket  # python3-websocket (websocket-client)
from procfs import rss_kib
from sandgate_fixture import Gateway, GatewayTestCase, remove_state_dir, wait_until

STDOUT, STDERR = 1, 2


class ProcessSocket:
    """A client of /api/sandboxes/{id}/processes/{pid}/attach."""

    def __init__(self, gw, sandbox_id, process_id, since=None, timeout=30):
        query = "?" + urllib.parse.urlencode(since) if since else ""
        url = f"{gw.ws_base}api/sandboxes/{sandbox_id}/processes/{process_id}/attach{query}"
        self.ws = websocket.create_connection(url, timeout=timeout, header=[f"Authorization: token {gw.token}"])
        self.out = {STDOUT: bytearray(), STDERR: bytearray()}
        self.events = []
        self.closed = None  # (code, reason) once the gateway closed

    def receive(self):
        opcode, data = self.ws.recv_data()
        if opcode == websocket.ABNF.OPCODE_BINARY:
            self.out[data[0]].extend(data[1:])
        elif opcode == websocket.ABNF.OPCODE_TEXT:
            self.events.append(json.loads(data))
        elif opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            self.closed = (code, data[2:].decode(errors="replace"))

    def read_until(self, done, timeout=60):
        deadline = time.time() + timeout
        while not done(self):
            if self.closed:
                raise AssertionError(f"closed {self.closed}; got {bytes(self.out[STDOUT])[-300:]!r} {self.events}")
            if time.time() > deadline:
                raise AssertionError(f"not within {timeout} s; got {bytes(self.out[STDOUT])[-300:]!r} {self.events}")
            self.receive()
        return self

    def read_to_end(self, timeout=120):
        return self.read_until(lambda s: s.closed, timeout) if not self.closed else self

    def stdin(self, data):
        self.ws.send_binary(b"\0" + data)

    def control(self, **message):
        self.ws.send(json.dumps(message))

    def event(self, kind):
        return next((e for e in self.events if e["type"] == kind), None)

    def close(self):
        self.ws.close()


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class Processes(GatewayTestCase):
    sandboxed = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.gw.create_sandbox()

    def start(self, status=201, sid=None, **body):
        r = self.gw.request("POST", f"api/sandboxes/{sid or self.sid}/processes", body, timeout=60)
        self.assertEqual(r.status, status, r)
        return r.json()

    def path(self, pid, rest=""):
        return f"api/sandboxes/{self.sid}/processes/{pid}{rest}"

    def attach(self, pid, sid=None, **since):
        ps = ProcessSocket(self.gw, sid or self.sid, pid, since=since)
        self.addCleanup(ps.close)
        return ps

    def test_stdin_lines_come_back_over_the_websocket(self):
        p = self.start(cmd=["python3", "-u", "-c", "import sys\nfor l in sys.stdin: print('echo', l.strip())"],
                       stdin=True)
        self.assertEqual((p["status"], p["stdin"], p["pty"], p["cmd"]), ("running", True, None, None), p)
        ps = self.attach(p["id"])
        ps.read_until(lambda s: s.event("attached"))
        self.assertEqual(ps.event("attached")["stdout"], {"from": 0, "dropped": 0})
        for word in ("alpha", "beta", "γάμμα"):
            ps.stdin(f"{word}\n".encode())
            ps.read_until(lambda s: f"echo {word}\n".encode() in s.out[STDOUT])
        ps.control(type="close_stdin")
        ps.read_to_end()
        self.assertEqual(ps.closed[0], 1000, ps.closed)
        self.assertEqual(ps.event("exit")["exit_code"], 0)
        done = self.gw.request("GET", self.path(p["id"], "/wait?timeout_s=30")).json()
        self.assertEqual((done["status"], done["exit_code"]), ("exited", 0), done)

    def test_a_late_attachment_gets_the_tail_and_the_dropped_count(self):
        p = self.start(cmd="head -c 10485760 /dev/zero | tr '\\0' y; echo fin >&2", buffer_bytes=1 << 20)
        done = self.gw.request("GET", self.path(p["id"], "/wait?timeout_s=60")).json()
        self.assertEqual(done["stdout"], {"bytes": 10 << 20, "held": 1 << 20, "dropped": 9 << 20}, done)
        ps = self.attach(p["id"]).read_to_end()
        self.assertEqual(ps.event("attached")["stdout"], {"from": 9 << 20, "dropped": 9 << 20})
        self.assertEqual(bytes(ps.out[STDOUT]), b"y" * (1 << 20))
        self.assertEqual(bytes(ps.out[STDERR]), b"fin\n")
        self.assertEqual(ps.event("exit")["stdout_bytes"], 10 << 20)
        # Resuming where a client stopped: only what it had not, nothing dropped.
        again = self.attach(p["id"], since_stdout=(10 << 20) - 3, since_stderr=4).read_to_end()
        self.assertEqual((bytes(again.out[STDOUT]), bytes(again.out[STDERR])), (b"yyy", b""))
        self.assertEqual(again.event("attached")["stdout"]["dropped"], 0)

    def test_a_terminal(self):
        p = self.start(cmd=["bash", "--norc", "--noprofile", "-i"], pty={"cols": 80, "rows": 24})
        self.assertEqual((p["pty"], p["stdin"]), ({"cols": 80, "rows": 24}, True))
        ps = self.attach(p["id"])
        ps.stdin(b"tput cols\n")
        ps.read_until(lambda s: b"\r80\r\n" in s.out[STDOUT])
        ps.control(type="resize", cols=132, rows=40)
        ps.stdin(b"tput cols; tput lines\n")
        ps.read_until(lambda s: b"\r132\r\n40\r\n" in s.out[STDOUT])
        self.assertEqual(self.gw.request("POST", self.path(p["id"], "/resize"), {"cols": 100, "rows": 30}).status,
                         204)
        self.assertEqual(self.gw.request("GET", self.path(p["id"])).json()["pty"], {"cols": 100, "rows": 30})
        # Python's REPL in the terminal, then Ctrl-C stopping a foreground sleep while the shell stays.
        ps.stdin(b"python3 -q\n")
        ps.read_until(lambda s: s.out[STDOUT].endswith(b">>> "))
        ps.stdin(b"1+1\n")
        ps.read_until(lambda s: b"\r\n2\r\n>>> " in s.out[STDOUT])
        ps.stdin(b"exit()\n")
        ps.stdin(b"sleep 100\n")
        wait_until(lambda: "sleep 100" in self.ps_in_sandbox(), 30, "sleep to run")
        ps.stdin(b"\x03")  # Ctrl-C, as a keyboard sends it: the terminal interrupts the foreground job
        ps.stdin(b"echo status-$? alive-$((6*7))\n")
        ps.read_until(lambda s: b"status-130 alive-42" in s.out[STDOUT])
        self.assertNotIn("sleep 100", self.ps_in_sandbox())
        ps.control(type="close_stdin")  # end-of-file at the prompt
        ps.read_to_end()
        self.assertEqual(ps.event("exit")["exit_code"], 0)

    def ps_in_sandbox(self):
        r = self.gw.request("POST", f"api/sandboxes/{self.sid}/commands", {"cmd": "ps -eo args", "timeout_s": 30})
        self.assertEqual(r.status, 200, r)
        return r.json()["stdout"]

    def test_rest_signal_stdin_wait_list_and_delete(self):
        p = self.start(cmd="trap 'echo got-term; exit 7' TERM; echo ready; while read l; do echo \"<$l>\"; done",
                       stdin=True)
        self.assertEqual(p["cmd"], "trap 'echo got-term; exit 7' TERM; echo ready; while read l; do echo \"<$l>\"; done")
        self.assertEqual(self.gw.request("POST", self.path(p["id"], "/stdin"), raw=b"one\ntwo\n").status, 204)
        listed = self.gw.request("GET", f"api/sandboxes/{self.sid}/processes").json()
        self.assertIn(p["id"], [x["id"] for x in listed])
        waited = self.gw.request("GET", self.path(p["id"], "/wait?timeout_s=0.2")).json()
        self.assertEqual(waited["status"], "running")
        wait_until(lambda: self.gw.request("GET", self.path(p["id"])).json()["stdout"]["bytes"] >= 16, 30,
                   "the lines to be echoed")
        self.assertEqual(self.gw.request("POST", self.path(p["id"], "/signal"), {"signal": "TERM"}).status, 204)
        done = self.gw.request("GET", self.path(p["id"], "/wait?timeout_s=30")).json()
        self.assertEqual((done["status"], done["exit_code"], done["signal"]), ("exited", 7, None), done)
        ps = self.attach(p["id"]).read_to_end()
        self.assertEqual(bytes(ps.out[STDOUT]), b"ready\n<one>\n<two>\ngot-term\n")
        self.assertEqual(self.gw.request("DELETE", self.path(p["id"])).status, 204)
        self.assertError(self.gw.request("GET", self.path(p["id"])), 404)

    def test_bad_requests_get_clear_errors_and_change_nothing(self):
        quiet = self.start(cmd=["sleep", "300"])
        self.addCleanup(self.gw.request, "DELETE", self.path(quiet["id"]))
        bad_starts = [({}, "cmd"), ({"cmd": ""}, "cmd"), ({"cmd": ["a\0b"]}, "NUL"), ({"cmd": "x", "pty": {"cols": 0}}, "1 to 10000"),
                      ({"cmd": "x", "pty": {"cols": 100000, "rows": 5}}, "1 to 10000"),
                      ({"cmd": "x", "buffer_bytes": 1 << 40}, "buffer_bytes"), ({"cmd": "x", "timeout_s": -1}, "timeout_s"),
                      ({"cmd": "x", "cwd": "a\0b"}, "NUL"), ({"cmd": "x", "shell": True}, "Unknown field")]
        for body, text in bad_starts:
            r = self.gw.request("POST", f"api/sandboxes/{self.sid}/processes", body)
            self.assertIn(text, self.assertError(r, 400)["message"], body)
        r = self.gw.request("POST", f"api/sandboxes/{self.sid}/processes", {"cmd": ["/nonexistent"]})
        self.assertIn("could not start", self.assertError(r, 409)["message"])
        for path, status in ((self.path("p0123456789abcdef"), 404), (self.path("nonsense"), 404),
                             (self.path("p0123456789abcdef", "/wait"), 404)):
            self.assertError(self.gw.request("GET", path), status)
        for body in ({"signal": "NOPE"}, {"signal": 0}, {"signal": 99}, {}):
            self.assertError(self.gw.request("POST", self.path(quiet["id"], "/signal"), body), 400)
        for body in ({"cols": 0, "rows": 10}, {"cols": 100000, "rows": 10}, {"cols": "80", "rows": 24}):
            self.assertError(self.gw.request("POST", self.path(quiet["id"], "/resize"), body), 400)
        # A resize of a process without a terminal, stdin to one started without it: 409, named.
        self.assertIn("no terminal", self.assertError(
            self.gw.request("POST", self.path(quiet["id"], "/resize"), {"cols": 80, "rows": 24}), 409)["message"])
        self.assertIn("without stdin", self.assertError(
            self.gw.request("POST", self.path(quiet["id"], "/stdin"), raw=b"x"), 409)["message"])
        # Garbage on the WebSocket gets an error message; the process and the socket go on.
        ps = self.attach(quiet["id"])
        ps.ws.send_binary(b"\x07junk")
        ps.ws.send("not json")
        ps.control(type="signal", signal="NOPE")
        ps.read_until(lambda s: len([e for e in s.events if e["type"] == "error"]) == 3)
        self.assertEqual(self.gw.request("GET", self.path(quiet["id"])).json()["status"], "running")
        # The attach endpoint without an upgrade.
        self.assertError(self.gw.request("GET", self.path(quiet["id"], "/attach")), 400)

    def test_a_gigabyte_through_cat_with_the_gateways_memory_bounded(self):
        total = 1 << 30
        p = self.start(cmd=["cat"], stdin=True)
        ps = self.attach(p["id"])
        before = rss_kib(self.gw.pid)
        chunk = os.urandom(1 << 20)
        digest = hashlib.sha256()
        peak = [before]
        sent = threading.Event()

        def feed():
            for i in range(total // len(chunk)):
                ps.stdin(chunk)
                digest.update(chunk)
                if i % 64 == 0:
                    peak[0] = max(peak[0], rss_kib(self.gw.pid))
            ps.control(type="close_stdin")
            sent.set()

        writer = threading.Thread(target=feed)
        writer.start()
        received = hashlib.sha256()
        count = 0
        while not ps.closed:
            opcode, data = ps.ws.recv_data()
            if opcode == websocket.ABNF.OPCODE_BINARY:
                received.update(data[1:])
                count += len(data) - 1
                if count % (64 << 20) < len(data):
                    peak[0] = max(peak[0], rss_kib(self.gw.pid))
            elif opcode == websocket.ABNF.OPCODE_TEXT:
                ps.events.append(json.loads(data))
            else:
                ps.closed = True
        writer.join(60)
        self.assertTrue(sent.is_set())
        self.assertEqual(count, total)
        self.assertEqual(received.hexdigest(), digest.hexdigest())
        self.assertEqual(ps.event("exit")["exit_code"], 0)
        # The gateway relays; it never holds more than its queues (4 MiB each way and a socket's worth).
        self.assertLess(peak[0] - before, 48 * 1024, f"RSS grew from {before} KiB to {peak[0]} KiB")


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class ProcessLifetimes(unittest.TestCase):
    def gateway(self, **kw):
        gw = Gateway(name=self.id().rsplit(".", 1)[-1], sandboxed=True, keep_kernels=True, **kw)
        if "state_dir" not in kw:
            gw.owns_state = False
            self.addCleanup(remove_state_dir, gw.state_dir)
        self.addCleanup(lambda: gw.stopped or gw.crash())
        return gw

    def test_a_process_outlives_a_gateway_killed_with_sigkill(self):
        gw = self.gateway()
        sid = gw.request("POST", "api/sandboxes", {"ttl_s": 600}, timeout=60).json()["id"]
        code = "import sys, time\nfor i in range(1000000):\n    print('tick', i, flush=True); time.sleep(0.01)"
        p = gw.request("POST", f"api/sandboxes/{sid}/processes", {"cmd": ["python3", "-c", code]}).json()
        ps = ProcessSocket(gw, sid, p["id"])
        ps.read_until(lambda s: b"tick 5\n" in s.out[STDOUT])
        seen = len(ps.out[STDOUT])
        gw.crash()
        second = self.gateway(state_dir=gw.state_dir, token=gw.token)
        wait_until(lambda: second.request("GET", f"api/sandboxes/{sid}").status == 200, 60, "the sandbox back")
        listed = second.request("GET", f"api/sandboxes/{sid}/processes").json()
        self.assertEqual([(x["id"], x["status"]) for x in listed], [(p["id"], "running")])
        again = ProcessSocket(second, sid, p["id"], since={"since_stdout": seen})
        again.read_until(lambda s: s.out[STDOUT].count(b"\n") >= 20)
        # It went on counting while no gateway ran, and nothing between was lost.
        numbers = [int(line.split()[1]) for line in bytes(again.out[STDOUT]).split(b"\n")[:-1]]
        self.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))))
        self.assertEqual(again.event("attached")["stdout"], {"from": seen, "dropped": 0})
        again.close()
        ps.ws.close()

    def test_a_process_running_when_its_sandbox_ends_is_gone(self):
        gw = self.gateway()
        sid = gw.request("POST", "api/sandboxes", {"ttl_s": 600}, timeout=60).json()["id"]
        marker = "sg-proc-" + os.urandom(4).hex()
        p = gw.request("POST", f"api/sandboxes/{sid}/processes",
                       {"cmd": f"exec -a {marker} sleep 1000"}).json()
        ps = ProcessSocket(gw, sid, p["id"])
        ps.read_until(lambda s: s.event("attached"))
        wait_until(lambda: any(marker in line for line in os.popen("ps -eo args").read().splitlines()), 30,
                   "the process to run")
        self.assertEqual(gw.request("DELETE", f"api/sandboxes/{sid}").status, 204)
        ps.read_to_end(timeout=30)
        self.assertIsNotNone(ps.closed)
        wait_until(lambda: not any(marker in line for line in os.popen("ps -eo args").read().splitlines()), 30,
                   "the process to be gone")
        self.assertEqual(gw.request("GET", f"api/sandboxes/{sid}/processes").status, 404)


if __name__ == "__main__":
    unittest.main()
