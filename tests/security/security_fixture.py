"""Fixture of the security tests: a real sandgate (sandboxed kernels, a test
policy with small limits), kernels started through POST /api/kernels, and a
minimal WebSocket client that runs code inside them the way an attacker's
notebook would.

Every attack the tests run is bounded so that it could not harm an
unsandboxed machine either: loops have counters and deadlines, memory and
disk use have caps of a few hundred MiB, network probes only go to
127.0.0.1 ports the test itself opened.

The build directory comes from SANDGATE_BUILD_DIR (set by CTest); the gateway
is $SANDGATE_BUILD_DIR/bin/sandgate. Run as root (the gateway needs it to
create sandboxes).
"""

import datetime
import glob
import http.client
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import uuid

import websocket  # python3-websocket (websocket-client)

BUILD_DIR = os.environ.get("SANDGATE_BUILD_DIR", "")
if not BUILD_DIR or not os.path.isdir(BUILD_DIR):
    raise SystemExit("SANDGATE_BUILD_DIR must name the build directory")
SANDGATE = os.path.join(BUILD_DIR, "bin", "sandgate")
ARTIFACTS = os.path.join(BUILD_DIR, "tests", "artifacts", "security")

MiB = 1024 * 1024

# Small limits keep the exhaustion tests fast and harmless. The tests read
# the numbers from here, never assume them.
TEST_POLICY = {
    "limits": {
        "memory_bytes": 256 * MiB,
        "cpu": 1.0,
        "pids": 64,
        "workspace_bytes": 64 * MiB,
        "tmp_bytes": 32 * MiB,
        "open_files": 256,
        "file_size_bytes": 128 * MiB,
    },
    "ttl_s": 3600,
    "network": "none",
    "env": {"set": {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/workspace",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/.config/matplotlib",
        "XDG_CACHE_HOME": "/tmp/.cache",
    }},
}

KERNEL = "python3"  # Debian's ipykernel; /usr/bin/python3 is visible inside

# Printed by attack code in front of its JSON result line.
RESULT_MARK = "@@SANDGATE-RESULT@@"


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self):
        return self.end - time.monotonic()

    def left(self, what):
        r = self.remaining()
        if r <= 0:
            raise AssertionError(f"timed out after {self.seconds} s waiting for {what}")
        return r


def wait_until(predicate, seconds, what, interval=0.1):
    d = Deadline(seconds)
    while True:
        value = predicate()
        if value:
            return value
        if d.remaining() <= 0:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(interval)


def host_processes():
    """[(pid, cmdline bytes, uid)] of every live host process."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        out.append((int(entry), cmdline, uid))
    return out


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict((k, v.strip()) for k, v in (line.split(":", 1) for line in f if ":" in line))


def proc_ppid(pid):
    try:
        return int(proc_status(pid)["PPid"])
    except (OSError, KeyError, ValueError):
        return None


def descendants(root):
    """Host pids of every live descendant of `root` (not root itself)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            p = proc_ppid(int(entry))
            if p is not None:
                children.setdefault(p, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


class Gateway:
    """One sandgate process with sandboxed kernels."""

    def __init__(self, *args, policy=None, unsandboxed=(), name="gateway", start_timeout=30):
        if not os.path.exists(SANDGATE):
            # Another engineer may be relinking the binary; give it a moment.
            wait_until(lambda: os.path.exists(SANDGATE), 120, f"{SANDGATE} to exist", 1)
        self.token = "sec-" + uuid.uuid4().hex
        self.sandbox_of = {}  # kernel id -> its sandbox's id
        self.state_dir = tempfile.mkdtemp(prefix="sandgate-sec-")
        self.policy = policy or TEST_POLICY
        self.policy_path = os.path.join(self.state_dir, "test-policy.json")
        with open(self.policy_path, "w") as f:
            json.dump(self.policy, f)
        os.makedirs(ARTIFACTS, exist_ok=True)
        self.log_path = os.path.join(ARTIFACTS, f"{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}.log")
        self.log_file = open(self.log_path, "wb")
        cmd = [SANDGATE, "--port", "0", "--auth-token", self.token, "--state-dir", self.state_dir,
               "--policy", self.policy_path, "--log-level", "debug", "--shutdown-kernels-on-exit", *args]
        if unsandboxed:
            cmd += ["--unsandboxed-kernels", ",".join(unsandboxed)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log_file)
        self.url = self._read_url(start_timeout)
        parsed = urllib.parse.urlparse(self.url)
        self.host, self.port, self.base_path = parsed.hostname, parsed.port, parsed.path
        self.ws_base = f"ws://{self.host}:{self.port}{self.base_path}"
        self.stopped = False

    def _read_url(self, seconds):
        d = Deadline(seconds)
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, d.remaining()))
            if not ready:
                self.proc.kill()
                raise AssertionError(f"sandgate printed no URL within {seconds} s; log {self.log_path}")
            line = self.proc.stdout.readline().decode()
            if not line:
                self.proc.wait(5)
                raise AssertionError(f"sandgate exited ({self.proc.returncode}): {self.log_tail()}")
            if line.startswith("sandgate: http"):
                return line.split(" ", 1)[1].strip()

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

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

    def stop(self, timeout=20):
        if self.stopped:
            return self.proc.returncode
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(5)
        # Sandboxes are meant to outlive a gateway restart; a test run must not.
        for pid in self.sandbox_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        try:
            wait_until(lambda: not self.sandbox_pids(), 15, "sandboxes to end")
        except AssertionError:
            for pid in self.sandbox_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.proc.stdout.close()
        self.log_file.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)
        return code

    def sandbox_pids(self):
        """Host pids of this gateway's outer sandgate-sandbox processes."""
        marker = self.state_dir.encode()
        return [pid for pid, cmd, _ in host_processes()
                if marker in cmd and b"sandgate-sandbox" in cmd.split(b"\0")[0] and pid != self.proc.pid]

    # --- HTTP -----------------------------------------------------------------
    def request(self, method, path, body=None, timeout=90):
        hdrs = {"Authorization": f"token {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, self.base_path + path.lstrip("/"), body=data, headers=hdrs)
            r = conn.getresponse()
            body = r.read()
            return r.status, body
        finally:
            conn.close()

    def start_kernel(self, name=KERNEL):
        status, body = self.request("POST", "api/kernels", {"name": name})
        if status != 201:
            raise AssertionError(f"POST /api/kernels: {status} {body[:300]!r}; log {self.log_tail(10)}")
        model = json.loads(body)
        self.sandbox_of[model["id"]] = model["sandbox_id"]
        return model["id"]

    def sandbox_id(self, kid):
        """The id of a kernel's sandbox (remembered, so it is known after DELETE)."""
        if kid not in self.sandbox_of:
            _, model = self.kernel_model(kid)
            self.sandbox_of[kid] = model["sandbox_id"]
        return self.sandbox_of[kid]

    def delete_kernel(self, kid):
        status, body = self.request("DELETE", f"api/kernels/{kid}")
        if status != 204:
            raise AssertionError(f"DELETE /api/kernels/{kid}: {status} {body[:300]!r}")

    def kernel_model(self, kid):
        status, body = self.request("GET", f"api/kernels/{kid}")
        return status, (json.loads(body) if status == 200 else None)

    def healthy(self):
        """The gateway answers REST."""
        if not self.alive():
            return False
        status, _ = self.request("GET", "api/kernels", timeout=15)
        return status == 200

    def run_dir(self, kid):
        """The host run dirs of a kernel's sandbox (found by its id under the state dir)."""
        sid = self.sandbox_id(kid)
        hits = [p for p in glob.glob(os.path.join(self.state_dir, "**", "*" + sid + "*"), recursive=True)
                if os.path.isdir(p)]
        return hits

    def sandbox_info(self, kid):
        """{outer, supervisor, kernel pids} on the host for a kernel's sandbox, found
        from the outer sandgate-sandbox whose command line names the sandbox id."""
        sid = self.sandbox_id(kid).encode()
        outer = [pid for pid, cmd, _ in host_processes()
                 if sid in cmd and b"sandgate-sandbox" in cmd.split(b"\0")[0]]
        info = {"outer": outer, "all": []}
        for o in outer:
            info["all"] += descendants(o)
        return info


class Kernel:
    """A kernel's WebSocket channels, with an execute() that returns a summary."""

    def __init__(self, gw, kid, timeout=30):
        self.gw = gw
        self.id = kid
        self.session = uuid.uuid4().hex
        q = urllib.parse.urlencode({"session_id": self.session, "token": gw.token})
        self.ws = websocket.create_connection(f"{gw.ws_base}api/kernels/{kid}/channels?{q}", timeout=timeout)
        self.extra = []  # messages not belonging to any execute (restarts, statuses)

    def close(self):
        try:
            self.ws.close(timeout=3)
        except Exception:
            pass

    def send(self, msg_type, content, channel="shell"):
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "sec",
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"}
        self.ws.send(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content,
                                 "channel": channel, "buffers": []}))
        return msg_id

    def recv(self, timeout):
        self.ws.settimeout(max(0.05, timeout))
        op, frame = self.ws.recv_data_frame(True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            raise ConnectionError("WebSocket closed by the gateway")
        if op not in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
            return None
        data = frame.data
        if op == websocket.ABNF.OPCODE_BINARY:  # legacy binary: offsets then JSON
            n = int.from_bytes(data[:4], "big")
            first = int.from_bytes(data[4:8], "big")
            second = int.from_bytes(data[8:12], "big") if n > 1 else len(data)
            data = data[first:second]
        return json.loads(data)

    def execute(self, code, timeout=120, until_idle=True):
        """Runs code. Returns a dict: reply (content or None), status, stdout, stderr,
        error (ename, evalue), messages (all of this request), timed_out, closed."""
        msg_id = self.send("execute_request", {"code": code, "silent": False, "store_history": True,
                                               "user_expressions": {}, "allow_stdin": False,
                                               "stop_on_error": True})
        d = Deadline(timeout)
        res = {"reply": None, "status": None, "stdout": "", "stderr": "", "error": None, "messages": [],
               "timed_out": False, "closed": False, "other": []}
        idle = False
        while res["reply"] is None or (until_idle and not idle):
            left = d.remaining()
            if left <= 0:
                res["timed_out"] = True
                break
            try:
                m = self.recv(left)
            except websocket.WebSocketTimeoutException:
                res["timed_out"] = True
                break
            except (ConnectionError, websocket.WebSocketConnectionClosedException):
                res["closed"] = True
                break
            if m is None:
                continue
            if (m.get("parent_header") or {}).get("msg_id") != msg_id:
                res["other"].append(m)
                self.extra.append(m)
                continue
            res["messages"].append(m)
            mt = m["header"]["msg_type"]
            c = m["content"]
            if m["channel"] == "shell":
                res["reply"] = c
                res["status"] = c.get("status")
            elif mt == "stream":
                res[c["name"]] += c["text"]
            elif mt == "error":
                res["error"] = (c.get("ename"), c.get("evalue"))
            elif mt == "status" and c.get("execution_state") == "idle":
                idle = True
        return res

    def run(self, code, timeout=120):
        """Runs attack code that prints RESULT_MARK + json; returns the parsed object."""
        r = self.execute(code, timeout)
        for line in r["stdout"].splitlines():
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK):])
        raise AssertionError(f"no result from the kernel: status={r['status']} error={r['error']} "
                             f"timed_out={r['timed_out']} stdout={r['stdout'][-800:]!r} "
                             f"stderr={r['stderr'][-800:]!r}")

    def eval(self, expr, timeout=60):
        """The value of a Python expression inside the kernel, via JSON."""
        return self.run(f"import json\nprint({RESULT_MARK!r} + json.dumps({expr}))", timeout)

    def drain(self, seconds):
        """Reads whatever arrives for `seconds` (statuses after a restart, ...)."""
        d = Deadline(seconds)
        got = []
        while d.remaining() > 0:
            try:
                m = self.recv(d.remaining())
            except websocket.WebSocketTimeoutException:
                break
            except (ConnectionError, websocket.WebSocketConnectionClosedException):
                break
            if m is not None:
                got.append(m)
                self.extra.append(m)
        return got


# Attack code shared by many tests: runs a list of (name, callable) probes and
# prints each outcome as {"ok": value} or {"errno": n, "error": "..."}.
PROBE_PRELUDE = r'''
import ctypes, errno, json, os, socket, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
def _sys(nr, *args):
    ctypes.set_errno(0)
    r = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    e = ctypes.get_errno()
    if r == -1:
        raise OSError(e, os.strerror(e))
    return r
def _probe(fn):
    try:
        v = fn()
        try:
            json.dumps(v)
        except TypeError:
            v = repr(v)
        return {"ok": v}
    except OSError as ex:
        return {"errno": ex.errno, "error": str(ex)}
    except Exception as ex:
        return {"errno": None, "error": type(ex).__name__ + ": " + str(ex)}
def _report(obj):
    print(''' + repr(RESULT_MARK) + r''' + json.dumps(obj), flush=True)
'''


class SandboxTestCase(unittest.TestCase):
    """One gateway per class; kernels started with new_kernel() are deleted at the end."""

    gateway_args = ()
    policy = None
    unsandboxed = ()
    gw = None

    @classmethod
    def setUpClass(cls):
        cls.gw = Gateway(*cls.gateway_args, policy=cls.policy, unsandboxed=cls.unsandboxed, name=cls.__name__)
        cls._class_kernels = []

    @classmethod
    def tearDownClass(cls):
        if cls.gw:
            for k in cls._class_kernels:
                k.close()
                try:
                    cls.gw.request("DELETE", f"api/kernels/{k.id}", timeout=30)
                except OSError:
                    pass
            cls.gw.stop()

    @classmethod
    def class_kernel(cls):
        """A kernel that lives for the whole class."""
        k = Kernel(cls.gw, cls.gw.start_kernel())
        cls._class_kernels.append(k)
        return k

    def new_kernel(self):
        kid = self.gw.start_kernel()
        k = Kernel(self.gw, kid)
        self.addCleanup(self._delete_quietly, k)
        return k

    def _delete_quietly(self, k):
        k.close()
        if self.gw.alive():
            try:
                self.gw.request("DELETE", f"api/kernels/{k.id}", timeout=30)
            except OSError:
                pass

    def probe(self, kernel, body, timeout=120):
        """Runs PROBE_PRELUDE + body (which must call _report(...)) in the kernel."""
        return kernel.run(PROBE_PRELUDE + body, timeout)

    def assertGatewayUp(self):
        self.assertTrue(self.gw.alive(), f"gateway died; log: {self.gw.log_tail()}")
        self.assertTrue(self.gw.healthy(), "gateway does not answer GET /api/kernels")

    def assertKernelWorks(self, kernel, timeout=60):
        r = kernel.execute("print(6 * 7)", timeout)
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"].strip(), "42", r)

    def assertRefused(self, outcome, what, errnos=(1, 38)):
        """A probe outcome is a failure with one of `errnos` (EPERM, ENOSYS by default)."""
        self.assertNotIn("ok", outcome, f"{what} SUCCEEDED inside the sandbox: {outcome}")
        if errnos is not None:
            self.assertIn(outcome.get("errno"), errnos, f"{what}: unexpected failure {outcome}")
