"""What is JavaScript's own, through the real gateway in a real sandbox
(read-only /usr, seccomp, no network, HOME=/workspace): files and child
processes from Node, no network, a package uploaded into the workspace found
by require() and import, top-level await, TypeScript type errors. What every
language shares (state, streams, errors, interrupt, display_data, 1 MiB,
restart, shutdown, the kernelspec listing, REST execute, the pool, a
gateway restart) is in test_languages.py."""

import json
import os
import unittest

from sandgate_fixture import BUILD_DIR, GatewayTestCase, result_text

SPEC = os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "javascript", "kernel.json")


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
@unittest.skipUnless(os.path.exists(SPEC), "sandgate-javascript is not built")
class JavaScriptKernelThroughGateway(GatewayTestCase):
    sandboxed = True

    def setUp(self):
        self.kid = self.new_kernel("javascript")
        self.ks = self.connect(self.kid)

    def result_of(self, code, ks=None, timeout=60):
        reply, iopub = (ks or self.ks).execute(code, timeout=timeout)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        return result_text(iopub)

    def test_files_child_processes_and_no_network(self):
        self.assertEqual(self.result_of(
            "const fs = require('fs'); fs.writeFileSync('/workspace/note.txt', 'kept');\n"
            "const { execFileSync } = require('child_process');\n"
            "[fs.readFileSync('note.txt', 'utf8'), execFileSync('/bin/echo', ['child']).toString().trim()]"),
            "[ 'kept', 'child' ]")
        reply, _ = self.ks.execute(
            "await new Promise((resolve, reject) => { const s = require('net').connect(80, '93.184.216.34');"
            " s.on('connect', () => resolve('connected')); s.on('error', reject); })")
        self.assertEqual(reply.content["status"], "error", reply.content)
        reply, _ = self.ks.execute("require('fs').writeFileSync('/usr/sandgate-js-test', 'x')")
        self.assertEqual(reply.content["status"], "error", reply.content)
        self.assertIn("EROFS", reply.content["evalue"])

    def test_a_package_uploaded_to_the_workspace_is_found_by_require_and_import(self):
        sandbox = self.gw.request("GET", f"api/kernels/{self.kid}").json()["sandbox_id"]
        files = f"api/sandboxes/{sandbox}/files/node_modules/sandgate-greeter"
        manifest = json.dumps({"name": "sandgate-greeter", "version": "1.0.0", "main": "index.js"}).encode()
        for name, body in (("package.json", manifest),
                           ("index.js", b"exports.greet = (name) => `hello ${name}`;\n")):
            r = self.gw.request("PUT", f"{files}/{name}", raw=body)
            self.assertEqual(r.status, 201, r)
        self.assertEqual(self.result_of("require('sandgate-greeter').greet('require')"), "'hello require'")
        self.assertEqual(self.result_of("import { greet } from 'sandgate-greeter';\ngreet('import')"),
                         "'hello import'")
        self.assertEqual(self.result_of("greet('a later cell')"), "'hello a later cell'")

    def test_top_level_await_and_its_declarations_persist(self):
        self.assertEqual(self.result_of(
            "const answer = await new Promise((resolve) => setTimeout(() => resolve(41), 10));\nanswer"), "41")
        self.assertEqual(self.result_of("answer + 1"), "42")
        reply, _ = self.ks.execute("await Promise.reject(new RangeError('refused'))")
        self.assertEqual((reply.content["ename"], reply.content["evalue"]), ("RangeError", "refused"),
                         reply.content)

    def test_typescript_checks_and_runs_in_the_sandbox(self):
        ks = self.connect(self.new_kernel("typescript"))
        self.assertEqual(self.result_of("const half = (n: number): number => n / 2;\nhalf(84)", ks, timeout=90),
                         "42")
        reply, iopub = ks.execute("half('84')")
        self.assertEqual(reply.content["ename"], "TSError", reply.content)
        self.assertIn("TS2345", reply.content["evalue"])
        self.assertIsNone(result_text(iopub), "a cell that does not type-check does not run")


if __name__ == "__main__":
    unittest.main()
