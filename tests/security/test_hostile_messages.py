"""Messages a hostile kernel forges on its own channels, signed with its own
key (a cell in ipykernel reaches its session and sockets): members of other
types than the protocol's, JSON nested 200000 deep in any part, headers that
are not objects, 100000 buffers. The gateway parses some of these into
documents and writes records out, and relays the rest to clients; none of
it may end the gateway, lose the kernel's real output, or touch another
session."""

import json
import time
import unittest

import websocket

from security_case import SandboxTestCase

DEEP = 200000

FORGE = r'''
k = get_ipython().kernel
def forge(msg_type, content):
    # bytes go out as the content's JSON text, unchanged
    k.session.send(k.iopub_socket, msg_type, content, parent=k.get_parent())
deep = b'[' * DEEP + b']' * DEEP
forge('error', {'ename': 5, 'evalue': [1], 'traceback': ['kept', 7, {'x': 1}]})
forge('error', b'{"ename":"Deep","evalue":"e","traceback":' + deep + b'}')
forge('display_data', b'{"data":{"text/plain":' + deep + b'},"metadata":{}}')
forge('execute_result', b'{"execution_count":1,"data":{"text/plain":' + deep + b'},"metadata":{}}')
forge('stream', b'{"name":' + deep + b',"text":"x"}')
forge('status', b'{"execution_state":' + deep + b'}')
forge('display_data', {'data': {'text/plain': 'shallow'}, 'metadata': {}})
print('forged')
'''.replace("DEEP", str(DEEP))


# Whole messages signed with the kernel's key, their parts as the cell
# writes them: headers and parents that are not objects or nest deep, 100000
# buffers, statuses the protocol does not have.
RAW = r'''
import json
k = get_ipython().kernel
s = k.session
deep = b'[' * DEEP + b']' * DEEP
parent = json.dumps(k.get_parent()["header"], default=str).encode()
def header(msg_type):
    return json.dumps(s.msg_header(msg_type), default=str).encode()
def raw(*parts):
    parts = list(parts)
    k.iopub_socket.send_multipart([b"x", b"<IDS|MSG>", s.sign(parts[:4])] + parts)
raw(header("stream"), deep, b"{}", b'{"name":"stdout","text":"a"}')
raw(header("stream"), parent, deep, b'{"name":"stdout","text":"b"}')
raw(b"[]", parent, b"{}", b'{"name":"stdout","text":"c"}')
raw(b'{"msg_id":' + deep + b"}", parent, b"{}", b"{}")
raw(header("stream"), b"not json", b"{}", b"{}")
raw(header("stream"), parent, b"{}", b'{"name":"stdout","text":"d"}', *([b""] * 100000))
raw(header("display_data"), parent, b"{}",
    b'{"data":{"text/plain":"x"},"metadata":{},"transient":{"display_id":' + deep + b"}}")
raw(header("update_display_data"), parent, b"{}", b'{"data":{},"metadata":{},"transient":{"display_id":5}}')
for state in (b"5", b'"starting"', b'"dead"', deep):
    raw(header("status"), parent, b"{}", b'{"execution_state":' + state + b"}")
raw(header("execute_input"), parent, b"{}", b'{"code":' + deep + b',"execution_count":"x"}')
raw(header("clear_output"), parent, b"{}", deep)
print("forged")
'''.replace("DEEP", str(DEEP))


class HostileMessages(SandboxTestCase):

    def execute(self, kid, code):
        status, body = self.gw.request("POST", f"api/kernels/{kid}/execute", {"code": code, "timeout_s": 60})
        self.assertEqual(status, 200, body[:500])
        return json.loads(body)

    def test_forged_deep_and_mistyped_messages(self):
        other = self.new_kernel()
        kid = self.gw.start_kernel()
        self.addCleanup(lambda: self.gw.alive() and self.gw.request("DELETE", f"api/kernels/{kid}", timeout=30))

        record = self.execute(kid, FORGE)
        self.assertGatewayUp()
        self.assertEqual(record["status"], "ok", record)
        self.assertEqual(record["stdout"], "forged\n", record)
        # The mistyped error is kept with what is of the protocol's types;
        # the deep one is not read.
        self.assertEqual(record["error"], {"ename": "", "evalue": "", "traceback": ["kept"]})
        # The deep bundles are not kept, and the record says something is missing.
        self.assertTrue(record["truncated"], record)
        self.assertEqual([o["data"] for o in record["outputs"]], [{"text/plain": "shallow"}])
        self.assertIsNone(record["result"])

        status, body = self.gw.request("GET", f"api/kernels/{kid}/executions/{record['msg_id']}")
        self.assertEqual(status, 200, body[:300])
        self.assertEqual(json.loads(body)["outputs"], record["outputs"])

        # The kernel and another session go on.
        self.assertEqual(self.execute(kid, "print(6 * 7)")["stdout"], "42\n")
        self.assertKernelWorks(other)
        self.assertGatewayUp()

    def test_forged_messages_to_an_attached_client(self):
        # A legacy channels client reads raw frames: what it gets is the
        # kernel's own text, which Python's json could not even load.
        other = self.new_kernel()
        k = self.new_kernel()
        msg_id = k.send("shell", "execute_request", {"code": RAW, "silent": False, "store_history": True,
                                                     "user_expressions": {}, "allow_stdin": False,
                                                     "stop_on_error": True})
        ours, reply, idle = [], None, False
        deadline = time.monotonic() + 60
        while not (reply and idle):
            self.assertGreater(deadline - time.monotonic(), 0, f"no reply and idle; got {len(ours)} frames")
            k.ws.settimeout(max(0.05, deadline - time.monotonic()))
            op, frame = k.ws.recv_data_frame(True)
            text = frame.data
            if op == websocket.ABNF.OPCODE_BINARY:  # legacy binary: part count, offsets, JSON, buffers
                count = int.from_bytes(text[:4], "big")
                if count > 1:
                    text = text[int.from_bytes(text[4:8], "big"):int.from_bytes(text[8:12], "big")]
                buffers = count - 1
            else:
                buffers = 0
            if msg_id.encode() not in text[:4096]:
                continue
            ours.append((text, buffers))
            if b'"msg_type": "execute_reply"' in text[:300]:
                reply = json.loads(text)["content"]
            if b'"execution_state": "idle"' in text:
                idle = True
        self.assertGatewayUp()
        self.assertEqual(reply["status"], "ok", reply)
        self.assertTrue(any(b'"text": "forged' in t for t, _ in ours), "the cell's own output is missing")
        self.assertIn(100000, [n for t, n in ours if b'"text":"d"' in t], "the message with 100000 buffers")
        self.assertKernelWorks(k)
        self.assertKernelWorks(other)


if __name__ == "__main__":
    unittest.main()
