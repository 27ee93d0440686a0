"""The audit log (--audit-log, docs/api.md "Audit log") of a real gateway:
one JSON line per thing done, with its time, principal and ids; executions
over HTTP and over the channels with the code's digest and outcome; never a
token or code. Also the operator's idle timeout (--sandbox-idle-timeout-s)
that culls implicit sandboxes, and a failing audit file."""

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time
import unittest
import uuid

from sandgate_fixture import Deadline, Gateway, GatewayTestCase, remove_state_dir, wait_until

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
OUTCOMES = {"ok", "error", "timeout", "aborted"}


def read_lines(path):
    try:
        with open(path, "rb") as f:
            text = f.read().decode()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line]


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


class AuditTestCase(GatewayTestCase):
    def audit_path(self):
        return os.path.join(self.gw.state_dir, "audit.log")

    def lines(self):
        return read_lines(self.audit_path())

    def wait_for_line(self, what, seconds=30, **fields):
        """The first line with all these fields (a callable field is a predicate)."""
        def match(line):
            return all(v(line.get(k)) if callable(v) else line.get(k) == v for k, v in fields.items())
        return wait_until(lambda: next((line for line in self.lines() if match(line)), None), seconds,
                          lambda: f"{what} in the audit log; it holds {self.lines()[-8:]}")

    def assert_common(self, line):
        self.assertRegex(line["time"], TIME)
        self.assertEqual(list(line)[:3], ["time", "event", "principal"], line)

    def assert_no_secrets(self, *markers):
        with open(self.audit_path(), "rb") as f:
            text = f.read().decode()
        self.assertNotIn(self.gw.token, text)
        for m in markers:
            self.assertNotIn(m, text)

    def ws_execute(self, kid, code):
        ks = self.connect(kid)
        reply, _ = ks.execute(code)
        ks.close()
        return reply


class HostKernels(AuditTestCase):
    """Kernels on the host (the protocol tests' setting): runs as any user."""

    def test_default_file_is_in_the_state_dir_mode_0600(self):
        self.assertEqual(self.gw.request("GET", "api/sandboxes", token="wrong").status, 403)
        self.wait_for_line("an auth.failure", event="auth.failure")
        st = os.stat(self.audit_path())
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)

    def test_kernel_lifecycle_and_executes_over_http_and_the_channels(self):
        r = self.gw.request("POST", "api/kernels", {"name": "python3"}, timeout=90)
        self.assertEqual(r.status, 201, r)
        kid, sid = r.json()["id"], r.json()["sandbox_id"]
        self.addCleanup(self._delete_quietly, kid)
        line = self.wait_for_line("kernel.create", event="kernel.create", kernel_id=kid)
        self.assert_common(line)
        self.assertEqual((line["principal"], line["sandbox_id"], line["kernel_name"], line["implicit_sandbox"]),
                         ("admin", sid, "python3", True))

        rest_code = "audit_rest_marker = 40 + 2\naudit_rest_marker"
        rec = self.gw.request("POST", f"api/kernels/{kid}/execute", {"code": rest_code}, timeout=90).json()
        self.assertEqual(rec["status"], "ok", rec)
        line = self.wait_for_line("the REST execute", event="execute", msg_id=rec["msg_id"])
        self.assert_common(line)
        self.assertEqual((line["principal"], line["owner"], line["kernel_id"], line["sandbox_id"], line["via"]),
                         ("admin", "admin", kid, sid, "rest"))
        self.assertEqual((line["code_sha256"], line["code_bytes"], line["code_from"]),
                         (sha256(rest_code), len(rest_code.encode()), "request"))
        self.assertEqual(line["outcome"], "ok")
        self.assertIsInstance(line["duration_ms"], int)
        self.assertGreaterEqual(line["duration_ms"], 0)

        ws_code = "audit_ws_marker = 'ünïcode'\nprint(audit_ws_marker)"
        reply = self.ws_execute(kid, ws_code)
        line = self.wait_for_line("the channels execute", event="execute", msg_id=reply.parent_id)
        self.assertEqual((line["kernel_id"], line["via"], line["outcome"]), (kid, "channels", "ok"))
        self.assertEqual((line["code_sha256"], line["code_bytes"]), (sha256(ws_code), len(ws_code.encode())))
        self.assertEqual(line["code_from"], "request")  # digested from what the client sent
        connect = self.wait_for_line("kernel.connect", event="kernel.connect", kernel_id=kid)
        self.assertEqual(connect["principal"], "admin")

        rec = self.gw.request("POST", f"api/kernels/{kid}/execute", {"code": "1 / 0"}, timeout=90).json()
        self.assertEqual(rec["status"], "error", rec)
        self.assertEqual(self.wait_for_line("the failing execute", event="execute", msg_id=rec["msg_id"])["outcome"],
                         "error")

        self.assertEqual(self.gw.request("POST", f"api/kernels/{kid}/interrupt").status, 204)
        self.wait_for_line("kernel.interrupt", event="kernel.interrupt", kernel_id=kid, principal="admin")
        self.assertEqual(self.gw.request("POST", f"api/kernels/{kid}/restart", timeout=90).status, 200)
        line = self.wait_for_line("kernel.restart", event="kernel.restart", kernel_id=kid)
        self.assertEqual(line["outcome"], "ok")
        self.assertEqual(self.gw.request("DELETE", f"api/kernels/{kid}").status, 204)
        line = self.wait_for_line("kernel.delete", event="kernel.delete", kernel_id=kid)
        self.assertEqual((line["principal"], line["sandbox_id"]), ("admin", sid))
        for line in self.lines():
            self.assert_common(line)
            if line["event"] == "execute":
                self.assertIn(line["outcome"], OUTCOMES)
        self.assert_no_secrets("audit_rest_marker", "audit_ws_marker", "1 / 0")

    def test_an_execute_stopped_at_its_timeout(self):
        kid = self.new_kernel("python3")
        rec = self.gw.request("POST", f"api/kernels/{kid}/execute",
                              {"code": "import time\ntime.sleep(60)", "timeout_s": 1}, timeout=90).json()
        self.assertEqual(rec["status"], "timeout", rec)
        line = self.wait_for_line("the timed-out execute", event="execute", msg_id=rec["msg_id"])
        self.assertEqual((line["outcome"], line["timed_out"]), ("timeout", True))
        self.assertGreaterEqual(line["duration_ms"], 1000)

    def test_auth_failures_name_the_path_never_the_token(self):
        secret = "guessed-" + uuid.uuid4().hex
        self.assertEqual(self.gw.request("GET", "api/kernels", token=secret, auth="query").status, 403)
        self.assertEqual(self.gw.request("DELETE", "api/sandboxes", auth=None).status, 401)
        wrong = self.wait_for_line("the wrong token", event="auth.failure", why="wrong token", method="GET",
                                   path=self.gw.base_path + "api/kernels")
        self.assertIsNone(wrong["principal"])
        self.wait_for_line("the missing token", event="auth.failure", why="missing", method="DELETE")
        self.assert_no_secrets(secret)

    def test_sandbox_files_and_sessions(self):
        r = self.gw.request("POST", "api/sandboxes", {"metadata": {"conversation": "c-audit"}, "ttl_s": 600})
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        line = self.wait_for_line("sandbox.create", event="sandbox.create", sandbox_id=sid)
        self.assertEqual((line["principal"], line["metadata"]), ("admin", {"conversation": "c-audit"}))
        self.assertEqual(self.gw.request("PATCH", f"api/sandboxes/{sid}", {"ttl_s": 900}).status, 200)
        self.wait_for_line("sandbox.update", event="sandbox.update", sandbox_id=sid)
        body = b"secret,file,content\n"
        r = self.gw.request("PUT", f"api/sandboxes/{sid}/files/data/in.csv", raw=body)
        self.assertEqual(r.status, 201, r)
        line = self.wait_for_line("file.put", event="file.put", sandbox_id=sid)
        self.assertEqual((line["path"], line["size"], line["principal"]), ("data/in.csv", len(body), "admin"))
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{sid}/files/data/in.csv").status, 204)
        self.wait_for_line("file.delete", event="file.delete", sandbox_id=sid, path="data/in.csv")
        r = self.gw.request("POST", "api/kernels", {"name": "python3", "sandbox_id": sid}, timeout=90)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        line = self.wait_for_line("kernel.create", event="kernel.create", kernel_id=kid)
        self.assertEqual((line["sandbox_id"], line["implicit_sandbox"]), (sid, False))
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{sid}").status, 204)
        line = self.wait_for_line("sandbox.delete", event="sandbox.delete", sandbox_id=sid)
        self.assertEqual((line["principal"], line["kernel_ids"]), ("admin", [kid]))

        r = self.gw.request("POST", "api/sessions", {"path": "audit.ipynb", "type": "notebook",
                                                     "kernel": {"name": "python3"}}, timeout=90)
        self.assertEqual(r.status, 201, r)
        session = r.json()
        kid = session["kernel"]["id"]
        line = self.wait_for_line("the session's kernel.create", event="kernel.create", kernel_id=kid)
        self.assertEqual(line["session_id"], session["id"])
        self.assertEqual(self.gw.request("DELETE", f"api/sessions/{session['id']}").status, 204)
        line = self.wait_for_line("the session's kernel.delete", event="kernel.delete", kernel_id=kid)
        self.assertEqual(line["session_id"], session["id"])
        self.assert_no_secrets("secret,file,content")


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class Sandboxed(AuditTestCase):
    sandboxed = True

    def test_commands_are_digested(self):
        r = self.gw.request("POST", "api/sandboxes", {}, timeout=60)
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/sandboxes/{sid}"))
        cmd = "echo audit_cmd_marker; exit 3"
        out = self.gw.request("POST", f"api/sandboxes/{sid}/commands", {"cmd": cmd}, timeout=90).json()
        self.assertEqual(out["exit_code"], 3, out)
        line = self.wait_for_line("command.run", event="command.run", sandbox_id=sid)
        self.assertEqual((line["principal"], line["cmd_sha256"], line["cmd_bytes"], line["outcome"], line["exit_code"]),
                         ("admin", sha256(cmd), len(cmd), "error", 3))
        argv = ["/bin/true", "x"]
        self.gw.request("POST", f"api/sandboxes/{sid}/commands", {"cmd": argv}, timeout=90)
        self.wait_for_line("the argv command.run", event="command.run", sandbox_id=sid,
                           cmd_sha256=sha256("\0".join(argv)), outcome="ok")
        self.gw.request("POST", f"api/sandboxes/{sid}/commands", {"cmd": "sleep 30", "timeout_s": 1}, timeout=90)
        self.wait_for_line("the timed-out command.run", event="command.run", sandbox_id=sid, outcome="timeout")
        self.assert_no_secrets("audit_cmd_marker")

    def test_expiry_is_the_gateways_act(self):
        r = self.gw.request("POST", "api/sandboxes", {"ttl_s": 2}, timeout=60)
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        line = self.wait_for_line("sandbox.expire", 60, event="sandbox.expire", sandbox_id=sid)
        self.assertIsNone(line["principal"])
        self.assertEqual((line["owner"], line["reason"], line["implicit"]), ("admin", "expired", False))


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class Restart(unittest.TestCase):
    def test_a_restarted_gateway_audits_the_kernels_it_took_back(self):
        first = Gateway(name="audit-restart-1", sandboxed=True, keep_kernels=True)
        first.owns_state = False  # the next gateway uses it; removed at the end
        self.addCleanup(remove_state_dir, first.state_dir)
        self.addCleanup(lambda: first.stopped or first.crash())
        kid = first.start_kernel("python", timeout=120)
        self.assertEqual(first.stop()[0], 0)
        second = Gateway(name="audit-restart-2", sandboxed=True, state_dir=first.state_dir, token=first.token)
        self.addCleanup(lambda: second.stopped or second.stop())
        wait_until(lambda: second.request("GET", f"api/kernels/{kid}").json().get("execution_state") == "idle", 60,
                   "the kernel to be taken back")
        rec = second.request("POST", f"api/kernels/{kid}/execute", {"code": "'after'"}, timeout=120).json()
        self.assertEqual(rec["status"], "ok", rec)
        path = os.path.join(first.state_dir, "audit.log")
        wait_until(lambda: [l for l in read_lines(path) if l["event"] == "execute" and l["msg_id"] == rec["msg_id"]],
                   30, "the execute of the kernel taken back")
        ks = second.connect(kid)
        reply, _ = ks.execute("'channels after'")
        ks.close()
        wait_until(lambda: [l for l in read_lines(path)
                            if l["event"] == "execute" and l["msg_id"] == reply.parent_id and l["via"] == "channels"],
                   30, "the channels execute of the kernel taken back")
        # Both gateways appended to the one file.
        self.assertEqual([l["kernel_id"] for l in read_lines(path) if l["event"] == "kernel.create"], [kid])


class IdleTimeout(AuditTestCase):
    """--sandbox-idle-timeout-s: every sandbox, implicit ones included, is
    culled after that long without activity; executions over the channels
    are activity."""
    idle_s = 5
    gateway_args = ("--sandbox-idle-timeout-s", str(idle_s))

    def test_an_implicit_sandbox_is_culled_with_its_kernel(self):
        kid = self.new_kernel("python3")
        sid = self.gw.request("GET", f"api/kernels/{kid}").json()["sandbox_id"]
        self.assertEqual(self.gw.request("GET", f"api/sandboxes/{sid}").json()["idle_timeout_s"], self.idle_s)
        wait_until(lambda: self.gw.request("GET", f"api/kernels/{kid}").status == 404, 60, "the cull")
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").json()["reason"], "culled")
        line = self.wait_for_line("sandbox.cull", event="sandbox.cull", sandbox_id=sid)
        self.assertIsNone(line["principal"])
        self.assertEqual((line["owner"], line["implicit"], line["kernel_ids"]), ("admin", True, [kid]))

    def test_creators_may_ask_for_less_not_more(self):
        self.assertError(self.gw.request("POST", "api/sandboxes", {"idle_timeout_s": self.idle_s + 1}), 400)
        r = self.gw.request("POST", "api/sandboxes", {"idle_timeout_s": 1})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["idle_timeout_s"], 1)
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/sandboxes/{r.json()['id']}"))

    def test_executions_over_the_channels_keep_it_alive(self):
        kid = self.new_kernel("python3")
        ks = self.connect(kid)
        # Short executions, for twice the idle timeout: never idle that long.
        d = Deadline(2 * self.idle_s)
        while d.remaining() > 0:
            reply, _ = ks.execute("1")
            self.assertEqual(reply.content["status"], "ok")
            time.sleep(0.5)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").status, 200)
        ks.close()
        wait_until(lambda: self.gw.request("GET", f"api/kernels/{kid}").status == 404, 60, "the cull")


class FailingAuditFile(GatewayTestCase):
    gateway_args = ("--audit-log", "/dev/full")

    def test_is_logged_once_and_nothing_breaks(self):
        for _ in range(3):
            self.assertEqual(self.gw.request("GET", "api/kernels", token="wrong").status, 403)
        r = self.gw.request("POST", "api/sandboxes", {})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.gw.request("DELETE", f"api/sandboxes/{r.json()['id']}").status, 204)
        self.assertEqual(self.gw.request("GET", "api").status, 200)
        failures = [e for e in self.gw.log_events() if e.get("event") == "audit_write_failed"]
        self.assertEqual(len(failures), 1, failures)
        self.assertEqual(failures[0]["path"], "/dev/full")
        self.assertTrue(self.gw.alive())


class Configuration(unittest.TestCase):
    """The path from the environment and from a config file; an existing
    file is appended to and made 0600; rotation with SIGHUP; a path that
    cannot be opened stops the gateway at start."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sandgate-audit-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.state_dir = os.path.join(self.dir, "state")

    def wait_for_failure_line(self, gw, path):
        return wait_until(lambda: [l for l in read_lines(path) if l.get("event") == "auth.failure"], 30,
                          f"an auth.failure in {path}")

    def test_environment_and_existing_file(self):
        path = os.path.join(self.dir, "from-env.log")
        with open(path, "w") as f:
            f.write('{"earlier": true}\n')
        os.chmod(path, 0o644)
        with Gateway(env={"SANDGATE_AUDIT_LOG": path}, name="audit-env", state_dir=self.state_dir) as gw:
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
            gw.request("GET", "api", token="wrong")
            self.wait_for_failure_line(gw, path)
        self.assertEqual(read_lines(path)[0], {"earlier": True})

    def test_config_file_and_sighup_rotation(self):
        path = os.path.join(self.dir, "from-config.log")
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"audit_log": path}, f)
        with Gateway("--config", config, name="audit-config", state_dir=self.state_dir) as gw:
            gw.request("GET", "api", token="wrong")
            self.wait_for_failure_line(gw, path)
            os.rename(path, path + ".1")
            gw.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: any(e.get("event") == "audit_log_reopened" for e in gw.log_events()), 30,
                       "the reopen")
            gw.request("GET", "api", token="wrong")
            self.wait_for_failure_line(gw, path)
            self.assertEqual(len(read_lines(path + ".1")), 1)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)

    def test_a_path_that_cannot_be_opened_stops_the_start(self):
        missing = os.path.join(self.dir, "no-such-dir", "audit.log")
        with self.assertRaises(AssertionError) as cm:
            Gateway("--audit-log", missing, name="audit-missing", state_dir=self.state_dir)
        self.assertIn("no-such-dir", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
