"""Kernel output held in the gateway's memory stays within its budget.

A kernel that sends 64 outputs of 100 MiB at once to a client that reads
them slowly: the gateway's resident memory stays under the budget
(--output-memory-limit-bytes) plus a margin, every byte of every output
reaches the client, and another kernel answers meanwhile. A message over
the per-message limit (--max-message-bytes) is not relayed: a note naming
its size takes its place, on the WebSocket and in the execution record.
"""

import json
import threading
import time
import unittest

import websocket

from sandgate_fixture import Deadline, GatewayTestCase, decode_v1, has_sandgate_python, rss_kib, stream_text

MIB = 1024 * 1024
OUTPUTS = 64
OUTPUT_BYTES = 100 * MIB
BUDGET = 512 * MIB
CAP = 160 * MIB
# Besides the budget: the gateway's own footprint, one message being read
# off the kernel's socket and one read ahead, and the allocator's slack.
MARGIN = 3 * OUTPUT_BYTES + 128 * MIB

BIG_CELL = (
    "from IPython.display import display\n"
    f"chunk = 'x' * {OUTPUT_BYTES}\n"
    f"for i in range({OUTPUTS}):\n"
    "    display({'text/plain': '%04d' % i + chunk}, raw=True)\n"
    "del chunk\n")


def rss_bytes(pid):
    return rss_kib(pid) * 1024


class RssSampler(threading.Thread):
    """The highest resident size of a process, sampled every 20 ms."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = rss_bytes(pid)
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.wait(0.02):
            self.peak = max(self.peak, rss_bytes(self.pid))

    def stop(self):
        self.stop_event.set()
        self.join()
        return self.peak


@unittest.skipUnless(has_sandgate_python(), "sandgate-python is not built")
class OutputBudget(GatewayTestCase):
    gateway_args = ("--output-memory-limit-bytes", str(BUDGET), "--max-message-bytes", str(CAP),
                    "--client-stall-timeout-s", "120")

    def test_64_outputs_of_100_mib_to_a_slow_reader_stay_within_the_budget(self):
        self.assertEqual(self.metric("sandgate_output_memory_limit_bytes"), BUDGET)
        big = self.new_kernel("python")
        other = self.new_kernel("python")
        ks = self.connect(big, v1=True, nudge=True)
        ks_other = self.connect(other, v1=True, nudge=True)
        base_rss = rss_bytes(self.gw.proc.pid)
        sampler = RssSampler(self.gw.proc.pid)
        sampler.start()
        msg_id = ks.send("shell", "execute_request", {
            "code": BIG_CELL, "silent": False, "store_history": False, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False})
        got = []  # (index, length, all 'x' after the index) of each display_data
        other_answers = []
        d = Deadline(900)
        reply = idle = False
        while not (reply and idle):
            ks.ws.settimeout(d.left("the big cell's outputs"))
            opcode, frame = ks.ws.recv_data_frame(True)
            if opcode != websocket.ABNF.OPCODE_BINARY:
                self.assertNotEqual(opcode, websocket.ABNF.OPCODE_CLOSE, frame.data)
                continue  # a ping
            channel, parts = decode_v1(frame.data)
            header, parent = json.loads(parts[0]), json.loads(parts[1])
            if parent.get("msg_id") != msg_id:
                continue
            kind = header["msg_type"]
            if kind == "display_data":
                text = json.loads(parts[3])["data"]["text/plain"]
                got.append((int(text[:4]), len(text) - 4, text.count("x", 4) == len(text) - 4))
                del text
                if len(got) % 16 == 8:
                    # The other kernel answers while this one streams.
                    start = time.monotonic()
                    r, iopub = ks_other.execute("print(6 * 7)", timeout=60)
                    self.assertEqual(r.content["status"], "ok", r)
                    other_answers.append((stream_text(iopub).strip(), time.monotonic() - start))
                time.sleep(0.15)  # a slow reader: the kernel outruns it
            elif channel == "shell" and kind == "execute_reply":
                reply = True
            elif kind == "status" and json.loads(parts[3]).get("execution_state") == "idle":
                idle = True
        peak = sampler.stop()
        self.assertEqual([g[0] for g in got], list(range(OUTPUTS)))
        self.assertTrue(all(g[1] == OUTPUT_BYTES and g[2] for g in got), "an output arrived changed")
        self.assertEqual([a[0] for a in other_answers], ["42"] * len(other_answers))
        self.assertGreaterEqual(len(other_answers), 4)
        self.assertLess(peak - base_rss, BUDGET + MARGIN,
                        f"gateway RSS grew by {(peak - base_rss) // MIB} MiB (budget {BUDGET // MIB} MiB)")
        self.assertGreater(self.metric("sandgate_output_holds_total") +
                           self.metric("sandgate_output_budget_pauses_total"), 0)

    def test_a_message_over_the_limit_is_replaced_by_a_note_naming_its_size(self):
        kid = self.new_kernel("python")
        ks = self.connect(kid, v1=True, nudge=True)
        size = 170 * MIB
        before = self.metric("sandgate_messages_over_limit_total")
        reply, iopub = ks.execute(
            "from IPython.display import display\n"
            f"display({{'text/plain': 'y' * {size}}}, raw=True)\n"
            "print('after')\n", timeout=300)
        self.assertEqual(reply.content["status"], "ok", reply)
        self.assertFalse([m for m in iopub if m.msg_type == "display_data"])
        note = stream_text(iopub, "stderr")
        self.assertIn("display_data message of", note)
        self.assertIn(f"the gateway's limit is {CAP} bytes", note)
        self.assertEqual(stream_text(iopub).strip(), "after")
        self.assertEqual(self.metric("sandgate_messages_over_limit_total"), before + 1)
        r = self.gw.request("GET", f"api/kernels/{kid}/executions/{reply.parent_id}")
        self.assertEqual(r.status, 200, r)
        record = r.json()
        self.assertEqual(record["status"], "ok", record)
        self.assertIn("display_data message of", record["stderr"])
        self.assertTrue(record["truncated"], record)
        # The kernel goes on.
        reply, iopub = ks.execute("print(1 + 1)")
        self.assertEqual(stream_text(iopub).strip(), "2")


if __name__ == "__main__":
    unittest.main()
