"""Start a Sandgate kernel with jupyter_client and run cells with deadlines.

Every wait is bounded: a test fails with a message naming what it waited for
instead of hanging. The kernelspecs come from JUPYTER_PATH (set by CTest to
<build>/share/jupyter).
"""

import os
import queue
import struct
import time
import unittest
import warnings

from jupyter_client.manager import KernelManager

STARTUP_TIMEOUT_S = 60
CELL_TIMEOUT_S = 60


class SpecKernelManager(KernelManager):
    """A KernelManager that starts the kernelspec it is asked for.

    jupyter_client silently replaces the name "python" with "python3"
    (ipykernel); Sandgate's Python kernelspec is called "python".
    """

    def _kernel_name_changed(self, change):  # replaces the @observe handler
        self._kernel_spec = None


class Cell:
    """What one execute_request produced."""

    def __init__(self, msg_id):
        self.msg_id = msg_id
        self.iopub = []  # iopub messages whose parent is the request
        self.reply = None  # execute_reply content

    def streams(self, name=None):
        return [m["content"] for m in self.iopub
                if m["msg_type"] == "stream" and (name is None or m["content"]["name"] == name)]

    def text(self, name="stdout"):
        return "".join(s["text"] for s in self.streams(name))

    def of_type(self, msg_type):
        return [m["content"] for m in self.iopub if m["msg_type"] == msg_type]


class KernelSession:
    """One running kernel plus a blocking client."""

    def __init__(self, kernel_name, extra_arguments=None, ipc_prefix=None, env=None, argv_prefix=None, cwd=None):
        with warnings.catch_warnings():  # traitlets dislikes the _<name>_changed override
            warnings.simplefilter("ignore", DeprecationWarning)
            transport = {"transport": "ipc", "ip": ipc_prefix} if ipc_prefix else {}
            self.manager = SpecKernelManager(kernel_name=kernel_name, **transport)
        assert self.manager.kernel_name == kernel_name
        if argv_prefix:  # e.g. a wrapper that changes how the kernel is launched
            spec = self.manager.kernel_spec
            spec.argv = list(argv_prefix) + spec.argv
        kwargs = {"env": dict(os.environ, **env)} if env else {}
        if cwd:  # the kernel's working directory (default: the test's)
            kwargs["cwd"] = cwd
        self.manager.start_kernel(extra_arguments=extra_arguments or [], **kwargs)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=STARTUP_TIMEOUT_S)

    def close(self):
        try:
            if self.manager.is_alive():
                self.manager.shutdown_kernel(now=False)
        finally:
            self.client.stop_channels()

    # -- executing ---------------------------------------------------------
    def start(self, code, allow_stdin=False):
        msg_id = self.client.execute(code, allow_stdin=allow_stdin, stop_on_error=False)
        return Cell(msg_id)

    def next_iopub(self, cell, deadline):
        """Next iopub message of the cell (others are skipped)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for iopub of {cell.msg_id}")
            try:
                msg = self.client.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == cell.msg_id:
                cell.iopub.append(msg)
                return msg

    def wait_for(self, cell, predicate, timeout=CELL_TIMEOUT_S):
        """Collects iopub until predicate(msg) holds; returns that message."""
        deadline = time.monotonic() + timeout
        for msg in cell.iopub:
            if predicate(msg):
                return msg
        while True:
            msg = self.next_iopub(cell, deadline)
            if predicate(msg):
                return msg

    def take_iopub_ready(self, cell):
        """Collects the cell's iopub messages that have already arrived."""
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=0)
            except queue.Empty:
                return
            if msg["parent_header"].get("msg_id") == cell.msg_id:
                cell.iopub.append(msg)

    def finish(self, cell, timeout=CELL_TIMEOUT_S):
        """Waits for the reply and for the idle status; returns the cell.
        Reads iopub meanwhile, as a Jupyter client does: the kernel waits for
        a subscriber that stops reading rather than drop its output."""
        deadline = time.monotonic() + timeout
        while cell.reply is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for execute_reply of {cell.msg_id}")
            self.take_iopub_ready(cell)
            try:
                msg = self.client.get_shell_msg(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == cell.msg_id:
                cell.reply = msg["content"]
        self.wait_for(cell, is_idle, timeout=max(deadline - time.monotonic(), 1))
        return cell

    def run(self, code, timeout=CELL_TIMEOUT_S):
        return self.finish(self.start(code), timeout=timeout)

    def send_shell(self, msg_type, content):
        """Sends a frontend message of any type on shell; its iopub messages
        collect in the returned Cell (wait_for(cell, is_idle) reads them)."""
        msg = self.client.session.msg(msg_type, content)
        self.client.shell_channel.send(msg)
        return Cell(msg["header"]["msg_id"])

    # -- control -----------------------------------------------------------
    def interrupt_by_message(self):
        msg = self.client.session.msg("interrupt_request", {})
        self.client.control_channel.send(msg)
        reply = self.control_reply(msg["header"]["msg_id"])
        assert reply["msg_type"] == "interrupt_reply", reply["msg_type"]

    def control_reply(self, msg_id, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for the control reply to {msg_id}")
            msg = self.client.get_control_msg(timeout=left)
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def request(self, send, timeout=10):
        """Sends a shell request with send() and returns the matching reply content."""
        msg_id = send()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for the reply to {msg_id}")
            msg = self.client.get_shell_msg(timeout=left)
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]


def is_idle(msg):
    return msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"


class KernelTestCase(unittest.TestCase):
    """One kernel per test class (start-up costs about a second)."""

    kernel_name = None
    extra_arguments = None

    @classmethod
    def setUpClass(cls):
        cls.kernel = KernelSession(cls.kernel_name, cls.extra_arguments)

    @classmethod
    def tearDownClass(cls):
        cls.kernel.close()

    def assertOk(self, cell):
        self.assertEqual(cell.reply["status"], "ok", cell.reply)


def parse_journal(data):
    """(seq, frames) records of one journal file (jupyter_protocol/journal.hpp)."""
    out, pos = [], 0
    while pos + 16 <= len(data):
        magic, count, seq = struct.unpack_from("<IIQ", data, pos)
        if magic != 0x314A4753:
            break
        pos += 16
        frames = []
        for _ in range(count):
            (length,) = struct.unpack_from("<I", data, pos)
            frames.append(data[pos + 4:pos + 4 + length])
            pos += 4 + length
        out.append((seq, frames))
    return out
