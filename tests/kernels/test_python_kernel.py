"""sandgate-python through jupyter_client: state, interrupts, errors, rich output."""

import base64
import datetime
import os
import signal
import tempfile
import time
import unittest

from kernel_harness import KernelSession, KernelTestCase, parse_journal

# Tells a cell the interrupt ended from one that ran its 100 s; how fast an
# interrupt acts is a benchmark's business, not a test's (a loaded machine
# took 1.7 s).
INTERRUPT_BUDGET_S = 10.0


class PythonKernelTest(KernelTestCase):
    kernel_name = "python"

    def test_kernel_info(self):
        info = self.kernel.request(self.kernel.client.kernel_info)
        self.assertEqual(info["language_info"]["name"], "python", info)
        self.assertEqual(info["implementation"], "sandgate-python", info)

    def test_message_dates_are_in_order_and_within_the_cell(self):
        # Dates with unpadded microseconds (".13694" for 0.013694 s) read back
        # and forth within a second; the kernel writes six digits.
        before = datetime.datetime.now(datetime.timezone.utc)
        cell = self.kernel.run("import time\nfor i in range(40):\n    print(i, flush=True)\n    time.sleep(0.007)")
        after = datetime.datetime.now(datetime.timezone.utc)
        self.assertOk(cell)
        dates = [m["header"]["date"] for m in cell.iopub]
        self.assertGreater(len(dates), 40)
        self.assertEqual(dates, sorted(dates), dates)
        self.assertGreaterEqual(dates[0], before - datetime.timedelta(milliseconds=1))
        self.assertLessEqual(dates[-1], after)

    def test_state_persists_across_cells(self):
        self.assertOk(self.kernel.run("import math\nstate_value = 41"))
        cell = self.kernel.run("state_value + 1 + int(math.sqrt(0))")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"], "42")

    def test_stdout_and_stderr_streams(self):
        cell = self.kernel.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
        self.assertEqual(cell.text("stdout"), "out\n")
        self.assertEqual(cell.text("stderr"), "err\n")
        # Held text goes out before a write to the other stream: the order is kept.
        cell = self.kernel.run("import sys\nprint('o1')\nprint('e1', file=sys.stderr)\nprint('o2')")
        self.assertEqual([(s["name"], s["text"]) for s in cell.streams()],
                         [("stdout", "o1\n"), ("stderr", "e1\n"), ("stdout", "o2\n")])

    def test_print_sends_whole_lines(self):
        cell = self.kernel.run("print('a', 'b', 'c')")
        self.assertEqual([s["text"] for s in cell.streams()], ["a b c\n"])
        cell = self.kernel.run("for i in range(1000):\n    print(i)")
        self.assertEqual(cell.text(), "".join(f"{i}\n" for i in range(1000)))
        self.assertLessEqual(len(cell.streams()), 1000)
        # Lines printed together travel together, not one message each.
        cell = self.kernel.run("for i in range(20000):\n    print(i)")
        self.assertEqual(cell.text(), "".join(f"{i}\n" for i in range(20000)))
        self.assertLess(len(cell.streams()), 2000)

    def test_a_print_flood_loses_nothing(self):
        # Faster than a Python client reads: the kernel must wait for it, not
        # drop what its iopub queue cannot hold.
        cell = self.kernel.run("for i in range(50000):\n    print(i)", timeout=300)
        self.assertOk(cell)
        self.assertEqual(cell.text(), "".join(f"{i}\n" for i in range(50000)))

    def test_stream_object_behaves_like_a_text_stream(self):
        cell = self.kernel.run(
            "import io, sys\n"
            "try:\n    sys.stdout.fileno()\nexcept io.UnsupportedOperation:\n    print('no fd')\n"
            "print(sys.stdout.isatty(), sys.stdout.closed, sys.stdout.encoding)\n"
            "sys.stdout.write('x'); sys.stdout.flush()")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "no fd\nFalse False utf-8\nx")

    def test_partial_line_is_sent_before_a_display_and_at_cell_end(self):
        cell = self.kernel.run(
            "from IPython.display import display\nprint('before', end='')\n"
            "display({'text/plain': 'shown'}, raw=True)\nprint('tail', end='')")
        kinds = [(m["msg_type"], m["content"].get("text") or m["content"].get("data", {}).get("text/plain"))
                 for m in cell.iopub if m["msg_type"] in ("stream", "display_data")]
        self.assertEqual(kinds, [("stream", "before"), ("display_data", "shown"), ("stream", "tail")])

    def test_error_name_is_the_class_name(self):
        cell = self.kernel.run("1/0")
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual(cell.reply["ename"], "ZeroDivisionError")
        self.assertEqual(cell.reply["evalue"], "division by zero")
        self.assertTrue(cell.reply["traceback"])
        error = cell.of_type("error")[0]
        self.assertEqual(error["ename"], "ZeroDivisionError")

        cell = self.kernel.run("class MyError(Exception): pass\nraise MyError('boom')")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("MyError", "boom"))

        cell = self.kernel.run("def broken(:\n  pass")
        self.assertEqual(cell.reply["ename"], "SyntaxError")

    def interrupt_cell(self, code, interrupt):
        self.assertOk(self.kernel.run("kept = 'still here'"))
        cell = self.kernel.start(f"print('started', flush=True)\n{code}")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
        sent = time.monotonic()
        interrupt()
        # One interrupt, by message or by a bare SIGINT to the process: the
        # kernel sends SIGINT again until Python has acted on it (CPython
        # defers one that lands between print() and time.sleep()'s syscall).
        self.kernel.finish(cell, timeout=INTERRUPT_BUDGET_S + 2)
        elapsed = time.monotonic() - sent
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual(cell.reply["ename"], "KeyboardInterrupt")
        self.assertLess(elapsed, INTERRUPT_BUDGET_S)
        after = self.kernel.run("kept")
        self.assertOk(after)
        self.assertEqual(after.of_type("execute_result")[0]["data"]["text/plain"], "'still here'")

    def signal_interrupt(self):
        self.kernel.manager.signal_kernel(signal.SIGINT)

    def test_sigint_interrupts_busy_loop(self):
        self.interrupt_cell("while True: pass", self.signal_interrupt)

    def test_sigint_interrupts_sleep(self):
        self.interrupt_cell("import time\ntime.sleep(100)", self.signal_interrupt)

    def test_one_interrupt_request_raises_one_keyboard_interrupt(self):
        # A cell that catches the interrupt and cleans up is not interrupted again.
        for _ in range(5):
            cell = self.kernel.start(
                "import time\ncaught = 0\ntry:\n    print('started', flush=True)\n    time.sleep(100)\n"
                "except KeyboardInterrupt:\n    caught += 1\n    time.sleep(0.5)\nprint('cleaned up', caught)")
            self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
            self.kernel.interrupt_by_message()
            self.kernel.finish(cell, timeout=INTERRUPT_BUDGET_S + 1)
            self.assertOk(cell)
            self.assertIn("cleaned up 1\n", "".join(m["text"] for m in cell.of_type("stream")))

    def test_interrupt_request_interrupts_busy_loop(self):
        self.interrupt_cell("while True: pass", self.kernel.interrupt_by_message)

    def test_interrupt_request_interrupts_sleep(self):
        self.interrupt_cell("import time\ntime.sleep(100)", self.kernel.interrupt_by_message)

    def test_kernel_manager_interrupt(self):
        # Whatever interrupt_mode the kernelspec names, the standard client path works.
        self.interrupt_cell("import time\ntime.sleep(100)", self.kernel.manager.interrupt_kernel)

    def test_idle_interrupts_are_harmless(self):
        self.assertOk(self.kernel.run("idle_value = 7"))
        for _ in range(3):
            self.signal_interrupt()
        self.kernel.interrupt_by_message()
        info = self.kernel.request(self.kernel.client.kernel_info)
        self.assertEqual(info["status"], "ok")
        cell = self.kernel.run("import time\ntime.sleep(0.2)\nidle_value * 6")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"], "42")

    def test_matplotlib_figure_without_show(self):
        cell = self.kernel.run(
            "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('inline')\n"
            "None")
        self.assertOk(cell)
        displays = [d for d in cell.of_type("display_data") if "image/png" in d["data"]]
        self.assertEqual(len(displays), 1, cell.iopub)
        png = base64.b64decode(displays[0]["data"]["image/png"])
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n"))
        # The figure was closed: the next cell shows nothing.
        cell = self.kernel.run("len(plt.get_fignums())")
        self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"], "0")
        self.assertFalse(cell.of_type("display_data"))

    def test_matplotlib_show_displays_once(self):
        cell = self.kernel.run(
            "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\n"
            "plt.show()")
        self.assertOk(cell)
        self.assertEqual(cell.text("stderr"), "")
        pngs = [d for d in cell.of_type("display_data") if "image/png" in d["data"]]
        self.assertEqual(len(pngs), 1)

    def test_dataframe_has_html(self):
        cell = self.kernel.run("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})")
        self.assertOk(cell)
        data = cell.of_type("execute_result")[0]["data"]
        self.assertIn("text/plain", data)
        self.assertIn("<table", data["text/html"])

    def test_display_function(self):
        cell = self.kernel.run("from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))")
        self.assertEqual(cell.of_type("display_data")[0]["data"]["text/html"], "<b>hi</b>")

    def test_input_over_stdin(self):
        cell = self.kernel.start("answer = input('name? ')\nprint('hello', answer)", allow_stdin=True)
        request = self.kernel.client.get_stdin_msg(timeout=10)
        self.assertEqual(request["msg_type"], "input_request")
        self.assertEqual(request["content"]["prompt"], "name? ")
        self.kernel.client.input("sandgate")
        self.kernel.finish(cell)
        self.assertOk(cell)
        self.assertIn("hello sandgate", cell.text())

    def test_complete_and_is_complete(self):
        reply = self.kernel.request(lambda: self.kernel.client.complete("import o", 8))
        self.assertIn("os", reply["matches"])
        reply = self.kernel.request(lambda: self.kernel.client.is_complete("for i in range(3):"))
        self.assertEqual(reply["status"], "incomplete")


class DeferredImportsTest(unittest.TestCase):
    """jedi and the terminal shell load on first use, and then as if eager."""

    def test_loaded_on_first_use_as_if_imported_at_start(self):
        kernel = KernelSession("python")
        try:
            loaded = "('jedi.api', 'parso', 'prompt_toolkit', 'IPython.terminal.embed')"
            cell = kernel.run(f"import sys\nsorted(m for m in {loaded} if m in sys.modules)")
            self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"], "[]")
            # Only jedi evaluates a call while completing an attribute.
            reply = kernel.request(lambda: kernel.client.complete("str(1).upp", 10))
            self.assertEqual((reply["matches"], reply["cursor_start"]), (["upper"], 7), reply)
            cell = kernel.run(
                "import IPython, IPython.core.completer as c, jedi\n"
                "from IPython.terminal.embed import embed\n"
                "(jedi is c.jedi, c.JEDI_INSTALLED, get_ipython().Completer.use_jedi,\n"
                " jedi.settings.case_insensitive_completion, IPython.embed is embed, type(jedi).__name__)")
            self.assertOk(cell)
            self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"],
                             "(True, True, True, False, True, 'module')")
        finally:
            kernel.close()

    def assertOk(self, cell):
        self.assertEqual(cell.reply["status"], "ok", cell.iopub)


class HistoryTest(unittest.TestCase):
    """The session's history is whole and searchable, and no file holds it."""

    def test_history_lives_in_memory_and_works(self):
        with tempfile.TemporaryDirectory() as home:
            kernel = KernelSession("python", env={"HOME": home, "IPYTHONDIR": os.path.join(home, ".ipython")})
            try:
                for i in range(3):
                    self.assertEqual(kernel.run(f"marker_{i} = {i}").reply["status"], "ok")
                cell = kernel.run("%history -n -g marker_")
                self.assertEqual(cell.reply["status"], "ok", cell.iopub)
                for i in range(3):
                    self.assertIn(f"marker_{i} = {i}", cell.text())
                cell = kernel.run("h = get_ipython().history_manager\n"
                                  "(str(h.hist_file), getattr(h, 'save_thread', None), _i2, In[3])")
                self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"],
                                 "(':memory:', None, 'marker_1 = 1', 'marker_2 = 2')")
                written = [os.path.join(d, f) for d, _, files in os.walk(home) for f in files
                           if f.startswith("history")]
                self.assertEqual(written, [])
            finally:
                kernel.close()


class PreloadTest(unittest.TestCase):
    def test_preload_imports_before_ready(self):
        kernel = KernelSession("python", ["--preload", "json,decimal,no_such_module_xyz"])
        try:
            cell = kernel.run("import sys\n('json' in sys.modules, 'decimal' in sys.modules)")
            self.assertEqual(cell.of_type("execute_result")[0]["data"]["text/plain"], "(True, True)")
        finally:
            kernel.close()


class AggBackendTest(unittest.TestCase):
    def test_show_under_mplbackend_agg_displays_without_warning(self):
        # Sandbox policies set MPLBACKEND=Agg for headless use.
        kernel = KernelSession("python", env={"MPLBACKEND": "Agg"})
        try:
            cell = kernel.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
            self.assertEqual(cell.reply["status"], "ok", cell.reply)
            self.assertEqual(cell.text("stderr"), "")
            pngs = [d for d in cell.of_type("display_data") if "image/png" in d["data"]]
            self.assertEqual(len(pngs), 1)
        finally:
            kernel.close()


class SignalTimerTest(unittest.TestCase):
    """A cell's own signal handlers (a SIGALRM timer, as code that limits its
    own run time sets) must not kill the kernel: xeus 2.4.1 ended the
    process when such a signal interrupted its ZeroMQ calls once idle."""

    def test_a_sigalrm_timer_set_by_a_cell_leaves_the_kernel_serving(self):
        kernel = KernelSession("python")
        try:
            cell = kernel.run("import signal\nticks = 0\ndef tick(*_):\n    global ticks\n    ticks += 1\n"
                              "signal.signal(signal.SIGALRM, tick)\n"
                              "signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\n"
                              "for i in range(50):\n    print(i, flush=True)")
            self.assertEqual(cell.reply["status"], "ok", cell.reply)
            self.assertEqual(cell.text(), "".join(f"{i}\n" for i in range(50)))
            # Idle between requests, the timer firing all the while (every
            # xeus thread takes signals, and the shell loop waits in a poll).
            for _ in range(100):
                self.assertEqual(kernel.request(kernel.client.kernel_info)["status"], "ok")
            cell = kernel.run("import time\nstart = ticks\ntime.sleep(0.2)\n"
                              "signal.setitimer(signal.ITIMER_REAL, 0)\nprint(ticks > start, ticks > 100)")
            self.assertEqual(cell.reply["status"], "ok", cell.reply)
            self.assertEqual(cell.text(), "True True\n")
            self.assertTrue(kernel.manager.is_alive())
        finally:
            kernel.close()


class ShutdownTest(unittest.TestCase):
    def test_shutdown_request_exits_cleanly(self):
        kernel = KernelSession("python")
        try:
            self.assertEqual(kernel.run("import threading\nx = 1").reply["status"], "ok")
            reply = kernel.control_reply(kernel.client.shutdown())
            self.assertEqual(reply["msg_type"], "shutdown_reply")
            process = kernel.manager.provisioner.process
            self.assertEqual(process.wait(timeout=10), 0)
        finally:
            kernel.client.stop_channels()
            kernel.manager.cleanup_resources()


class BusyShutdownTest(unittest.TestCase):
    def test_shutdown_request_while_a_cell_runs(self):
        kernel = KernelSession("python")
        try:
            cell = kernel.start("import time\nprint('started', flush=True)\ntime.sleep(100)")
            kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
            reply = kernel.control_reply(kernel.client.shutdown())
            self.assertEqual(reply["msg_type"], "shutdown_reply")
            self.assertEqual(kernel.manager.provisioner.process.wait(timeout=10), 0)
        finally:
            kernel.client.stop_channels()
            kernel.manager.cleanup_resources()


class ClosedStandardStreamsTest(unittest.TestCase):
    def test_kernel_started_with_fds_0_1_2_closed(self):
        closing = ["/bin/bash", "-c", 'exec 0<&- 1>&- 2>&-; exec "$0" "$@"']
        kernel = KernelSession("python", argv_prefix=closing)
        try:
            cell = kernel.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
            self.assertEqual(cell.reply["status"], "ok", cell.reply)
            self.assertEqual((cell.text("stdout"), cell.text("stderr")), ("out\n", "err\n"))
        finally:
            kernel.close()


class IopubJournalTest(unittest.TestCase):
    def test_what_the_kernel_publishes_is_journaled_in_order(self):
        with tempfile.TemporaryDirectory(prefix="sandgate-journal-") as run_dir:
            base = os.path.join(run_dir, "k.journal")
            kernel = KernelSession("python", env={"SANDGATE_KERNEL_JOURNAL": base,
                                                  "SANDGATE_KERNEL_JOURNAL_BYTES": str(64 * 1024)})
            try:
                # Cells do not see the journal's settings.
                cell = kernel.run("import os\nprint(sorted(k for k in os.environ if k.startswith('SANDGATE')))")
                self.assertEqual(cell.text(), "[]\n")
                # 200 KiB of output in a 64 KiB budget: the two files take turns.
                cell = kernel.run("for i in range(400):\n    print(f'{i:04d}', 'x' * 500, flush=True)")
                self.assertEqual(cell.reply["status"], "ok", cell.reply)
                last = cell.msg_id
            finally:
                kernel.close()
            records = []
            for suffix in (".0", ".1"):
                with open(base + suffix, "rb") as f:
                    data = f.read()
                self.assertLessEqual(len(data), 32 * 1024 + 1024, suffix)
                records += parse_journal(data)
            seqs = sorted(seq for seq, _ in records)
            self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))), "a gap in the sequence")
            # The newest messages are there, as the kernel sent them: the
            # last cell's last line, then its idle status.
            cells = [frames for _, frames in sorted(records)
                     if last.encode() in frames[frames.index(b"<IDS|MSG>") + 3]]
            contents = [frames[frames.index(b"<IDS|MSG>") + 5].replace(b" ", b"") for frames in cells]
            self.assertIn(b'"execution_state":"idle"', contents[-1])
            self.assertIn(b"0399", b"".join(contents[-3:]))


class IpcTransportTest(unittest.TestCase):
    def test_ipc_sockets_in_a_long_directory(self):
        # xeus 2.4.1 alone fails with "Invalid argument" past ~23 characters of ip.
        with tempfile.TemporaryDirectory(prefix="sandgate-kernel-test-with-a-long-run-directory-") as run_dir:
            kernel = KernelSession("python", ipc_prefix=os.path.join(run_dir, "kernel"))
            try:
                cell = kernel.run("print('ipc-ok')")
                self.assertEqual(cell.text(), "ipc-ok\n")
                self.assertTrue(os.path.exists(os.path.join(run_dir, "kernel-1")))
                # The kernel's working directory is not the socket directory.
                pwd = kernel.run("import os; print(os.getcwd())").text().strip()
                self.assertNotEqual(pwd, run_dir)
            finally:
                kernel.close()


if __name__ == "__main__":
    unittest.main()
