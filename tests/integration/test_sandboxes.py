"""The Sandgate API (docs/api.md) through a real gateway whose kernels and
commands run in real sandboxes: sandboxes with TTL, metadata and limits,
several kernels in one sandbox, files, commands, execute over HTTP, the
execution record, expiry and idle culling. Needs root (as CI runs)."""

import hashlib
import json
import os
import tempfile
import threading
import time
import unittest
import uuid

from sandgate_fixture import GatewayTestCase, result_text, wait_until

SANDBOX_KEYS = {"id", "created", "expires_at", "idle_timeout_s", "max_execution_s", "last_activity", "metadata",
                "limits", "network", "kernels"}
RECORD_KEYS = {"msg_id", "status", "execution_count", "stdout", "stderr", "result", "outputs", "error", "timed_out",
               "kernel_restarted", "truncated", "sandbox_ended", "started", "duration_ms"}
MiB = 1024 * 1024


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class SandboxTestCase(GatewayTestCase):
    sandboxed = True

    def new_sandbox(self, **body):
        r = self.gw.request("POST", "api/sandboxes", body, timeout=60)
        self.assertEqual(r.status, 201, r)
        sb = r.json()
        self.addCleanup(self._delete_sandbox_quietly, sb["id"])
        return sb

    def _delete_sandbox_quietly(self, sid):
        if self.gw.alive():
            self.gw.request("DELETE", f"api/sandboxes/{sid}")

    def kernel_in(self, sid, name="python"):
        r = self.gw.request("POST", "api/kernels", {"name": name, "sandbox_id": sid}, timeout=120)
        self.assertEqual(r.status, 201, r)
        return r.json()

    def execute(self, kid, code, timeout_s=None, http_timeout=120):
        body = {"code": code}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        r = self.gw.request("POST", f"api/kernels/{kid}/execute", body, timeout=http_timeout)
        self.assertEqual(r.status, 200, r)
        rec = r.json()
        self.assertEqual(set(rec), RECORD_KEYS, rec)
        return rec

    def command(self, sid, **body):
        r = self.gw.request("POST", f"api/sandboxes/{sid}/commands", body, timeout=120)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def upload(self, sid, path, data):
        return self.gw.request("PUT", f"api/sandboxes/{sid}/files/{path}", raw=data,
                               headers={"Content-Type": "application/octet-stream"})


class Sandboxes(SandboxTestCase):
    # Debian's xpython (xeus 2.4.1) aborts on an ipc endpoint over 31 bytes.
    @unittest.skipUnless(os.path.exists("/usr/share/jupyter/kernels/xpython/kernel.json"),
                         "Debian's xpython is not installed")
    def test_debian_xpython_runs_in_a_sandbox(self):
        sb = self.new_sandbox()
        k = self.kernel_in(sb["id"], "xpython")
        rec = self.execute(k["id"], "print(6 * 7)")
        self.assertEqual(rec["status"], "ok", rec)
        self.assertEqual(rec["stdout"], "42\n", rec)

    def test_create_get_list_patch_delete(self):
        sb = self.new_sandbox(ttl_s=600, metadata={"conversation": "c-" + uuid.uuid4().hex},
                              limits={"memory_bytes": 512 * MiB, "pids": 64})
        self.assertEqual(set(sb), SANDBOX_KEYS, sb)
        self.assertEqual(sb["limits"]["memory_bytes"], 512 * MiB)
        self.assertEqual(sb["limits"]["pids"], 64)
        self.assertEqual(sb["network"], "none")
        self.assertEqual(sb["kernels"], [])
        other = self.new_sandbox(metadata={"conversation": "someone-else"})
        r = self.gw.request("GET", f"api/sandboxes/{sb['id']}")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["metadata"], sb["metadata"])
        conv = sb["metadata"]["conversation"]
        listed = self.gw.request("GET", f"api/sandboxes?metadata.conversation={conv}").json()
        self.assertEqual([s["id"] for s in listed], [sb["id"]])
        ids = {s["id"] for s in self.gw.request("GET", "api/sandboxes").json()}
        self.assertLessEqual({sb["id"], other["id"]}, ids)
        # PATCH moves the end of life, and the supervisor keeps to it.
        before = sb["expires_at"]
        r = self.gw.request("PATCH", f"api/sandboxes/{sb['id']}", {"ttl_s": 7200})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["expires_at"], before)
        r = self.gw.request("DELETE", f"api/sandboxes/{sb['id']}")
        self.assertEqual(r.status, 204, r)
        body = self.assertError(self.gw.request("GET", f"api/sandboxes/{sb['id']}"), 404)
        self.assertEqual(body["reason"], "deleted")

    def test_bad_requests_are_4xx(self):
        cases = [
            ({"limits": {"memory_bytes": 1 << 50}}, 400),
            ({"limits": {"cpu": 1000}}, 400),
            ({"limits": {"bogus": 1}}, 400),
            ({"ttl_s": 10 ** 9}, 400),
            ({"ttl_s": -1}, 400),
            ({"network": "host"}, 400),
            ({"metadata": {"k": 1}}, 400),
            ({"env": {"1BAD": "x"}}, 400),
            ({"unknown": True}, 400),
        ]
        for body, status in cases:
            with self.subTest(body=body):
                self.assertError(self.gw.request("POST", "api/sandboxes", body), status)
        self.assertError(self.gw.request("POST", "api/sandboxes", raw=b"{not json"), 400)
        self.assertError(self.gw.request("GET", f"api/sandboxes/{uuid.uuid4()}"), 404)
        self.assertError(self.gw.request("GET", "api/sandboxes/not-a-uuid"), 404)
        self.assertError(self.gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": str(uuid.uuid4())}),
                         404)
        sb = self.new_sandbox()
        self.assertError(self.gw.request("PATCH", f"api/sandboxes/{sb['id']}", {"ttl_s": 0}), 400)
        self.assertError(self.gw.request("PATCH", f"api/sandboxes/{sb['id']}", {"metadata": {}}), 400)

    def test_kernels_share_the_workspace_and_end_alone(self):
        sb = self.new_sandbox()
        a = self.kernel_in(sb["id"])
        b = self.kernel_in(sb["id"], "bash")
        self.assertEqual(a["sandbox_id"], sb["id"])
        self.assertEqual(b["sandbox_id"], sb["id"])
        listed = self.gw.request("GET", f"api/sandboxes/{sb['id']}").json()["kernels"]
        self.assertEqual({k["id"] for k in listed}, {a["id"], b["id"]})
        rec = self.execute(a["id"], "open('shared.txt', 'w').write('from python'); print(open('shared.txt').read())")
        self.assertEqual(rec["stdout"], "from python\n", rec)
        rec = self.execute(b["id"], "cat shared.txt")
        self.assertEqual(rec["stdout"].strip(), "from python", rec)
        self.assertEqual(self.gw.request("DELETE", f"api/kernels/{b['id']}").status, 204)
        # The sandbox and its other kernel live on.
        self.assertEqual(self.execute(a["id"], "6 * 7")["result"], "42")
        listed = self.gw.request("GET", f"api/sandboxes/{sb['id']}").json()["kernels"]
        self.assertEqual([k["id"] for k in listed], [a["id"]])
        # Deleting the sandbox ends its kernels and closes their channels.
        ks = self.connect(a["id"])
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{sb['id']}").status, 204)
        ks.wait_closed(20)
        body = self.assertError(self.gw.request("GET", f"api/kernels/{a['id']}"), 404)
        self.assertEqual(body["reason"], "deleted")

    # Supervisors outlive the connections they were started under; they hold
    # none of the gateway's sockets.
    def test_supervisors_hold_none_of_the_gateways_sockets(self):
        ks = self.gw.connect(self.new_kernel("python"), v1=True)
        self.addCleanup(ks.close)
        ks.execute("1")
        self.new_kernel("python")
        self.assertTrue(self.gw.kernel_pids())
        self.assertEqual(self.gw.tcp_socket_holders(), {})

    def test_kernel_without_sandbox_gets_its_own(self):
        kid = self.new_kernel("python")
        model = self.gw.request("GET", f"api/kernels/{kid}").json()
        sid = model["sandbox_id"]
        sb = self.gw.request("GET", f"api/sandboxes/{sid}").json()
        self.assertEqual([k["id"] for k in sb["kernels"]], [kid])
        self.gw.delete_kernel(kid)
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sid}").status, 404)


class Files(SandboxTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()

    def setUp(self):
        self.sb = self.new_sandbox(limits={"workspace_bytes": 8 * MiB})
        self.sid = self.sb["id"]

    def test_csv_uploaded_then_read_with_pandas(self):
        csv = b"city,temp\nOslo,3\nLima,19\nCairo,25\n"
        r = self.upload(self.sid, "data/weather.csv", csv)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json(), {"path": "data/weather.csv", "size": len(csv)})
        k = self.kernel_in(self.sid)
        rec = self.execute(k["id"], "import pandas as pd\ndf = pd.read_csv('data/weather.csv')\nint(df.temp.sum())")
        self.assertEqual(rec["status"], "ok", rec)
        self.assertEqual(rec["result"], "47")
        listing = self.gw.request("GET", f"api/sandboxes/{self.sid}/files/data").json()
        self.assertEqual([(e["name"], e["type"], e["size"]) for e in listing], [("weather.csv", "file", len(csv))])
        root = self.gw.request("GET", f"api/sandboxes/{self.sid}/files").json()
        self.assertIn(("data", "directory"), [(e["name"], e["type"]) for e in root])

    def test_chart_written_by_the_kernel_downloads_byte_identical(self):
        k = self.kernel_in(self.sid)
        rec = self.execute(k["id"], "\n".join([
            "import matplotlib; matplotlib.use('Agg')",
            "import matplotlib.pyplot as plt, hashlib",
            "plt.plot([1, 4, 9, 16]); plt.savefig('out/chart.png') if __import__('os').makedirs('out', exist_ok=True) is None else None",
            "print(hashlib.sha256(open('out/chart.png', 'rb').read()).hexdigest())"]))
        self.assertEqual(rec["status"], "ok", rec)
        digest = rec["stdout"].strip()
        r = self.gw.request("GET", f"api/sandboxes/{self.sid}/files/out/chart.png")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers["Content-Type"], "image/png")
        self.assertEqual(r.body[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), digest)
        part = self.gw.request("GET", f"api/sandboxes/{self.sid}/files/out/chart.png", headers={"Range": "bytes=1-3"})
        self.assertEqual(part.status, 206, part)
        self.assertEqual(part.body, b"PNG")
        self.assertEqual(part.headers["Content-Range"], f"bytes 1-3/{len(r.body)}")
        bad = self.gw.request("GET", f"api/sandboxes/{self.sid}/files/out/chart.png",
                              headers={"Range": f"bytes={len(r.body) + 10}-"})
        self.assertEqual(bad.status, 416, bad)

    def test_upload_replaces_and_delete_removes(self):
        self.assertEqual(self.upload(self.sid, "a/b/c.txt", b"one").status, 201)
        self.assertEqual(self.upload(self.sid, "a/b/c.txt", b"second").status, 201)
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{self.sid}/files/a/b/c.txt").body, b"second")
        out = self.command(self.sid, cmd="stat -c '%u:%g' a/b/c.txt a/b")
        self.assertEqual(out["stdout"].split(), ["1000:1000", "1000:1000"], out)  # the sandbox user's own
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{self.sid}/files/a").status, 204)
        self.assertError(self.gw.request("GET", f"api/sandboxes/{self.sid}/files/a/b/c.txt"), 404)

    def test_over_quota_upload_is_refused_without_a_partial_file(self):
        r = self.upload(self.sid, "big.bin", os.urandom(12 * MiB))
        self.assertEqual(r.status, 413, r)
        r = self.upload(self.sid, "fill.bin", os.urandom(6 * MiB))
        self.assertEqual(r.status, 201, r)
        r = self.upload(self.sid, "more.bin", os.urandom(4 * MiB))  # fits the declared limit, not the space left
        self.assertEqual(r.status, 413, r)
        names = [e["name"] for e in self.gw.request("GET", f"api/sandboxes/{self.sid}/files").json()]
        self.assertEqual(names, ["fill.bin"])
        out = self.command(self.sid, cmd="ls -a")
        self.assertNotIn("sandgate-upload", out["stdout"])

    def test_traversal_and_planted_links_are_refused(self):
        with tempfile.NamedTemporaryFile(dir="/tmp", prefix="sandgate-decoy-", delete=False) as f:
            f.write(b"host secret\n")
            decoy = f.name
        self.addCleanup(os.unlink, decoy)
        out = self.command(self.sid, cmd=" && ".join([
            "ln -s /etc/passwd passwd-link", f"ln -s {decoy} decoy-link", "ln -s / root-link",
            "ln -s /proc/self/root proc-link", "mkfifo fifo", "mkdir -p d && ln -s .. d/up",
            "echo inside > inside.txt && ln -s inside.txt ok-link"]))
        self.assertEqual(out["exit_code"], 0, out)
        base = f"api/sandboxes/{self.sid}/files/"
        for path in ["passwd-link", "decoy-link", "root-link/etc/passwd", "proc-link/etc/hostname",
                     "d/up/../etc/passwd", "../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd",
                     "d/..%2f..%2fetc/passwd", "fifo"]:
            with self.subTest(path=path):
                r = self.gw.request("GET", base + path)
                self.assertIn(r.status, (400, 404), r)
                self.assertNotIn(b"root:", r.body)
                self.assertNotIn(b"host secret", r.body)
        # Writes through planted links never reach the host.
        planted = "sandgate-planted-" + uuid.uuid4().hex[:8]  # a name nothing else on the host uses
        for path in ["decoy-link", f"root-link/tmp/{planted}", f"proc-link/tmp/{planted}", "../escape"]:
            with self.subTest(write=path):
                r = self.upload(self.sid, path, b"overwritten")
                if r.status == 201:  # replaces the link itself, inside the workspace
                    self.assertEqual(path, "decoy-link")
                else:
                    self.assertIn(r.status, (400, 404), r)
        with open(decoy, "rb") as f:
            self.assertEqual(f.read(), b"host secret\n")
        self.assertFalse(os.path.exists(f"/tmp/{planted}"))
        # A link that stays inside is followed.
        self.assertEqual(self.gw.request("GET", base + "ok-link").body, b"inside\n")
        self.assertEqual(self.gw.request("DELETE", base + "root-link").status, 204)
        self.assertTrue(os.path.exists("/etc/passwd"))


class Commands(SandboxTestCase):
    def setUp(self):
        self.sid = self.new_sandbox()["id"]

    def test_string_and_argv_commands(self):
        out = self.command(self.sid, cmd="echo out; echo err >&2; exit 3")
        self.assertEqual((out["stdout"], out["stderr"], out["exit_code"], out["timed_out"]), ("out\n", "err\n", 3, False))
        self.assertIsNone(out["signal"])
        self.assertFalse(out["truncated"])
        self.assertIsInstance(out["duration_ms"], int)
        out = self.command(self.sid, cmd=["printf", "%s|", "a b", "$HOME"])
        self.assertEqual(out["stdout"], "a b|$HOME|")
        out = self.command(self.sid, cmd="mkdir -p sub && cd sub && pwd")
        out = self.command(self.sid, cmd="pwd; echo $GREETING; cat", cwd="sub", env={"GREETING": "hi"}, stdin="piped\n")
        self.assertEqual(out["stdout"], "/workspace/sub\nhi\npiped\n", out)
        out = self.command(self.sid, cmd="kill -9 $$")
        self.assertIsNone(out["exit_code"])
        self.assertEqual(out["signal"], 9)

    def test_timeout_kills_the_command_and_its_daemons(self):
        marker = "sg-marker-" + uuid.uuid4().hex[:8]
        t = time.monotonic()
        out = self.command(self.sid, cmd=f"setsid bash -c 'exec -a {marker} sleep 300' & sleep 300", timeout_s=1)
        self.assertTrue(out["timed_out"], out)
        self.assertLess(time.monotonic() - t, 30)
        left = self.command(self.sid, cmd=f"ps -eo args | grep -c '^{marker}' || true")
        self.assertEqual(left["stdout"].strip(), "0", left)

    def test_output_is_capped(self):
        out = self.command(self.sid, cmd="head -c 3000000 /dev/zero | tr '\\0' x")
        self.assertTrue(out["truncated"], {k: v for k, v in out.items() if k != "stdout"})
        self.assertEqual(len(out["stdout"]), MiB)
        self.assertEqual(out["exit_code"], 0)

    def test_bad_commands_are_4xx(self):
        for body in [{}, {"cmd": ""}, {"cmd": []}, {"cmd": [1]}, {"cmd": "ls", "cwd": "../.."},
                     {"cmd": "ls", "timeout_s": -1}, {"cmd": "ls", "env": {"A-B": "1"}}, {"cmd": "ls", "x": 1}]:
            with self.subTest(body=body):
                self.assertError(self.gw.request("POST", f"api/sandboxes/{self.sid}/commands", body), 400)


class ExecuteOverHttp(SandboxTestCase):
    def setUp(self):
        self.sid = self.new_sandbox()["id"]
        self.kid = self.kernel_in(self.sid)["id"]

    def test_ok_error_and_display(self):
        rec = self.execute(self.kid, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nx = 41\nx + 1")
        self.assertEqual((rec["status"], rec["stdout"], rec["stderr"], rec["result"]), ("ok", "out\n", "err\n", "42"))
        self.assertIsInstance(rec["execution_count"], int)
        self.assertFalse(rec["timed_out"] or rec["kernel_restarted"])
        rec = self.execute(self.kid, "1 / 0")
        self.assertEqual(rec["status"], "error")
        self.assertEqual(rec["error"]["ename"], "ZeroDivisionError")
        self.assertTrue(rec["error"]["traceback"])
        rec = self.execute(self.kid, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
        pngs = [o for o in rec["outputs"] if "image/png" in o["data"]]
        self.assertEqual(len(pngs), 1, rec["outputs"])
        self.assertEqual(pngs[0]["output_type"], "display_data")
        # The same record, later, by its id.
        again = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{rec['msg_id']}").json()
        self.assertEqual(again["outputs"], rec["outputs"])
        self.assertError(self.gw.request("GET", f"api/kernels/{self.kid}/executions/{uuid.uuid4()}"), 404)

    def test_timeout_interrupts_and_keeps_state(self):
        self.execute(self.kid, "kept = 'yes'")
        t = time.monotonic()
        rec = self.execute(self.kid, "while True: pass", timeout_s=1)
        self.assertEqual(rec["status"], "timeout", rec)
        self.assertTrue(rec["timed_out"])
        self.assertFalse(rec["kernel_restarted"])
        self.assertLess(time.monotonic() - t, 20)
        self.assertEqual(self.execute(self.kid, "kept")["result"], "'yes'")

    def test_code_that_ignores_sigint_gets_the_kernel_restarted(self):
        self.execute(self.kid, "kept = 'yes'")
        rec = self.execute(self.kid, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(300)",
                           timeout_s=1)
        self.assertEqual(rec["status"], "timeout", rec)
        self.assertTrue(rec["kernel_restarted"], rec)
        # Sent while the kernel restarts: it waits, then runs on the fresh kernel.
        rec = self.execute(self.kid, "'kept' in dir()")
        self.assertEqual(rec["result"], "False", rec)

    def test_older_records_outlast_the_kernels_recent_ones(self):
        # The gateway keeps a kernel's recent records at hand and the rest in
        # its registry: every one is still there by its id.
        first = self.execute(self.kid, "print('first')\n'one'")
        t = time.monotonic()
        while time.monotonic() - t < 1.5:  # past the time a finished record stays at hand
            self.execute(self.kid, "pass")
        for i in range(24):
            self.execute(self.kid, f"{i}")
        again = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{first['msg_id']}")
        self.assertEqual(again.status, 200, again)
        rec = again.json()
        self.assertEqual((rec["status"], rec["stdout"], rec["result"]), ("ok", "first\n", "'one'"))
        self.assertEqual(rec["execution_count"], first["execution_count"])

    def test_websocket_executes_are_recorded_too(self):
        ks = self.connect(self.kid)
        reply, iopub = ks.execute("print('over ws')\n7 * 6")
        self.assertEqual(result_text(iopub), "42")
        rec = self.gw.request("GET", f"api/kernels/{self.kid}/executions/{reply.parent_id}").json()
        self.assertEqual((rec["status"], rec["stdout"], rec["result"]), ("ok", "over ws\n", "42"))


class Lifetimes(SandboxTestCase):
    def test_ttl_expiry(self):
        sb = self.new_sandbox(ttl_s=3)
        k = self.kernel_in(sb["id"], "bash")
        wait_until(lambda: self.gw.request("GET", f"api/sandboxes/{sb['id']}").status == 404, 30, "the TTL")
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sb['id']}").json()["reason"], "expired")
        self.assertEqual(self.gw.request("GET", f"api/kernels/{k['id']}").json()["reason"], "expired")
        wait_until(lambda: not [p for p in self.gw.kernel_pids() if sb["id"] in open(f"/proc/{p}/cmdline").read()],
                   15, "the sandbox's processes to end")

    def audit_lines(self, event):
        with open(os.path.join(self.gw.state_dir, "audit.log")) as f:
            return [json.loads(line) for line in f if f'"event":"{event}"' in line]

    def in_background(self, method, path, body):
        """Starts a request in a thread; returns the thread and the dict its response goes into."""
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.gw.request(method, path, body, timeout=180)))
        t.start()
        return t, out

    def test_a_command_and_an_execute_whose_sandbox_is_deleted_answer_at_once(self):
        """A DELETE of the sandbox answers a command and a REST execute running in it at once, long
        before their time limits, with what they ended with and why: the sandbox was deleted (not
        timed_out); the audit lines say the same."""
        sb = self.new_sandbox()
        k = self.kernel_in(sb["id"])
        cmd, cmd_out = self.in_background("POST", f"api/sandboxes/{sb['id']}/commands",
                                          {"cmd": "echo started > /workspace/cmd; echo begun; sleep 100; echo done",
                                           "timeout_s": 120})
        exe, exe_out = self.in_background("POST", f"api/kernels/{k['id']}/execute",
                                          {"code": "open('/workspace/exe', 'w').close()\nprint('begun', flush=True)\n"
                                                   "import time\ntime.sleep(100)", "timeout_s": 120})
        for name in ("cmd", "exe"):
            wait_until(lambda: self.gw.request("GET", f"api/sandboxes/{sb['id']}/files/{name}").status == 200, 60,
                       f"the {name} to run")
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{sb['id']}").status, 204)
        cmd.join(30)
        exe.join(30)
        self.assertFalse(cmd.is_alive() or exe.is_alive(), "a request waited for its time limit")
        r = cmd_out["r"]
        self.assertEqual(r.status, 200, r)
        out = r.json()
        self.assertEqual((out["sandbox_ended"], out["timed_out"], out["exit_code"], out["signal"]),
                         ("deleted", False, None, 9), out)
        self.assertEqual(out["stdout"], "begun\n", out)
        r = exe_out["r"]
        self.assertEqual(r.status, 200, r)
        rec = r.json()
        self.assertEqual((rec["status"], rec["sandbox_ended"], rec["timed_out"]), ("error", "deleted", False), rec)
        self.assertEqual(rec["error"]["ename"], "SandboxEnded", rec)
        self.assertEqual(rec["error"]["evalue"], "the sandbox was deleted", rec)

        def lines():
            commands = [e for e in self.audit_lines("command.run") if e["sandbox_id"] == sb["id"]]
            executes = [e for e in self.audit_lines("execute") if e.get("kernel_id") == k["id"]]
            return (commands, executes) if commands and executes else None

        commands, executes = wait_until(lines, 10, "the audit lines")
        self.assertEqual((commands[-1]["outcome"], commands[-1]["sandbox_ended"]), ("sandbox_ended", "deleted"))
        self.assertEqual((executes[-1]["outcome"], executes[-1]["sandbox_ended"]), ("sandbox_ended", "deleted"))

    def test_a_command_and_an_execute_whose_sandbox_expires_answer_at_its_end(self):
        sb = self.new_sandbox(ttl_s=8)
        k = self.kernel_in(sb["id"], "bash")
        exe, exe_out = self.in_background("POST", f"api/kernels/{k['id']}/execute",
                                          {"code": "sleep 100", "timeout_s": 100})
        out = self.command(sb["id"], cmd="sleep 100", timeout_s=100)
        self.assertEqual((out["sandbox_ended"], out["timed_out"], out["signal"]), ("expired", False, 9), out)
        exe.join(30)
        self.assertFalse(exe.is_alive(), "the execute waited for its time limit")
        rec = exe_out["r"].json()
        self.assertEqual((rec["status"], rec["sandbox_ended"], rec["error"]["ename"]), ("error", "expired", "SandboxEnded"),
                         rec)
        self.assertEqual(rec["error"]["evalue"], "the sandbox's time to live ran out")

    def test_extended_ttl_outlives_the_first(self):
        sb = self.new_sandbox(ttl_s=3)
        self.assertEqual(self.gw.request("PATCH", f"api/sandboxes/{sb['id']}", {"ttl_s": 120}).status, 200)
        time.sleep(6)  # past the first TTL: that nothing happens has no event to wait on
        self.assertEqual(self.command(sb["id"], cmd="echo alive")["stdout"], "alive\n")

    def culls(self):
        r = self.gw.request("GET", "metrics")
        return next(float(line.split()[1]) for line in r.body.decode().splitlines()
                    if line.startswith("sandgate_culls_total "))

    def test_idle_sandbox_is_culled(self):
        before = self.culls()
        sb = self.new_sandbox(idle_timeout_s=2)
        wait_until(lambda: self.gw.request("GET", f"api/sandboxes/{sb['id']}").status == 404, 30, "the cull")
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sb['id']}").json()["reason"], "culled")
        self.assertGreaterEqual(self.culls() - before, 1)


class Ownership(SandboxTestCase):
    """Principals from a tokens file: nobody sees anyone else's sandboxes or
    kernels, quotas hold under concurrent creates, the gateway's own token
    is the admin."""

    @classmethod
    def setUpClass(cls):
        cls.tokens = {name: f"{name}-{uuid.uuid4().hex}" for name in ("alice", "bob")}
        principals = [{"name": n, "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
                      for n, t in cls.tokens.items()]
        principals[1]["quotas"] = {"sandboxes": 2, "kernels": 2}
        fd, cls.tokens_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"principals": principals}, f)
        cls.gateway_args = ("--tokens-file", cls.tokens_path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        os.unlink(cls.tokens_path)

    def as_(self, who, method, path, body=None, **kw):
        return self.gw.request(method, path, body, token=self.tokens[who], **kw)

    def test_principals_cannot_see_each_others_resources(self):
        r = self.as_("alice", "POST", "api/sandboxes", {})
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        self.addCleanup(self._delete_sandbox_quietly, sid)
        r = self.as_("alice", "POST", "api/kernels", {"name": "python", "sandbox_id": sid}, timeout=120)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        self.assertEqual(self.as_("alice", "PUT", f"api/sandboxes/{sid}/files/secret.txt", raw=b"alice's").status, 201)
        rec = self.as_("alice", "POST", f"api/kernels/{kid}/execute", {"code": "1 + 1"}).json()
        # bob: 404 everywhere, and empty listings.
        self.assertEqual(self.as_("bob", "GET", "api/sandboxes").json(), [])
        self.assertEqual(self.as_("bob", "GET", "api/kernels").json(), [])
        for method, path, body in [
            ("GET", f"api/sandboxes/{sid}", None), ("PATCH", f"api/sandboxes/{sid}", {"ttl_s": 60}),
            ("DELETE", f"api/sandboxes/{sid}", None), ("GET", f"api/sandboxes/{sid}/files/secret.txt", None),
            ("GET", f"api/sandboxes/{sid}/files", None), ("DELETE", f"api/sandboxes/{sid}/files/secret.txt", None),
            ("POST", f"api/sandboxes/{sid}/commands", {"cmd": "cat secret.txt"}),
            ("GET", f"api/kernels/{kid}", None), ("DELETE", f"api/kernels/{kid}", None),
            ("POST", f"api/kernels/{kid}/interrupt", None), ("POST", f"api/kernels/{kid}/restart", None),
            ("POST", f"api/kernels/{kid}/execute", {"code": "1"}),
            ("GET", f"api/kernels/{kid}/executions/{rec['msg_id']}", None),
            ("POST", "api/kernels", {"name": "python", "sandbox_id": sid}),
        ]:
            with self.subTest(method=method, path=path):
                self.assertError(self.as_("bob", method, path, body), 404)
        r = self.as_("bob", "PUT", f"api/sandboxes/{sid}/files/secret.txt", raw=b"bob's")
        self.assertEqual(r.status, 404, r)
        with self.assertRaises(Exception):
            self.gw.connect(kid, token=self.tokens["bob"])
        # alice still has it all; the admin (the gateway's own token) sees it too.
        self.assertEqual(self.as_("alice", "GET", f"api/sandboxes/{sid}/files/secret.txt").body, b"alice's")
        self.assertIn(sid, [s["id"] for s in self.gw.request("GET", "api/sandboxes").json()])
        self.assertIn(kid, [k["id"] for k in self.gw.request("GET", "api/kernels").json()])

    def test_only_the_admin_drains_the_node(self):
        self.assertError(self.as_("alice", "PATCH", "api/node", {"draining": True}), 403)
        self.assertEqual(self.as_("alice", "GET", "api/node").json()["draining"], False)
        r = self.as_("alice", "POST", "api/sandboxes", {})  # still takes creates
        self.assertEqual(r.status, 201, r)
        self.addCleanup(self._delete_sandbox_quietly, r.json()["id"])

    def test_quotas_hold_under_concurrent_creates(self):
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: self.as_("bob", "POST", "api/sandboxes", {}, timeout=120), range(8)))
        created = [r.json()["id"] for r in results if r.status == 201]
        for sid in created:
            self.addCleanup(self._delete_sandbox_quietly, sid)
        self.assertEqual(len(created), 2, results)
        for r in results:
            if r.status != 201:
                self.assertEqual(r.status, 429, r)
        r = self.as_("bob", "POST", "api/kernels", {"name": "bash", "sandbox_id": created[0]}, timeout=120)
        self.assertEqual(r.status, 201, r)
        r = self.as_("bob", "POST", "api/kernels", {"name": "bash", "sandbox_id": created[0]}, timeout=120)
        self.assertEqual(r.status, 201, r)
        self.assertError(self.as_("bob", "POST", "api/kernels", {"name": "bash", "sandbox_id": created[1]}), 429)
        # A deleted sandbox frees its share.
        self.assertEqual(self.as_("bob", "DELETE", f"api/sandboxes/{created[0]}").status, 204)
        r = self.as_("bob", "POST", "api/sandboxes", {}, timeout=120)
        self.assertEqual(r.status, 201, r)
        self.addCleanup(self._delete_sandbox_quietly, r.json()["id"])


class Metrics(SandboxTestCase):
    def metrics(self):
        r = self.gw.request("GET", "metrics")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["Content-Type"].startswith("text/plain"), r.headers)
        values = {}
        for line in r.body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def test_counters_follow_what_happens(self):
        before = self.metrics()
        sb = self.new_sandbox()
        k = self.kernel_in(sb["id"])
        self.execute(k["id"], "1 + 1")
        self.execute(k["id"], "while True: pass", timeout_s=1)
        self.command(sb["id"], cmd="true")
        self.assertEqual(self.gw.request("GET", "api/sandboxes", token="wrong").status, 403)
        self.assertEqual(self.gw.request("GET", "metrics", auth=None).status, 401)
        after = self.metrics()
        grew = lambda name, by=1: self.assertGreaterEqual(after.get(name, 0) - before.get(name, 0), by, name)
        grew("sandgate_sandboxes_created_total")
        grew("sandgate_kernel_starts_total")
        grew("sandgate_kernel_start_seconds_count")
        grew("sandgate_executions_total", 2)
        grew("sandgate_execution_seconds_count", 2)
        grew("sandgate_execution_timeouts_total")
        grew("sandgate_commands_total")
        grew("sandgate_auth_failures_total", 2)
        grew("sandgate_relayed_messages_total", 4)
        self.assertGreaterEqual(after["sandgate_sandboxes"], 1)
        self.assertEqual(after['sandgate_kernel_start_seconds_bucket{le="+Inf"}'],
                         after["sandgate_kernel_start_seconds_count"])


class PolicyExecutionLimit(SandboxTestCase):
    """The policy's max_execution_s binds executes from any client."""

    @classmethod
    def setUpClass(cls):
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "share", "sandgate", "policies", "default.json")) as f:
            policy = json.load(f)
        policy["max_execution_s"] = 2
        fd, cls.policy_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(policy, f)
        cls.gateway_args = ("--policy", cls.policy_path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        os.unlink(cls.policy_path)

    def test_websocket_execute_is_interrupted_at_the_limit(self):
        kid = self.new_kernel("python")
        ks = self.connect(kid)
        ks.execute("kept = 1")
        reply, _ = ks.execute("while True: pass", timeout=30)
        self.assertEqual(reply.content["status"], "error")
        self.assertEqual(reply.content["ename"], "KeyboardInterrupt")
        rec = self.gw.request("GET", f"api/kernels/{kid}/executions/{reply.parent_id}").json()
        self.assertTrue(rec["timed_out"], rec)
        reply, iopub = ks.execute("kept + 1")
        self.assertEqual(result_text(iopub), "2")


if __name__ == "__main__":
    unittest.main()
