"""The iopub journal of sandgate-python and sandgate-shell, through
jupyter_client: what a kernel publishes from its first message on, even
when many kernels start at once on a busy machine."""

import json
import os
import shutil
import tempfile
import threading
import unittest

from kernel_harness import KernelSession, parse_journal

KERNELS_AT_ONCE = 12


def journaled_messages(base):
    """(seq, header, parent_header, content) of both journal files, in order."""
    records = []
    for suffix in (".0", ".1"):
        if os.path.exists(base + suffix):
            with open(base + suffix, "rb") as f:
                records += parse_journal(f.read())
    out = []
    for seq, frames in sorted(records):
        i = frames.index(b"<IDS|MSG>")
        out.append((seq, json.loads(frames[i + 2]), json.loads(frames[i + 3]), json.loads(frames[i + 5])))
    return out


class FirstMessagesTest(unittest.TestCase):
    """xeus's publishing threads reach the client-facing socket through an
    inproc PUB socket, which drops what it sends before its subscriber's
    subscription reached it; on a loaded machine that was a kernel's first
    messages, for every client and for the journal."""

    def kernels_started_at_once(self, kernel_name, code):
        run_dir = tempfile.mkdtemp(prefix="sandgate-journal-")
        self.addCleanup(shutil.rmtree, run_dir, True)
        results, errors = [None] * KERNELS_AT_ONCE, []

        def one(i):
            try:
                base = os.path.join(run_dir, f"k{i}.journal")
                kernel = KernelSession(kernel_name, env={"SANDGATE_KERNEL_JOURNAL": base})
                try:
                    cell = kernel.run(code)
                finally:
                    kernel.close()
                results[i] = (cell, journaled_messages(base))
            except Exception as e:  # reported below, with the kernel's number
                errors.append(f"kernel {i}: {e!r}")

        threads = [threading.Thread(target=one, args=(i,)) for i in range(KERNELS_AT_ONCE)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        return results

    def check(self, kernel_name, code, expected_text):
        for i, (cell, journal) in enumerate(self.kernels_started_at_once(kernel_name, code)):
            with self.subTest(kernel=i):
                self.assertEqual(cell.reply["status"], "ok", cell.reply)
                self.assertEqual(cell.text(), expected_text)
                seqs = [seq for seq, _, _, _ in journal]
                self.assertEqual(seqs, list(range(1, len(seqs) + 1)), "a gap in the sequence")
                # The kernel's first message is its starting status.
                self.assertEqual(journal[0][1]["msg_type"], "status")
                self.assertEqual(journal[0][3], {"execution_state": "starting"})
                # Every message of the cell the client got, in the same
                # order, up to its idle status (xeus gives the messages of
                # the shutdown that follows the same parent).
                got = [m["header"]["msg_id"] for m in cell.iopub]
                journaled = [h["msg_id"] for _, h, parent, _ in journal if parent.get("msg_id") == cell.msg_id]
                self.assertEqual(journaled[:len(got)], got)

    def test_python_kernels_started_at_once_journal_from_their_first_message(self):
        self.check("python", "print('first')", "first\n")

    def test_bash_kernels_started_at_once_journal_from_their_first_message(self):
        self.check("bash", "echo first", "first\n")


if __name__ == "__main__":
    unittest.main()
