"""HTTPS and WSS: a gateway started with --certfile/--keyfile serves its whole
API over TLS, checked against the CA that signed its certificate; clients
that do not speak TLS, or speak it badly, lose their own connection only."""

import os
import socket
import ssl
import subprocess
import tempfile
import unittest

from sandgate_fixture import (Gateway, GatewayTestCase, TestCertificates, result_text, stream_text)


class TlsGatewayTest(GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.certs_dir = tempfile.TemporaryDirectory(prefix="sandgate-tls-")
        cls.certs = TestCertificates(cls.certs_dir.name)
        cls.gw = Gateway(name=cls.__name__, tls=cls.certs)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.certs_dir.cleanup()

    def test_the_url_printed_is_https(self):
        self.assertTrue(self.gw.url.startswith("https://127.0.0.1:"), self.gw.url)
        self.assertTrue(self.gw.ws_base.startswith("wss://"), self.gw.ws_base)

    def test_rest_and_channels_over_tls(self):
        r = self.gw.request("GET", "api")
        self.assertEqual(r.status, 200, r)
        kid = self.new_kernel("python3")
        r = self.gw.request("POST", f"api/kernels/{kid}/execute", {"code": "6 * 7", "timeout_s": 30})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["result"], "42")
        for v1 in (False, True):
            with self.subTest(v1=v1):
                ws = self.connect(kid, v1=v1)
                try:
                    reply, msgs = ws.execute("print('over wss')\n'done'")
                    self.assertEqual(reply.content["status"], "ok")
                    self.assertEqual(stream_text(msgs), "over wss\n")
                    self.assertEqual(result_text(msgs), "'done'")
                finally:
                    ws.close()

    def test_the_certificate_is_the_one_given(self):
        with socket.create_connection((self.gw.host, self.gw.port), timeout=10) as raw:
            with self.certs.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                der = tls.getpeercert(binary_form=True)
                self.assertGreaterEqual(tls.version(), "TLSv1.2")
        with open(self.certs.cert) as f:
            self.assertEqual(ssl.DER_cert_to_PEM_cert(der).strip(), f.read().strip())

    def test_a_client_that_does_not_trust_the_ca_is_refused_by_itself(self):
        context = ssl.create_default_context()  # the system CAs only
        with socket.create_connection((self.gw.host, self.gw.port), timeout=10) as raw:
            with self.assertRaises(ssl.SSLCertVerificationError):
                context.wrap_socket(raw, server_hostname="127.0.0.1")
        self.assertEqual(self.gw.request("GET", "api").status, 200)

    def test_plain_http_and_garbage_lose_only_their_connection(self):
        for data in (b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x00\x05garbage-handshake",
                     os.urandom(4096)):
            with self.subTest(data=data[:16]):
                with socket.create_connection((self.gw.host, self.gw.port), timeout=10) as raw:
                    raw.sendall(data)
                    answer = b""
                    try:
                        while chunk := raw.recv(4096):
                            answer += chunk
                    except (ConnectionResetError, socket.timeout):
                        pass
                    self.assertNotIn(b"HTTP/1.1 200", answer)
                self.assertEqual(self.gw.request("GET", "api").status, 200)
        self.assertTrue(self.gw.alive(), self.gw.describe())

    def test_a_client_that_never_handshakes_does_not_hold_up_others(self):
        silent = [socket.create_connection((self.gw.host, self.gw.port), timeout=10) for _ in range(8)]
        try:
            for _ in range(3):
                self.assertEqual(self.gw.request("GET", "api/kernelspecs").status, 200)
        finally:
            for s in silent:
                s.close()


class TlsStartupTest(unittest.TestCase):
    def test_a_key_that_does_not_load_stops_the_start_with_its_name(self):
        with tempfile.TemporaryDirectory(prefix="sandgate-tls-") as d:
            certs = TestCertificates(d)
            bad_key = os.path.join(d, "bad.pem")
            with open(bad_key, "w") as f:
                f.write("not a key\n")
            with tempfile.TemporaryDirectory(prefix="sandgate-tls-state-") as state:
                from sandgate_fixture import SANDGATE
                run = subprocess.run([SANDGATE, "--port", "0", "--auth-token", "t", "--state-dir", state,
                                      "--certfile", certs.cert, "--keyfile", bad_key],
                                     capture_output=True, timeout=30)
                self.assertNotEqual(run.returncode, 0)
                self.assertIn(b"--keyfile " + bad_key.encode(), run.stderr)
                run = subprocess.run([SANDGATE, "--port", "0", "--auth-token", "t", "--state-dir", state,
                                      "--certfile", certs.cert], capture_output=True, timeout=30)
                self.assertNotEqual(run.returncode, 0)
                self.assertIn(b"--certfile and --keyfile go together", run.stderr)


if __name__ == "__main__":
    unittest.main()
