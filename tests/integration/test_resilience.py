"""Failures around the gateway: a kernel killed mid-execution, a client
that vanishes mid-output, malformed WebSocket frames, a storm of
concurrent creates against --max-kernels."""

import concurrent.futures
import json
import os
import signal
import struct
import threading
import unittest

from sandgate_fixture import (Deadline, Gateway, GatewayTestCase, encode_v1, result_text,
                              stream_text, wait_until)

PRINT_FOREVER = "import time\nfor i in range(100000):\n    print(i, flush=True)\n    time.sleep(0.02)\n"


class KernelDeath(GatewayTestCase):
    def test_sigkilled_kernel_restarts_and_clients_are_told(self):
        kid = self.new_kernel()
        ks = self.connect(kid)
        watcher = self.connect(kid, v1=True)
        _, iopub = ks.execute("import os; os.getpid()")
        pid = int(result_text(iopub))
        self.assertIn(pid, self.gw.kernel_pids())
        msg_id = ks.send("shell", "execute_request", {
            "code": PRINT_FOREVER, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30, "the first output")
        os.kill(pid, signal.SIGKILL)
        for client in (ks, watcher):
            st, _ = client.wait_for(lambda m: m.msg_type == "status"
                                    and m.content["execution_state"] == "restarting", 20, "status restarting")
            self.assertEqual(st.channel, "iopub")
            self.assertEqual(st.content.get("reason"), "signal 9")
        wait_until(lambda: not os.path.exists(f"/proc/{pid}/cmdline") or pid not in self.gw.kernel_pids(),
                   10, "the killed kernel to be reaped")
        # The same kernel id comes back usable, with a new process.
        # Sent while the kernel restarts: the gateway holds it until the new
        # kernel is ready.
        reply, iopub = ks.execute("import os; os.getpid()", timeout=60)
        self.assertEqual(reply.content["status"], "ok")
        self.assertNotEqual(int(result_text(iopub)), pid)
        reply, iopub = watcher.execute("'still here'", timeout=30)
        self.assertEqual(result_text(iopub), "'still here'")
        model = self.gw.request("GET", f"api/kernels/{kid}").json()
        self.assertEqual(model["id"], kid)
        self.assertEqual(model["execution_state"], "idle")
        # The cell that was running: its record keeps the output so far and names the cause.
        record = self.gw.request("GET", f"api/kernels/{kid}/executions/{msg_id}").json()
        self.assertEqual((record["status"], record["kernel_restarted"]), ("error", True), record)
        self.assertIn("signal 9", record["error"]["evalue"])
        self.assertTrue(record["stdout"].startswith("0\n"), record["stdout"][:100])


class InheritedDescriptors(GatewayTestCase):
    # A kernel started while clients are connected holds none of the
    # gateway's sockets: it could otherwise accept the gateway's connections,
    # or keep a client's connection open after the gateway ended.
    def test_kernels_hold_none_of_the_gateways_sockets(self):
        first = self.new_kernel("python")
        ks = self.connect(first, v1=True)
        ks.execute("1")
        second = self.new_kernel("python")
        other = self.connect(second)
        other.execute("2")
        self.assertGreaterEqual(len(self.gw.kernel_pids()), 2)
        self.assertEqual(self.gw.tcp_socket_holders(), {})


class VanishingClient(GatewayTestCase):
    def test_client_that_drops_mid_output(self):
        kid = self.new_kernel()
        victim = self.connect(kid)
        bystander = self.connect(kid, v1=True)
        code = "for i in range(20000):\n    print('x' * 100, i)\n"
        msg_id = victim.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        victim.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30, "output")
        victim.abort()  # TCP reset, no close handshake
        # The bystander still sees the whole run end and can work on.
        bystander.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "status"
                           and m.content["execution_state"] == "idle", 60, "the end of the big cell")
        text = stream_text([m for m in bystander.received if m.parent_id == msg_id])
        self.assertTrue(text.endswith("x" * 100 + " 19999\n"), text[-200:])
        reply, iopub = bystander.execute("'fine'")
        self.assertEqual(result_text(iopub), "'fine'")
        self.assertTrue(self.gw.alive())
        self.assertEqual(self.gw.request("GET", "api").status, 200)
        fresh = self.connect(kid)
        reply, _ = fresh.execute("1")
        self.assertEqual(reply.content["status"], "ok")


class MalformedFrames(GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kid = cls.gw.start_kernel("python3")

    def setUp(self):
        self.bystander = self.connect(self.kid)

    def assert_closed_1007(self, data, binary, v1):
        bad = self.connect(self.kid, v1=v1, nudge=False)
        bad.send_raw(data, binary)
        closed, _ = bad.wait_closed(10)
        self.assertEqual(closed.code, 1007, closed)
        self.assertTrue(closed.reason, "the close frame carries no reason")
        reply, iopub = self.bystander.execute("'ok'")
        self.assertEqual(result_text(iopub), "'ok'")
        self.assertTrue(self.gw.alive())

    def valid_legacy(self, **override):
        msg = {"channel": "shell", "header": {"msg_id": "m1", "msg_type": "kernel_info_request", "session": "s",
                                              "username": "u", "date": "", "version": "5.3"},
               "parent_header": {}, "metadata": {}, "content": {}, "buffers": []}
        msg.update(override)
        return msg

    def test_legacy_not_json(self):
        self.assert_closed_1007("this is not json", False, False)

    def test_legacy_truncated_json(self):
        self.assert_closed_1007(json.dumps(self.valid_legacy())[:-3], False, False)

    def test_legacy_without_channel(self):
        msg = self.valid_legacy()
        del msg["channel"]
        self.assert_closed_1007(json.dumps(msg), False, False)

    def test_legacy_unknown_channel(self):
        self.assert_closed_1007(json.dumps(self.valid_legacy(channel="nope")), False, False)

    def test_legacy_without_header(self):
        msg = self.valid_legacy()
        del msg["header"]
        self.assert_closed_1007(json.dumps(msg), False, False)

    def test_legacy_json_array(self):
        self.assert_closed_1007("[1, 2, 3]", False, False)

    def test_legacy_binary_with_bad_offsets(self):
        self.assert_closed_1007(struct.pack("!II", 1, 999) + b"{}", True, False)

    def test_v1_bad_first_offset(self):
        good = encode_v1("shell", ['{"msg_id":"m","msg_type":"kernel_info_request","session":"s"}', "{}", "{}",
                                   "{}"])
        bad = good[:8] + struct.pack("<Q", 12345) + good[16:]
        self.assert_closed_1007(bad, True, True)

    def test_v1_offset_past_the_end(self):
        good = encode_v1("shell", ['{"msg_id":"m","msg_type":"kernel_info_request","session":"s"}', "{}", "{}",
                                   "{}"])
        n = struct.unpack_from("<Q", good)[0]
        bad = good[:8 * n] + struct.pack("<Q", len(good) + 100) + good[8 * (n + 1):]
        self.assert_closed_1007(bad, True, True)

    def test_v1_too_few_offsets(self):
        self.assert_closed_1007(struct.pack("<QQ", 1, 16), True, True)

    def test_v1_shorter_than_the_count(self):
        self.assert_closed_1007(b"\x05\x00", True, True)

    def test_v1_header_not_json(self):
        self.assert_closed_1007(encode_v1("shell", ["{not json", "{}", "{}", "{}"]), True, True)

    def test_v1_text_frame(self):
        self.assert_closed_1007(json.dumps(self.valid_legacy()), False, True)


class CreateStorm(unittest.TestCase):
    def test_fifty_concurrent_creates_against_max_kernels_10(self):
        # Ten ipykernels starting at once on a small machine: give them time.
        gw = Gateway("--max-kernels", "10", "--kernel-start-timeout-s", "150", name="storm")
        try:
            results = [None] * 50

            def post(i):
                try:
                    r = gw.request("POST", "api/kernels", {"name": "python3"}, timeout=170)
                    results[i] = (r.status, r.json())
                except Exception as e:  # recorded: every request must be answered
                    results[i] = ("exception", repr(e))

            threads = [threading.Thread(target=post, args=(i,)) for i in range(50)]
            for t in threads:
                t.start()
            d = Deadline(180)
            for t in threads:
                t.join(max(0.0, d.remaining()))
            self.assertFalse([t for t in threads if t.is_alive()], "some POSTs were never answered")
            statuses = [r[0] for r in results]
            self.assertEqual(statuses.count(201), 10, statuses)
            self.assertEqual(statuses.count(503), 40, statuses)
            for status, body in results:
                if status == 503:
                    self.assertEqual(set(body), {"reason", "message"})
            ids = [body["id"] for status, body in results if status == 201]
            self.assertEqual(len(set(ids)), 10)
            listed = sorted(k["id"] for k in gw.request("GET", "api/kernels").json())
            self.assertEqual(listed, sorted(ids))
            self.assertEqual(len(gw.kernel_pids()), 10)

            deletes = [None] * len(ids)

            def delete(i):
                deletes[i] = gw.request("DELETE", f"api/kernels/{ids[i]}", timeout=60).status

            threads = [threading.Thread(target=delete, args=(i,)) for i in range(len(ids))]
            for t in threads:
                t.start()
            d = Deadline(90)
            for t in threads:
                t.join(max(0.0, d.remaining()))
            self.assertEqual(deletes, [204] * len(ids))
            self.assertEqual(gw.request("GET", "api/kernels").json(), [])
            # A sandbox's supervisor is killed before the 204; the processes
            # under it die as the kernel tears its pid namespace down.
            wait_until(lambda: gw.kernel_pids() == [], 10,
                       lambda: f"kernel processes outlived their DELETE: {gw.kernel_pids()}")
            # The slots are free again.
            again = gw.request("POST", "api/kernels", {"name": "python3"})
            self.assertEqual(again.status, 201, again)
        finally:
            code, _ = gw.stop()
        self.assertEqual(code, 0)


class ManyKernels(unittest.TestCase):
    def test_more_kernels_than_zeromqs_default_socket_limit(self):
        # A ZeroMQ context takes 1023 sockets unless told otherwise, and a
        # kernel needs four: the 256th kernel could not connect. Bash kernels
        # in sandboxes of their own, cheap to start.
        n = 264
        gw = Gateway("--max-kernels", str(n + 8), "--kernel-start-timeout-s", "120", sandboxed=True, name="many")
        try:
            def create(_):
                r = gw.request("POST", "api/kernels", {"name": "bash"}, timeout=150)
                return r.status, r.json()
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                created = list(pool.map(create, range(n)))
            self.assertEqual([s for s, _ in created if s != 201], [], [b for s, b in created if s != 201][:3])
            ids = [body["id"] for _, body in created]
            self.assertEqual(len(gw.request("GET", "api/kernels").json()), n)
            for kid in (ids[0], ids[-1]):
                rec = gw.request("POST", f"api/kernels/{kid}/execute", {"code": "echo $((6 * 7))"}, timeout=60).json()
                self.assertEqual((rec["status"], rec["stdout"]), ("ok", "42\n"), rec)
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                deleted = list(pool.map(lambda kid: gw.request("DELETE", f"api/kernels/{kid}", timeout=60).status, ids))
            self.assertEqual(deleted, [204] * n)
            # A sandbox's supervisor is killed before the 204; the processes
            # under it die as the kernel tears its pid namespace down.
            wait_until(lambda: gw.kernel_pids() == [], 10,
                       lambda: f"kernel processes outlived their DELETE: {gw.kernel_pids()}")
        finally:
            code, _ = gw.stop()
        self.assertEqual(code, 0)

    def test_the_open_file_limit_goes_up_to_the_hard_one_and_a_low_one_is_said(self):
        def soft_limit(gw):
            with open(f"/proc/{gw.proc.pid}/limits") as f:
                return int(next(line for line in f if line.startswith("Max open files")).split()[3])
        gw = Gateway("--max-kernels", "100", open_files=(256, 4096), name="nofile")
        try:
            self.assertEqual(soft_limit(gw), 4096)
            self.assertFalse([e for e in gw.log_events() if e.get("event") == "open_file_limit_low"])
        finally:
            gw.stop()
        # 1000 kernels need more than 4096 descriptors: the gateway says so, and how many fit.
        gw = Gateway("--max-kernels", "1000", open_files=(256, 4096), name="nofile-low")
        try:
            low = [e for e in gw.log_events() if e.get("event") == "open_file_limit_low"]
            self.assertEqual(len(low), 1, low)
            self.assertEqual(low[0]["limit"], "4096")
            self.assertLess(int(low[0]["kernels_that_fit"]), 1000)
        finally:
            gw.stop()


if __name__ == "__main__":
    unittest.main()
