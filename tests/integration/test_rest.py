"""The REST API: paths, status codes and JSON shapes as jupyter_server and
Kernel Gateway answer them; errors as {reason, message}; token auth."""

import json
import os
import re
import shutil
import socket
import tempfile
import unittest
import uuid

import websocket

from sandgate_fixture import (KERNEL_MODEL_KEYS, Gateway, GatewayTestCase, remove_state_dir, stream_text,
                              wait_until)

DEBIAN_XPYTHON = "/usr/share/jupyter/kernels/xpython/kernel.json"

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SYSTEM_PYTHON3 = "/usr/share/jupyter/kernels/python3"


def make_spec_dir():
    """A kernelspec dir with a spec that has kernel.js, kernel.css and logos."""
    root = tempfile.mkdtemp(prefix="sandgate-specs-")
    d = os.path.join(root, "withres")
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "With resources", "language": "python"}, f)
    for name, data in [("kernel.js", b"define([], function() { return {}; });"),
                       ("kernel.css", b".x {}"), ("logo-64x64.png", b"\x89PNG\r\n\x1a\nfake")]:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return root


class RestApi(GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec_root = make_spec_dir()
        cls.gateway_args = ("--kernel-path", cls.spec_root)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.spec_root, ignore_errors=True)

    def assertKernelModel(self, model, name="python3"):
        self.assertEqual(set(model), KERNEL_MODEL_KEYS, model)
        self.assertRegex(model["id"], UUID_RE)
        self.assertEqual(model["name"], name)
        self.assertIsInstance(model["connections"], int)
        self.assertIn(model["execution_state"], {"starting", "idle", "busy", "restarting"})
        # jupyter_server's isoformat with a Z or an offset
        self.assertRegex(model["last_activity"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")

    # Debian's xpython (xeus 2.4.1) aborts on an ipc endpoint over 31 bytes;
    # outside a sandbox its run dir is far longer, and it must start anyway.
    @unittest.skipUnless(os.path.exists(DEBIAN_XPYTHON), "Debian's xpython is not installed")
    def test_debian_xpython_starts_and_runs_outside_a_sandbox(self):
        kid = self.new_kernel("xpython")
        ks = self.connect(kid, v1=True, nudge=True)
        reply, iopub = ks.execute("print(6 * 7)")
        self.assertEqual(reply.content["status"], "ok", reply.content)
        self.assertEqual(stream_text(iopub), "42\n")

    # --- /api and kernelspecs ------------------------------------------------
    def test_api_root(self):
        r = self.gw.request("GET", "api")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"))
        self.assertIsInstance(r.json()["version"], str)

    def test_kernelspecs_list_matches_the_kernel_json_on_disk(self):
        r = self.gw.request("GET", "api/kernelspecs")
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(set(body), {"default", "kernelspecs"})
        self.assertIn(body["default"], body["kernelspecs"])
        self.assertIn("python3", body["kernelspecs"])
        py3 = body["kernelspecs"]["python3"]
        self.assertEqual(set(py3), {"name", "spec", "resources"})
        self.assertEqual(py3["name"], "python3")
        with open(os.path.join(SYSTEM_PYTHON3, "kernel.json")) as f:
            on_disk = json.load(f)
        for key, value in on_disk.items():
            self.assertEqual(py3["spec"][key], value, key)
        self.assertEqual(py3["spec"]["interrupt_mode"], on_disk.get("interrupt_mode", "signal"))
        for spec in body["kernelspecs"].values():
            self.assertIsInstance(spec["spec"]["argv"], list)
            self.assertIsInstance(spec["spec"]["display_name"], str)
            self.assertIsInstance(spec["spec"]["language"], str)

    def test_kernelspec_resources_like_jupyter_server(self):
        # jupyter_server: "kernel.js" and "kernel.css" keep their extension,
        # logos are keyed without it; nothing else is listed.
        r = self.gw.request("GET", "api/kernelspecs/withres")
        self.assertEqual(r.status, 200, r)
        res = r.json()["resources"]
        self.assertEqual(res, {"kernel.js": "/kernelspecs/withres/kernel.js",
                               "kernel.css": "/kernelspecs/withres/kernel.css",
                               "logo-64x64": "/kernelspecs/withres/logo-64x64.png"})

    def test_python3_logo_is_served(self):
        model = self.gw.request("GET", "api/kernelspecs/python3").json()
        self.assertIn("logo-64x64", model["resources"])
        url = model["resources"]["logo-64x64"]
        self.assertEqual(url, "/kernelspecs/python3/logo-64x64.png")
        r = self.gw.request("GET", url.lstrip("/"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers["Content-Type"], "image/png")
        with open(os.path.join(SYSTEM_PYTHON3, "logo-64x64.png"), "rb") as f:
            self.assertEqual(r.body, f.read())

    def test_kernelspec_errors(self):
        self.assertError(self.gw.request("GET", "api/kernelspecs/no-such-spec"), 404)
        self.assertError(self.gw.request("GET", "kernelspecs/python3/no-such-file.png"), 404)
        self.assertError(self.gw.request("GET", "kernelspecs/python3/kernel.json"), 404)
        self.assertError(self.gw.request("GET", "kernelspecs/python3/..%2F..%2F..%2Fetc%2Fpasswd"), 404)
        self.assertError(self.gw.request("GET", "kernelspecs/no-such-spec/logo-64x64.png"), 404)

    # --- kernels -------------------------------------------------------------
    def test_kernel_lifecycle(self):
        r = self.gw.request("POST", "api/kernels", {"name": "python3"})
        self.assertEqual(r.status, 201, r)
        model = r.json()
        self.assertKernelModel(model)
        kid = model["id"]
        self.addCleanup(self._delete_quietly, kid)
        self.assertEqual(r.headers["Location"], f"/api/kernels/{kid}")

        listing = self.gw.request("GET", "api/kernels")
        self.assertEqual(listing.status, 200)
        self.assertIn(kid, [k["id"] for k in listing.json()])
        for k in listing.json():
            self.assertKernelModel(k, k["name"])

        got = self.gw.request("GET", f"api/kernels/{kid}")
        self.assertEqual(got.status, 200, got)
        self.assertKernelModel(got.json())
        self.assertEqual(got.json()["id"], kid)

        r = self.gw.request("POST", f"api/kernels/{kid}/interrupt")
        self.assertEqual(r.status, 204, r)
        self.assertEqual(r.body, b"")

        r = self.gw.request("POST", f"api/kernels/{kid}/restart")
        self.assertEqual(r.status, 200, r)
        self.assertKernelModel(r.json())
        self.assertEqual(r.json()["id"], kid)

        r = self.gw.request("DELETE", f"api/kernels/{kid}")
        self.assertEqual(r.status, 204, r)
        self.assertEqual(r.body, b"")
        self.assertError(self.gw.request("GET", f"api/kernels/{kid}"), 404)
        self.assertError(self.gw.request("DELETE", f"api/kernels/{kid}"), 404)
        self.assertNotIn(kid, [k["id"] for k in self.gw.request("GET", "api/kernels").json()])

    def test_connections_count_websockets(self):
        kid = self.new_kernel()
        ks = self.connect(kid)
        ks.execute("1")  # the socket is attached once a reply came back
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").json()["connections"], 1)
        ks.close()
        wait_until(lambda: self.gw.request("GET", f"api/kernels/{kid}").json()["connections"] == 0, 10,
                   "connections back to 0")

    def test_delete_closes_the_kernels_websockets(self):
        kid = self.new_kernel()
        legacy = self.connect(kid)
        v1 = self.connect(kid, v1=True)
        legacy.execute("1")
        v1.execute("1")
        self.assertEqual(self.gw.request("DELETE", f"api/kernels/{kid}").status, 204)
        for ks in (legacy, v1):
            closed, _ = ks.wait_closed(10)
            self.assertEqual(closed.code, 1001, closed)

    def test_post_without_body_starts_the_default_kernel(self):
        default = self.gw.request("GET", "api/kernelspecs").json()["default"]
        r = self.gw.request("POST", "api/kernels", raw=b"")
        self.assertEqual(r.status, 201, r)
        self.addCleanup(self._delete_quietly, r.json()["id"])
        self.assertEqual(r.json()["name"], default)

    def test_kernel_errors(self):
        self.assertError(self.gw.request("POST", "api/kernels", {"name": "no-such-kernel"}), 404)
        self.assertError(self.gw.request("POST", "api/kernels", raw=b"{not json",
                                         headers={"Content-Type": "application/json"}), 400)
        self.assertError(self.gw.request("POST", "api/kernels", raw=b"[1,2]"), 400)
        self.assertError(self.gw.request("POST", "api/kernels", {"name": 3}), 400)
        self.assertError(self.gw.request("POST", "api/kernels", {"name": "python3", "env": {"A": 1}}), 400)
        unknown = str(uuid.uuid4())
        self.assertError(self.gw.request("GET", f"api/kernels/{unknown}"), 404)
        self.assertError(self.gw.request("DELETE", f"api/kernels/{unknown}"), 404)
        self.assertError(self.gw.request("POST", f"api/kernels/{unknown}/interrupt"), 404)
        self.assertError(self.gw.request("POST", f"api/kernels/{unknown}/restart"), 404)
        self.assertError(self.gw.request("GET", "api/kernels/not-a-uuid"), 404)
        self.assertError(self.gw.request("PUT", "api/kernels"), 405)
        self.assertError(self.gw.request("GET", "api/no-such-thing"), 404)

    # --- sessions ------------------------------------------------------------
    def test_sessions_crud(self):
        body = {"path": "work/a.ipynb", "name": "a.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
        r = self.gw.request("POST", "api/sessions", body)
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self.addCleanup(self._delete_quietly, s["kernel"]["id"])
        self.assertRegex(s["id"], UUID_RE)
        self.assertEqual(r.headers["Location"], f"/api/sessions/{s['id']}")
        self.assertEqual(s["path"], "work/a.ipynb")
        self.assertEqual(s["name"], "a.ipynb")
        self.assertEqual(s["type"], "notebook")
        self.assertKernelModel(s["kernel"])
        kid = s["kernel"]["id"]
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").status, 200)

        listing = self.gw.request("GET", "api/sessions")
        self.assertEqual(listing.status, 200)
        self.assertIn(s["id"], [x["id"] for x in listing.json()])

        got = self.gw.request("GET", f"api/sessions/{s['id']}")
        self.assertEqual(got.status, 200, got)
        self.assertEqual(got.json()["kernel"]["id"], kid)

        # Creating again for the same path gives the same session.
        again = self.gw.request("POST", "api/sessions", body)
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.json()["id"], s["id"])

        r = self.gw.request("PATCH", f"api/sessions/{s['id']}", {"path": "work/b.ipynb", "name": "b.ipynb"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "work/b.ipynb")
        self.assertEqual(r.json()["name"], "b.ipynb")
        self.assertEqual(r.json()["kernel"]["id"], kid)

        # Moving the session to another existing kernel.
        other = self.new_kernel()
        r = self.gw.request("PATCH", f"api/sessions/{s['id']}", {"kernel": {"id": other}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["kernel"]["id"], other)

        r = self.gw.request("DELETE", f"api/sessions/{s['id']}")
        self.assertEqual(r.status, 204, r)
        self.assertError(self.gw.request("GET", f"api/sessions/{s['id']}"), 404)
        # jupyter_server shuts the session's kernel down with it.
        self.assertError(self.gw.request("GET", f"api/kernels/{other}"), 404)
        self.assertNotIn(s["id"], [x["id"] for x in self.gw.request("GET", "api/sessions").json()])

    def test_session_with_an_existing_kernel(self):
        kid = self.new_kernel()
        r = self.gw.request("POST", "api/sessions", {"path": "c.ipynb", "type": "notebook",
                                                     "kernel": {"id": kid}})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["kernel"]["id"], kid)
        self.gw.request("DELETE", f"api/sessions/{r.json()['id']}")

    def test_session_errors(self):
        self.assertError(self.gw.request("POST", "api/sessions", raw=b"{oops"), 400)
        self.assertError(self.gw.request("POST", "api/sessions", {"type": "notebook"}), 400)
        self.assertError(self.gw.request("POST", "api/sessions", {"path": "x.ipynb",
                                                                  "kernel": {"name": "no-such-kernel"}}), 404)
        self.assertError(self.gw.request("POST", "api/sessions", {"path": "y.ipynb",
                                                                  "kernel": {"id": str(uuid.uuid4())}}), 404)
        unknown = str(uuid.uuid4())
        self.assertError(self.gw.request("GET", f"api/sessions/{unknown}"), 404)
        self.assertError(self.gw.request("PATCH", f"api/sessions/{unknown}", {"path": "z"}), 404)
        self.assertError(self.gw.request("DELETE", f"api/sessions/{unknown}"), 404)

    # --- auth ----------------------------------------------------------------
    def test_auth_missing_is_401_wrong_is_403(self):
        for path in ("api", "api/kernels", "api/kernelspecs", "api/sessions"):
            self.assertError(self.gw.request("GET", path, auth=None), 401)
            self.assertError(self.gw.request("GET", path, token="wrong"), 403)
            self.assertError(self.gw.request("GET", path, token="wrong", auth="bearer"), 403)
            self.assertError(self.gw.request("GET", path, token="wrong", auth="query"), 403)
        self.assertError(self.gw.request("POST", "api/kernels", {"name": "python3"}, auth=None), 401)

    def test_auth_token_header_bearer_and_query(self):
        for auth in ("token", "bearer", "query"):
            r = self.gw.request("GET", "api/kernels", auth=auth)
            self.assertEqual(r.status, 200, (auth, r))

    def test_websocket_auth(self):
        kid = self.new_kernel()
        url = f"{self.gw.ws_base}api/kernels/{kid}/channels"
        with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
            websocket.create_connection(url, timeout=10)
        self.assertEqual(cm.exception.status_code, 401)
        with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
            websocket.create_connection(url, timeout=10, header=["Authorization: token wrong"])
        self.assertEqual(cm.exception.status_code, 403)
        with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
            websocket.create_connection(url + "?token=wrong", timeout=10)
        self.assertEqual(cm.exception.status_code, 403)
        with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
            websocket.create_connection(f"{self.gw.ws_base}api/kernels/{uuid.uuid4()}/channels", timeout=10,
                                        header=[f"Authorization: token {self.gw.token}"])
        self.assertEqual(cm.exception.status_code, 404)
        for auth in ("header", "query"):
            ks = self.connect(kid, auth=auth)
            reply, _ = ks.execute("1 + 1")
            self.assertEqual(reply.content["status"], "ok")
            ks.close()


class SessionsEndWithTheirKernels(unittest.TestCase):
    def test_the_session_of_a_culled_kernel_is_gone_and_its_path_starts_afresh(self):
        # No API call ends the kernel: its implicit sandbox is culled when idle.
        state = tempfile.mkdtemp(prefix="sandgate-it-")
        gw = Gateway("--sandbox-idle-timeout-s", "1", name="session-cull", keep_kernels=True, state_dir=state)
        try:
            body = {"path": "culled.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
            r = gw.request("POST", "api/sessions", body)
            self.assertEqual(r.status, 201, r)
            sid, kid = r.json()["id"], r.json()["kernel"]["id"]
            wait_until(lambda: gw.request("GET", f"api/kernels/{kid}").status == 404, 20, "the idle kernel culled")
            r = gw.request("GET", f"api/sessions/{sid}")
            self.assertEqual(r.status, 404, r)
            self.assertEqual(gw.request("GET", "api/sessions").json(), [])
            r = gw.request("POST", "api/sessions", body)
            self.assertEqual(r.status, 201, r)
            self.assertNotEqual(r.json()["id"], sid)
            self.assertEqual([s["id"] for s in gw.request("GET", "api/sessions").json()], [r.json()["id"]])
            # Not back after a restart either: the registry row went too.
            code, _ = gw.stop()
            self.assertEqual(code, 0)
            gw = Gateway(name="session-cull-again", state_dir=state, keep_kernels=True)
            self.assertEqual(gw.request("GET", f"api/sessions/{sid}").status, 404)
        finally:
            gw.stop()
            remove_state_dir(state)


class Lifecycle(unittest.TestCase):
    def test_sigterm_when_idle_exits_0_promptly(self):
        gw = Gateway(name="sigterm-idle")
        self.assertEqual(gw.request("GET", "api").status, 200)
        code, taken = gw.stop()
        self.assertEqual(code, 0)
        self.assertLess(taken, 2.0)

    def test_sigterm_with_kernels_ends_them_and_exits_0(self):
        gw = Gateway(name="sigterm-kernels")
        try:
            for _ in range(2):
                gw.start_kernel("python3")
            self.assertEqual(len(gw.kernel_pids()), 2)
            pids = gw.kernel_pids()
        except BaseException:
            gw.stop()
            raise
        code, taken = gw.stop()
        self.assertEqual(code, 0)
        self.assertLess(taken, 10.0)
        for pid in pids:
            self.assertFalse(os.path.exists(f"/proc/{pid}/cmdline") and
                             open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z",
                             f"kernel {pid} outlived the gateway")

    def test_short_run_dir_names_go_with_their_kernels_and_with_a_crashed_gateway(self):
        # Unsandboxed kernels reach their run dir through /tmp/sgXXXXXX (ipc
        # endpoints must stay short): deleting the kernel removes its name,
        # and a gateway killed before it could is cleaned up after by the next.
        def alias_of(gw):
            for pid in gw.kernel_pids():
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().decode().split("\0")
                if "-f" in argv:
                    return os.path.dirname(argv[argv.index("-f") + 1])
            raise AssertionError("no kernel with a connection file")

        gw = Gateway(name="run-dir-alias")
        try:
            kid = gw.start_kernel("python3")
            alias = alias_of(gw)
            self.assertRegex(alias, r"^/tmp/sg[0-9a-f]{6}$")
            self.assertTrue(os.path.realpath(alias).startswith(os.path.realpath(gw.state_dir) + "/"))
            self.assertEqual(gw.request("DELETE", f"api/kernels/{kid}").status, 204)
            # The name goes with the kernel's last reference, a turn of the gateway's loop after the answer.
            wait_until(lambda: not os.path.lexists(alias), 5, f"{alias} to be removed")
            gw.start_kernel("python3")
            alias = alias_of(gw)
        finally:
            gw.owns_state = False
            gw.crash()
        try:
            self.assertTrue(os.path.lexists(alias))
            with Gateway(name="run-dir-alias-next", state_dir=gw.state_dir) as nxt:
                self.assertEqual(nxt.request("GET", "api").status, 200)
                self.assertFalse(os.path.lexists(alias), "a crashed gateway's run-dir name was left in /tmp")
        finally:
            remove_state_dir(gw.state_dir)

    def test_sigterm_with_a_client_that_never_reads_exits_promptly(self):
        # A client that stopped reading holds its socket full: the close
        # frame the stop owes it can never be written, and the stop must not
        # wait for it past its bound.
        gw = Gateway(name="sigterm-stuck-client")
        try:
            kid = gw.start_kernel("python3")
            stuck = socket.socket()
            stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stuck.connect((gw.host, gw.port))
            stuck.sendall((f"GET {gw.base_path}api/kernels/{kid}/channels?session_id=stuck HTTP/1.1\r\n"
                           f"Host: {gw.host}:{gw.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                           f"Authorization: token {gw.token}\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = stuck.recv(1)
                self.assertTrue(chunk, "the gateway closed the upgrade")
                head += chunk
            self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
            reader = gw.connect(kid)
            reply, iopub = reader.execute("for _ in range(16): print('x' * (1 << 20))", timeout=120)
            self.assertEqual(reply.content["status"], "ok", reply.content)
            printed = sum(len(m.content["text"]) for m in iopub if m.msg_type == "stream")
            self.assertEqual(printed, 16 * ((1 << 20) + 1), "a reading client loses nothing to a stuck one")
        except BaseException:
            gw.stop()
            raise
        code, taken = gw.stop()
        stuck.close()
        self.assertEqual(code, 0)
        self.assertLess(taken, 10.0)

    def test_port_zero_and_url_line(self):
        gw = Gateway(name="url")
        try:
            self.assertRegex(gw.url, r"^http://127\.0\.0\.1:\d+/$")
            self.assertNotEqual(gw.port, 0)
            self.assertEqual(gw.request("GET", "api", auth="query").status, 200)
            self.assertEqual(gw.request("GET", "api", token="wrong", auth="query").status, 403)
            with open(gw.log_path, "rb") as f:
                self.assertNotIn(gw.token.encode(), f.read())  # tokens never reach the log
        finally:
            gw.stop()


if __name__ == "__main__":
    unittest.main()
