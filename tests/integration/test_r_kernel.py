"""What is R's own (kernelspec "ir": Debian's R with IRkernel), through a
real gateway in a real sandbox: ggplot2 and base graphics as PNG, an
interrupt of Sys.sleep that keeps state (and its execution record),
containment seen from inside R. What every language shares (state, streams,
errors, a busy loop's interrupt, display_data, 1 MiB, restart, shutdown,
the kernelspec listing, REST execute with a timeout, the pool, a gateway
restart) is in test_languages.py. Needs root (as CI runs) and r-base-core,
r-cran-irkernel, r-cran-ggplot2 (share/dev/test installs them)."""

import base64
import os
import unittest

from sandgate_fixture import BUILD_DIR, GatewayTestCase, wait_until
from sandgate_fixture import png_size, syscalls_of
from test_languages import R_MARKER

IR_SPEC = os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "ir", "kernel.json")


def text_of(msgs):
    """IRkernel shows a cell's value as display_data (not execute_result): its text/plain."""
    for m in msgs:
        if m.msg_type in ("display_data", "execute_result"):
            return m.content["data"].get("text/plain")
    return None


def r_sleeps(gw):
    # Sys.sleep waits in select(2) via R_checkActivity (x86_64: pselect6 270, select 23).
    return any(state in ("270", "23") for state in syscalls_of(gw, R_MARKER))


skip_without_r = unittest.skipUnless(os.path.exists(IR_SPEC), "no ir kernelspec (R with IRkernel not installed)")
needs_root = unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")


@needs_root
@skip_without_r
class RKernelTest(GatewayTestCase):
    sandboxed = True

    def setUp(self):
        self.kid = self.new_kernel("ir")
        self.ks = self.connect(self.kid)

    def run_ok(self, code, timeout=60):
        reply, iopub = self.ks.execute(code, timeout=timeout)
        self.assertEqual(reply.content["status"], "ok", (code, reply.content))
        return iopub

    def assert_one_png(self, iopub):
        displays = [m for m in iopub if m.msg_type == "display_data" and "image/png" in m.content["data"]]
        self.assertEqual(len(displays), 1, iopub)
        width, height = png_size(base64.b64decode(displays[0].content["data"]["image/png"]))
        self.assertGreater(width, 100)
        self.assertGreater(height, 100)

    def test_ggplot2_chart_is_png_display_data(self):
        self.assert_one_png(self.run_ok(
            "library(ggplot2)\n"
            "ggplot(data.frame(a = 1:10, b = (1:10)^2), aes(a, b)) + geom_line() + ggtitle('squares')",
            timeout=120))

    def test_base_plot_is_png_display_data(self):
        self.assert_one_png(self.run_ok("plot(1:10, main = 'base')"))

    def start(self, code, ready, what):
        """Sends `code` (which prints "started" first) and waits until its
        output arrived and the R process is in the state `ready` looks for."""
        msg_id = self.ks.send("shell", "execute_request", {
            "code": 'cat("started\\n"); ' + code, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
        self.ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30, "the cell's first output")
        wait_until(ready, 30, what)
        return msg_id

    def assert_interrupt_keeps_state(self, code, ready, what):
        self.run_ok("kept <- 'still here'")
        msg_id = self.start(code, ready, what)
        r = self.gw.request("POST", f"api/kernels/{self.kid}/interrupt")
        self.assertEqual(r.status, 204, r)
        reply, _ = self.ks.finish(msg_id, timeout=20)
        # IRkernel answers an interrupted cell with status "abort" (the
        # protocol's older spelling of "aborted").
        self.assertEqual(reply.content["status"], "abort", reply.content)
        record = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{msg_id}")
        self.assertEqual(record.status, 200, record)
        self.assertEqual(record.json()["status"], "aborted")  # the gateway's one word for it
        self.assertEqual(text_of(self.run_ok("kept")), '[1] "still here"')

    def test_interrupt_of_a_sleep_keeps_state(self):
        self.assert_interrupt_keeps_state("Sys.sleep(100)", lambda: r_sleeps(self.gw), "R to sleep")

    def test_containment_seen_from_r(self):
        self.assertEqual(text_of(self.run_ok("status <- system('cat /etc/shadow 2>/dev/null'); status")), "[1] 1")
        self.assertEqual(text_of(self.run_ok("file.exists('/etc/shadow')")), "[1] FALSE")
        self.assertEqual(text_of(self.run_ok("file.exists('/workspace')")), "[1] TRUE")
        self.assertEqual(text_of(self.run_ok("Sys.getenv('HOME')")), '[1] "/workspace"')
        self.assertEqual(text_of(self.run_ok("file.access('/usr/lib/R', 2)")), "/usr/lib/R \n        -1 ")
        self.assertEqual(text_of(self.run_ok(
            "tryCatch({ con <- url('http://127.0.0.1:1'); open(con); 'connected' },"
            " error = function(e) 'refused')")), '[1] "refused"')
        self.assertEqual(text_of(self.run_ok(
            "tryCatch({ s <- socketConnection('1.1.1.1', 80, timeout = 2); 'connected' },"
            " error = function(e) 'refused', warning = function(w) 'refused')")), '[1] "refused"')


if __name__ == "__main__":
    unittest.main()
