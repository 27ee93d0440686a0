"""Servers for the egress tests, on 127.0.0.1 of the host or, run as a
program, on an address of a network namespace the test made (never any other
address): an HTTP server (hello, a redirect to a refused host, a slow endless
download, a large body, a body of bytes the test can check, the digest of
an uploaded body) and the same
behind TLS with a certificate from a CA the test makes with the openssl CLI.

As a program: egress_servers.py ADDRESS CERT KEY serves HTTP and HTTPS on
ADDRESS (ports chosen by the system), prints "ready HTTP_PORT HTTPS_PORT" and
serves until its stdin closes."""

import hashlib
import http.server
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import time


def blob(n, seed):
    """n bytes that depend on every position (SHA-256 of seed and a counter, in turn)."""
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest() * 64  # 2 KiB per hash
        counter += 1
    return bytes(out[:n])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    redirect_to = ""  # set by the test: where /redirect points
    seen = []  # (Host, path) of every request, for tests that only check a request arrived

    def do_GET(self):
        Handler.seen.append((self.headers.get("Host", ""), self.path))
        if self.path.startswith("/missing/"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", self.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.split("?")[0] in ("/slow", "/slow/"):  # 4 KiB every 50 ms for up to 60 s: a download in progress
            self.send_response(200)
            self.send_header("Content-Length", str(4096 * 1200))
            self.end_headers()
            try:
                for _ in range(1200):
                    self.wfile.write(b"s" * 4096)
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            return
        if self.path.startswith("/blob/"):  # /blob/N/SEED: blob(N, SEED), in 64 KiB writes
            _, _, n, seed = self.path.split("/", 3)
            data = blob(int(n), seed)
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for at in range(0, len(data), 1 << 16):
                self.wfile.write(data[at:at + (1 << 16)])
            return
        if self.path.startswith("/bytes/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"b" * (1 << 20)
            while n > 0:
                self.wfile.write(chunk[:min(n, len(chunk))])
                n -= min(n, len(chunk))
            return
        body = f"hello from {self.headers.get('Host', '?')} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # answers the SHA-256 of the body it read: an upload checked end to end
        Handler.seen.append((self.headers.get("Host", ""), self.path))
        left, digest = int(self.headers.get("Content-Length", "0")), hashlib.sha256()
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        body = digest.hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(tls_context=None, address="127.0.0.1"):
    srv = Server((address, 0), Handler)
    if tls_context:
        srv.socket = tls_context.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def make_ca(directory, names):
    """A CA and a server certificate for `names` (host names, or IPv4 addresses);
    returns (ca.pem, cert.pem, key.pem)."""
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    key, csr, cert = (os.path.join(directory, n) for n in ("srv.key", "srv.csr", "srv.pem"))
    ext = os.path.join(directory, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join(("IP:" if n[0].isdigit() else "DNS:") + n for n in names) + "\n")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
        "-days", "2", "-subj", "/CN=sandgate egress test CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + names[0])
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
        "-days", "2", "-extfile", ext)
    return ca, cert, key


def tls_server(directory, names):
    ca, cert, key = make_ca(directory, names)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return serve(ctx), ca


def main(address, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    plain, tls = serve(address=address), serve(ctx, address)
    print("ready", plain.server_address[1], tls.server_address[1], flush=True)
    sys.stdin.read()  # until the test ends (or dies): its end of the pipe closes


if __name__ == "__main__":
    main(*sys.argv[1:4])
