"""Notebook 6 (Debian's jupyter-notebook) or Jupyter Server 1.x (Debian's
python3-jupyter-server, what JupyterLab runs on) started with --gateway-url
in front of a sandgate, as JupyterLab / Notebook users reach a gateway. Its
own config, data and runtime dirs and notebook root are temporary."""

import os
import select
import shutil
import signal
import subprocess
import tempfile
import uuid

from sandgate_fixture import ARTIFACTS, Deadline, wait_until

NOTEBOOK_PYTHON = "/usr/bin/python3"


def listening_ports(pid):
    """TCP ports a process listens on, from /proc (no port guessing)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and fields[9] in inodes:
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return sorted(ports)


class Notebook:
    """`app`: "notebook" (Notebook 6) or "jupyter_server"."""

    def __init__(self, gw, timeout=60, app="notebook"):
        """A gateway with `tls` is trusted through --GatewayClient.ca_certs."""
        self.gw = gw
        self.token = "nb-" + uuid.uuid4().hex
        self.tmp = tempfile.mkdtemp(prefix="sandgate-nb-")
        self.root = os.path.join(self.tmp, "root")
        os.makedirs(self.root)
        env = dict(os.environ)
        for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")]:
            env[var] = os.path.join(self.tmp, sub)
            os.makedirs(env[var])
        env.pop("JUPYTER_PATH", None)
        os.makedirs(os.path.join(ARTIFACTS, "logs"), exist_ok=True)
        self.log_path = os.path.join(ARTIFACTS, "logs", f"{app}-{os.getpid()}-{uuid.uuid4().hex[:6]}.log")
        conf = "NotebookApp" if app == "notebook" else "ServerApp"
        cmd = [NOTEBOOK_PYTHON, "-m", app, "--no-browser", "--allow-root", "--ip=127.0.0.1",
               "--port=0", f"--{conf}.port_retries=0", f"--{conf}.token={self.token}",
               f"--{conf}.root_dir={self.root}" if app != "notebook" else f"--notebook-dir={self.root}",
               f"--gateway-url={gw.url.rstrip('/')}",
               f"--GatewayClient.auth_token={gw.token}", "--GatewayClient.request_timeout=120",
               f"--{conf}.disable_check_xsrf=False"]
        if gw.tls:
            # Jupyter Server 1.x and Notebook 6 apply ca_certs only together
            # with a client certificate; the TLS default context they fall
            # back to reads SSL_CERT_FILE.
            cmd.append(f"--GatewayClient.ca_certs={gw.tls.ca}")
            env["SSL_CERT_FILE"] = gw.tls.ca
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        self.log = open(self.log_path, "wb")
        d = Deadline(timeout)
        fd = self.proc.stderr.fileno()
        pending = b""
        while b"is running at" not in pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, d.remaining()))
            if not ready:
                self.log.write(pending)
                self.stop()
                raise AssertionError(f"notebook did not start within {timeout} s; log {self.log_path}")
            chunk = os.read(fd, 65536)
            if not chunk:
                self.log.write(pending)
                self.stop()
                raise AssertionError(f"notebook exited during start-up; log {self.log_path}")
            pending += chunk
        self.log.write(pending)
        self.log.flush()
        # The rest of the log goes to the file through a thread-free pipe copy.
        self._copier = subprocess.Popen(["cat"], stdin=self.proc.stderr, stdout=self.log)
        ports = wait_until(lambda: listening_ports(self.proc.pid), 10, "notebook's listening socket")
        self.port = ports[0]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.ws_base = f"ws://127.0.0.1:{self.port}/"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # notebook 6 asks on SIGINT; SIGTERM ends it
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_copier", None):
            self._copier.wait(5)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
