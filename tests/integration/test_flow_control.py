"""Flow control between a kernel and its WebSocket clients.

A client that falls behind holds the output of a kernel that can wait
(sandgate-python: its iopub blocks instead of dropping) until it catches up,
so the gateway does not queue a whole stream in memory; the client still
gets every byte, in order. A client that stops reading altogether is closed
after --client-stall-timeout-s, and the kernel's other clients go on.

The other way: a client that sends faster than its kernel reads is not read
either until the kernel has taken what it sent; every request gets its
reply, in order, and the gateway holds no backlog.
"""

import threading
import unittest

from sandgate_fixture import (Closed, Deadline, GatewayTestCase, has_sandgate_python, rss_kib, stream_text,
                              wait_until)

LINES = 512  # 32 MiB of output, one 64 KiB line per write
LINE = 65536
CODE = ("import sys\n"
        f"for i in range({LINES}):\n"
        f"    sys.stdout.write('%06d' % i + 'x' * {LINE - 7} + '\\n')\n")
EXPECTED = "".join("%06d" % i + "x" * (LINE - 7) + "\n" for i in range(LINES))


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except FileNotFoundError:
            pass
    return total


def execute_request(ks, code):
    return ks.send("shell", "execute_request", {
        "code": code, "silent": False, "store_history": False, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": False})


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not built")
class ALateReader(GatewayTestCase):
    gateway_args = ("--client-stall-timeout-s", "60")

    def test_holds_the_kernel_back_and_gets_everything(self):
        kid = self.new_kernel("python")
        ks = self.connect(kid, v1=True, nudge=True)
        holds = self.metric("sandgate_output_holds_total")
        rss_before = rss_kib(self.gw.proc.pid)

        msg_id = execute_request(ks, CODE)  # and read nothing for now
        wait_until(lambda: self.metric("sandgate_output_holds_total") > holds, 60,
                   "the gateway holding the kernel's output back")
        # The kernel is held, not just queued for: it stops working until
        # the client reads (its CPU time stays put).
        pids = self.gw.kernel_pids()
        self.assertTrue(pids)
        last = {"ticks": cpu_ticks(pids), "same": 0}

        def kernel_waits():
            now = cpu_ticks(pids)
            last["same"] = last["same"] + 1 if now == last["ticks"] else 0
            last["ticks"] = now
            return last["same"] >= 10  # unchanged for ten looks, half a second apart

        wait_until(kernel_waits, 30, "the held kernel to stop using CPU", interval=0.5)
        grown_mib = (rss_kib(self.gw.proc.pid) - rss_before) / 1024
        self.assertLess(grown_mib, 24, f"the gateway holds {grown_mib:.0f} MiB for a client that is behind")

        reply, iopub = ks.finish(msg_id, timeout=180)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub, "stdout"), EXPECTED)


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not built")
class AStalledClient(GatewayTestCase):
    gateway_args = ("--client-stall-timeout-s", "2")

    def test_is_closed_and_the_other_client_gets_everything(self):
        kid = self.new_kernel("python")
        reader = self.connect(kid, v1=True, nudge=True)
        stalled = self.connect(kid, v1=True)  # never reads while the cell runs
        too_slow = self.metric("sandgate_clients_too_slow_total")

        reply, iopub = reader.execute(CODE, timeout=180)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub, "stdout"), EXPECTED)
        self.assertEqual(self.metric("sandgate_clients_too_slow_total"), too_slow + 1)

        # What the stalled client reads now ends in its close: 1008, or a
        # dropped connection when not even the close frame could go out.
        d = Deadline(60)
        while True:
            try:
                stalled.recv(d.left("the stalled client's close"))
            except Closed as c:
                self.assertIn(c.code, (1008, None), c)
                break
        self.assertTrue(any(e.get("event") == "websocket_too_slow" for e in self.gw.log_events()))

        # The kernel and the gateway go on.
        reply, iopub = reader.execute("6 * 7")
        self.assertEqual(reply.content["status"], "ok", reply.content)


class Sender(threading.Thread):
    """Sends `messages()` (channel, msg_type, content) on `ks` while the test
    reads; the msg_ids in order are in `ids`."""

    def __init__(self, ks, messages):
        super().__init__(daemon=True)
        self.ks = ks
        self.messages = messages
        self.ids = []
        self.error = None

    def run(self):
        try:
            for channel, msg_type, content in self.messages:
                self.ids.append(self.ks.send(channel, msg_type, content))
        except Exception as e:  # reported by the test that joins
            self.error = e

    def finish(self, seconds):
        self.join(seconds)
        if self.is_alive():
            raise AssertionError(f"the client could not send everything within {seconds} s")
        if self.error:
            raise self.error


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not built")
class AFastSender(GatewayTestCase):
    REQUESTS = 20000
    PAD = "p" * 8192  # 160 MiB in all: the gateway would notice holding them

    def test_every_pipelined_request_is_answered_in_order(self):
        kid = self.new_kernel("python")
        other = self.connect(self.new_kernel("python"), nudge=True)
        ks = self.connect(kid, v1=True, nudge=True, timeout=120)
        waits = self.metric("sandgate_input_waits_total")
        rss_before = rss_kib(self.gw.proc.pid)
        peak = {"kib": rss_before}

        busy = execute_request(ks, "import time; time.sleep(2)")  # the kernel reads nothing meanwhile
        sender = Sender(ks, (("shell", "kernel_info_request", {"pad": self.PAD}) for _ in range(self.REQUESTS)))
        sender.start()
        replies = []
        other_reply = None
        d = Deadline(600)
        while len(replies) < self.REQUESTS:
            m = ks.recv(d.left(f"reply {len(replies) + 1} of {self.REQUESTS}"))
            if m.channel == "shell" and m.msg_type == "kernel_info_reply" and m.parent_id != busy:
                self.assertEqual(m.content.get("status"), "ok", m.content)
                replies.append(m.parent_id)
            if len(replies) % 500 == 1:
                peak["kib"] = max(peak["kib"], rss_kib(self.gw.proc.pid))
            if other_reply is None and len(replies) == 100:
                # While the first kernel is thousands of requests behind, the
                # other kernel answers as ever.
                other_reply, _ = other.execute("6 * 7", timeout=60)
        sender.finish(60)
        # The nudge's replies went to the same socket before: only these count.
        self.assertEqual(replies, [i for i in sender.ids], "replies missing or out of order")
        self.assertEqual(other_reply.content["status"], "ok", other_reply.content)
        self.assertGreater(self.metric("sandgate_input_waits_total"), waits,
                           "the client was never made to wait: the test did not get ahead of the kernel")
        grown_mib = (peak["kib"] - rss_before) / 1024
        self.assertLess(grown_mib, 48, f"the gateway held {grown_mib:.0f} MiB of a client's requests")
        self.assertFalse([e for e in self.gw.log_events() if e.get("event") == "kernel_send_dropped"])

        reply, iopub = ks.execute("print('still here')")
        self.assertEqual(stream_text(iopub, "stdout"), "still here\n")

    def test_comm_opens_and_closes_sent_at_once_all_reach_the_kernel(self):
        kid = self.new_kernel("python")
        ks = self.connect(kid, nudge=True, timeout=120)
        reply, _ = ks.execute("import comm\nopened, closed = [], []\n"
                              "def target(c, msg):\n"
                              "    opened.append(c.comm_id)\n"
                              "    c.on_close(lambda m: closed.append(c.comm_id))\n"
                              "comm.get_comm_manager().register_target('counted', target)\n")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        pairs = 5000

        def messages():
            for i in range(pairs):
                comm_id = "c%05d" % i
                yield "shell", "comm_open", {"comm_id": comm_id, "target_name": "counted", "data": {}}
                yield "shell", "comm_close", {"comm_id": comm_id, "data": {}}
            yield "shell", "execute_request", {"code": "print(len(opened), len(closed))", "silent": False,
                                               "store_history": False, "user_expressions": {},
                                               "allow_stdin": False, "stop_on_error": False}

        sender = Sender(ks, messages())
        sender.start()
        # Read while it sends, as a browser does: the one execute_reply, then
        # that request's idle status.
        # iopub and shell are separate sockets: the cell's output may come
        # before or after its reply, so iopub is kept by parent.
        reply, iopub_by_parent, idle = None, {}, set()
        d = Deadline(300)
        while reply is None or reply.parent_id not in idle:
            m = ks.recv(d.left("the last request's reply and idle status"))
            if m.channel == "shell" and m.msg_type == "execute_reply":
                reply = m
            if m.channel == "iopub":
                iopub_by_parent.setdefault(m.parent_id, []).append(m)
                if m.msg_type == "status" and m.content.get("execution_state") == "idle":
                    idle.add(m.parent_id)
        iopub = iopub_by_parent[reply.parent_id]
        sender.finish(60)
        self.assertEqual(reply.parent_id, sender.ids[-1])
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub, "stdout"), f"{pairs} {pairs}\n")


if __name__ == "__main__":
    unittest.main()
