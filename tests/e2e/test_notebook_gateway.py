"""Notebook 6 and Jupyter Server 1.x with --gateway-url=<sandgate>: a Python
client drives their own REST and WebSocket API (as JupyterLab reaches a
gateway through Jupyter Server) and the kernels run behind sandgate."""

import http.client
import json
import tempfile
import unittest
import uuid

from notebook_fixture import Notebook
from sandgate_fixture import (Deadline, Gateway, KernelSocket, TestCertificates, kernel_names, result_text,
                              stream_text)


class NotebookEndpoint:
    """What KernelSocket needs to connect through Notebook instead of sandgate."""

    def __init__(self, nb):
        self.ws_base = nb.ws_base
        self.token = nb.token
        self.tls = None  # Notebook itself is served over plain HTTP


def relayed(ks, seconds=60):
    """Returns `ks` once a kernel_info round trip went through. Notebook 6
    and Jupyter Server 1.x connect to the gateway in a callback after the
    client's WebSocket opened, and a message that arrives before that runs
    waits on a future that never completes: lost (their
    GatewayWebSocketClient.on_message). So the first request is repeated
    until answered."""
    d = Deadline(seconds)
    while True:
        msg_id = ks.send("shell", "kernel_info_request", {})
        try:
            ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "kernel_info_reply",
                        min(2.0, max(0.1, d.remaining())), "the kernel_info reply")
            return ks
        except AssertionError:
            if d.remaining() <= 0:
                raise


class NotebookThroughGateway(unittest.TestCase):
    app = "notebook"
    tls = False  # True: the gateway serves https/wss, trusted through a CA file

    @classmethod
    def start_gateway(cls):
        """What Notebook points --gateway-url at (self.gw): one sandgate."""
        certs = None
        if cls.tls:
            cls.certs_dir = tempfile.TemporaryDirectory(prefix="sandgate-e2e-tls-")
            certs = TestCertificates(cls.certs_dir.name)
        gw = Gateway(name=f"e2e-{cls.app}-gateway", tls=certs)
        if cls.tls:
            assert gw.url.startswith("https://"), gw.url
        return gw

    @classmethod
    def stop_gateway(cls):
        code, taken = cls.gw.stop()
        if cls.tls:
            cls.certs_dir.cleanup()
        if code != 0:
            raise AssertionError(f"sandgate exited {code} on SIGTERM")

    @classmethod
    def setUpClass(cls):
        cls.gw = cls.start_gateway()
        try:
            cls.nb = Notebook(cls.gw, app=cls.app)
        except BaseException:
            cls.stop_gateway()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.nb.stop()
        cls.stop_gateway()

    def nb_request(self, method, path, body=None, timeout=150):
        conn = http.client.HTTPConnection("127.0.0.1", self.nb.port, timeout=timeout)
        try:
            headers = {"Authorization": f"token {self.nb.token}"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, "/" + path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
        finally:
            conn.close()

    def test_kernelspecs_come_from_the_gateway(self):
        status, specs = self.nb_request("GET", "api/kernelspecs")
        self.assertEqual(status, 200, specs)
        mine = self.gw.request("GET", "api/kernelspecs").json()
        self.assertEqual(set(specs["kernelspecs"]), set(mine["kernelspecs"]))
        self.assertIn(specs["default"], mine["kernelspecs"])  # Notebook keeps its own default name

    def run_session(self, kernel_name):
        path = f"e2e-{kernel_name}-{uuid.uuid4().hex[:6]}.ipynb"
        status, session = self.nb_request("POST", "api/sessions", {
            "path": path, "type": "notebook", "name": path, "kernel": {"name": kernel_name}})
        self.assertEqual(status, 201, session)
        kid = session["kernel"]["id"]
        # The kernel lives in sandgate, under the same id.
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").status, 200)

        ks = relayed(KernelSocket(NotebookEndpoint(self.nb), kid, v1=False))
        try:
            reply, iopub = ks.execute("import sys\nprint('via notebook', sys.version_info[0])\n6 * 7")
            self.assertEqual(reply.content["status"], "ok")
            self.assertEqual(stream_text(iopub), "via notebook 3\n")
            self.assertEqual(result_text(iopub), "42")

            ks.execute("x = 41")
            msg_id = ks.send("shell", "execute_request", {
                "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(100)", "silent": False,
                "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
            ks.wait_for(lambda m: m.parent_id == msg_id and m.msg_type == "stream", 30, "the sleep")
            status, _ = self.nb_request("POST", f"api/kernels/{kid}/interrupt")
            self.assertEqual(status, 204)
            reply, _ = ks.finish(msg_id, timeout=20)
            self.assertEqual(reply.content["ename"], "KeyboardInterrupt")
            reply, iopub = ks.execute("x + 1")
            self.assertEqual(result_text(iopub), "42")
        finally:
            ks.close()

        status, listed = self.nb_request("GET", "api/sessions")
        self.assertIn(session["id"], [s["id"] for s in listed])
        status, _ = self.nb_request("DELETE", f"api/sessions/{session['id']}")
        self.assertEqual(status, 204)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").status, 404)

    def test_session_and_execute_python3(self):
        self.run_session("python3")

    @unittest.skipUnless("python" in kernel_names(), "sandgate-python is not in this build")
    def test_session_and_execute_sandgate_python(self):
        self.run_session("python")

    def test_kernel_restart_through_notebook(self):
        status, model = self.nb_request("POST", "api/kernels", {"name": "python3"})
        self.assertEqual(status, 201, model)
        kid = model["id"]
        ks = relayed(KernelSocket(NotebookEndpoint(self.nb), kid, v1=False))
        try:
            ks.execute("kept = 1")
            status, model = self.nb_request("POST", f"api/kernels/{kid}/restart")
            self.assertEqual(status, 200, model)
            reply, _ = ks.execute("kept")
            self.assertEqual(reply.content["ename"], "NameError")
        finally:
            ks.close()
        status, _ = self.nb_request("DELETE", f"api/kernels/{kid}")
        self.assertEqual(status, 204)
        self.assertEqual(self.gw.request("GET", f"api/kernels/{kid}").status, 404)


class JupyterServerThroughGateway(NotebookThroughGateway):
    """The same through Jupyter Server 1.x, which JupyterLab runs on."""
    app = "jupyter_server"


class JupyterServerThroughTlsGateway(NotebookThroughGateway):
    """Jupyter Server with --gateway-url https://... and
    --GatewayClient.ca_certs: REST over HTTPS, channels over WSS."""
    app = "jupyter_server"
    tls = True


if __name__ == "__main__":
    unittest.main()
