"""sandgate-javascript (kernelspec "javascript") through the real gateway, in a real
sandbox (read-only /usr, seccomp, no network, HOME=/workspace): cells run in Node,
a PNG display_data arrives byte-identical, an interrupt keeps state, a restart
gives a fresh Node, and the kernelspec is listed with its logos."""

import base64
import os
import struct
import unittest
import zlib

from sandgate_fixture import BUILD_DIR, GatewayTestCase, result_text, stream_text

SPEC = os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "javascript", "kernel.json")


def make_png(width, height):
    rows = b"".join(b"\x00" + bytes((x * 31 + y * 17 + i * 5) % 256 for x in range(width) for i in range(3))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@unittest.skipUnless(os.path.exists(SPEC), "sandgate-javascript is not built")
class JavaScriptKernelThroughGateway(GatewayTestCase):
    sandboxed = True

    def setUp(self):
        self.kid = self.new_kernel("javascript")
        self.ks = self.connect(self.kid)

    def test_cells_share_state_and_stream_output(self):
        reply, _ = self.ks.execute("const greeting = 'hello'; let n = 1;")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        reply, iopub = self.ks.execute("console.log(greeting, process.env.HOME, process.cwd()); n + 1")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub), "hello /workspace /workspace\n")
        self.assertEqual(result_text(iopub), "2")

    def test_files_child_processes_and_no_network(self):
        reply, iopub = self.ks.execute(
            "const fs = require('fs'); fs.writeFileSync('/workspace/note.txt', 'kept');\n"
            "const { execFileSync } = require('child_process');\n"
            "[fs.readFileSync('note.txt', 'utf8'), execFileSync('/bin/echo', ['child']).toString().trim()]")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(result_text(iopub), "[ 'kept', 'child' ]")
        reply, _ = self.ks.execute(
            "await new Promise((resolve, reject) => { const s = require('net').connect(80, '93.184.216.34');"
            " s.on('connect', () => resolve('connected')); s.on('error', reject); })")
        self.assertEqual(reply.content["status"], "error", reply.content)
        reply, _ = self.ks.execute("require('fs').writeFileSync('/usr/sandgate-js-test', 'x')")
        self.assertEqual(reply.content["status"], "error", reply.content)
        self.assertIn("EROFS", reply.content["evalue"])

    def test_png_display_data_is_byte_identical(self):
        png = make_png(33, 21)
        encoded = base64.b64encode(png).decode()
        reply, iopub = self.ks.execute(f"display.png(Buffer.from('{encoded}', 'base64'))")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        shown = [m for m in iopub if m.msg_type == "display_data"]
        self.assertEqual(len(shown), 1, iopub)
        self.assertEqual(base64.b64decode(shown[0].content["data"]["image/png"]), png)
        self.assertEqual(shown[0].content["data"]["image/png"], encoded)

    def test_interrupt_over_rest_keeps_state(self):
        self.ks.execute("var kept = 41;")
        msg_id = self.ks.send("shell", "execute_request", {
            "code": "console.log('spinning'); while (true) {}", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
        self.ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30, "the spinning cell's output")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/interrupt")
        self.assertEqual(r.status, 204, r)
        reply, _ = self.ks.finish(msg_id, timeout=20)
        self.assertEqual(reply.content["ename"], "Interrupted", reply.content)
        reply, iopub = self.ks.execute("kept + 1")
        self.assertEqual(result_text(iopub), "42")

    def test_restart_gives_a_fresh_node(self):
        reply, _ = self.ks.execute("var secret = 'kept?'")
        self.assertEqual(reply.content["status"], "ok")
        r = self.gw.request("POST", f"api/kernels/{self.kid}/restart", timeout=120)
        self.assertEqual(r.status, 200, r)
        self.ks.wait_for(lambda m: m.msg_type == "status" and m.content["execution_state"] == "restarting",
                         10, "status restarting")
        reply, iopub = self.ks.execute("typeof secret")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(result_text(iopub), "'undefined'")

    def test_typescript_checks_and_runs_in_the_sandbox(self):
        ks = self.connect(self.new_kernel("typescript"))
        reply, iopub = ks.execute("const half = (n: number): number => n / 2;\nhalf(84)", timeout=90)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(result_text(iopub), "42")
        reply, _ = ks.execute("half('84')")
        self.assertEqual(reply.content["ename"], "TSError", reply.content)
        self.assertIn("TS2345", reply.content["evalue"])

    def test_kernelspec_is_listed_with_language_and_logos(self):
        r = self.gw.request("GET", "api/kernelspecs")
        self.assertEqual(r.status, 200, r)
        specs = r.json()["kernelspecs"]
        for name, language, display_name in (("javascript", "javascript", "JavaScript (Sandgate)"),
                                             ("typescript", "typescript", "TypeScript (Sandgate)")):
            self.assertIn(name, specs)
            spec = specs[name]
            self.assertEqual(spec["spec"]["language"], language)
            self.assertEqual(spec["spec"]["display_name"], display_name)
            self.assertEqual(spec["spec"]["interrupt_mode"], "message")
            self.assertEqual(spec["resources"]["logo-64x64"], f"/kernelspecs/{name}/logo-64x64.png")
            self.assertEqual(spec["resources"]["logo-32x32"], f"/kernelspecs/{name}/logo-32x32.png")
            logo = self.gw.request("GET", f"kernelspecs/{name}/logo-64x64.png")
            self.assertEqual(logo.status, 200, logo)
            self.assertTrue(logo.body.startswith(b"\x89PNG\r\n\x1a\n"))


if __name__ == "__main__":
    unittest.main()
