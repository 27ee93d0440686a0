"""The kernel suite, per language, through the real gateway with sandboxed
kernels (the shipped default policy: read-only /usr, seccomp, no network,
HOME=/workspace): python (sandgate-python), javascript and typescript
(sandgate-javascript), ir (Debian's R with IRkernel) and bash
(sandgate-shell), each case where it applies.

Cases: state across cells, the last value, stdout and stderr streams,
errors, an interrupt that keeps state, PNG and HTML display_data that reach
the WebSocket byte-identical (in both WebSocket protocols), 1 MiB of output,
restart, shutdown; and what the gateway does for every kernelspec: listed
with its language and logos, REST execute with a timeout, execution
records, taken back by a gateway restarted on the same state dir with its
state, a warm pool whose start is a pool hit.

One class per language (`test_languages.JavaScript`, ...), one CTest each.
Needs root (as CI runs)."""

import base64
import os
import unittest

from sandgate_fixture import (BUILD_DIR, Deadline, Gateway, GatewayTestCase, make_png, png_size, remove_state_dir,
                              runs_user_code, sandbox_processes, stream_text, wait_until)
from test_pool import pool_metrics, wait_for_ready

# Markup with what a careless relay would alter: non-ASCII, an astral
# character, entities, quotes, a backslash, a newline, a tab.
HTML = '<div class="chart" title="a \\ b">Sandgate: caf\u00e9 \u2713 \U0001F600 &amp; &lt;ok&gt;\n\t<b>bold</b></div>'
MEBIBYTE_LINE = "x" * 1023 + "\n"
R_MARKER = b"IRkernel::main()"  # in the command line of an R kernel's process


def value_text(msgs):
    """The text/plain of a cell's value: its execute_result, or (IRkernel) its display_data."""
    for m in msgs:
        if m.msg_type in ("execute_result", "display_data") and "text/plain" in m.content["data"]:
            return m.content["data"]["text/plain"]
    return None


class Language:
    """One kernelspec and the code each case runs in it. None: the case does
    not apply."""

    def __init__(self, **fields):
        self.spins_in = None  # cmdline marker of the process a busy loop runs in, if the test must see it spin
        self.value = None
        self.display_png = None
        self.display_html = None
        self.__dict__.update(fields)

    def spec_path(self):
        return os.path.join(BUILD_DIR, "share", "jupyter", "kernels", self.kernel, "kernel.json")


def js_like(kernel, language, display_name):
    return Language(
        kernel=kernel, language=language, display_name=display_name, interrupt_mode="message",
        set_x="let x = 41;\nfunction plus(a: number, b: number) { return a + b; }" if kernel == "typescript"
        else "let x = 41;\nfunction plus(a, b) { return a + b; }",
        print_x="console.log(plus(x, 1))",
        value=("plus(x, 1)", "42"),
        streams="console.log('out'); console.error('err')",
        error=("throw new TypeError('boom')", "TypeError", "boom"),
        busy_loop="console.log('started'); while (true) {}",
        interrupted=("error", "Interrupted"),
        sleep="await new Promise((resolve) => setTimeout(resolve, 100000))",
        mebibyte="process.stdout.write(('x'.repeat(1023) + '\\n').repeat(1024))",
        set_secret="let secret = 'kept?'",
        # (TypeScript would not type-check a name no cell declared.)
        print_secret="console.log('secret' in globalThis ? 'defined' : 'undefined')",
        display_png="display.png(Buffer.from('{b64}', 'base64'))",
        display_html="display.html('{html}')")


LANGUAGES = {
    "python": Language(
        kernel="python", language="python", display_name="Python 3 (Sandgate)", interrupt_mode="message",
        set_x="x = 41\ndef plus(a, b):\n    return a + b",
        print_x="print(plus(x, 1))",
        value=("plus(x, 1)", "42"),
        streams="import sys\nprint('out')\nprint('err', file=sys.stderr)",
        error=("raise ValueError('boom')", "ValueError", "boom"),
        busy_loop="print('started', flush=True)\nwhile True:\n    pass",
        interrupted=("error", "KeyboardInterrupt"),
        sleep="import time\ntime.sleep(100)",
        mebibyte="import sys\nsys.stdout.write(('x' * 1023 + '\\n') * 1024)",
        set_secret="secret = 'kept?'",
        print_secret="print('defined' if 'secret' in globals() else 'undefined')",
        display_png="import base64\nfrom IPython.display import Image, display\n"
                    "display(Image(data=base64.b64decode('{b64}'), format='png'))",
        display_html="from IPython.display import HTML, display\ndisplay(HTML('{html}'))"),
    "javascript": js_like("javascript", "javascript", "JavaScript (Sandgate)"),
    "typescript": js_like("typescript", "typescript", "TypeScript (Sandgate)"),
    "ir": Language(
        kernel="ir", language="R", display_name="R (Sandgate)", interrupt_mode="signal",
        set_x="x <- 41\nplus <- function(a, b) a + b",
        print_x="cat(plus(x, 1), '\\n', sep = '')",
        value=("plus(x, 1)", "[1] 42"),
        streams="cat('out\\n'); message('err')",
        error=("stop('boom')", "ERROR", "boom"),
        busy_loop="cat('started\\n'); while (TRUE) {}",
        # IRkernel answers an interrupted cell with status "abort" (the
        # protocol's older spelling of "aborted"), without an error.
        interrupted=("abort", None),
        spins_in=R_MARKER,
        sleep="Sys.sleep(100)",
        mebibyte="cat(rep(paste0(strrep('x', 1023), '\\n'), 1024), sep = '')",
        set_secret="secret <- 'kept?'",
        print_secret="cat(if (exists('secret')) 'defined' else 'undefined', '\\n', sep = '')",
        display_png="IRdisplay::display_png(base64enc::base64decode('{b64}'))",
        display_html="IRdisplay::display_html('{html}')"),
    "bash": Language(
        kernel="bash", language="bash", display_name="Bash (Sandgate)", interrupt_mode="message",
        set_x="x=41\nplus() { echo $(($1 + $2)); }",
        print_x="plus $x 1",
        streams="echo out; echo err >&2",
        error=("echo boom >&2; false", "ExitStatus", "1"),
        busy_loop="echo started; while :; do :; done",
        interrupted=("error", "ExitStatus"),
        sleep="sleep 100",
        mebibyte="line=$(printf '%1023s' '' | tr ' ' x); for i in $(seq 1024); do echo \"$line\"; done",
        set_secret="secret='kept?'",
        print_secret="if [ -n \"${secret+set}\" ]; then echo defined; else echo undefined; fi"),
}

needs_root = unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")


class LanguageSuite:
    """The cases; a subclass per language sets `lang`."""

    sandboxed = True
    lang = None

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(cls.lang.spec_path()):
            raise unittest.SkipTest(f"the build has no {cls.lang.kernel} kernelspec")
        super().setUpClass()

    def setUp(self):
        self.kid = self.new_kernel(self.lang.kernel)
        self.ks = self.connect(self.kid)

    def run_ok(self, code, ks=None, timeout=120):
        reply, iopub = (ks or self.ks).execute(code, timeout=timeout)
        self.assertEqual(reply.content["status"], "ok", (code, reply.content, iopub))
        return iopub

    def assert_state_kept(self, ks=None):
        self.assertEqual(stream_text(self.run_ok(self.lang.print_x, ks)), "42\n")

    # --- the kernel ----------------------------------------------------------
    def test_state_persists_across_cells(self):
        self.run_ok(self.lang.set_x)
        self.assert_state_kept()

    def test_the_last_value_is_the_result(self):
        if not self.lang.value:
            self.skipTest(f"{self.lang.kernel} cells have no value")
        self.run_ok(self.lang.set_x)
        code, text = self.lang.value
        self.assertEqual(value_text(self.run_ok(code)), text)

    def test_stdout_and_stderr_streams(self):
        iopub = self.run_ok(self.lang.streams)
        self.assertEqual(stream_text(iopub, "stdout"), "out\n")
        # R's message() ends with an extra newline.
        self.assertIn(stream_text(iopub, "stderr"), ("err\n", "err\n\n"))

    def test_an_error_is_an_error_reply_and_the_kernel_goes_on(self):
        self.run_ok(self.lang.set_x)
        code, ename, evalue = self.lang.error
        reply, iopub = self.ks.execute(code)
        self.assertEqual(reply.content["status"], "error", reply.content)
        self.assertEqual(reply.content["ename"], ename, reply.content)
        self.assertIn(evalue, reply.content["evalue"])
        errors = [m for m in iopub if m.msg_type == "error"]
        self.assertEqual(len(errors), 1, iopub)
        self.assertEqual(errors[0].content["ename"], ename)
        self.assertIn(evalue, errors[0].content["evalue"])
        self.assert_state_kept()

    def test_an_interrupt_over_rest_ends_a_busy_loop_and_keeps_state(self):
        self.run_ok(self.lang.set_x)
        msg_id = self.ks.send("shell", "execute_request", {
            "code": self.lang.busy_loop, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False})
        self.ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 60, "the loop's first output")
        if self.lang.spins_in:
            wait_until(lambda: runs_user_code(self.gw, self.lang.spins_in), 30, "the kernel to spin")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/interrupt")
        self.assertEqual(r.status, 204, r)
        reply, _ = self.ks.finish(msg_id, timeout=30)
        status, ename = self.lang.interrupted
        self.assertEqual(reply.content["status"], status, reply.content)
        if ename:
            self.assertEqual(reply.content["ename"], ename, reply.content)
        self.assert_state_kept()

    def assert_display(self, code, mimetype, check):
        """Runs `code` over both WebSocket protocols; `check` gets the one
        display_data's value for `mimetype`."""
        if code is None:
            self.skipTest(f"{self.lang.kernel} has no display_data")
        for v1 in (False, True):
            with self.subTest(v1=v1):
                ks = self.connect(self.kid, v1=v1)
                shown = [m for m in self.run_ok(code, ks) if m.msg_type == "display_data"]
                self.assertEqual(len(shown), 1, shown)
                check(shown[0].content["data"][mimetype])

    def test_png_display_data_is_byte_identical(self):
        png = make_png(37, 23)
        encoded = base64.b64encode(png).decode()

        def check(value):
            # The base64 of exactly those bytes (line breaks, which a kernel may add, aside).
            self.assertEqual("".join(value.split()), encoded)
            self.assertEqual(base64.b64decode(value), png)

        self.assert_display(self.lang.display_png and self.lang.display_png.format(b64=encoded), "image/png", check)

    def test_html_display_data_is_byte_identical(self):
        code = self.lang.display_html and self.lang.display_html.format(html=HTML.replace("\\", "\\\\")
                                                                       .replace("\n", "\\n").replace("\t", "\\t"))
        self.assert_display(code, "text/html", lambda value: self.assertEqual(value.encode(), HTML.encode()))

    def test_a_mebibyte_of_output_arrives_whole(self):
        out = stream_text(self.run_ok(self.lang.mebibyte))
        self.assertEqual(len(out), 1 << 20)
        self.assertEqual(out, MEBIBYTE_LINE * 1024)

    def test_restart_loses_state_and_the_kernel_stays_usable(self):
        self.run_ok(self.lang.set_secret)
        r = self.gw.request("POST", f"api/kernels/{self.kid}/restart", timeout=120)
        self.assertEqual(r.status, 200, r)
        self.ks.wait_for(lambda m: m.msg_type == "status" and m.content["execution_state"] == "restarting",
                         10, "status restarting")
        self.assertEqual(stream_text(self.run_ok(self.lang.print_secret)), "undefined\n")
        self.run_ok(self.lang.set_x)
        self.assert_state_kept()

    def test_shutdown_ends_the_kernel_and_its_sandbox(self):
        self.run_ok(self.lang.set_x)
        sandbox_id = self.gw.request("GET", f"api/kernels/{self.kid}").json()["sandbox_id"]
        processes = sandbox_processes(self.gw, sandbox_id)
        self.assertGreaterEqual(len(processes), 2, "a supervisor and its kernel")
        self.gw.delete_kernel(self.kid)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{self.kid}").status, 404)
        self.assertNotIn(self.kid, [k["id"] for k in self.gw.request("GET", "api/kernels").json()])
        wait_until(lambda: not sandbox_processes(self.gw, sandbox_id), 20,
                   lambda: f"the sandbox's processes to end: {sandbox_processes(self.gw, sandbox_id)}")
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sandbox_id}").status, 404)

    # --- the gateway, as for every kernelspec ----------------------------------
    def test_listed_with_language_and_logos(self):
        r = self.gw.request("GET", "api/kernelspecs")
        self.assertEqual(r.status, 200, r)
        spec = r.json()["kernelspecs"][self.lang.kernel]
        self.assertEqual(spec["name"], self.lang.kernel)
        self.assertEqual(spec["spec"]["language"], self.lang.language)
        self.assertEqual(spec["spec"]["display_name"], self.lang.display_name)
        self.assertEqual(spec["spec"]["interrupt_mode"], self.lang.interrupt_mode)
        name = self.lang.kernel
        self.assertEqual(spec["resources"], {"logo-32x32": f"/kernelspecs/{name}/logo-32x32.png",
                                             "logo-64x64": f"/kernelspecs/{name}/logo-64x64.png"})
        for resource, size in (("logo-32x32", 32), ("logo-64x64", 64)):
            logo = self.gw.request("GET", spec["resources"][resource].lstrip("/"))
            self.assertEqual(logo.status, 200, logo)
            self.assertEqual(logo.headers["Content-Type"], "image/png")
            self.assertEqual(png_size(logo.body), (size, size))

    def test_rest_execute_and_its_timeout(self):
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute",
                            {"code": self.lang.set_x + "\n" + self.lang.print_x, "timeout_s": 60}, timeout=120)
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual((body["status"], body["stdout"], body["timed_out"]), ("ok", "42\n", False), body)
        d = Deadline(60)
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute", {"code": self.lang.sleep, "timeout_s": 2},
                            timeout=60)
        self.assertLess(d.seconds - d.remaining(), 20, "the timeout ended the cell")
        body = r.json()
        self.assertEqual(body["status"], "timeout", body)
        self.assertTrue(body["timed_out"])
        self.assertFalse(body["kernel_restarted"], "the interrupt ended the cell: no restart")
        record = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{body['msg_id']}")
        self.assertEqual(record.status, 200, record)
        self.assertEqual(record.json()["status"], "timeout")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/execute", {"code": self.lang.print_x, "timeout_s": 60})
        self.assertEqual(r.json()["stdout"], "42\n", "state kept")

    def test_the_execution_record_of_a_channels_execute(self):
        self.run_ok(self.lang.set_x)
        reply, _ = self.ks.execute(self.lang.print_x)
        msg_id = reply.parent_header["msg_id"]
        # Written when the cell ended; the reply may come first.
        record = wait_until(lambda: self.finished_record(msg_id), 20, "the finished record")
        self.assertEqual((record["msg_id"], record["stdout"], record["error"]), (msg_id, "42\n", None), record)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{self.kid}/executions/no-such-msg").status, 404)

    def finished_record(self, msg_id):
        r = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{msg_id}")
        record = r.json() if r.status == 200 else {}
        return record if record.get("status") == "ok" else None

    def test_taken_back_with_its_state_by_a_restarted_gateway(self):
        gw = Gateway(name=f"{self.lang.kernel}-restart", sandboxed=True, keep_kernels=True)
        gw.owns_state = False  # removed below, once both gateways on it are gone
        self.addCleanup(remove_state_dir, gw.state_dir)
        self.addCleanup(lambda: gw.stopped or gw.crash())
        kid = gw.start_kernel(self.lang.kernel, timeout=120)
        r = gw.request("POST", f"api/kernels/{kid}/execute", {"code": self.lang.set_x}, timeout=120)
        self.assertEqual(r.json()["status"], "ok", r)
        code, _ = gw.stop()
        self.assertEqual(code, 0)
        gw2 = Gateway(name=f"{self.lang.kernel}-restarted", sandboxed=True, state_dir=gw.state_dir,
                      token=gw.token)
        self.addCleanup(lambda: gw2.stopped or gw2.crash())
        self.assertEqual([k["id"] for k in gw2.request("GET", "api/kernels").json()], [kid])
        r = gw2.request("POST", f"api/kernels/{kid}/execute", {"code": self.lang.print_x}, timeout=120)
        self.assertEqual((r.json()["status"], r.json()["stdout"]), ("ok", "42\n"), r)
        ks = gw2.connect(kid)
        self.addCleanup(ks.close)
        self.assert_state_kept(ks)
        gw2.delete_kernel(kid)
        code, _ = gw2.stop()
        self.assertEqual(code, 0)

    def test_a_start_from_the_warm_pool_is_a_pool_hit(self):
        name = self.lang.kernel
        gw = Gateway("--pool", f"{name}=2", name=f"{name}-pool", sandboxed=True)
        self.addCleanup(gw.stop)
        wait_for_ready(gw, 2, kernel=name)
        before = pool_metrics(gw, name)
        kid = gw.start_kernel(name, timeout=120)
        after = pool_metrics(gw, name)
        self.assertEqual(after["claims_total"], before["claims_total"] + 1, (before, after))
        self.assertEqual(after["misses_total"], before["misses_total"], (before, after))
        ks = gw.connect(kid)
        self.addCleanup(ks.close)
        self.run_ok(self.lang.set_x, ks)
        self.assert_state_kept(ks)
        wait_for_ready(gw, 2, kernel=name)  # and it refills


def language_case(key, class_name):
    return needs_root(type(class_name, (LanguageSuite, GatewayTestCase), {"lang": LANGUAGES[key]}))


Python = language_case("python", "Python")
JavaScript = language_case("javascript", "JavaScript")
TypeScript = language_case("typescript", "TypeScript")
R = language_case("ir", "R")
Bash = language_case("bash", "Bash")


if __name__ == "__main__":
    unittest.main()
