"""Flow control between a kernel and its WebSocket clients.

A client that falls behind holds the output of a kernel that can wait
(sandgate-python: its iopub blocks instead of dropping) until it catches up,
so the gateway does not queue a whole stream in memory; the client still
gets every byte, in order. A client that stops reading altogether is closed
after --client-stall-timeout-s, and the kernel's other clients go on.
"""

import unittest

from sandgate_fixture import Closed, Deadline, GatewayTestCase, has_sandgate_python, stream_text, wait_until

LINES = 512  # 32 MiB of output, one 64 KiB line per write
LINE = 65536
CODE = ("import sys\n"
        f"for i in range({LINES}):\n"
        f"    sys.stdout.write('%06d' % i + 'x' * {LINE - 7} + '\\n')\n")
EXPECTED = "".join("%06d" % i + "x" * (LINE - 7) + "\n" for i in range(LINES))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


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


class FlowControlCase(GatewayTestCase):
    def metric(self, name):
        r = self.gw.request("GET", "metrics")
        self.assertEqual(r.status, 200, r)
        for line in r.body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"/metrics has no {name}")


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not built")
class ALateReader(FlowControlCase):
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
class AStalledClient(FlowControlCase):
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


if __name__ == "__main__":
    unittest.main()
