"""A gateway that stops or is killed leaves its sandboxes running; the next
gateway on the same state dir takes them back from the registry: same ids,
variables, files, TTLs, metadata and /api/sessions records (with their
owners). What ended while no gateway ran answers
404 with its reason; a corrupt registry is set aside without touching the
sandboxes it described. Needs root (as CI runs)."""

import datetime
import hashlib
import json
import os
import signal
import socket
import sqlite3
import tempfile
import time
import unittest
import uuid

from sandgate_fixture import Gateway, remove_state_dir, result_text, wait_until


def stored_execution(state_dir, kernel_id, msg_id):
    """The record as the gateway's registry holds it (read-only), or None."""
    db = sqlite3.connect(f"file:{os.path.join(state_dir, 'registry.db')}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT record FROM executions WHERE kernel_id = ? AND msg_id = ?",
                         (kernel_id, msg_id)).fetchone()
        return row and row[0]
    finally:
        db.close()


def stored_session_ids(state_dir):
    """The ids of the /api/sessions records the gateway's registry holds (read-only)."""
    db = sqlite3.connect(f"file:{os.path.join(state_dir, 'registry.db')}?mode=ro", uri=True, timeout=5)
    try:
        return sorted(row[0] for row in db.execute("SELECT id FROM sessions"))
    finally:
        db.close()


def cmdline_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def sandbox_host_uids(supervisor_pids):
    """The host uids that the sandboxes of these supervisors map to (from
    their inner processes' uid_map)."""
    uids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                ppid = int(next(line for line in f if line.startswith("PPid:")).split()[1])
            if ppid not in supervisor_pids:
                continue
            with open(f"/proc/{pid}/uid_map") as f:
                for line in f:
                    inside, outside, count = map(int, line.split())
                    if (inside, outside) != (0, 0):
                        uids |= set(range(outside, outside + min(count, 65536)))
        except (OSError, StopIteration, ValueError):
            continue
    return uids


def workspace_of(gw):
    """The workspace of the gateway's only sandbox, through its supervisor (pid 1 inside)."""
    return next(f"/proc/{p}/root/workspace" for p in gw.kernel_pids()
                if os.path.isdir(f"/proc/{p}/root/workspace"))


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class GatewayRestart(unittest.TestCase):
    def start(self, *args, **kw):
        gw = Gateway(*args, name=self.id().rsplit(".", 1)[-1], sandboxed=True, keep_kernels=True, **kw)
        if "state_dir" not in kw:
            gw.owns_state = False  # the test removes it once every gateway on it is gone
            self.addCleanup(remove_state_dir, gw.state_dir)
        self.addCleanup(lambda: gw.stopped or gw.crash())
        return gw

    def restart(self, old, *args):
        return self.start(*args, state_dir=old.state_dir, token=old.token)

    def ok(self, r, status=200):
        self.assertEqual(r.status, status, r)
        return r.json() if r.body else None

    def run_code(self, gw, kid, code):
        rec = self.ok(gw.request("POST", f"api/kernels/{kid}/execute", {"code": code}, timeout=120))
        self.assertEqual(rec["status"], "ok", rec)
        return rec

    def test_kill_9_leaves_everything_running_for_the_next_gateway(self):
        gw = self.start()
        sb = self.ok(gw.request("POST", "api/sandboxes", {"ttl_s": 900, "metadata": {"task": "restart"}},
                                timeout=60), 201)
        kid = self.ok(gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": sb["id"]},
                                 timeout=120), 201)["id"]
        self.run_code(gw, kid, "x = 41")
        self.assertEqual(gw.request("PUT", f"api/sandboxes/{sb['id']}/files/notes/a.txt", raw=b"kept\n").status,
                         201)
        # A Kernel Gateway API kernel, in a sandbox of its own.
        kg = self.ok(gw.request("POST", "api/kernels", {"name": "python"}, timeout=120), 201)["id"]
        self.run_code(gw, kg, "y = 'also kept'")
        before = {s["id"]: s for s in self.ok(gw.request("GET", "api/sandboxes"))}
        supervisors = gw.kernel_pids()
        self.assertTrue(supervisors)
        # An execute over the WebSocket: its record is kept in the registry.
        ws = gw.connect(kid, v1=True)
        reply, _ = ws.execute("print('recorded'); 6 * 7")
        msg_id = reply.parent_header["msg_id"]
        ws.close()
        # The finished record, not the running row written when it began.
        wait_until(lambda: json.loads(stored_execution(gw.state_dir, kid, msg_id) or '{"status": "running"}')
                   ["status"] == "ok", 20, "the finished record to be written")

        gw.crash()
        time.sleep(0.5)
        self.assertTrue(all(alive(p) for p in supervisors), "a sandbox died with the gateway")

        gw2 = self.restart(gw)
        # Listed at once, even before their sandboxes answered.
        self.assertEqual({k["id"] for k in self.ok(gw2.request("GET", "api/kernels"))}, {kid, kg})
        ks = gw2.connect(kid, v1=True)
        self.addCleanup(ks.close)
        reply, iopub = ks.execute("x + 1", timeout=60)
        self.assertEqual(reply.content["status"], "ok")
        self.assertEqual(result_text(iopub), "42")
        self.assertEqual(self.run_code(gw2, kg, "y")["result"], "'also kept'")
        r = gw2.request("GET", f"api/sandboxes/{sb['id']}/files/notes/a.txt")
        self.assertEqual((r.status, r.body), (200, b"kept\n"))
        after = {s["id"]: s for s in self.ok(gw2.request("GET", "api/sandboxes"))}
        self.assertEqual(set(after), set(before))
        for key in ("expires_at", "metadata", "limits", "network", "created"):
            self.assertEqual(after[sb["id"]][key], before[sb["id"]][key], key)
        self.assertEqual([k["id"] for k in after[sb["id"]]["kernels"]], [kid])
        # The execution record, from before the crash.
        rec = self.ok(gw2.request("GET", f"api/kernels/{kid}/executions/{msg_id}"))
        self.assertEqual((rec["status"], rec["stdout"], rec["result"]), ("ok", "recorded\n", "42"))
        self.assertEqual(gw2.request("GET", f"api/kernels/{kid}/executions/no-such-msg").status, 404)
        # The same processes, not new ones.
        self.assertEqual(sorted(gw2.kernel_pids()), sorted(supervisors))
        # And everything works as before: interrupt, restart, delete.
        self.ok(gw2.request("POST", f"api/kernels/{kid}/restart", timeout=120))
        self.assertEqual(self.run_code(gw2, kid, "'fresh' if 'x' not in dir() else 'stale'")["result"], "'fresh'")
        self.assertEqual(gw2.request("DELETE", f"api/sandboxes/{sb['id']}").status, 204)
        self.assertEqual(gw2.request("DELETE", f"api/kernels/{kg}").status, 204)
        wait_until(lambda: not any(alive(p) for p in supervisors), 20,
                   lambda: f"the deleted sandboxes to end: {[p for p in supervisors if alive(p)]}; {gw2.log_tail(10)}")

    def execute_over_websocket(self, gw, kid, code):
        ws = gw.connect(kid, v1=True)
        self.addCleanup(ws.close)
        msg_id = ws.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        return ws, msg_id

    def kernel_and_workspace(self, gw):
        """A new kernel in a sandbox of its own, and its workspace as the host sees it."""
        kid = self.ok(gw.request("POST", "api/kernels", {"name": "python"}, timeout=120), 201)["id"]
        return kid, workspace_of(gw)

    def silence_journal(self, gw, kid):
        """What a hostile kernel may do: point its journal's descriptors at /dev/null."""
        silenced = self.run_code(gw, kid, (
            "import os, time\n"
            "journal = {}\n"
            "for fd in os.listdir('/proc/self/fd'):\n"
            "    try:\n"
            "        target = os.readlink(f'/proc/self/fd/{fd}')\n"
            "    except OSError:\n"
            "        continue\n"
            "    if '.journal.' in target:\n"
            "        journal[int(fd)] = target\n"
            # Once it holds something: an empty journal is one the gateway does
            # not wait for.
            "deadline = time.monotonic() + 60\n"
            "while sum(os.fstat(fd).st_size for fd in journal) == 0:\n"
            "    if not journal or time.monotonic() > deadline:\n"
            "        raise RuntimeError(f'the journal stays empty: {journal}')\n"
            "    print('.', end='', flush=True)\n"
            "    time.sleep(0.05)\n"
            "for fd, target in journal.items():\n"
            "    null = os.open('/dev/null', os.O_WRONLY)\n"
            "    os.dup2(null, fd)\n"
            "    os.close(null)\n"
            "    print('silenced', target)\n"))
        self.assertIn("silenced", silenced["stdout"])

    def crash_in_a_cell(self, gw, kid, code):
        """Runs `code` over a WebSocket, crashes the gateway once the cell
        printed and its running row is stored, and starts the next one.
        Returns the new gateway and the cell's msg_id."""
        ws, msg_id = self.execute_over_websocket(gw, kid, code)
        ws.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 60, "the cell to be under way")
        wait_until(lambda: stored_execution(gw.state_dir, kid, msg_id), 10, "the cell's running row")
        gw.crash()
        return self.restart(gw), msg_id

    def taken_over_states(self, gw, kid):
        """The kernel's execution_state, read until it is no longer starting."""
        states = []

        def ready():
            states.append(self.ok(gw.request("GET", f"api/kernels/{kid}"))["execution_state"])
            return states[-1] != "starting"
        wait_until(ready, 30, lambda: f"the kernel to be taken over; {states[-5:]}; {gw.log_tail(10)}")
        return states

    def taken_up_reads(self, gw, kid):
        return [e["journal_reads"] for e in gw.log_events()
                if e.get("event") == "executions_taken_up" and e.get("kernel_id") == kid]

    def final_record(self, gw, kid, msg_id, timeout=60):
        def ended():
            r = gw.request("GET", f"api/kernels/{kid}/executions/{msg_id}")
            return r.status == 200 and r.json()["status"] != "running" and r.json()
        return wait_until(ended, timeout, lambda: f"the record of {msg_id} to end; {gw.log_tail(10)}")

    def test_kill_9_during_a_cell_that_prints_keeps_its_whole_output(self):
        gw = self.start()
        kid, root = self.kernel_and_workspace(gw)
        ws, msg_id = self.execute_over_websocket(
            gw, kid, "import time, pathlib\nfor i in range(100):\n    print(i, flush=True)\n"
                     "    pathlib.Path('progress').write_text(str(i))\n    time.sleep(0.1)\n'done'")
        ws.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream" and "10\n" in m.content["text"],
                    60, "the cell to be under way")
        gw.crash()

        def progress():
            try:
                with open(os.path.join(root, "progress")) as f:
                    return int(f.read() or 0)
            except (OSError, ValueError):
                return 0
        # Output goes on while no gateway listens.
        start = progress()
        wait_until(lambda: progress() >= start + 15, 30, "the cell to print while no gateway runs")
        gw2 = self.restart(gw)
        rec = self.final_record(gw2, kid, msg_id)
        self.assertEqual(rec["status"], "ok", rec)
        self.assertEqual(rec["stdout"], "".join(f"{i}\n" for i in range(100)))
        self.assertEqual(rec["result"], "'done'")
        self.assertFalse(rec["truncated"])
        # And the kernel goes on.
        self.assertEqual(self.run_code(gw2, kid, "i")["result"], "99")

    def cell_that_ends_while_no_gateway_runs(self, forget_its_row):
        gw = self.start()
        kid, root = self.kernel_and_workspace(gw)
        earlier = self.run_code(gw, kid, "print('earlier')")
        ws, msg_id = self.execute_over_websocket(
            gw, kid, "import time, pathlib\nprint('before', flush=True)\ntime.sleep(1)\n"
                     "print('after', flush=True)\npathlib.Path('cell-ended').touch()\n"
                     "raise ValueError('at the end')")
        ws.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 60, "the cell to be under way")
        crashed_at = datetime.datetime.now(datetime.timezone.utc)
        gw.crash()
        if forget_its_row:
            # As when the gateway dies before its writer stored the cell's running row.
            db = sqlite3.connect(os.path.join(gw.state_dir, "registry.db"), timeout=5)
            with db:
                db.execute("DELETE FROM executions WHERE kernel_id = ? AND msg_id = ?", (kid, msg_id))
            db.close()
            self.assertIsNone(stored_execution(gw.state_dir, kid, msg_id))
        wait_until(lambda: os.path.exists(os.path.join(root, "cell-ended")), 30, "the cell to end")
        gw2 = self.restart(gw)
        rec = self.final_record(gw2, kid, msg_id)
        self.assertEqual(rec["status"], "error", rec)
        self.assertEqual(rec["stdout"], "before\nafter\n")
        self.assertEqual(rec["error"]["ename"], "ValueError")
        self.assertEqual(rec["error"]["evalue"], "at the end")
        self.assertFalse(rec["truncated"])
        self.assertIsInstance(rec["execution_count"], int)  # from its execute_input: the reply went to gw
        # It began before the crash, whether its start came from its row or,
        # with no row, from the date on the kernel's execute_input.
        self.assertLess(datetime.datetime.fromisoformat(rec["started"]), crashed_at, rec)
        self.assertEqual(self.ok(gw2.request("GET", f"api/kernels/{kid}"))["execution_state"], "idle")
        # It is stored for the next gateway too. The cell before it keeps its
        # record: read from the registry, or, when the gateway died before
        # its final row was written, rebuilt from the journal (then started
        # when the kernel began it, and with the restart in its duration).
        wait_until(lambda: '"status":"error"' in (stored_execution(gw.state_dir, kid, msg_id) or ""), 10,
                   "the record to be stored")
        again = self.ok(gw2.request("GET", f"api/kernels/{kid}/executions/{earlier['msg_id']}"))
        for key in ("msg_id", "execution_count", "status", "stdout", "stderr", "result", "outputs", "error",
                    "truncated"):
            self.assertEqual(again[key], earlier[key], key)
        started_apart = (datetime.datetime.fromisoformat(again["started"]) -
                         datetime.datetime.fromisoformat(earlier["started"]))
        self.assertLess(abs(started_apart.total_seconds()), 1.0, (again, earlier))

    def test_a_cell_that_ends_while_no_gateway_runs_is_recorded_from_the_journal(self):
        self.cell_that_ends_while_no_gateway_runs(forget_its_row=False)

    def test_a_cell_whose_row_the_gateway_never_stored_is_found_in_the_journal(self):
        self.cell_that_ends_while_no_gateway_runs(forget_its_row=True)

    def test_a_kernel_taken_over_in_a_long_cell_is_busy_at_once_and_can_be_interrupted(self):
        gw = self.start()
        kid, _ = self.kernel_and_workspace(gw)
        gw2, msg_id = self.crash_in_a_cell(gw, kid, "import time\nprint('sleeping', flush=True)\ntime.sleep(120)")
        # Its shell waits for the cell; the kernel answers on control, long
        # before the cell would end.
        wait_until(lambda: self.ok(gw2.request("GET", f"api/kernels/{kid}"))["execution_state"] == "busy", 30,
                   lambda: f"the kernel to be taken over, busy; {gw2.log_tail(10)}")
        self.ok(gw2.request("POST", f"api/kernels/{kid}/interrupt"), 204)
        rec = self.final_record(gw2, kid, msg_id)
        self.assertEqual(rec["status"], "error", rec)
        self.assertEqual(rec["error"]["ename"], "KeyboardInterrupt", rec)
        self.assertEqual(rec["stdout"], "sleeping\n")
        self.assertEqual(self.run_code(gw2, kid, "1 + 1")["result"], "2")

    def test_a_kernel_that_stops_its_journal_holds_records_back_only_a_bounded_time(self):
        # A kernel is hostile: this one points its journal's descriptor at
        # /dev/null, so the journal never holds what the restarted gateway
        # waits for. The wait ends at its bound: what came live meanwhile is
        # recorded, nothing of it lost, and the cell's record ends.
        gw = self.start()
        kid, _ = self.kernel_and_workspace(gw)
        self.silence_journal(gw, kid)
        # Crashed once its running row is stored (with no journal, nothing else tells of it).
        gw2, msg_id = self.crash_in_a_cell(
            gw, kid, "import time\nfor i in range(80):\n    print(i, flush=True)\n    time.sleep(0.1)\n'done'")
        # Taken over mid-cell, the kernel is busy as soon as it is ready, not
        # idle while its journal is reread (two seconds here).
        states = self.taken_over_states(gw2, kid)
        self.assertEqual(states[-1], "busy", states)
        self.assertFalse([e for e in gw2.log_events() if e.get("event") == "executions_taken_up"],
                         "the journal was still being reread")
        watcher = gw2.connect(kid, v1=True)
        self.addCleanup(watcher.close)
        rec = self.final_record(gw2, kid, msg_id)
        self.assertEqual(rec["status"], "ok", rec)
        self.assertEqual(rec["result"], "'done'")
        self.assertTrue(rec["truncated"], rec)  # its beginning is in no journal
        expected = "".join(f"{i}\n" for i in range(80))
        self.assertTrue(rec["stdout"] and expected.endswith(rec["stdout"]), rec["stdout"])
        # Every line a client of the new gateway saw, held while the journal
        # was reread or not, is in the record.
        watcher.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "status"
                         and m.content.get("execution_state") == "idle", 30, "the cell's idle status")
        seen = "".join(m.content["text"] for m in watcher.received
                       if m.parent_id == msg_id and m.msg_type == "stream")
        self.assertTrue(seen and rec["stdout"].endswith(seen), (seen, rec["stdout"]))
        self.assertEqual(self.taken_up_reads(gw2, kid), ["100"])

    def test_a_kernel_that_floods_while_its_journal_is_reread_ends_the_wait_early(self):
        # While the journal is reread, live output waits in the gateway's
        # memory; past 16 MiB of it the wait ends, whatever reads are left.
        gw = self.start()
        kid, _ = self.kernel_and_workspace(gw)
        self.silence_journal(gw, kid)
        gw2, msg_id = self.crash_in_a_cell(gw, kid, (
            "import os, sys, time\n"
            "print('waiting', flush=True)\n"
            "while not os.path.exists('go'):\n"
            "    time.sleep(0.01)\n"
            "chunk = 'x' * 65535 + '\\n'\n"
            "for i in range(384):\n"  # 24 MiB
            "    sys.stdout.write(chunk)\n"
            "    sys.stdout.flush()\n"
            "'done'"))
        self.taken_over_states(gw2, kid)
        self.assertEqual(self.taken_up_reads(gw2, kid), [], "the journal is being reread")
        sid = self.ok(gw2.request("GET", f"api/kernels/{kid}"))["sandbox_id"]
        self.ok(gw2.request("PUT", f"api/sandboxes/{sid}/files/go", raw=b""), 201)
        rec = self.final_record(gw2, kid, msg_id)
        self.assertEqual((rec["status"], rec["result"]), ("ok", "'done'"), rec)
        reads = self.taken_up_reads(gw2, kid)
        self.assertEqual(len(reads), 1, reads)
        self.assertLess(int(reads[0]), 100)

    def test_an_upload_cut_by_a_crash_is_never_reported_complete(self):
        gw = self.start()
        sid = self.ok(gw.request("POST", "api/sandboxes", {"ttl_s": 900}, timeout=60), 201)["id"]
        self.ok(gw.request("GET", f"api/sandboxes/{sid}/files/"))  # the sandbox is ready
        sock = socket.create_connection((gw.host, gw.port))
        self.addCleanup(sock.close)
        sock.sendall((f"PUT {gw.base_path}api/sandboxes/{sid}/files/big.bin HTTP/1.1\r\n"
                      f"Host: {gw.host}\r\nAuthorization: token {gw.token}\r\n"
                      f"Content-Length: {8 * 1024 * 1024}\r\n\r\n").encode() + b"x" * (1024 * 1024))
        # The gateway has the first MiB when the upload's temporary file holds it.
        root = workspace_of(gw)

        def partial():
            try:
                return any(n.startswith(".sandgate-upload-") and os.path.getsize(os.path.join(root, n)) > 0
                           for n in os.listdir(root))
            except OSError:
                return False
        wait_until(partial, 20, "the upload to be under way")
        gw.crash()
        gw2 = self.restart(gw)
        self.assertEqual(gw2.request("GET", f"api/sandboxes/{sid}/files/big.bin").status, 404)
        names = [e["name"] for e in self.ok(gw2.request("GET", f"api/sandboxes/{sid}/files/"))]
        self.assertNotIn("big.bin", names)

    def test_sigterm_leaves_sandboxed_kernels_running_by_default(self):
        gw = self.start()
        kid = self.ok(gw.request("POST", "api/kernels", {"name": "python"}, timeout=120), 201)["id"]
        self.run_code(gw, kid, "z = [1, 2, 3]")
        clients = [gw.connect(kid) for _ in range(8)]
        code, taken = gw.stop()
        self.assertEqual(code, 0)
        self.assertLess(taken, 5)
        # Every client is told the gateway is going away, not that the kernel
        # died: the gateway exits only once their close frames are out.
        for ws in clients:
            closed, _ = ws.wait_closed(10)
            self.assertEqual(closed.code, 1001, closed)
            self.assertIn("keeps running", closed.reason)
        gw2 = self.restart(gw)
        self.assertEqual(self.run_code(gw2, kid, "sum(z)")["result"], "6")

    def test_what_ended_while_no_gateway_ran_answers_404_with_its_reason(self):
        gw = self.start()
        short = self.ok(gw.request("POST", "api/sandboxes", {"ttl_s": 900}, timeout=60), 201)["id"]
        kid = self.ok(gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": short}, timeout=120),
                      201)["id"]
        long = self.ok(gw.request("POST", "api/sandboxes", {"ttl_s": 900}, timeout=60), 201)["id"]
        deleted = self.ok(gw.request("POST", "api/sandboxes", {"ttl_s": 900}, timeout=60), 201)["id"]
        self.assertEqual(gw.request("DELETE", f"api/sandboxes/{deleted}").status, 204)
        self.ok(gw.request("PATCH", f"api/sandboxes/{short}", {"ttl_s": 2}))
        supervisors = [p for p in gw.kernel_pids() if short.encode() in open(f"/proc/{p}/cmdline", "rb").read()]
        self.assertTrue(supervisors)
        gw.crash()
        # The short sandbox's supervisor ends it on time, with no gateway.
        wait_until(lambda: not any(alive(p) for p in supervisors), 30, "the short sandbox to expire")
        gw2 = self.restart(gw)
        wait_until(lambda: gw2.request("GET", f"api/sandboxes/{short}").status == 404, 15,
                   "the expired sandbox to be seen as ended")
        self.assertEqual(gw2.request("GET", f"api/sandboxes/{short}").json()["reason"], "expired")
        self.assertEqual(gw2.request("GET", f"api/kernels/{kid}").json()["reason"], "expired")
        self.assertEqual(gw2.request("GET", f"api/sandboxes/{deleted}").json()["reason"], "deleted")
        self.ok(gw2.request("GET", f"api/sandboxes/{long}"))
        self.assertEqual([s["id"] for s in self.ok(gw2.request("GET", "api/sandboxes"))], [long])

    def test_a_corrupt_registry_is_set_aside_and_running_sandboxes_left_alone(self):
        gw = self.start()
        kid = self.ok(gw.request("POST", "api/kernels", {"name": "python"}, timeout=120), 201)["id"]
        self.run_code(gw, kid, "1")
        supervisors = gw.kernel_pids()
        gw.crash()
        db = os.path.join(gw.state_dir, "registry.db")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
        with open(db, "wb") as f:
            f.write(b"this is not a database" * 100)
        gw2 = self.restart(gw)
        self.assertEqual(self.ok(gw2.request("GET", "api/kernels")), [])
        events = {e.get("event"): e for e in gw2.log_events()}
        self.assertIn("registry_replaced", events)
        self.assertIn("sandbox_unknown_left_alone", events)
        self.assertTrue(any(n.startswith("registry.db.corrupt-") for n in os.listdir(gw.state_dir)))
        self.assertTrue(all(alive(p) for p in supervisors), "the gateway touched a sandbox it does not know")
        # New work goes on normally, under host uids of its own.
        new = self.ok(gw2.request("POST", "api/kernels", {"name": "python"}, timeout=120), 201)["id"]
        self.assertEqual(self.run_code(gw2, new, "6 * 7")["result"], "42")
        old_uids = sandbox_host_uids(supervisors)
        new_uids = sandbox_host_uids(set(gw2.kernel_pids()) - set(supervisors))
        self.assertTrue(old_uids and new_uids, (old_uids, new_uids))
        self.assertFalse(old_uids & new_uids, "a new sandbox shares host uids with one the gateway does not know")


    # --- /api/sessions -----------------------------------------------------
    def new_session(self, gw, path, token=None):
        body = {"path": path, "name": os.path.basename(path), "type": "notebook", "kernel": {"name": "python"}}
        s = self.ok(gw.request("POST", "api/sessions", body, token=token, timeout=120), 201)
        self.assertEqual((s["path"], s["type"]), (path, "notebook"), s)
        return s

    def assert_same_session(self, gw, expected, token=None):
        """GET /api/sessions lists `expected` and GET /api/sessions/{id}
        returns it: the same id, path, name, type and kernel."""
        listed = {s["id"]: s for s in self.ok(gw.request("GET", "api/sessions", token=token))}
        self.assertIn(expected["id"], listed, gw.log_tail(10))
        got = self.ok(gw.request("GET", f"api/sessions/{expected['id']}", token=token))
        for s in (listed[expected["id"]], got):
            for key in ("id", "path", "name", "type", "notebook"):
                self.assertEqual(s[key], expected[key], key)
            self.assertIsNotNone(s["kernel"], s)
            self.assertEqual(s["kernel"]["id"], expected["kernel"]["id"])

    def test_sessions_survive_sigterm_and_kill_9_and_a_delete_is_for_good(self):
        gw = self.start()
        s = self.new_session(gw, "work/a.ipynb")
        kid = s["kernel"]["id"]
        self.run_code(gw, kid, "x = 41")
        code, _ = gw.stop()
        self.assertEqual(code, 0)

        gw2 = self.restart(gw)
        self.assertEqual({k["id"] for k in self.ok(gw2.request("GET", "api/kernels"))}, {kid})
        self.assert_same_session(gw2, s)
        self.assertEqual(self.run_code(gw2, kid, "x + 1")["result"], "42")
        # A rename after the restart is kept for the next gateway.
        moved = self.ok(gw2.request("PATCH", f"api/sessions/{s['id']}", {"path": "work/b.ipynb", "name": "b.ipynb"}))
        self.assertEqual((moved["id"], moved["path"], moved["name"]), (s["id"], "work/b.ipynb", "b.ipynb"))
        gw2.crash()

        gw3 = self.restart(gw2)
        self.assert_same_session(gw3, moved)
        # Asking again for the same path finds it, as before the restarts.
        again = self.ok(gw3.request("POST", "api/sessions", {"path": "work/b.ipynb", "type": "notebook"}), 201)
        self.assertEqual((again["id"], again["kernel"]["id"]), (s["id"], kid))
        self.assertEqual(len(self.ok(gw3.request("GET", "api/sessions"))), 1)
        self.assertEqual(gw3.request("DELETE", f"api/sessions/{s['id']}").status, 204)
        self.assertEqual(gw3.request("GET", f"api/sessions/{s['id']}").status, 404)
        gw3.crash()

        gw4 = self.restart(gw3)
        self.assertEqual(self.ok(gw4.request("GET", "api/sessions")), [])
        self.assertEqual(gw4.request("GET", f"api/sessions/{s['id']}").status, 404)
        self.assertEqual(gw4.request("GET", f"api/kernels/{kid}").status, 404)  # it went with its session
        self.assertEqual(stored_session_ids(gw4.state_dir), [])

    def test_a_session_whose_kernel_did_not_come_back_is_not_listed(self):
        gw = self.start()
        kept = self.new_session(gw, "kept.ipynb")
        lost = self.new_session(gw, "lost.ipynb")
        lost_kid = lost["kernel"]["id"]
        sandbox = self.ok(gw.request("GET", f"api/kernels/{lost_kid}"))["sandbox_id"]
        supervisors = [p for p in gw.kernel_pids() if sandbox.encode() in cmdline_of(p)]
        self.assertTrue(supervisors)
        gw.crash()
        # Its sandbox ends while no gateway runs (pid 1 of its namespace: its
        # kernel goes with it).
        for pid in supervisors:
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not any(alive(p) for p in supervisors), 20, "the sandbox to end")

        gw2 = self.restart(gw)
        wait_until(lambda: gw2.request("GET", f"api/kernels/{lost_kid}").status == 404, 30,
                   lambda: f"the lost kernel to be seen as ended; {gw2.log_tail(10)}")
        self.assertEqual([x["id"] for x in self.ok(gw2.request("GET", "api/sessions"))], [kept["id"]])
        self.assert_same_session(gw2, kept)
        code, _ = gw2.stop()
        self.assertEqual(code, 0)

        # The next gateway does not take it back at all.
        gw3 = self.restart(gw2)
        self.assertEqual([x["id"] for x in self.ok(gw3.request("GET", "api/sessions"))], [kept["id"]])
        self.assertEqual(gw3.request("GET", f"api/sessions/{lost['id']}").status, 404)
        self.assert_same_session(gw3, kept)
        self.assertEqual(stored_session_ids(gw3.state_dir), [kept["id"]])

    def test_a_restored_session_is_still_its_owners_alone(self):
        tokens = {name: f"{name}-{uuid.uuid4().hex}" for name in ("alice", "bob")}
        fd, tokens_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"principals": [{"name": n, "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
                                      for n, t in tokens.items()]}, f)
        self.addCleanup(os.unlink, tokens_path)
        args = ("--tokens-file", tokens_path)
        gw = self.start(*args)
        s = self.new_session(gw, "alice.ipynb", token=tokens["alice"])
        gw.crash()

        gw2 = self.restart(gw, *args)
        self.assert_same_session(gw2, s, token=tokens["alice"])
        bob = tokens["bob"]
        self.assertEqual(self.ok(gw2.request("GET", "api/sessions", token=bob)), [])
        for method, body in (("GET", None), ("PATCH", {"path": "bob.ipynb"}), ("DELETE", None)):
            r = gw2.request(method, f"api/sessions/{s['id']}", body, token=bob)
            self.assertEqual(r.status, 404, (method, r))
            self.assertEqual(set(r.json()), {"reason", "message"})
        # Bob asking for the same path gets a session of his own.
        mine = self.new_session(gw2, "alice.ipynb", token=bob)
        self.assertNotEqual(mine["id"], s["id"])
        self.assert_same_session(gw2, s, token=tokens["alice"])

if __name__ == "__main__":
    unittest.main()
