"""Every channel over the WebSocket, in both protocols (legacy JSON and
v1.kernel.websocket.jupyter.org), with ipykernel and, when built,
sandgate-python: execute, streams, results, status, stdin, control,
interrupt, restart, two clients on one kernel and session_id replay."""

import unittest
import uuid

from sandgate_fixture import Deadline, GatewayTestCase, has_sandgate_python, result_text, stream_text, wait_until


class ChannelsBase:
    kernel = "python3"
    v1 = False

    def setUp(self):
        self.kid = self.new_kernel(self.kernel)
        self.ks = self.connect(self.kid, v1=self.v1)

    def test_a_print_flood_arrives_whole_and_in_order(self):
        # A loop of print() outruns every reader on the way; nothing may be
        # dropped for it (the kernel's iopub queue, the gateway, the client).
        n = 50000
        reply, iopub = self.ks.execute(f"for i in range({n}):\n    print(i)", timeout=300)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub, "stdout"), "".join(f"{i}\n" for i in range(n)))

    def test_shell_execute_with_iopub_stream_result_and_status(self):
        reply, iopub = self.ks.execute("import sys\nprint('hello out')\nprint('hello err', file=sys.stderr)\n6 * 7")
        self.assertEqual(reply.channel, "shell")
        self.assertEqual(reply.msg_type, "execute_reply")
        self.assertEqual(reply.content["status"], "ok")
        self.assertIsInstance(reply.content["execution_count"], int)
        self.assertEqual(reply.parent_header["session"], self.ks.session)
        types = [m.msg_type for m in iopub]
        self.assertEqual(types[0], "status")
        self.assertEqual(iopub[0].content["execution_state"], "busy")
        self.assertEqual(types[-1], "status")
        self.assertIn("execute_input", types)
        self.assertEqual(stream_text(iopub, "stdout"), "hello out\n")
        self.assertEqual(stream_text(iopub, "stderr"), "hello err\n")
        self.assertEqual(result_text(iopub), "42")
        for m in iopub:
            self.assertEqual(m.channel, "iopub")
            if self.v1:
                self.assertTrue(m.binary)

    def test_error_reply(self):
        reply, iopub = self.ks.execute("1 / 0")
        self.assertEqual(reply.content["status"], "error")
        self.assertEqual(reply.content["ename"], "ZeroDivisionError")
        errors = [m for m in iopub if m.msg_type == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0].content["ename"], "ZeroDivisionError")

    # The kernel sends input_request to the shell request's identity: the
    # gateway's shell and stdin sockets share one routing id.
    def test_stdin_input_request_and_reply(self):
        msg_id = self.ks.send("shell", "execute_request", {
            "code": "name = input('who? ')\nprint('hi', name)", "silent": False, "store_history": False,
            "user_expressions": {}, "allow_stdin": True, "stop_on_error": True})
        req, _ = self.ks.wait_for(lambda m: m.channel == "stdin", 15, "input_request")
        self.assertEqual(req.msg_type, "input_request")
        self.assertEqual(req.content["prompt"], "who? ")
        self.assertEqual(req.parent_id, msg_id)
        self.ks.send("stdin", "input_reply", {"value": "sandgate"}, parent=req.header)
        reply, iopub = self.ks.finish(msg_id)
        self.assertEqual(reply.content["status"], "ok")
        self.assertIn("hi sandgate\n", stream_text(self.ks.received))

    def test_control_kernel_info(self):
        msg_id = self.ks.send("control", "kernel_info_request", {})
        reply, _ = self.ks.wait_for(lambda m: m.parent_id == msg_id and m.channel == "control", 30,
                                    "kernel_info_reply on control")
        self.assertEqual(reply.msg_type, "kernel_info_reply")
        self.assertEqual(reply.content["language_info"]["name"], "python")
        self.assertIn("protocol_version", reply.content)

    def test_shell_kernel_info(self):
        msg_id = self.ks.send("shell", "kernel_info_request", {})
        reply, _ = self.ks.wait_for(lambda m: m.parent_id == msg_id and m.channel == "shell", 30,
                                    "kernel_info_reply on shell")
        self.assertEqual(reply.msg_type, "kernel_info_reply")

    def start_sleep(self):
        self.ks.execute("x = 41")
        msg_id = self.ks.send("shell", "execute_request", {
            "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(100)", "silent": False,
            "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
        # (stop_on_error False: ipykernel would abort the next request after the interrupt.)
        # The user code runs once its output arrives (an interrupt before that
        # can land in the kernel's own code, which ipykernel ignores).
        self.ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30,
                         "the output of the sleeping cell")
        # The output is out before print() has returned (ipykernel's flush
        # waits on its I/O thread): the cell is under way once the kernel's
        # main thread sleeps.
        wait_until(self.a_kernel_sleeps, 30, "the kernel's main thread to sleep in the cell")
        return msg_id

    def a_kernel_sleeps(self):
        clock_nanosleep = "230"  # x86_64: what time.sleep waits in
        for pid in self.gw.kernel_pids():
            try:
                with open(f"/proc/{pid}/syscall") as f:
                    if f.read().split()[0] == clock_nanosleep:
                        return True
            except (OSError, IndexError):
                pass
        return False

    def assert_interrupted(self, msg_id):
        reply, iopub = self.ks.finish(msg_id, timeout=20)
        self.assertEqual(reply.content["status"], "error")
        self.assertEqual(reply.content["ename"], "KeyboardInterrupt")
        reply, iopub = self.ks.execute("x + 1")
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(result_text(iopub), "42")  # state survives an interrupt

    def test_interrupt_over_rest(self):
        msg_id = self.start_sleep()
        r = self.gw.request("POST", f"api/kernels/{self.kid}/interrupt")
        self.assertEqual(r.status, 204, r)
        self.assert_interrupted(msg_id)

    def test_interrupt_over_control(self):
        msg_id = self.start_sleep()
        irq = self.ks.send("control", "interrupt_request", {})
        self.ks.wait_for(lambda m: m.parent_id == irq and m.msg_type == "interrupt_reply", 20,
                         "interrupt_reply")
        self.assert_interrupted(msg_id)

    def test_restart_loses_state_and_kernel_stays_usable(self):
        reply, _ = self.ks.execute("secret = 'kept?'")
        self.assertEqual(reply.content["status"], "ok")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/restart")
        self.assertEqual(r.status, 200, r)
        self.ks.wait_for(lambda m: m.msg_type == "status" and m.content["execution_state"] == "restarting",
                         10, "status restarting")
        # No wait for readiness: the gateway holds requests while the kernel restarts.
        reply, iopub = self.ks.execute("secret")
        self.assertEqual(reply.content["status"], "error")
        self.assertEqual(reply.content["ename"], "NameError")
        reply, iopub = self.ks.execute("2 + 2")
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(result_text(iopub), "4")
        self.assertEqual(self.gw.request("GET", f"api/kernels/{self.kid}").json()["execution_state"], "idle")

    def test_two_clients_share_iopub_but_not_replies(self):
        other = self.connect(self.kid, v1=not self.v1)
        a_id = self.ks.send("shell", "execute_request", {
            "code": "print('from A')", "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        self.ks.finish(a_id)
        # B sees A's output on iopub.
        other.wait_for(lambda m: m.parent_id == a_id and m.msg_type == "status"
                       and m.content["execution_state"] == "idle", 30, "A's idle on B")
        self.assertEqual(stream_text([m for m in other.received if m.parent_id == a_id]), "from A\n")
        b_reply, _ = other.execute("print('from B')")
        self.assertEqual(b_reply.content["status"], "ok")
        self.ks.wait_for(lambda m: m.parent_id == b_reply.parent_id and m.msg_type == "status"
                         and m.content["execution_state"] == "idle", 30, "B's idle on A")
        self.assertEqual(stream_text([m for m in self.ks.received if m.parent_id == b_reply.parent_id]),
                         "from B\n")
        # Each got exactly its own shell replies.
        for client in (self.ks, other):
            shell = [m for m in client.received if m.channel in ("shell", "control", "stdin")]
            self.assertTrue(shell)
            for m in shell:
                self.assertIn(m.parent_id, client.sent_ids, m)

    def test_session_id_replay_after_reconnect(self):
        session = uuid.uuid4().hex
        a = self.connect(self.kid, v1=self.v1, session_id=session)
        code = "import time\nfor i in range(40):\n    print(i, flush=True)\n    time.sleep(0.05)\n"
        msg_id = a.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        a.wait_for(lambda m: "5\n" in stream_text([x for x in a.received if x.parent_id == msg_id]), 30,
                   "the first lines of output")
        a.close_cleanly()
        before = [m for m in a.received if m.parent_id == msg_id]
        self.assertFalse(any(m.msg_type == "execute_reply" for m in before), "the cell ended too soon")

        b = self.connect(self.kid, v1=self.v1, session_id=session, nudge=False)
        reply, iopub = b.finish(msg_id, timeout=30)
        after = [m for m in b.received if m.parent_id == msg_id]
        self.assertEqual(reply.content["status"], "ok")
        # Exactly once, in order: the two halves join without gap or repeat.
        ids = [m.header["msg_id"] for m in before + after]
        self.assertEqual(len(ids), len(set(ids)), "a message arrived twice")
        text = stream_text(before) + stream_text(after)
        self.assertEqual(text, "".join(f"{i}\n" for i in range(40)))
        self.assertEqual([m.msg_type for m in after].count("execute_reply"), 1)
        self.assertEqual(after[-1].msg_type in ("execute_reply", "status"), True)

    def test_session_id_replay_under_heavy_output(self):
        # The client leaves while the gateway is busy writing to it: what was
        # on the wire before the close frame counts as delivered, the rest is
        # replayed; nothing twice, nothing lost. (Fewer messages than the
        # kernel's iopub high-water mark of 1000, which drops beyond it.)
        session = uuid.uuid4().hex
        a = self.connect(self.kid, v1=self.v1, session_id=session)
        code = "import sys\nfor i in range(800):\n    print(i, 'y' * 200)\n    sys.stdout.flush()\n"
        msg_id = a.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        a.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream"
                   and len([x for x in a.received if x.msg_type == "stream"]) >= 20, 60, "a burst of output")
        a.close_cleanly()
        before = [m for m in a.received if m.parent_id == msg_id]
        b = self.connect(self.kid, v1=self.v1, session_id=session, nudge=False)

        # The cell may have ended before A left (a loaded client reads all
        # that was sent up to the close frame): its reply and idle status
        # are then in A's share.
        def ended(msgs):
            return (any(m.channel == "shell" for m in msgs)
                    and any(m.msg_type == "status" and m.content.get("execution_state") == "idle" for m in msgs))

        d = Deadline(90)
        while not ended(before + [m for m in b.received if m.parent_id == msg_id]):
            b.recv(d.left("the reply and idle status"))
        after = [m for m in b.received if m.parent_id == msg_id]
        reply = next(m for m in before + after if m.channel == "shell")
        ids = [m.header["msg_id"] for m in before + after]
        dupes = len(ids) - len(set(ids))
        self.assertEqual(dupes, 0, f"{dupes} messages arrived twice")
        text = stream_text(before) + stream_text(after)
        self.assertEqual(text, "".join(f"{i} {'y' * 200}\n" for i in range(800)))
        self.assertEqual(reply.content["status"], "ok")

    def test_reply_follows_the_session_to_its_other_connection(self):
        # Two connections of one session; the one that sent the request
        # leaves before the reply: the reply goes to the one still open.
        session = uuid.uuid4().hex
        a = self.connect(self.kid, v1=self.v1, session_id=session)
        b = self.connect(self.kid, v1=not self.v1, session_id=session, nudge=False)
        msg_id = a.send("shell", "execute_request", {
            "code": "import time\ntime.sleep(0.5)\n'late'", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        a.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "execute_input", 30, "execute_input")
        a.close_cleanly()
        reply, iopub = b.finish(msg_id, timeout=30)
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(result_text(iopub), "'late'")
        self.assertEqual([m.msg_type for m in b.received if m.parent_id == msg_id].count("execute_reply"), 1)

    def test_replay_of_a_finished_cell(self):
        session = uuid.uuid4().hex
        a = self.connect(self.kid, v1=self.v1, session_id=session)
        msg_id = a.send("shell", "execute_request", {
            "code": "import time\ntime.sleep(1)\nprint('done while away')\n'result'", "silent": False,
            "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        a.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "execute_input", 30, "execute_input")
        a.close_cleanly()
        # Another client watches the cell end; then A's session comes back.
        watcher = self.connect(self.kid, v1=not self.v1, nudge=False)
        watcher.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "status"
                         and m.content["execution_state"] == "idle", 30, "the cell to end")
        b = self.connect(self.kid, v1=self.v1, session_id=session, nudge=False)
        reply, iopub = b.finish(msg_id, timeout=30)
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(stream_text(iopub), "done while away\n")
        self.assertEqual(result_text(iopub), "'result'")

    # The gateway declares a kernel ready only once its iopub subscription
    # carries messages, so the first execute's output is never lost.
    def test_first_execute_on_fresh_kernels_gets_its_iopub(self):
        for _ in range(12):
            kid = self.gw.start_kernel(self.kernel)
            try:
                ks = self.gw.connect(kid, v1=self.v1, nudge=False)
                reply, iopub = ks.execute("1 + 1")
                ks.close()
                self.assertEqual([m.msg_type for m in iopub][-1], "status", iopub)
                self.assertEqual(result_text(iopub), "2")
            finally:
                self.gw.delete_kernel(kid)

    def test_other_session_gets_no_replay(self):
        a = self.connect(self.kid, v1=self.v1, session_id=uuid.uuid4().hex)
        msg_id = a.send("shell", "execute_request", {
            "code": "print('only for A')", "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        a.close_cleanly()
        # A new session on the kernel sees later output but no replies meant for A.
        c = self.connect(self.kid, v1=self.v1)
        reply, _ = c.execute("'c'")
        self.assertEqual(reply.content["status"], "ok")
        self.assertFalse([m for m in c.received if m.channel == "shell" and m.parent_id == msg_id])


class Python3Legacy(ChannelsBase, GatewayTestCase):
    kernel, v1 = "python3", False


class Python3V1(ChannelsBase, GatewayTestCase):
    kernel, v1 = "python3", True


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not in this build")
class SandgatePythonLegacy(ChannelsBase, GatewayTestCase):
    kernel, v1 = "python", False


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not in this build")
class SandgatePythonV1(ChannelsBase, GatewayTestCase):
    kernel, v1 = "python", True


if __name__ == "__main__":
    unittest.main()
