"""The Python client (share/python/sandgate) against a real gateway whose
kernels and commands run in real sandboxes: sandboxes made with a TTL and
metadata, found again by id and by metadata, killed (also by a `with`
block); run_code keeping state, its callbacks, a matplotlib chart as PNG
bytes, an exception, a timeout; files round-tripped as text and as every
byte value; commands and their exit codes; the network policy; and each
error class for what the gateway answers (a wrong token, an unknown or
killed sandbox, a refused network, a bad argument, no gateway at all).
Needs root (as CI runs).

Run by hand: SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/python-client/test_client.py -v
"""

import builtins
import datetime
import hashlib
import json
import os
import socket
import sys
import tempfile
import unittest
import uuid
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
sys.path.insert(0, os.path.join(REPO, "share", "python"))

from sandgate_fixture import PNG_SIGNATURE, Gateway, GatewayTestCase, png_size  # noqa: E402

import sandgate  # noqa: E402
from sandgate import (APIConnectionError, AuthenticationError, CommandExitError, InvalidArgumentError,  # noqa: E402
                      Limits, NetworkPolicy, NetworkRefusedError, NotFoundError, Sandbox, SandgateError)

# The shipped policy, with a ceiling that lets a sandbox open egress to one
# host: the network tests change a running sandbox's policy within it and
# are refused above it.
with open(os.path.join(REPO, "share", "sandgate", "policies", "default.json")) as f:
    POLICY = json.load(f)
POLICY["network_ceiling"] = {"mode": "allow", "hosts": ["example.org"], "ports": [443]}
EGRESS = NetworkPolicy(mode="allow", hosts=["example.org"], ports=[443])

CHART = """
import matplotlib.pyplot as plt
plt.plot([1, 4, 9, 16])
plt.title("squares")
plt.show()
"""


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class PythonClient(GatewayTestCase):
    """One gateway and one shared sandbox (with its python kernel) for the
    class; tests that end or reconfigure a sandbox make their own."""

    sandboxed = True

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(name=cls.__name__, sandboxed=True, policy=POLICY)
        cls.url, cls.token = cls.gw.url, cls.gw.token
        cls.sb = Sandbox.create(cls.url, cls.token, ttl_s=900)

    @classmethod
    def tearDownClass(cls):
        if cls.gw and cls.gw.alive():
            cls.sb.kill()
        super().tearDownClass()

    def new_sandbox(self, **kw):
        sb = Sandbox.create(self.url, self.token, **kw)
        self.addCleanup(sb.kill)
        return sb

    # --- Sandboxes ------------------------------------------------------------

    def test_create_with_ttl_and_metadata_then_connect_list_and_extend(self):
        tag = "t-" + uuid.uuid4().hex
        env = {"SANDGATE_URL": self.url, "SANDGATE_TOKEN": self.token}
        with mock.patch.dict(os.environ, env):  # the URL and token from the environment
            sb = Sandbox.create(ttl_s=300, metadata={"conversation": tag})
            self.addCleanup(sb.kill)
            other = self.new_sandbox(metadata={"conversation": "other-" + tag})
            info = sb.get_info()
            self.assertEqual(info.sandbox_id, sb.id)
            self.assertEqual(info.metadata, {"conversation": tag})
            self.assertAlmostEqual((info.expires_at - info.created).total_seconds(), 300, delta=3)
            self.assertEqual(info.created.tzinfo, datetime.timezone.utc)
            self.assertEqual(info.network, "none")
            self.assertEqual([s.id for s in Sandbox.list(metadata={"conversation": tag})], [sb.id])
            self.assertLessEqual({sb.id, other.id}, {s.id for s in Sandbox.list()})
            again = Sandbox.connect(sb.id)
            self.assertEqual(again.id, sb.id)
            self.assertEqual(again.get_info().metadata, {"conversation": tag})
            self.assertTrue(again.is_running())
            extended = again.set_timeout(3600)
            self.assertGreater(extended.expires_at, info.expires_at + datetime.timedelta(seconds=3000))

    def test_context_manager_kills_the_sandbox_also_on_an_exception(self):
        with Sandbox.create(self.url, self.token) as sb:
            sb.files.write("note.txt", "bye")
        with self.assertRaises(NotFoundError) as caught:
            Sandbox.connect(sb.id, self.url, self.token)
        self.assertEqual(caught.exception.reason, "deleted")
        with self.assertRaises(ZeroDivisionError):
            with Sandbox.create(self.url, self.token) as failing:
                1 / 0
        self.assertFalse(failing.is_running())

    def test_kill_then_use_raises_not_found(self):
        sb = Sandbox.create(self.url, self.token)
        self.assertEqual(sb.run_code("6 * 7").text, "42")
        self.assertTrue(sb.kill())
        self.assertFalse(sb.kill())
        self.assertFalse(sb.is_running())
        for use in (lambda: sb.run_code("1"), lambda: sb.files.write("a.txt", "x"),
                    lambda: sb.commands.run("true"), sb.get_info):
            with self.subTest(use=use):
                with self.assertRaises(NotFoundError) as caught:
                    use()
                self.assertEqual(caught.exception.status, 404)
                self.assertEqual(caught.exception.reason, "deleted")
                self.assertEqual(caught.exception.sandbox_id, sb.id)
                self.assertIn(sb.id, str(caught.exception))

    def test_unknown_sandbox_id_raises_not_found_naming_it(self):
        unknown = str(uuid.uuid4())
        with self.assertRaises(NotFoundError) as caught:
            Sandbox.connect(unknown, self.url, self.token)
        self.assertEqual((caught.exception.status, caught.exception.sandbox_id), (404, unknown))
        self.assertIn(unknown, str(caught.exception))

    def test_wrong_or_missing_token_raises_authentication_error(self):
        with self.assertRaises(AuthenticationError) as caught:
            Sandbox.connect(self.sb.id, self.url, "not-the-token")
        self.assertEqual(caught.exception.status, 403)
        self.assertIn("Invalid token", str(caught.exception))
        with self.assertRaises(AuthenticationError) as caught:
            Sandbox.list(self.url, "")
        self.assertEqual(caught.exception.status, 401)

    def test_invalid_arguments_name_the_field(self):
        with self.assertRaises(InvalidArgumentError) as caught:
            Sandbox.create(self.url, self.token, limits=Limits(cpu=1000))
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("cpu", caught.exception.message)
        with self.assertRaises(InvalidArgumentError):
            self.sb.run_code("1", language="cobol")

    def test_no_gateway_raises_a_connection_error(self):
        with socket.socket() as bound:  # bound, never listening: connections to it are refused
            bound.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{bound.getsockname()[1]}"
            with self.assertRaises(APIConnectionError) as caught:
                Sandbox.create(url, self.token)
        self.assertIsInstance(caught.exception, builtins.ConnectionError)
        self.assertIsNone(caught.exception.status)

    # --- Network --------------------------------------------------------------

    def test_network_policy_is_set_within_the_ceiling_and_refused_above(self):
        sb = self.new_sandbox()
        self.assertEqual(sb.get_network(), "none")
        info = sb.set_network(EGRESS)
        self.assertIsInstance(info.network, NetworkPolicy)
        now = sb.get_network()
        self.assertEqual((now.mode, now.hosts, now.ports), ("allow", ["example.org"], [443]))
        with self.assertRaises(NetworkRefusedError) as caught:
            sb.set_network("open")
        self.assertEqual((caught.exception.status, caught.exception.reason), (403, "network_refused"))
        self.assertIn("ceiling", caught.exception.message)
        self.assertEqual(sb.set_network("none").network, "none")
        with self.assertRaises(NetworkRefusedError):
            Sandbox.create(self.url, self.token, network={"mode": "allow", "hosts": ["elsewhere.example"]})

    # --- Code -----------------------------------------------------------------

    def test_run_code_keeps_state_and_calls_back_with_output(self):
        out, err, results = [], [], []
        first = self.sb.run_code("import sys\nx = 6 * 7\nprint('first')\nprint('warn', file=sys.stderr)",
                                 on_stdout=out.append, on_stderr=err.append, on_result=results.append)
        self.assertIsNone(first.error)
        self.assertEqual((first.logs.stdout, first.logs.stderr), (["first\n"], ["warn\n"]))
        self.assertEqual([(str(m), m.error) for m in out], [("first\n", False)])
        self.assertEqual([(m.line, m.error) for m in err], [("warn\n", True)])
        self.assertIsNone(first.text)
        second = self.sb.run_code("x", on_result=results.append)
        self.assertEqual(second.text, "42")
        self.assertEqual(second.execution_count, first.execution_count + 1)
        self.assertEqual([(r.text, r.is_main_result) for r in results], [("42", True)])

    def test_matplotlib_chart_comes_back_as_png_bytes(self):
        seen = []
        execution = self.sb.run_code(CHART, on_result=seen.append)
        self.assertIsNone(execution.error)
        pngs = [r for r in execution.results if r.png is not None]
        self.assertEqual(len(pngs), 1, execution.results)
        chart = pngs[0]
        self.assertFalse(chart.is_main_result)
        self.assertTrue(chart.png.startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertEqual(chart.png[:8], PNG_SIGNATURE)
        self.assertIn("png", chart.formats())
        self.assertIn("image/png", chart.data)
        self.assertEqual(seen, execution.results)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "chart.png")
            with open(path, "wb") as f:
                f.write(chart.png)
            with open(path, "rb") as f:
                width, height = png_size(f.read())  # a whole, valid PNG (its IHDR's CRC checks)
        self.assertGreater(width, 100)
        self.assertGreater(height, 100)

    def test_html_and_json_results_are_decoded(self):
        execution = self.sb.run_code(
            "from IPython.display import HTML, JSON, display\n"
            "display(HTML('<b>bold</b>'))\ndisplay(JSON({'a': [1, 2]}))\n'done'")
        html, data, main = execution.results
        self.assertEqual(html.html, "<b>bold</b>")
        self.assertEqual(data.json, {"a": [1, 2]})
        self.assertTrue(main.is_main_result)
        self.assertEqual(execution.text, "'done'")

    def test_exception_gives_execution_error(self):
        errors = []
        execution = self.sb.run_code("1 / 0", on_error=errors.append)
        self.assertIsNotNone(execution.error)
        self.assertEqual(execution.error.name, "ZeroDivisionError")
        self.assertEqual(execution.error.value, "division by zero")
        self.assertIn("ZeroDivisionError", execution.error.traceback)
        self.assertEqual(errors, [execution.error])
        self.assertIsNone(execution.text)
        self.assertEqual(self.sb.run_code("'still here'").text, "'still here'")

    def test_timeout_raises_timeout_error_and_the_state_survives(self):
        self.sb.run_code("kept = 'yes'")
        with self.assertRaises(sandgate.TimeoutError) as caught:
            self.sb.run_code("print('started', flush=True)\nwhile True: pass", timeout=1)
        self.assertIsInstance(caught.exception, builtins.TimeoutError)
        self.assertIsInstance(caught.exception, SandgateError)
        self.assertEqual(caught.exception.execution.status, "timeout")
        self.assertEqual(caught.exception.execution.logs.stdout, ["started\n"])
        self.assertFalse(caught.exception.execution.kernel_restarted)
        self.assertEqual(self.sb.run_code("kept").text, "'yes'")

    def test_other_languages_and_contexts_have_state_of_their_own(self):
        sb = self.new_sandbox()
        sb.run_code("x = 1")
        self.assertEqual(sb.run_code("echo $((6 * 7))", language="bash").logs.stdout, ["42\n"])
        ctx = sb.create_code_context()
        self.assertEqual(ctx.kernel_name, "python")
        self.assertEqual(sb.run_code("x", context=ctx).error.name, "NameError")
        self.assertEqual(sb.run_code("x").text, "1")
        self.assertEqual({c.kernel_name for c in sb.list_code_contexts()}, {"python", "bash"})
        self.assertEqual(len(sb.list_code_contexts()), 3)
        sb.remove_code_context(ctx)
        self.assertEqual(len(sb.list_code_contexts()), 2)
        # Another client of the same sandbox runs in the same kernel.
        self.assertEqual(Sandbox.connect(sb.id, self.url, self.token).run_code("x").text, "1")

    # --- Files ----------------------------------------------------------------

    def test_files_round_trip_text_and_every_byte_value(self):
        files = self.sb.files
        text = "héllo, wörld ✓\nsecond line\n"
        written = files.write("io/greeting.txt", text)
        self.assertEqual((written.path, written.name, written.size),
                         ("/workspace/io/greeting.txt", "greeting.txt", len(text.encode())))
        self.assertEqual(files.read("io/greeting.txt"), text)
        every_byte = bytes(range(256)) * 4
        self.assertEqual(files.write("io/every byte.bin", every_byte).size, 1024)
        self.assertEqual(files.read("io/every byte.bin", format="bytes"), every_byte)
        self.assertEqual(b"".join(files.read("/workspace/io/every byte.bin", format="stream")), every_byte)
        # What the sandbox's programs see is the same bytes.
        digest = self.sb.commands.run("sha256sum 'io/every byte.bin'").stdout.split()[0]
        self.assertEqual(digest, hashlib.sha256(every_byte).hexdigest())
        self.assertEqual(self.sb.run_code("open('io/greeting.txt', encoding='utf-8').read()").text, repr(text))

    def test_files_list_stat_make_dir_rename_remove(self):
        files = self.sb.files
        files.write("tree/a.txt", "a")
        self.assertTrue(files.make_dir("tree/sub/deeper"))
        self.assertFalse(files.make_dir("tree/sub/deeper"))
        listing = {(e.name, e.type, e.path) for e in files.list("tree")}
        self.assertEqual(listing, {("a.txt", "file", "/workspace/tree/a.txt"),
                                   ("sub", "directory", "/workspace/tree/sub")})
        self.assertIn("/workspace/tree/sub/deeper", [e.path for e in files.list("tree", depth=3)])
        info = files.get_info("tree/a.txt")
        self.assertEqual((info.type, info.size, info.uid), ("file", 1, 1000))
        self.assertIsNotNone(info.modified_time)
        moved = files.rename("tree/a.txt", "tree/sub/b.txt")
        self.assertEqual((moved.path, moved.size), ("/workspace/tree/sub/b.txt", 1))
        self.assertFalse(files.exists("tree/a.txt"))
        self.assertTrue(files.exists("tree/sub/b.txt"))
        files.remove("tree")
        self.assertFalse(files.exists("tree"))
        with self.assertRaises(NotFoundError) as caught:
            files.read("tree/sub/b.txt")
        self.assertEqual((caught.exception.reason, caught.exception.path), ("no_such_path", "tree/sub/b.txt"))
        self.assertIn("tree/sub/b.txt", str(caught.exception))

    # --- Commands -------------------------------------------------------------

    def test_commands_return_output_and_raise_on_a_non_zero_exit(self):
        commands = self.sb.commands
        result = commands.run("echo out; echo err >&2")
        self.assertEqual((result.stdout, result.stderr, result.exit_code, result.error), ("out\n", "err\n", 0, None))
        result = commands.run(["printf", "%s|", "a b", "$HOME"])
        self.assertEqual(result.stdout, "a b|$HOME|")
        commands.run("mkdir -p work")
        result = commands.run("pwd; echo $GREETING", cwd="work", envs={"GREETING": "hi"})
        self.assertEqual(result.stdout, "/workspace/work\nhi\n")
        with self.assertRaises(CommandExitError) as caught:
            commands.run("echo partial; echo broken >&2; exit 3")
        self.assertEqual((caught.exception.exit_code, caught.exception.stdout), (3, "partial\n"))
        self.assertIn("exited with code 3: broken", str(caught.exception))
        unchecked = commands.run("exit 4", check=False)
        self.assertEqual((unchecked.exit_code, unchecked.error), (4, "exit code 4"))
        with self.assertRaises(sandgate.TimeoutError) as caught:
            commands.run("sleep 30", timeout=1)
        self.assertTrue(caught.exception.command_result.timed_out)


if __name__ == "__main__":
    unittest.main()
