"""The R kernel (kernelspec "ir": Debian's R with IRkernel) through a real
gateway in a real sandbox: state across cells, streams, errors, ggplot2 and
base graphics as PNG, interrupt that keeps state, big output, restart,
shutdown, REST execute with a timeout, the kernelspec listing, containment
seen from inside R, and a warm pool of R kernels. Needs root (as CI runs)
and r-base-core, r-cran-irkernel, r-cran-ggplot2 (share/dev/test installs
them)."""

import base64
import os
import struct
import unittest
import zlib

from sandgate_fixture import BUILD_DIR, Deadline, GatewayTestCase, stream_text, wait_until
from test_pool import pool_metrics, wait_for_ready

IR_SPEC = os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "ir", "kernel.json")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def text_of(msgs):
    """IRkernel shows a cell's value as display_data (not execute_result): its text/plain."""
    for m in msgs:
        if m.msg_type in ("display_data", "execute_result"):
            return m.content["data"].get("text/plain")
    return None


def png_size(data):
    """(width, height) of a PNG whose signature and IHDR chunk (with its CRC) are right."""
    if data[:8] != PNG_SIGNATURE:
        raise AssertionError(f"not a PNG signature: {data[:8]!r}")
    length, kind = struct.unpack(">I4s", data[8:16])
    if kind != b"IHDR" or length != 13:
        raise AssertionError(f"first chunk {kind!r} of {length} bytes, not IHDR")
    body = data[16:29]
    crc = struct.unpack(">I", data[29:33])[0]
    if zlib.crc32(kind + body) != crc:
        raise AssertionError("IHDR CRC mismatch")
    width, height = struct.unpack(">II", body[:8])
    return width, height


def r_kernel_pids(gw):
    """Host pids of the R kernel processes in this gateway's sandboxes: below
    one of its supervisors (whose command line names its state dir; a
    sandboxed kernel's does not)."""
    pids = []
    for pid in gw.sandbox_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"IRkernel::main()" in f.read():
                    pids.append(pid)
        except OSError:
            pass
    return pids


def r_is(gw, state):
    """True once an R kernel's main thread is in `state`: "R" (running: a busy
    loop) or a syscall number it waits in."""
    for pid in r_kernel_pids(gw):
        try:
            with open(f"/proc/{pid}/syscall") as f:
                syscall = f.read().split()[0]
        except (OSError, IndexError):
            continue
        if state == "R" and syscall == "running":
            return True
        if syscall == state:
            return True
    return False


def r_sleeps(gw):
    # Sys.sleep waits in select(2) via R_checkActivity (x86_64: pselect6 270, select 23).
    return r_is(gw, "270") or r_is(gw, "23")


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

    def test_state_persists_across_cells(self):
        self.run_ok("x <- 41")
        self.assertEqual(text_of(self.run_ok("x + 1")), "[1] 42")

    def test_stdout_and_stderr_streams(self):
        iopub = self.run_ok('cat("out\\n"); message("err")')
        self.assertEqual(stream_text(iopub, "stdout"), "out\n")
        self.assertTrue(stream_text(iopub, "stderr").startswith("err\n"), stream_text(iopub, "stderr"))

    def test_an_error_is_an_error_reply(self):
        reply, iopub = self.ks.execute('stop("boom")')
        self.assertEqual(reply.content["status"], "error")
        self.assertIn("boom", reply.content["evalue"])
        errors = [m for m in iopub if m.msg_type == "error"]
        self.assertEqual(len(errors), 1, iopub)
        self.assertIn("boom", errors[0].content["evalue"])
        self.assertEqual(text_of(self.run_ok("1 + 1")), "[1] 2")  # the kernel goes on

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

    def test_interrupt_of_a_busy_loop_keeps_state(self):
        self.assert_interrupt_keeps_state("while (TRUE) {}", lambda: r_is(self.gw, "R"), "R to spin in the loop")

    def test_interrupt_of_a_sleep_keeps_state(self):
        self.assert_interrupt_keeps_state("Sys.sleep(100)", lambda: r_sleeps(self.gw), "R to sleep")

    def test_a_mebibyte_of_output_arrives_whole(self):
        iopub = self.run_ok('cat(rep(paste0(strrep("x", 1023), "\\n"), 1024), sep = "")', timeout=120)
        out = stream_text(iopub)
        self.assertEqual(len(out), 1 << 20)
        self.assertEqual(out, ("x" * 1023 + "\n") * 1024)

    def test_restart_loses_state_and_the_kernel_stays_usable(self):
        self.run_ok("secret <- 1")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/restart", timeout=120)
        self.assertEqual(r.status, 200, r)
        self.ks.wait_for(lambda m: m.msg_type == "status" and m.content["execution_state"] == "restarting",
                         10, "status restarting")
        self.assertEqual(text_of(self.run_ok("exists('secret')")), "[1] FALSE")
        self.assertEqual(text_of(self.run_ok("2 + 2")), "[1] 4")

    def test_shutdown_ends_the_kernel_and_its_sandbox(self):
        self.run_ok("1")
        self.assertTrue(r_kernel_pids(self.gw))
        sandbox_id = self.gw.request("GET", f"api/kernels/{self.kid}").json()["sandbox_id"]
        self.gw.delete_kernel(self.kid)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{self.kid}").status, 404)
        self.assertNotIn(self.kid, [k["id"] for k in self.gw.request("GET", "api/kernels").json()])
        wait_until(lambda: not r_kernel_pids(self.gw), 20, "the R process to end")
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sandbox_id}").status, 404)

    def test_rest_execute_and_its_timeout(self):
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute",
                            {"code": "y <- 20; cat('side\\n'); y + 1", "timeout_s": 30})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["status"], "ok", body)
        self.assertEqual(body["stdout"], "side\n")
        self.assertEqual(body["outputs"][0]["data"]["text/plain"], "[1] 21")
        d = Deadline(30)
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute", {"code": "Sys.sleep(100)", "timeout_s": 2})
        self.assertLess(d.seconds - d.remaining(), 20)
        body = r.json()
        self.assertEqual(body["status"], "timeout", body)
        self.assertTrue(body["timed_out"])
        self.assertFalse(body["kernel_restarted"], "the interrupt ended the cell: no restart")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute", {"code": "y", "timeout_s": 30})
        self.assertEqual(r.json()["outputs"][0]["data"]["text/plain"], "[1] 20")
        record = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{body['msg_id']}")
        self.assertEqual(record.status, 200, record)
        self.assertEqual(record.json()["status"], "timeout")

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


@needs_root
@skip_without_r
class RKernelSpecTest(GatewayTestCase):
    sandboxed = True

    def test_ir_is_listed_with_language_and_logos(self):
        r = self.gw.request("GET", "api/kernelspecs")
        self.assertEqual(r.status, 200, r)
        ir = r.json()["kernelspecs"]["ir"]
        self.assertEqual(ir["spec"]["language"], "R")
        self.assertEqual(ir["spec"]["display_name"], "R (Sandgate)")
        self.assertEqual(ir["spec"]["interrupt_mode"], "signal")
        self.assertEqual(ir["resources"], {"logo-32x32": "/kernelspecs/ir/logo-32x32.png",
                                           "logo-64x64": "/kernelspecs/ir/logo-64x64.png"})
        for name, size in (("logo-32x32", 32), ("logo-64x64", 64)):
            logo = self.gw.request("GET", ir["resources"][name].lstrip("/"))
            self.assertEqual(logo.status, 200, logo)
            self.assertEqual(logo.headers["Content-Type"], "image/png")
            self.assertEqual(png_size(logo.body), (size, size))


@needs_root
@skip_without_r
class RKernelPoolTest(GatewayTestCase):
    sandboxed = True
    gateway_args = ("--pool", "ir=1")

    def test_a_new_ir_kernel_is_a_started_pool_kernel(self):
        wait_for_ready(self.gw, 1, kernel="ir")
        before = pool_metrics(self.gw, "ir")
        kid = self.new_kernel("ir")
        self.assertEqual(pool_metrics(self.gw, "ir")["claims_total"], before["claims_total"] + 1)
        reply, iopub = self.connect(kid).execute("R.version$language")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(text_of(iopub), '[1] "R"')
        wait_for_ready(self.gw, 1, kernel="ir")  # and it refills


if __name__ == "__main__":
    unittest.main()
