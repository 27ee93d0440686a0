"""The relay rule: metadata, content and buffers reach the client as the
exact bytes the kernel put on the wire, in both WebSocket protocols; a
message with a bad signature is dropped, and the gateway stays up.

A fake kernel (fake_kernel.py, a kernelspec in a temp dir given with
--kernel-path) sends hand-made frames whose bytes relay_payloads.py holds.
"""

import json
import os
import shutil
import tempfile
import unittest

from sandgate_fixture import GatewayTestCase

import relay_payloads as P

HERE = os.path.dirname(os.path.abspath(__file__))


def make_fake_spec():
    root = tempfile.mkdtemp(prefix="sandgate-fake-")
    d = os.path.join(root, "fake")
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": ["/usr/bin/python3", os.path.join(HERE, "fake_kernel.py"), "-f", "{connection_file}"],
                   "display_name": "Fake", "language": "python", "interrupt_mode": "message"}, f)
    return root


class RelayBase:
    v1 = False

    @classmethod
    def setUpClass(cls):
        cls.spec_root = make_fake_spec()
        cls.gateway_args = ("--kernel-path", cls.spec_root)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.spec_root, ignore_errors=True)

    def setUp(self):
        self.kid = self.new_kernel("fake")
        self.ks = self.connect(self.kid, v1=self.v1)
        self.reply, self.iopub = self.ks.execute(P.RELAY_CODE, timeout=60)
        self.by_type = {}
        for m in self.iopub:
            self.by_type.setdefault(m.msg_type, []).append(m)

    def raw(self, m, part):
        """The exact bytes of one part as the client received it."""
        value = m.raw_parts[part]
        return value if isinstance(value, bytes) else value.encode("utf-8")

    def only(self, msg_type):
        msgs = self.by_type.get(msg_type, [])
        self.assertEqual(len(msgs), 1, (msg_type, self.iopub))
        return msgs[0]

    def test_a_late_starting_status_leaves_the_kernel_idle(self):
        # ipykernel's control thread answers the gateway's kernel_info probe
        # before its main thread publishes "starting" (with no parent): the
        # kernel was ready, and stays idle, or an idle sandbox is never culled.
        self.ks.send("shell", "execute_request", {
            "code": P.LATE_STARTING_CODE, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        self.ks.wait_for(lambda m: m.msg_type == "status" and m.content["execution_state"] == "starting",
                         30, "the late starting status")
        self.assertEqual(self.gw.request("GET", f"api/kernels/{self.kid}").json()["execution_state"], "idle")

    def test_display_data_png_is_byte_identical(self):
        m = self.only("display_data")
        self.assertEqual(self.raw(m, "content"), P.DISPLAY_CONTENT)
        self.assertEqual(self.raw(m, "metadata"), P.DISPLAY_METADATA)
        self.assertEqual(m.content["data"]["image/png"], P.PNG_B64 + "\n")
        self.assertGreater(len(P.PNG_B64), 1024 * 1024)
        if not self.v1:
            # The whole frame holds the kernel's text verbatim.
            self.assertIn(P.DISPLAY_CONTENT, m.raw)

    def test_execute_result_html_is_byte_identical(self):
        m = self.only("execute_result")
        self.assertEqual(self.raw(m, "content"), P.RESULT_CONTENT)
        self.assertEqual(self.raw(m, "metadata"), P.RESULT_METADATA)
        self.assertIn("<table", m.content["data"]["text/html"])

    def test_binary_buffers_are_byte_identical(self):
        m = self.only("comm_msg")
        self.assertTrue(m.binary)
        self.assertEqual(self.raw(m, "content"), P.BUFFER_CONTENT)
        self.assertEqual(self.raw(m, "metadata"), P.BUFFER_METADATA)
        self.assertEqual([bytes(b) for b in m.buffers], P.BUFFERS)

    def test_forged_message_is_dropped_and_the_stream_goes_on(self):
        for m in self.ks.received:
            self.assertNotIn(P.FORGED_TEXT.encode(), m.raw if isinstance(m.raw, bytes) else m.raw.encode())
        streams = self.by_type.get("stream", [])
        self.assertEqual([self.raw(m, "content") for m in streams], [P.AFTER_CONTENT])
        # In order, as the kernel sent them.
        types = [m.msg_type for m in self.iopub]
        self.assertEqual(types, ["status", "execute_input", "display_data", "execute_result", "comm_msg",
                                 "stream", "status"])
        self.assertEqual(self.reply.content["status"], "ok")
        self.assertTrue(self.gw.alive())
        self.assertEqual(self.gw.request("GET", "api").status, 200)
        rejected = [e for e in self.gw.log_events() if e.get("event") == "kernel_message_rejected"]
        self.assertTrue(rejected, "the gateway did not log the forged message")
        # The kernel still works after the forgery.
        reply, iopub = self.ks.execute("again")
        self.assertEqual(reply.content["status"], "ok")

    def test_both_protocols_on_one_kernel_see_the_same_bytes(self):
        other = self.connect(self.kid, v1=not self.v1)
        reply, iopub = self.ks.execute(P.RELAY_CODE, timeout=60)
        other.wait_for(lambda m: m.parent_id == reply.parent_id and m.msg_type == "status"
                       and m.content["execution_state"] == "idle", 60, "the relay run on the other protocol")
        mine = [m for m in iopub if m.msg_type in ("display_data", "execute_result", "comm_msg")]
        theirs = [m for m in other.received if m.parent_id == reply.parent_id
                  and m.msg_type in ("display_data", "execute_result", "comm_msg")]
        self.assertEqual(len(mine), 3)
        self.assertEqual(len(theirs), 3)
        for a, b in zip(mine, theirs):
            for part in ("metadata", "content"):
                self.assertEqual(self.raw(a, part), self.raw(b, part), (a.msg_type, part))
            self.assertEqual([bytes(x) for x in a.buffers], [bytes(x) for x in b.buffers])
            self.assertEqual(a.header, b.header)


class RelayLegacy(RelayBase, GatewayTestCase):
    v1 = False


class RelayV1(RelayBase, GatewayTestCase):
    v1 = True


if __name__ == "__main__":
    unittest.main()
