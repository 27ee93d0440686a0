"""sandgate-shell through jupyter_client: persistent bash, streams, status, interrupts."""

import os
import signal
import tempfile
import time
import unittest

from kernel_harness import KernelSession, KernelTestCase, is_idle

INTERRUPT_BUDGET_S = 1.0
TEN_MB = 10 * 1000 * 1000


class ShellKernelTest(KernelTestCase):
    kernel_name = "bash"

    def test_kernel_info(self):
        info = self.kernel.request(self.kernel.client.kernel_info)
        self.assertEqual(info["language_info"]["name"], "bash")
        self.assertEqual(info["implementation"], "sandgate-shell")

    def test_a_comm_the_frontend_opens_is_closed(self):
        # This kernel has no comm targets: as ipykernel does for a target it
        # lacks, it answers with comm_close rather than leave the frontend
        # waiting.
        for n in range(3):
            comm_id = f"sandgate-shell-comm-{n}"
            cell = self.kernel.send_shell("comm_open", {"comm_id": comm_id, "target_name": "jupyter.widget.control",
                                                        "data": {}})
            self.kernel.wait_for(cell, is_idle)
            self.assertEqual([c["comm_id"] for c in cell.of_type("comm_close")], [comm_id])
        info = self.kernel.request(lambda: self.kernel.send_shell("comm_info_request", {}).msg_id)
        self.assertEqual(info["comms"], {})
        # Malformed comm_opens are refused by xeus and leave the kernel serving.
        for content in ({"comm_id": "x"}, {"comm_id": "y", "target_name": 7}):
            self.kernel.wait_for(self.kernel.send_shell("comm_open", content), is_idle)
        self.assertEqual(self.kernel.run("echo alive").text(), "alive\n")

    def test_cwd_and_variables_persist(self):
        self.assertOk(self.kernel.run("cd /tmp; X=1"))
        cell = self.kernel.run("echo $X; pwd")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "1\n/tmp\n")

    def test_functions_persist(self):
        self.assertOk(self.kernel.run("greet() { echo \"hello $1\"; }"))
        self.assertEqual(self.kernel.run("greet sandgate").text(), "hello sandgate\n")

    def test_stdout_and_stderr_are_separate_streams(self):
        cell = self.kernel.run("echo out; echo err >&2")
        self.assertEqual(cell.text("stdout"), "out\n")
        self.assertEqual(cell.text("stderr"), "err\n")

    def test_output_streams_while_the_command_runs(self):
        cell = self.kernel.start("echo first; sleep 1; echo second")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "first" in m["content"]["text"])
        first_seen = time.monotonic()
        self.assertIsNone(cell.reply)
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "second" in m["content"]["text"])
        self.assertGreater(time.monotonic() - first_seen, 0.5)
        self.kernel.finish(cell)
        self.assertOk(cell)

    def test_ten_megabytes_stream_in_several_chunks(self):
        cell = self.kernel.run(f"head -c {TEN_MB} /dev/zero | tr '\\0' 'a'")
        self.assertOk(cell)
        chunks = cell.streams("stdout")
        self.assertGreater(len(chunks), 10)
        self.assertEqual(sum(len(c["text"]) for c in chunks), TEN_MB)

    def test_utf8_split_across_chunks_stays_valid(self):
        cell = self.kernel.run("for i in $(seq 30000); do printf 'é€'; done")
        self.assertEqual(cell.text(), "é€" * 30000)

    def test_nonzero_exit_is_an_error_with_the_status(self):
        cell = self.kernel.run("echo before; (exit 3)")
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual(cell.reply["ename"], "ExitStatus")
        self.assertEqual(cell.reply["evalue"], "3")
        self.assertEqual(cell.of_type("error")[0]["evalue"], "3")
        self.assertEqual(cell.text(), "before\n")
        self.assertOk(self.kernel.run("false; true"))

    def interrupt_cell(self, interrupt):
        self.assertOk(self.kernel.run("KEPT=yes"))
        cell = self.kernel.start("echo started; sleep 100; echo not-reached")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
        sent = time.monotonic()
        interrupt()
        self.kernel.finish(cell, timeout=10)
        self.assertLess(time.monotonic() - sent, INTERRUPT_BUDGET_S)
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("ExitStatus", "130"))
        self.assertNotIn("not-reached", cell.text())
        self.assertEqual(self.kernel.run("echo $KEPT").text(), "yes\n")

    def test_sigint_interrupts_sleep(self):
        self.interrupt_cell(lambda: self.kernel.manager.signal_kernel(signal.SIGINT))

    def test_interrupt_request_interrupts_sleep(self):
        self.interrupt_cell(self.kernel.interrupt_by_message)

    def test_interrupt_stops_a_shell_loop(self):
        cell = self.kernel.start("echo started; while true; do :; done; echo not-reached")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
        self.kernel.manager.interrupt_kernel()
        self.kernel.finish(cell, timeout=10)
        self.assertEqual(cell.reply["evalue"], "130")
        self.assertNotIn("not-reached", cell.text())

    def test_idle_interrupts_are_harmless(self):
        for _ in range(3):
            self.kernel.manager.signal_kernel(signal.SIGINT)
        self.kernel.interrupt_by_message()
        self.assertEqual(self.kernel.run("echo fine").text(), "fine\n")

    def test_background_job_does_not_hold_the_cell(self):
        started = time.monotonic()
        cell = self.kernel.run("sleep 30 & BG=$!; echo bg")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "bg\n")
        self.assertLess(time.monotonic() - started, 10)
        self.assertOk(self.kernel.run("kill $BG; wait $BG 2>/dev/null; true"))

    def test_commands_do_not_read_the_kernel_pipe(self):
        cell = self.kernel.run("cat; echo done")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "done\n")

    def test_complete_commands_files_and_variables(self):
        reply = self.kernel.request(lambda: self.kernel.client.complete("ech", 3))
        self.assertIn("echo", reply["matches"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (0, 3))
        reply = self.kernel.request(lambda: self.kernel.client.complete("ls /us", 6))
        self.assertIn("/usr/", reply["matches"])
        self.assertEqual(reply["cursor_start"], 3)
        self.assertOk(self.kernel.run("SANDGATE_COMPLETE_ME=1"))
        reply = self.kernel.request(lambda: self.kernel.client.complete("echo $SANDGATE_COMP", 19))
        self.assertIn("$SANDGATE_COMPLETE_ME", reply["matches"])

    def test_is_complete(self):
        cases = {
            "echo ok": "complete",
            "if true; then": "incomplete",
            "for i in 1 2; do echo $i": "incomplete",
            "echo 'unterminated": "incomplete",
            "echo continued \\": "incomplete",
            "fi": "invalid",
        }
        for code, expected in cases.items():
            reply = self.kernel.request(lambda code=code: self.kernel.client.is_complete(code))
            self.assertEqual(reply["status"], expected, code)


class ShellExitTest(unittest.TestCase):
    def test_exit_starts_a_new_shell(self):
        kernel = KernelSession("bash")
        try:
            cell = kernel.run("exit 4")
            self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("ShellExited", "4"))
            self.assertEqual(kernel.run("echo alive").text(), "alive\n")
            reply = kernel.control_reply(kernel.client.shutdown())
            self.assertEqual(reply["msg_type"], "shutdown_reply")
            self.assertEqual(kernel.manager.provisioner.process.wait(timeout=10), 0)
        finally:
            kernel.client.stop_channels()
            kernel.manager.cleanup_resources()


class BusyShutdownTest(unittest.TestCase):
    def test_shutdown_request_while_a_cell_runs(self):
        kernel = KernelSession("bash")
        try:
            cell = kernel.start('echo started; sleep 100')
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
        kernel = KernelSession("bash", argv_prefix=closing)
        try:
            cell = kernel.run("echo out; echo err >&2; cat; echo end")
            self.assertEqual(cell.reply["status"], "ok", cell.reply)
            self.assertEqual(cell.text("stdout"), "out\nend\n")
            self.assertEqual(cell.text("stderr"), "err\n")
        finally:
            kernel.close()


class IpcTransportTest(unittest.TestCase):
    def test_ipc_sockets_in_a_long_directory(self):
        # xeus 2.4.1 alone fails with "Invalid argument" past ~23 characters of ip.
        with tempfile.TemporaryDirectory(prefix="sandgate-kernel-test-with-a-long-run-directory-") as run_dir:
            kernel = KernelSession("bash", ipc_prefix=os.path.join(run_dir, "kernel"))
            try:
                cell = kernel.run("echo ipc-ok")
                self.assertEqual(cell.text(), "ipc-ok\n")
                self.assertTrue(os.path.exists(os.path.join(run_dir, "kernel-1")))
                # The kernel's working directory is not the socket directory.
                pwd = kernel.run("pwd").text().strip()
                self.assertNotEqual(pwd, run_dir)
            finally:
                kernel.close()


if __name__ == "__main__":
    unittest.main()
