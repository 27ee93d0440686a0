"""sandgate-javascript (kernelspecs "javascript" and "typescript") through jupyter_client:
state across cells, streams, results, errors, display_data, interrupts, packages from the
workspace, completion, a Node that exits, TypeScript checks, shutdown."""

import base64
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest
import zlib

from kernel_harness import KernelSession, is_idle

INTERRUPT_BUDGET_S = 2.0
ONE_MIB = 1024 * 1024


def node_version():
    return subprocess.run(["node", "--version"], check=True, capture_output=True, text=True).stdout.strip().lstrip("v")


def make_png(width, height, seed):
    """A valid PNG whose pixels depend on seed (bytes the test knows exactly)."""
    rows = b"".join(b"\x00" + bytes((x * seed + y * 7 + i) % 256 for x in range(width) for i in range(3))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def wait_gone(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


class WorkspaceKernelTestCase(unittest.TestCase):
    """A kernel per class, started in a fresh workspace directory that is also its HOME."""

    kernel_name = "javascript"

    @classmethod
    def setUpClass(cls):
        cls.workspace = tempfile.mkdtemp(prefix="sandgate-js-test-")
        cls.kernel = KernelSession(cls.kernel_name, cwd=cls.workspace, env={"HOME": cls.workspace})

    @classmethod
    def tearDownClass(cls):
        cls.kernel.close()
        shutil.rmtree(cls.workspace, ignore_errors=True)

    def assertOk(self, cell):
        self.assertEqual(cell.reply["status"], "ok", cell.reply)

    def result(self, cell):
        self.assertOk(cell)
        results = cell.of_type("execute_result")
        self.assertEqual(len(results), 1, cell.iopub)
        return results[0]["data"]["text/plain"]


class JavaScriptKernelTest(WorkspaceKernelTestCase):
    def test_kernel_info(self):
        info = self.kernel.request(self.kernel.client.kernel_info)
        self.assertEqual(info["implementation"], "sandgate-javascript")
        language = info["language_info"]
        self.assertEqual(language["name"], "javascript")
        self.assertEqual(language["file_extension"], ".js")
        self.assertEqual(language["mimetype"], "text/javascript")
        self.assertEqual(language["version"], node_version())

    def test_declarations_persist_across_cells(self):
        self.assertOk(self.kernel.run(
            "const base = 40;\nlet counter = 1;\nfunction twice(x) { return 2 * x; }\n"
            "class Box { constructor(v) { this.v = v; } get() { return this.v; } }"))
        self.assertEqual(self.result(self.kernel.run("counter += 1; twice(counter) + base + new Box(-4).get()")), "40")
        # Running a cell again declares its constants again, as in a notebook.
        self.assertOk(self.kernel.run("const base = 1;"))
        self.assertEqual(self.result(self.kernel.run("base")), "1")
        self.assertEqual(self.result(self.kernel.run("const { a, b: [c] } = { a: 1, b: [2] }; a + c")), "3")
        self.assertEqual(self.result(self.kernel.run("[typeof module.exports, __dirname === process.cwd()]")),
                         "[ 'object', true ]")
        # A function is callable before its line, as in a script.
        self.assertOk(self.kernel.run("const early_result = early();\nfunction early() { return 'hoisted'; }"))
        self.assertEqual(self.result(self.kernel.run("[early_result, early()]")), "[ 'hoisted', 'hoisted' ]")

    def test_top_level_await(self):
        cell = self.kernel.run("const got = await new Promise((resolve) => setTimeout(() => resolve(21), 50));\n"
                               "got * 2")
        self.assertEqual(self.result(cell), "42")
        self.assertEqual(self.result(self.kernel.run("got")), "21")

    def test_last_expression_is_the_result_with_the_execution_count(self):
        cell = self.kernel.run("const o = { n: 1, s: 'two' };\no")
        self.assertEqual(self.result(cell), "{ n: 1, s: 'two' }")
        self.assertEqual(cell.of_type("execute_result")[0]["execution_count"], cell.reply["execution_count"])
        self.assertEqual(cell.of_type("execute_result")[0]["data"], {"text/plain": "{ n: 1, s: 'two' }"})
        # undefined shows nothing
        cell = self.kernel.run("let nothing;")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("execute_result"), [])

    def test_stdout_and_stderr_keep_their_order(self):
        cell = self.kernel.run("console.log('one'); console.error('two'); console.log('three'); "
                               "process.stdout.write('four\\n')")
        self.assertOk(cell)
        self.assertEqual([(s["name"], s["text"]) for s in cell.streams()],
                         [("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\nfour\n")])

    def test_output_streams_while_the_cell_runs(self):
        cell = self.kernel.start("console.log('first');\nawait new Promise((r) => setTimeout(r, 1000));\n"
                                 "console.log('second');")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "first" in m["content"]["text"])
        first_seen = time.monotonic()
        self.assertIsNone(cell.reply)
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "second" in m["content"]["text"])
        self.assertGreater(time.monotonic() - first_seen, 0.5)
        self.assertOk(self.kernel.finish(cell))

    def test_small_writes_are_batched(self):
        cell = self.kernel.run("for (let i = 0; i < 20000; ++i) console.log(i);")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "".join(f"{i}\n" for i in range(20000)))
        self.assertLess(len(cell.streams()), 2000)

    def test_one_mebibyte_of_output_arrives_whole(self):
        cell = self.kernel.run(f"console.log('é'.repeat({ONE_MIB}))")
        self.assertOk(cell)
        self.assertEqual(cell.text(), "é" * ONE_MIB + "\n")

    def test_an_uncaught_error_is_an_error_reply_with_its_stack(self):
        cell = self.kernel.run("function thrower() { throw new TypeError('bad input'); }\n"
                               "console.log('before');\nthrower();")
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("TypeError", "bad input"))
        traceback = "\n".join(cell.reply["traceback"])
        self.assertIn("TypeError: bad input", traceback)
        self.assertIn("at thrower", traceback)
        self.assertEqual(cell.of_type("error")[0]["ename"], "TypeError")
        self.assertEqual(cell.text(), "before\n")

    def test_a_thrown_non_error_value(self):
        cell = self.kernel.run("throw {code: 7}")
        self.assertEqual((cell.reply["status"], cell.reply["ename"]), ("error", "Uncaught"))
        self.assertIn("code: 7", cell.reply["evalue"])

    def test_a_rejected_promise_is_an_error_reply(self):
        cell = self.kernel.run("await Promise.reject(new RangeError('out of range'))")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("RangeError", "out of range"))
        cell = self.kernel.run("Promise.reject(new Error('nobody handled me')); 1")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("Error", "nobody handled me"))
        cell = self.kernel.run("setTimeout(() => { throw new SyntaxError('later'); }, 10); "
                               "await new Promise((r) => setTimeout(r, 200));")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("SyntaxError", "later"))
        self.assertEqual(self.result(self.kernel.run("'still here'")), "'still here'")

    def test_a_syntax_error(self):
        cell = self.kernel.run("const = 3")
        self.assertEqual(cell.reply["ename"], "SyntaxError")
        self.assertTrue(cell.reply["evalue"])

    def interrupt_cell(self, code, interrupt):
        self.assertOk(self.kernel.run("var kept = 'yes'; var spins = 0;"))
        cell = self.kernel.start("console.log('started');\n" + code)
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
        sent = time.monotonic()
        interrupt()
        self.kernel.finish(cell, timeout=10)
        self.assertLess(time.monotonic() - sent, INTERRUPT_BUDGET_S)
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual(cell.reply["ename"], "Interrupted")
        self.assertNotIn("not-reached", cell.text())
        self.assertEqual(self.result(self.kernel.run("kept")), "'yes'")

    def test_interrupt_request_stops_a_busy_loop(self):
        self.interrupt_cell("while (true) { spins++; }\nconsole.log('not-reached');", self.kernel.interrupt_by_message)
        self.assertEqual(self.result(self.kernel.run("spins > 0")), "true")

    def test_sigint_stops_a_busy_loop(self):
        self.interrupt_cell("for (;;) {}\nconsole.log('not-reached');",
                            lambda: self.kernel.manager.signal_kernel(signal.SIGINT))

    def test_interrupt_stops_a_pending_await(self):
        self.interrupt_cell("await new Promise(() => {});\nconsole.log('not-reached');",
                            self.kernel.interrupt_by_message)

    def test_idle_interrupts_are_harmless(self):
        for _ in range(3):
            self.kernel.manager.signal_kernel(signal.SIGINT)
        self.kernel.interrupt_by_message()
        self.assertEqual(self.result(self.kernel.run("1 + 1")), "2")

    def test_png_and_html_display_data_are_byte_identical(self):
        png = make_png(20, 12, 5)
        with open(os.path.join(self.workspace, "picture.png"), "wb") as f:
            f.write(png)
        html = "<p class=\"x\">caf\u00e9 &amp; \u20ac \U0001F600 <b>bold</b></p>\n\t"
        with open(os.path.join(self.workspace, "page.html"), "w", encoding="utf-8") as f:
            f.write(html)
        cell = self.kernel.run("const fs = require('fs');\n"
                               "display.png(fs.readFileSync('picture.png'));\n"
                               "display.html(fs.readFileSync('page.html', 'utf8'));\n"
                               "display.svg('<svg xmlns=\"http://www.w3.org/2000/svg\"/>');\n"
                               "display.json({ a: [1, 2] });\n"
                               "display.text('plain');\n"
                               f"display({{ 'image/png': {json.dumps(base64.b64encode(png).decode())}, "
                               "'text/plain': 'raw bundle' }, { 'image/png': { width: 20 } });")
        self.assertOk(cell)
        shown = cell.of_type("display_data")
        self.assertEqual(len(shown), 6, shown)
        self.assertEqual(shown[0]["data"]["image/png"], base64.b64encode(png).decode())
        self.assertEqual(shown[1]["data"]["text/html"], html)
        self.assertEqual(shown[2]["data"]["image/svg+xml"], '<svg xmlns="http://www.w3.org/2000/svg"/>')
        self.assertEqual(shown[3]["data"]["application/json"], {"a": [1, 2]})
        self.assertEqual(shown[4]["data"], {"text/plain": "plain"})
        self.assertEqual(shown[5]["data"], {"image/png": base64.b64encode(png).decode(), "text/plain": "raw bundle"})
        self.assertEqual(shown[5]["metadata"], {"image/png": {"width": 20}})

    def test_display_of_image_bytes_shows_the_image(self):
        png = make_png(9, 4, 3)
        jpeg_start = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0, 16]) + b"JFIF\0"
        cell = self.kernel.run(
            f"const png = Buffer.from('{base64.b64encode(png).decode()}', 'base64');\n"
            "display(png);\n"
            "display(new Uint8Array(png.buffer, png.byteOffset, png.length).buffer.slice(png.byteOffset,"
            " png.byteOffset + png.length));\n"
            f"display(Buffer.from('{base64.b64encode(jpeg_start).decode()}', 'base64'), {{ sandgate: 1 }});\n"
            "display(Buffer.from('not an image'));")
        self.assertOk(cell)
        shown = cell.of_type("display_data")
        self.assertEqual([sorted(m["data"]) for m in shown],
                         [["image/png", "text/plain"], ["image/png", "text/plain"],
                          ["image/jpeg", "text/plain"], ["text/plain"]])
        self.assertEqual(shown[0]["data"]["image/png"], base64.b64encode(png).decode())
        self.assertEqual(shown[1]["data"]["image/png"], base64.b64encode(png).decode())
        self.assertEqual(shown[2]["data"]["image/jpeg"], base64.b64encode(jpeg_start).decode())
        self.assertEqual(shown[2]["metadata"], {"sandgate": 1})
        self.assertIn("<Buffer 6e 6f 74", shown[3]["data"]["text/plain"])

    def test_image_sizes_are_sent_under_the_mime_type(self):
        png = make_png(6, 4, 2)
        encoded = base64.b64encode(png).decode()
        svg = '<svg xmlns="http://www.w3.org/2000/svg"/>'
        cell = self.kernel.run(
            f"const sized = Buffer.from('{encoded}', 'base64');\n"
            "display.png(sized, { width: 160 });\n"
            "display.jpeg(sized, { width: 20, height: 10, unconfined: true });\n"
            f"display.svg('{svg}', {{ height: 40 }});\n"
            "display(sized, { width: 8 });\n"
            "display.png(sized, { 'image/png': { width: 20 } });\n"
            "display.png(sized, { width: 160, 'image/png': { width: 20, height: 5 }, sandgate: 1 });\n"
            "display.png(sized, { sandgate: 2 });\n"
            "display.png(sized);\n"
            "display.html('<b>wide</b>', { width: 3 });")
        self.assertOk(cell)
        shown = cell.of_type("display_data")
        self.assertEqual([m["metadata"] for m in shown], [
            {"image/png": {"width": 160}},
            {"image/jpeg": {"width": 20, "height": 10, "unconfined": True}},
            {"image/svg+xml": {"height": 40}},
            {"image/png": {"width": 8}},
            {"image/png": {"width": 20}},
            {"image/png": {"width": 20, "height": 5}, "sandgate": 1},
            {"sandgate": 2},
            {},
            {"width": 3},
        ])
        self.assertEqual(shown[0]["data"], {"image/png": encoded, "text/plain": "<PNG image>"})
        self.assertEqual(shown[2]["data"], {"image/svg+xml": svg, "text/plain": "<SVG image>"})

    def test_display_comes_between_the_output_around_it(self):
        cell = self.kernel.run("console.log('before'); display.text('shown'); console.log('after');")
        order = [m["msg_type"] for m in cell.iopub if m["msg_type"] in ("stream", "display_data")]
        self.assertEqual(order, ["stream", "display_data", "stream"])

    def test_require_and_import_find_packages_in_the_workspace(self):
        package = os.path.join(self.workspace, "node_modules", "sandgate-greeter")
        os.makedirs(package, exist_ok=True)
        with open(os.path.join(package, "package.json"), "w") as f:
            json.dump({"name": "sandgate-greeter", "version": "1.0.0", "main": "index.js"}, f)
        with open(os.path.join(package, "index.js"), "w") as f:
            f.write("exports.greet = (name) => `hello ${name}`;\n")
        self.assertEqual(self.result(self.kernel.run("require('sandgate-greeter').greet('require')")),
                         "'hello require'")
        self.assertEqual(self.result(self.kernel.run("(await import('sandgate-greeter')).greet('import()')")),
                         "'hello import()'")
        self.assertEqual(self.result(self.kernel.run("import { greet } from 'sandgate-greeter';\ngreet('import')")),
                         "'hello import'")
        self.assertEqual(self.result(self.kernel.run("greet('next cell')")), "'hello next cell'")
        cell = self.kernel.run("require('sandgate-no-such-package')")
        self.assertEqual(cell.reply["ename"], "Error")
        self.assertIn("Cannot find module", cell.reply["evalue"])

    def test_complete_globals_and_properties(self):
        self.assertOk(self.kernel.run("const sandgateThing = { alpha: 1, alphabet: 2, beta: 3 };"))
        reply = self.kernel.request(lambda: self.kernel.client.complete("sandgateThing.alp", 17))
        self.assertEqual(reply["matches"], ["alpha", "alphabet"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (14, 17))
        reply = self.kernel.request(lambda: self.kernel.client.complete("x = sandgateTh", 14))
        self.assertIn("sandgateThing", reply["matches"])
        self.assertEqual(reply["cursor_start"], 4)
        reply = self.kernel.request(lambda: self.kernel.client.complete("Math.flo", 8))
        self.assertIn("floor", reply["matches"])

    def test_inspect(self):
        self.assertOk(self.kernel.run("const inspected = { answer: 42 };"))
        reply = self.kernel.request(lambda: self.kernel.client.inspect("inspected.answer + 1", 3))
        self.assertTrue(reply["found"])
        self.assertIn("object", reply["data"]["text/plain"])
        self.assertIn("answer: 42", reply["data"]["text/plain"])
        reply = self.kernel.request(lambda: self.kernel.client.inspect("Math.floor", 10))
        self.assertTrue(reply["found"])
        self.assertIn("function", reply["data"]["text/plain"])
        reply = self.kernel.request(lambda: self.kernel.client.inspect("noSuchNameHere", 4))
        self.assertFalse(reply["found"])

    def test_is_complete(self):
        cases = {
            "let a = 1": "complete",
            "function f() {": "incomplete",
            "const xs = [1, 2,": "incomplete",
            "`unterminated": "incomplete",
            "1 +* ) 2": "invalid",
        }
        for code, expected in cases.items():
            reply = self.kernel.request(lambda code=code: self.kernel.client.is_complete(code))
            self.assertEqual(reply["status"], expected, code)


class NodeExitTest(WorkspaceKernelTestCase):
    def test_process_exit_then_a_fresh_node(self):
        self.assertOk(self.kernel.run("var before = 1;"))
        first_pid = self.result(self.kernel.run("process.pid"))
        cell = self.kernel.run("console.log('bye'); process.exit(3)")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("NodeExited", "3"))
        self.assertEqual(cell.text(), "bye\n")
        cell = self.kernel.run("typeof before")
        self.assertEqual(self.result(cell), "'undefined'")
        self.assertNotEqual(self.result(self.kernel.run("process.pid")), first_pid)


    def test_a_busy_loop_after_an_await_is_ended_by_a_new_node(self):
        # Code that runs after an await is outside vm's breakOnSigint and the
        # event loop never turns: the kernel kills Node after its grace time.
        self.assertOk(self.kernel.run("var lost = 1;"))
        cell = self.kernel.start("await new Promise((r) => setTimeout(r, 10));\nconsole.log('spinning');\n"
                                 "while (true) {}")
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "spinning" in m["content"]["text"])
        sent = time.monotonic()
        self.kernel.interrupt_by_message()
        self.kernel.finish(cell, timeout=20)
        self.assertLess(time.monotonic() - sent, 10)
        self.assertEqual(cell.reply["ename"], "Interrupted")
        self.assertIn("restarted", cell.reply["evalue"])
        self.assertEqual(self.result(self.kernel.run("typeof lost")), "'undefined'")


class TypeScriptKernelTest(WorkspaceKernelTestCase):
    kernel_name = "typescript"

    def test_kernel_info(self):
        info = self.kernel.request(self.kernel.client.kernel_info)
        self.assertEqual(info["language_info"]["name"], "typescript")
        self.assertEqual(info["language_info"]["file_extension"], ".ts")
        self.assertEqual(info["language_info"]["version"], node_version())

    def test_typed_code_runs_and_its_declarations_persist(self):
        cell = self.kernel.run("interface Point { x: number; y: number }\n"
                               "enum Axis { X, Y }\n"
                               "const origin: Point = { x: 3, y: 4 };\n"
                               "function norm(p: Point): number { return Math.hypot(p.x, p.y); }\n"
                               "norm(origin)")
        self.assertEqual(self.result(cell), "5")
        self.assertEqual(self.result(self.kernel.run("const p: Point = { x: 6, y: 8 };\nnorm(p) + Axis.Y")), "11")
        self.assertEqual(self.result(self.kernel.run("const later: number = await Promise.resolve(2);\nlater")),
                         "2")
        # Running a cell again declares its constants again.
        self.assertOk(self.kernel.run("const p: Point = { x: 0, y: 1 };"))

    def test_a_type_error_is_reported_and_the_cell_does_not_run(self):
        cell = self.kernel.run("console.log('ran');\nconst n: number = 'text';")
        self.assertEqual(cell.reply["status"], "error")
        self.assertEqual(cell.reply["ename"], "TSError")
        self.assertIn("TS2322", cell.reply["evalue"])
        self.assertIn("not assignable to type 'number'", cell.reply["evalue"])
        self.assertIn("(2,7)", "\n".join(cell.reply["traceback"]))
        self.assertEqual(cell.text(), "")

    def test_types_of_earlier_cells_are_checked(self):
        self.assertOk(self.kernel.run("interface Named { name: string }\nconst who: Named = { name: 'ada' };"))
        cell = self.kernel.run("const count: number = who.name;")
        self.assertEqual(cell.reply["ename"], "TSError")
        self.assertIn("TS2322", cell.reply["evalue"])
        cell = self.kernel.run("const other: Named = { nom: 'x' };")
        self.assertEqual(cell.reply["ename"], "TSError")

    def test_a_cell_that_throws_keeps_the_names_it_declared(self):
        cell = self.kernel.run("const accDeclared: number = 5;\nthrow new Error('after the declaration');")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("Error", "after the declaration"))
        self.assertEqual(self.result(self.kernel.run("accDeclared + 1")), "6")
        cell = self.kernel.run("const notText: string = accDeclared;")
        self.assertEqual(cell.reply["ename"], "TSError")
        self.assertIn("TS2322", cell.reply["evalue"])
        # A rejection nobody handled fails a cell that ran to its end.
        cell = self.kernel.run("const beforeRejection: number = 2;\nPromise.reject(new Error('nobody handled me'));")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("Error", "nobody handled me"))
        self.assertEqual(self.result(self.kernel.run("beforeRejection * 2")), "4")

    def test_declarations_that_did_not_run_are_not_known(self):
        self.assertOk(self.kernel.run("let redeclared: number = 1;"))
        cell = self.kernel.run(
            "interface Shape { sides: number }\n"
            "const square: Shape = { sides: 4 };\n"
            "const broken: number = (() => { throw new RangeError('in the initializer'); })();\n"
            "let redeclared: string = 'not reached';\n"
            "class Unreached {}\n"
            "let unreached: number = 1;\n"
            "function sidesOf(s: Shape): number { return s.sides; }")
        self.assertEqual((cell.reply["ename"], cell.reply["evalue"]), ("RangeError", "in the initializer"))
        # Interfaces have no value and functions are hoisted: both are known.
        self.assertEqual(self.result(self.kernel.run("const triangle: Shape = { sides: 3 };\n"
                                                     "sidesOf(square) + sidesOf(triangle)")), "7")
        self.assertEqual(self.result(self.kernel.run("redeclared.toFixed(1)")), "'1.0'")
        for name in ("broken", "Unreached", "unreached"):
            cell = self.kernel.run(f"{name};")
            self.assertEqual(cell.reply["ename"], "TSError", name)
            self.assertIn(f"TS2304: Cannot find name '{name}'", cell.reply["evalue"])
        # Their values were not kept either.
        self.assertEqual(self.result(self.kernel.run(
            "['broken', 'Unreached', 'unreached'].map((name) => typeof (globalThis as any)[name])")),
            "[ 'undefined', 'undefined', 'undefined' ]")

    def interrupt(self, code):
        cell = self.kernel.start(code)
        self.kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
        self.kernel.interrupt_by_message()
        self.kernel.finish(cell, timeout=10)
        self.assertEqual(cell.reply["ename"], "Interrupted")

    def test_an_interrupted_busy_loop_keeps_the_names_it_declared(self):
        self.interrupt("let spun: number = 0;\nconsole.log('started');\nwhile (true) { spun++; }")
        self.assertEqual(self.result(self.kernel.run("typeof spun")), "'number'")
        cell = self.kernel.run("const spunText: string = spun;")
        self.assertEqual(cell.reply["ename"], "TSError")
        self.assertIn("TS2322", cell.reply["evalue"])

    def test_an_interrupted_await_keeps_the_names_it_declared(self):
        self.interrupt("let waited: string = 'before the await';\nconsole.log('started');\n"
                       "await new Promise((resolve) => { (globalThis as any).releaseLater = resolve; });\n"
                       "const later: number = 7;")
        self.assertEqual(self.result(self.kernel.run("waited.length")), "16")
        self.assertIn("TS2304", self.kernel.run("later;").reply["evalue"])
        # The interrupted cell goes on when its promise resolves: from then on
        # its later declaration is known too.
        self.assertOk(self.kernel.run("(globalThis as any).releaseLater();"))
        self.assertEqual(self.result(self.kernel.run("later + 1")), "8")

    def test_image_sizes_type_check(self):
        png = base64.b64encode(make_png(3, 2, 1)).decode()
        cell = self.kernel.run(f"display.png(Buffer.from('{png}', 'base64'), {{ width: 160, height: 90 }});")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("display_data")[0]["metadata"], {"image/png": {"width": 160, "height": 90}})
        cell = self.kernel.run(f"display.png('{png}', {{ width: '160px' }});")
        self.assertEqual(cell.reply["ename"], "TSError")
        self.assertIn("TS2322", cell.reply["evalue"])


class ShutdownTest(unittest.TestCase):
    def shutdown(self, kernel):
        reply = kernel.control_reply(kernel.client.shutdown())
        self.assertEqual(reply["msg_type"], "shutdown_reply")
        self.assertEqual(kernel.manager.provisioner.process.wait(timeout=10), 0)

    def test_shutdown_ends_node(self):
        kernel = KernelSession("javascript")
        try:
            cell = kernel.run("process.pid")
            node_pid = int(cell.of_type("execute_result")[0]["data"]["text/plain"])
            self.shutdown(kernel)
            self.assertTrue(wait_gone(node_pid, 10), "node outlived its kernel")
        finally:
            kernel.client.stop_channels()
            kernel.manager.cleanup_resources()

    def test_shutdown_while_a_cell_runs(self):
        kernel = KernelSession("javascript")
        try:
            cell = kernel.start("console.log('started'); while (true) {}")
            kernel.wait_for(cell, lambda m: m["msg_type"] == "stream" and "started" in m["content"]["text"])
            self.shutdown(kernel)
        finally:
            kernel.client.stop_channels()
            kernel.manager.cleanup_resources()


if __name__ == "__main__":
    unittest.main()
