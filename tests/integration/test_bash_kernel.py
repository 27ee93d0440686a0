"""sandgate-shell (kernelspec "bash") through the gateway: shell state
persists across cells, output streams, a failing command is an error."""

import os
import unittest

from sandgate_fixture import BUILD_DIR, GatewayTestCase, stream_text


@unittest.skipUnless(os.path.exists(os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "bash", "kernel.json")),
                     "sandgate-shell is not built")
class BashKernelThroughGateway(GatewayTestCase):
    def setUp(self):
        self.ks = self.connect(self.new_kernel("bash"))

    def test_cwd_and_variables_persist(self):
        reply, _ = self.ks.execute("cd /tmp; X=1")
        self.assertEqual(reply.content["status"], "ok")
        reply, iopub = self.ks.execute("echo $X; pwd")
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(stream_text(iopub), "1\n/tmp\n")

    def test_non_zero_exit_is_an_error_with_the_status(self):
        reply, _ = self.ks.execute("false")
        self.assertEqual(reply.content["status"], "error")
        self.assertEqual(reply.content["evalue"], "1")


if __name__ == "__main__":
    unittest.main()
