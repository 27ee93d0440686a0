"""The fixture of every Python test and script that drives a real sandgate
(tests/integration, security, e2e, cluster, bench): a sandgate on a free port
with a temporary --state-dir and a known token, its kernels on the host or in
sandboxes under a given policy; a Jupyter client of its WebSocket channels in
either protocol (legacy JSON or v1.kernel.websocket.jupyter.org); the host's
view of the processes it started; and GatewayTestCase, one gateway per test
class. Every wait has a deadline.

The build directory comes from SANDGATE_BUILD_DIR (set by CTest). CTest puts
this directory on PYTHONPATH; scripts run by hand put it on sys.path.
"""

import datetime
import glob
import http.client
import json
import os
import resource
import select
import signal
import shutil
import ssl
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import uuid
import zlib

import websocket  # python3-websocket (websocket-client)

from procfs import rss_kib  # noqa: F401 (the tests take it from here)

BUILD_DIR = os.environ.get("SANDGATE_BUILD_DIR", "")
if not BUILD_DIR or not os.path.isdir(BUILD_DIR):
    raise SystemExit("SANDGATE_BUILD_DIR must name the build directory")
SANDGATE = os.path.join(BUILD_DIR, "bin", "sandgate")
ARTIFACTS = os.path.join(BUILD_DIR, "tests", "artifacts")

# The protocol tests run kernels outside a sandbox (they test the gateway,
# and run as any user); tests of sandboxes pass Gateway(sandboxed=True).
UNSANDBOXED_ARGS = ["--unsandboxed-kernels", "*"]

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
ERROR_KEYS = {"reason", "message"}
KERNEL_MODEL_KEYS = {"id", "name", "last_activity", "execution_state", "connections", "sandbox_id"}


def kernel_names():
    """python3 (ipykernel) always; python (sandgate-python) when the build has it."""
    names = ["python3"]
    if os.path.exists(os.path.join(BUILD_DIR, "share", "jupyter", "kernels", "python", "kernel.json")):
        names.append("python")
    return names


def has_sandgate_python():
    return "python" in kernel_names()


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self):
        return self.end - time.monotonic()

    def left(self, what="condition"):
        r = self.remaining()
        if r <= 0:
            raise AssertionError(f"timed out after {self.seconds} s waiting for {what}")
        return r


def wait_until(predicate, seconds, what, interval=0.05):
    """Polls a condition that has no event to wait on (process exit, /proc).
    `what` names it in the failure (a callable is asked at that moment)."""
    d = Deadline(seconds)
    while True:
        value = predicate()
        if value:
            return value
        if d.remaining() <= 0:
            raise AssertionError(f"timed out after {seconds} s waiting for {what() if callable(what) else what}")
        time.sleep(interval)


# --- Host processes (/proc) --------------------------------------------------

def host_processes():
    """[(pid, cmdline bytes, uid)] of every live (not zombie) host process."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        out.append((int(entry), cmd, uid))
    return out


def parent_pid(pid):
    """A process's parent, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def process_tree(roots):
    """`roots` and every live process below them, each root before its
    descendants (a pid below two roots comes twice)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        ppid = parent_pid(entry)
        if ppid is not None:
            children.setdefault(ppid, []).append(int(entry))
    found, unvisited = [], list(roots)
    while unvisited:
        pid = unvisited.pop()
        found.append(pid)
        unvisited.extend(children.get(pid, []))
    return found


def descendants(root):
    """Host pids of every live descendant of `root` (not root itself)."""
    return process_tree([root])[1:]


def cmdline(pid):
    """A process's command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def processes_of(state_dir, but=None):
    """Live processes a gateway on `state_dir` started: the state dir is in
    their command line (a sandbox's supervisor, a kernel's connection file)
    or holds their working directory (an unsandboxed kernel runs in its
    workspace; its connection file is reached through a short symlink in
    /tmp)."""
    marker = state_dir.encode()
    pids = []
    for pid, cmd, _ in host_processes():
        if pid == but:
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd").encode()
        except OSError:
            continue
        if marker in cmd or cwd.startswith(marker + b"/"):
            pids.append(pid)
    return pids


def remove_state_dir(state_dir):
    """Ends every process a gateway on `state_dir` left (processes_of),
    unmounts the run dirs' tmpfs, removes the dir."""
    for _ in range(50):
        pids = processes_of(state_dir)
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if not pids:
            break
        time.sleep(0.1)
    with open("/proc/self/mounts") as f:
        mounts = [line.split()[1] for line in f]
    for mount in reversed(mounts):
        if mount.startswith(state_dir.rstrip("/") + "/"):
            subprocess.run(["umount", "-l", mount], stderr=subprocess.DEVNULL, check=False)
    shutil.rmtree(state_dir, ignore_errors=True)


class TestCertificates:
    """A throwaway CA and a server certificate it signed for 127.0.0.1 and
    localhost, made with the openssl command in `directory`."""

    def __init__(self, directory):
        self.ca = os.path.join(directory, "ca.pem")
        self.cert = os.path.join(directory, "cert.pem")
        self.key = os.path.join(directory, "key.pem")
        ca_key = os.path.join(directory, "ca.key")
        csr = os.path.join(directory, "server.csr")
        ext = os.path.join(directory, "server.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")

        def openssl(*args):
            subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", self.ca,
                "-days", "2", "-subj", "/CN=Sandgate test CA")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key, "-out", csr, "-subj", "/CN=localhost")
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key, "-CAcreateserial", "-out", self.cert,
                "-days", "2", "-extfile", ext)

    def client_context(self):
        return ssl.create_default_context(cafile=self.ca)


class Response:
    """An HTTP response. It also unpacks as (status, body):
    `status, body = gw.request(...)`."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __iter__(self):
        return iter((self.status, self.body))

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


class Gateway:
    """One sandgate process. Use as a context manager or call stop()."""

    def __init__(self, *args, env=None, name=None, start_timeout=30, sandboxed=False, unsandboxed=(), policy=None,
                 state_dir=None, token=None, keep_kernels=False, open_files=None, tls=None, log_dir=None):
        """`sandboxed`: kernels run in real sandboxes (needs root), but for
        the kernelspecs named in `unsandboxed`; otherwise every kernel runs
        on the host. `policy`: the sandbox policy (a dict), written into the
        state dir (policy_path) and passed as --policy. `state_dir`: one an
        earlier gateway used (it is then left for its owner to remove).
        `keep_kernels`: a stop leaves sandboxed kernels running, as sandgate
        does by default; otherwise they end with it. `open_files`: (soft,
        hard) RLIMIT_NOFILE the gateway starts with. `tls`: TestCertificates
        to serve https and wss with. `log_dir`: where the gateway's log goes
        (<build>/tests/artifacts/logs)."""
        if unsandboxed and not sandboxed:
            raise ValueError("`unsandboxed` names the exceptions of sandboxed=True")
        if not os.path.exists(SANDGATE):
            # A build may be relinking the binary; give it a moment.
            wait_until(lambda: os.path.exists(SANDGATE), 120, f"{SANDGATE} to exist", 1)
        self.tls = tls
        if tls:
            args = (*args, "--certfile", tls.cert, "--keyfile", tls.key)
        self.token = token or "it-" + uuid.uuid4().hex
        self.owns_state = state_dir is None
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="sandgate-it-")
        self.sandbox_of = {}  # kernel id -> its sandbox's id
        self.policy = policy
        self.policy_path = None
        if policy is not None:
            self.policy_path = os.path.join(self.state_dir, "test-policy.json")
            with open(self.policy_path, "w") as f:
                json.dump(policy, f)
            args = ("--policy", self.policy_path, *args)
        if not sandboxed:
            args = (*UNSANDBOXED_ARGS, *args)
        elif unsandboxed:
            args = ("--unsandboxed-kernels", ",".join(unsandboxed), *args)
        log_dir = log_dir or os.path.join(ARTIFACTS, "logs")
        os.makedirs(log_dir, exist_ok=True)
        name = name or "gateway"
        self.log_path = os.path.join(log_dir, f"{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}.log")
        self.log_file = open(self.log_path, "wb")
        cmd = [SANDGATE, "--port", "0", "--auth-token", self.token, "--state-dir", self.state_dir,
               *([] if keep_kernels else ["--shutdown-kernels-on-exit"]), *args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, open_files)) if open_files else None
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log_file, env=full_env,
                                     preexec_fn=limit)
        self.url = self._read_url(start_timeout)
        parsed = urllib.parse.urlparse(self.url)
        self.host, self.port = parsed.hostname, parsed.port
        self.base_path = parsed.path
        ws_scheme = "wss" if parsed.scheme == "https" else "ws"
        self.ws_base = f"{ws_scheme}://{self.host}:{self.port}{self.base_path}"
        self.stopped = False

    def _read_url(self, seconds):
        d = Deadline(seconds)
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, d.remaining()))
            if not ready:
                self.proc.kill()
                raise AssertionError(f"sandgate printed no URL within {seconds} s; log: {self.log_path}")
            line = self.proc.stdout.readline().decode()
            if not line:
                self.proc.wait(5)
                raise AssertionError(f"sandgate exited ({self.proc.returncode}) before serving: "
                                     f"{self.log_tail()}")
            if line.startswith("sandgate: http"):
                return line.split(" ", 1)[1].strip()

    @property
    def pid(self):
        return self.proc.pid

    def log_tail(self, lines=40):
        self.log_file.flush()
        with open(self.log_path, "rb") as f:
            return b"".join(f.readlines()[-lines:]).decode(errors="replace")

    def log_events(self):
        self.log_file.flush()
        out = []
        with open(self.log_path, "rb") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def alive(self):
        return self.proc.poll() is None

    def healthy(self):
        """The gateway runs and answers REST."""
        return self.alive() and self.request("GET", "api/kernels", timeout=15).status == 200

    def stop(self, timeout=15):
        """SIGTERM; returns (exit code, seconds taken). Kills after `timeout`."""
        if self.stopped:
            return self.proc.returncode, 0.0
        self.stopped = True
        start = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            self._cleanup()
            raise AssertionError(f"sandgate ignored SIGTERM for {timeout} s")
        taken = time.monotonic() - start
        self._cleanup()
        return code, taken

    def crash(self):
        """SIGKILL: nothing of the gateway's own shutdown runs."""
        self.stopped = True
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()
        self.log_file.close()

    def _cleanup(self):
        self.proc.stdout.close()
        self.log_file.close()
        if self.owns_state:
            remove_state_dir(self.state_dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # Processes started by this gateway: their command line names a
    # connection file under its state dir.
    def kernel_pids(self):
        """Live processes of this gateway's kernels and sandboxes."""
        return processes_of(self.state_dir, but=self.proc.pid)

    def sandbox_pids(self):
        """Live processes of this gateway's kernels and sandboxes and every
        process below them (a sandboxed kernel's command line does not name
        the state dir, but it runs below a supervisor's, which does)."""
        return process_tree(self.kernel_pids())

    def run_dirs(self, kid):
        """The dirs under the state dir whose name holds the id of a kernel's
        sandbox (its run dir among them)."""
        sid = self.sandbox_id(kid)
        return [p for p in glob.glob(os.path.join(self.state_dir, "**", "*" + sid + "*"), recursive=True)
                if os.path.isdir(p)]

    def sandbox_info(self, kid):
        """{"outer": pids, "all": pids} of a kernel's sandbox on the host: the
        sandgate-sandbox processes whose command line names the sandbox's id,
        and every process below them."""
        sid = self.sandbox_id(kid).encode()
        outer = [pid for pid, cmd, _ in host_processes()
                 if sid in cmd and b"sandgate-sandbox" in cmd.split(b"\0")[0]]
        info = {"outer": outer, "all": []}
        for o in outer:
            info["all"] += descendants(o)
        return info

    def tcp_socket_holders(self):
        """{pid: [socket description]} of this gateway's processes other than
        itself that hold a TCP socket on the gateway's port: its listening
        socket or a client's connection."""
        port = f"{self.port:04X}"
        inodes = {}
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    if fields[1].rsplit(":", 1)[1] == port:
                        inodes[fields[9]] = f"{table} {fields[1]} -> {fields[2]} state {fields[3]}"
        holders = {}
        for pid in self.kernel_pids():
            try:
                links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                continue
            held = [inodes[link[8:-1]] for link in links if link.startswith("socket:[") and link[8:-1] in inodes]
            if held:
                holders[pid] = held
        return holders

    # --- HTTP ---------------------------------------------------------------
    def request(self, method, path, body=None, *, token=None, auth="token", headers=None, raw=None,
                timeout=90):
        """`path` is relative to the base URL. `auth`: "token", "bearer", "query" or None."""
        token = self.token if token is None else token
        hdrs = dict(headers or {})
        if auth == "token":
            hdrs["Authorization"] = f"token {token}"
        elif auth == "bearer":
            hdrs["Authorization"] = f"Bearer {token}"
        elif auth == "query":
            path += ("&" if "?" in path else "?") + "token=" + urllib.parse.quote(token)
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if self.tls:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self.tls.client_context())
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, self.base_path + path.lstrip("/"), body=data, headers=hdrs)
            r = conn.getresponse()
            return Response(r.status, r.headers, r.read())
        except OSError as e:
            raise AssertionError(f"{method} {path}: {e!r}; {self.describe()}") from e
        finally:
            conn.close()

    def describe(self):
        """The gateway's state and the end of its log, for a failure message."""
        code = self.proc.poll()
        state = "running" if code is None else f"exited with {code}"
        return f"sandgate (pid {self.proc.pid}) is {state}; log {self.log_path} ends:\n{self.log_tail(25)}"

    def start_kernel(self, name="python3", timeout=90):
        r = self.request("POST", "api/kernels", {"name": name}, timeout=timeout)
        if r.status != 201:
            raise AssertionError(f"POST /api/kernels {name}: {r}; log ends:\n{self.log_tail(10)}")
        model = r.json()
        self.sandbox_of[model["id"]] = model.get("sandbox_id")
        return model["id"]

    def create_sandbox(self, ttl_s=3600, timeout=60, **body):
        """POST /api/sandboxes; the new sandbox's id."""
        r = self.request("POST", "api/sandboxes", {"ttl_s": ttl_s, **body}, timeout=timeout)
        if r.status != 201:
            raise AssertionError(f"POST /api/sandboxes: {r}; log ends:\n{self.log_tail(10)}")
        return r.json()["id"]

    def sandbox_id(self, kid):
        """The id of a kernel's sandbox (remembered, so it is known after DELETE)."""
        if not self.sandbox_of.get(kid):
            r = self.request("GET", f"api/kernels/{kid}")
            if r.status != 200:
                raise AssertionError(f"GET /api/kernels/{kid}: {r}")
            self.sandbox_of[kid] = r.json()["sandbox_id"]
        return self.sandbox_of[kid]

    def delete_kernel(self, kernel_id):
        r = self.request("DELETE", f"api/kernels/{kernel_id}")
        if r.status != 204:
            raise AssertionError(f"DELETE /api/kernels/{kernel_id}: {r}")

    def connect(self, kernel_id, **kw):
        return KernelSocket(self, kernel_id, **kw)


# --- WebSocket codecs (written here, independent of the gateway's) ----------

def encode_v1(channel, parts):
    """parts: header, parent_header, metadata, content (bytes), then buffers."""
    parts = [channel.encode()] + [p if isinstance(p, bytes) else p.encode() for p in parts]
    n = len(parts) + 1
    offsets = [8 * (n + 1)]
    for p in parts:
        offsets.append(offsets[-1] + len(p))
    return struct.pack("<Q", n) + b"".join(struct.pack("<Q", o) for o in offsets) + b"".join(parts)


def decode_v1(data):
    """Returns (channel, [header, parent_header, metadata, content, *buffers]) as raw bytes."""
    if len(data) < 8:
        raise AssertionError("v1 frame shorter than its offset count")
    n = struct.unpack_from("<Q", data, 0)[0]
    if n < 6 or len(data) < 8 * (n + 1):
        raise AssertionError(f"v1 frame with {n} offsets")
    offsets = [struct.unpack_from("<Q", data, 8 * (i + 1))[0] for i in range(n)]
    if offsets[0] != 8 * (n + 1) or offsets[-1] != len(data) or offsets != sorted(offsets):
        raise AssertionError(f"v1 offsets {offsets} for {len(data)} bytes")
    parts = [data[offsets[i]:offsets[i + 1]] for i in range(n - 1)]
    return parts[0].decode(), parts[1:]


def decode_legacy_binary(data):
    """jupyter_server's deserialize_binary_message: returns (json bytes, buffers)."""
    nbufs = struct.unpack_from("!I", data, 0)[0]
    offsets = list(struct.unpack_from("!" + "I" * nbufs, data, 4))
    if offsets[0] != 4 * (nbufs + 1):
        raise AssertionError(f"legacy binary offsets {offsets}")
    offsets.append(len(data))
    bufs = [data[offsets[i]:offsets[i + 1]] for i in range(nbufs)]
    return bufs[0], bufs[1:]


def raw_members(text):
    """The exact source text of each member of a top-level JSON object."""
    dec = json.JSONDecoder()
    i = 0

    def ws(j):
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        return j

    i = ws(i)
    if text[i] != "{":
        raise AssertionError("not a JSON object")
    i = ws(i + 1)
    out = {}
    if text[i] == "}":
        return out
    while True:
        key, i = dec.raw_decode(text, i)
        i = ws(i)
        assert text[i] == ":", text[i:i + 20]
        start = ws(i + 1)
        _, end = dec.raw_decode(text, start)
        out[key] = text[start:end]
        i = ws(end)
        if text[i] == "}":
            return out
        assert text[i] == ",", text[i:i + 20]
        i = ws(i + 1)


class Msg:
    """A message received from the gateway, parsed and raw."""

    def __init__(self, channel, header, parent_header, metadata, content, buffers, raw, raw_parts, binary):
        self.channel = channel
        self.header = header
        self.parent_header = parent_header
        self.metadata = metadata
        self.content = content
        self.buffers = buffers
        self.raw = raw              # the whole WebSocket frame
        self.raw_parts = raw_parts  # {"header": text/bytes, ..., "content": ...}
        self.binary = binary

    @property
    def msg_type(self):
        return self.header.get("msg_type")

    @property
    def parent_id(self):
        return (self.parent_header or {}).get("msg_id")

    def __repr__(self):
        c = json.dumps(self.content)
        return f"<{self.channel} {self.msg_type} parent={self.parent_id} {c[:160]}>"


class Closed(Exception):
    def __init__(self, code, reason):
        super().__init__(f"WebSocket closed: {code} {reason!r}")
        self.code = code
        self.reason = reason


class NoMessage(AssertionError):
    """No message arrived in time (KernelSocket.recv)."""


class KernelSocket:
    """A client of /api/kernels/{id}/channels."""

    def __init__(self, gw, kernel_id, session_id=None, v1=False, auth="header", token=None, timeout=30,
                 extra_headers=None, nudge=False):
        self.gw = gw
        self.kernel_id = kernel_id
        self.v1 = v1
        self.session = session_id or uuid.uuid4().hex
        token = gw.token if token is None else token
        query = {"session_id": self.session}
        headers = list(extra_headers or [])
        if auth == "header":
            headers.append(f"Authorization: token {token}")
        elif auth == "query":
            query["token"] = token
        url = f"{gw.ws_base}api/kernels/{kernel_id}/channels?{urllib.parse.urlencode(query)}"
        tls = {"sslopt": {"ca_certs": gw.tls.ca}} if gw.tls else {}
        self.ws = websocket.create_connection(url, timeout=timeout, header=headers,
                                              subprotocols=[V1_PROTOCOL] if v1 else None, **tls)
        chosen = self.ws.getsubprotocol()
        if v1 and chosen != V1_PROTOCOL:
            raise AssertionError(f"gateway chose subprotocol {chosen!r}, not {V1_PROTOCOL}")
        if not v1 and chosen:
            raise AssertionError(f"gateway chose subprotocol {chosen!r} that the client never offered")
        self.received = []  # every message, in order
        self.sent_ids = set()
        if nudge:
            self.nudge()

    def nudge(self, timeout=30):
        """What jupyter_server does after it connects to a kernel: ask
        kernel_info until a reply arrives together with its iopub status."""
        d = Deadline(timeout)
        while True:
            msg_id = self.send("shell", "kernel_info_request", {})
            reply = idle = False
            attempt = Deadline(min(2.0, max(0.1, d.remaining())))
            while not (reply and idle) and attempt.remaining() > 0:
                try:
                    m = self.recv(attempt.remaining())
                except AssertionError:
                    break
                if m.parent_id == msg_id and m.channel == "shell":
                    reply = True
                if (m.parent_id == msg_id and m.msg_type == "status"
                        and m.content.get("execution_state") == "idle"):
                    idle = True
            if reply and idle:
                return
            d.left("a kernel_info reply with its iopub status")

    def close(self):
        try:
            self.ws.close(timeout=5)
        except Exception:
            pass
        finally:
            self.ws.shutdown()

    def close_cleanly(self, timeout=10):
        """Sends a close frame and reads to the server's close frame; returns the messages read."""
        self.ws.send_close(websocket.STATUS_NORMAL)
        got = []
        d = Deadline(timeout)
        while True:
            self.ws.settimeout(d.left("the close frame"))
            opcode, frame = self.ws.recv_data_frame(True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                break
            if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                m = self._decode(opcode, frame.data)
                self.received.append(m)
                got.append(m)
        self.ws.shutdown()
        return got

    def abort(self):
        """Drops the TCP connection with a reset, no close handshake."""
        sock = self.ws.sock
        sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_LINGER,
                        struct.pack("ii", 1, 0))
        sock.close()

    # --- sending -------------------------------------------------------------
    def make_header(self, msg_type):
        return {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "it", "session": self.session,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"}

    def send(self, channel, msg_type, content, metadata=None, parent=None):
        header = self.make_header(msg_type)
        self.sent_ids.add(header["msg_id"])
        if self.v1:
            frame = encode_v1(channel, [json.dumps(header), json.dumps(parent or {}),
                                        json.dumps(metadata or {}), json.dumps(content)])
            self.ws.send_binary(frame)
        else:
            self.ws.send(json.dumps({"channel": channel, "header": header, "parent_header": parent or {},
                                     "metadata": metadata or {}, "content": content, "buffers": []}))
        return header["msg_id"]

    def send_raw(self, data, binary):
        if binary:
            self.ws.send_binary(data)
        else:
            self.ws.send(data)

    # --- receiving -----------------------------------------------------------
    def _decode(self, opcode, data):
        if self.v1:
            if opcode != websocket.ABNF.OPCODE_BINARY:
                raise AssertionError("v1 protocol: got a text frame")
            channel, parts = decode_v1(data)
            names = ["header", "parent_header", "metadata", "content"]
            raw_parts = dict(zip(names, parts[:4]))
            parsed = [json.loads(p) for p in parts[:4]]
            return Msg(channel, *parsed, parts[4:], data, raw_parts, True)
        if opcode == websocket.ABNF.OPCODE_BINARY:
            text, buffers = decode_legacy_binary(data)
            binary = True
        else:
            text, buffers, binary = data, [], False
        text = text.decode("utf-8")
        raw_parts = raw_members(text)
        obj = json.loads(text)
        return Msg(obj["channel"], obj["header"], obj["parent_header"], obj["metadata"], obj["content"],
                   buffers, data, raw_parts, binary)

    def recv(self, timeout=30):
        """The next message; raises Closed on a close frame, NoMessage on timeout."""
        d = Deadline(timeout)
        while True:
            left = d.remaining()
            if left <= 0:
                raise NoMessage(f"no message within {timeout} s")
            self.ws.settimeout(left)
            try:
                opcode, frame = self.ws.recv_data_frame(True)
            except websocket.WebSocketTimeoutException:
                raise NoMessage(f"no message within {timeout} s")
            except websocket.WebSocketConnectionClosedException:
                raise Closed(None, "connection dropped")
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                data = frame.data
                code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
                raise Closed(code, data[2:].decode(errors="replace"))
            if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                m = self._decode(opcode, frame.data)
                self.received.append(m)
                return m

    def wait_for(self, predicate, timeout=30, what="a matching message"):
        """Reads until predicate(msg); returns (match, everything read on the way)."""
        d = Deadline(timeout)
        seen = []
        while True:
            try:
                m = self.recv(d.left(what))
            except AssertionError:
                raise AssertionError(f"timed out waiting for {what}; got {seen[-12:]}")
            seen.append(m)
            if predicate(m):
                return m, seen

    def wait_closed(self, timeout=10):
        d = Deadline(timeout)
        seen = []
        while True:
            try:
                seen.append(self.recv(d.left("the close frame")))
            except Closed as c:
                return c, seen

    def execute(self, code, timeout=60, stdin=False, user_expressions=None, stop_on_error=False):
        """Runs code; returns (execute_reply, iopub messages of this request up to idle).
        stop_on_error is off by default: after an error ipykernel aborts every
        request that reaches it before its abort window closes, so a test
        that runs a failing cell and then another would race it."""
        msg_id = self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": user_expressions or {},
            "allow_stdin": stdin, "stop_on_error": stop_on_error})
        return self.finish(msg_id, timeout)

    def attempt(self, code, timeout=120):
        """Runs code meant to break things and reports what happened,
        whatever happened (the kernel dies, the gateway closes the socket, no
        reply in time): a dict of reply (the execute_reply's content or
        None), status, stdout, stderr, error ((ename, evalue) or None),
        messages (this request's), other (the rest read meanwhile),
        timed_out and closed. Stops at the reply and the idle status."""
        msg_id = self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": True})
        d = Deadline(timeout)
        res = {"reply": None, "status": None, "stdout": "", "stderr": "", "error": None, "messages": [],
               "other": [], "timed_out": False, "closed": False}
        idle = False
        while res["reply"] is None or not idle:
            try:
                m = self.recv(d.remaining())
            except NoMessage:
                res["timed_out"] = True
                break
            except (Closed, ConnectionError):
                res["closed"] = True
                break
            if m.parent_id != msg_id:
                res["other"].append(m)
                continue
            res["messages"].append(m)
            if m.channel == "shell":
                res["reply"] = m.content
                res["status"] = m.content.get("status")
            elif m.msg_type == "stream":
                res[m.content["name"]] += m.content["text"]
            elif m.msg_type == "error":
                res["error"] = (m.content.get("ename"), m.content.get("evalue"))
            elif m.msg_type == "status" and m.content.get("execution_state") == "idle":
                idle = True
        return res

    def drain(self, seconds):
        """Every message that arrives within `seconds` (statuses after a
        restart, ...), until the socket closes."""
        d = Deadline(seconds)
        got = []
        while d.remaining() > 0:
            try:
                got.append(self.recv(d.remaining()))
            except (NoMessage, Closed, ConnectionError):
                break
        return got

    def finish(self, msg_id, timeout=60):
        d = Deadline(timeout)
        reply, iopub = None, []
        idle = False
        while reply is None or not idle:
            m = self.recv(d.left(f"the reply and idle status of {msg_id}"))
            if m.parent_id != msg_id:
                continue
            if m.channel == "shell":
                if reply is not None:
                    raise AssertionError(f"second shell reply for {msg_id}: {m}")
                reply = m
            elif m.channel == "iopub":
                iopub.append(m)
                if m.msg_type == "status" and m.content.get("execution_state") == "idle":
                    idle = True
        return reply, iopub


# --- Known bytes and the processes that make them ---------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_png(width, height):
    """A valid RGB PNG whose bytes the test knows."""
    rows = b"".join(b"\x00" + bytes((x * 31 + y * 17 + i * 5) % 256 for x in range(width) for i in range(3))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def png_size(data):
    """(width, height) of a PNG whose signature and IHDR chunk (with its CRC) are right."""
    if data[:8] != PNG_SIGNATURE:
        raise AssertionError(f"not a PNG signature: {data[:8]!r}")
    length, kind = struct.unpack(">I4s", data[8:16])
    if kind != b"IHDR" or length != 13:
        raise AssertionError(f"first chunk {kind!r} of {length} bytes, not IHDR")
    body = data[16:29]
    if zlib.crc32(kind + body) != struct.unpack(">I", data[29:33])[0]:
        raise AssertionError("IHDR CRC mismatch")
    return struct.unpack(">II", body[:8])


def sandbox_processes(gw, sandbox_id):
    """Host pids of one sandbox of the gateway: its supervisors (whose command
    line names the sandbox id) and every process below them."""
    supervisors = [pid for pid in gw.kernel_pids() if sandbox_id.encode() in
                   (cmdline(pid).encode().split(b" "))]
    return list(dict.fromkeys(process_tree(supervisors)))


def syscalls_of(gw, marker):
    """What each process of the gateway's sandboxes whose command line holds
    `marker` does: the first field of its /proc/<pid>/syscall ("running" on a
    CPU, "-1" in user code, else the number of the system call it waits in)."""
    found = []
    for pid in gw.sandbox_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker not in f.read():
                    continue
            with open(f"/proc/{pid}/syscall") as f:
                found.append(f.read().split()[0])
        except (OSError, IndexError):
            continue
    return found


def runs_user_code(gw, marker):
    """True once such a process is in user code (a busy loop), not in a system call."""
    return any(state in ("running", "-1") for state in syscalls_of(gw, marker))


def stream_text(msgs, name="stdout"):
    return "".join(m.content["text"] for m in msgs
                   if m.channel == "iopub" and m.msg_type == "stream" and m.content.get("name") == name)


def result_text(msgs):
    for m in msgs:
        if m.msg_type == "execute_result":
            return m.content["data"]["text/plain"]
    return None


class GatewayTestCase(unittest.TestCase):
    """One gateway per test class (started in setUpClass), stopped at the end
    with a check that SIGTERM ends it promptly and cleanly."""

    gateway_args = ()
    sandboxed = False  # True: kernels in real sandboxes (needs root)
    gw = None

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(*cls.gateway_args, name=cls.__name__, sandboxed=cls.sandboxed)

    @classmethod
    def tearDownClass(cls):
        if cls.gw:
            code, taken = cls.gw.stop()
            if code != 0:
                raise AssertionError(f"sandgate exited {code} on SIGTERM; log {cls.gw.log_path}")
            if taken > 12:
                raise AssertionError(f"sandgate took {taken:.1f} s to stop")

    def metric(self, name):
        """The value of one unlabelled metric in the gateway's /metrics."""
        r = self.gw.request("GET", "metrics")
        self.assertEqual(r.status, 200, r)
        for line in r.body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"/metrics has no {name}")

    def assertError(self, r, status):
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.headers.get("Content-Type", "").startswith("application/json"), r.headers)
        body = r.json()
        self.assertEqual(set(body), ERROR_KEYS, body)
        self.assertIsInstance(body["reason"], str)
        self.assertIsInstance(body["message"], str)
        self.assertTrue(body["message"])
        return body

    def new_kernel(self, name="python3"):
        kid = self.gw.start_kernel(name)
        self.addCleanup(self._delete_quietly, kid)
        return kid

    def _delete_quietly(self, kid):
        if self.gw.alive():
            self.gw.request("DELETE", f"api/kernels/{kid}")

    def connect(self, kid, **kw):
        ks = self.gw.connect(kid, **kw)
        self.addCleanup(ks.close)
        return ks
