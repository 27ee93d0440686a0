"""Messages a hostile kernel forges on its own channels, signed with its own
key (a cell in ipykernel reaches its session and sockets): members of other
types than the protocol's, and JSON nested 200000 deep in errors, displays
and results. The gateway parses some of these into documents and writes
records out; none of it may end the gateway, lose the kernel's real output,
or touch another session."""

import json
import unittest

from security_fixture import SandboxTestCase

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


if __name__ == "__main__":
    unittest.main()
