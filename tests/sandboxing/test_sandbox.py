#!/usr/bin/python3
"""Integration tests of sandgate-sandbox, run as root on the host.

usage: test_sandbox.py SANDGATE_SANDBOX POLICY_JSON [unittest args]

Each test starts real sandboxes (standalone or through the control socket)
and probes them from inside the way an attacker would.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

SANDBOX = None
POLICY = None

SYSCALL_PROBE = r'''
import ctypes, errno, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"mount": 165, "umount2": 166, "unshare": 272, "setns": 308, "ptrace": 101,
      "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250, "add_key": 248,
      "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
      "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
      "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
      "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "syslog": 103,
      "acct": 163, "quotactl": 179, "open_by_handle_at": 304, "pivot_root": 155, "chroot": 161,
      "clone3": 435}
result = {}
for name, nr in NR.items():
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0),
                      ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    result[name] = 0 if rc != -1 else ctypes.get_errno()
# clone with a namespace flag (CLONE_NEWUSER | SIGCHLD)
ctypes.set_errno(0)
rc = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x10000000 | 17), ctypes.c_long(0), ctypes.c_long(0),
                  ctypes.c_long(0), ctypes.c_long(0))
if rc == 0:
    os._exit(0)
result["clone(CLONE_NEWUSER)"] = 0 if rc != -1 else ctypes.get_errno()
def sock(family, type_, proto=0):
    try:
        socket.socket(family, type_, proto).close()
        return 0
    except OSError as e:
        return e.errno
result["socket(AF_PACKET)"] = sock(17, socket.SOCK_RAW, 0)
result["socket(AF_INET, SOCK_RAW)"] = sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
result["socket(AF_INET6, SOCK_RAW)"] = sock(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
result["socket(AF_NETLINK, NETLINK_AUDIT)"] = sock(16, socket.SOCK_RAW, 9)
result["ok:socket(AF_UNIX)"] = sock(socket.AF_UNIX, socket.SOCK_STREAM)
result["ok:socket(AF_INET, SOCK_STREAM)"] = sock(socket.AF_INET, socket.SOCK_STREAM)
def ioctl(request):
    ctypes.set_errno(0)
    buf = ctypes.create_string_buffer(16)
    rc = libc.syscall(ctypes.c_long(16), ctypes.c_long(0), ctypes.c_ulong(request), buf)
    return 0 if rc != -1 else ctypes.get_errno()
result["ioctl(TIOCSTI)"] = ioctl(0x5412)
result["ioctl(TIOCSTI | 1 << 32)"] = ioctl(0x5412 | (1 << 32))
result["ioctl(TIOCLINUX)"] = ioctl(0x541C)
result["notperm:ioctl(TIOCGWINSZ)"] = ioctl(0x5413)
result["ok:fork"] = 0
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps(result))
'''


def make_policy(**changes):
    with open(POLICY) as f:
        policy = json.load(f)
    for key, value in changes.items():
        if key in ("memory_bytes", "cpu", "pids", "workspace_bytes", "tmp_bytes", "open_files", "file_size_bytes"):
            policy["limits"][key] = value
        else:
            policy[key] = value
    fd, path = tempfile.mkstemp(prefix="sandgate-policy-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(policy, f)
    return path


def run(argv, policy=None, timeout=60, extra=(), **kw):
    cmd = [SANDBOX, "--policy", policy or POLICY, *extra, "--", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def cgroup_dirs(sandbox_id):
    root = "/sys/fs/cgroup"
    if os.path.exists(f"{root}/cgroup.controllers"):
        return [f"{root}/sandgate/{sandbox_id}"]
    return [f"{root}/{c}/sandgate/{sandbox_id}" for c in ("memory", "pids", "cpu")]


def wait_for_file(path, timeout=20):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise TimeoutError(path)
        time.sleep(0.02)


def host_processes_with(marker):
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


class control_client:
    """The gateway's side of the control protocol."""

    def __init__(self, path, timeout=30):
        deadline = time.time() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.events = []
        self.req = 0

    def send(self, message):
        data = json.dumps(message).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def receive(self):
        while len(self.buffer) < 4 or len(self.buffer) < 4 + struct.unpack(">I", self.buffer[:4])[0]:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("control socket closed")
            self.buffer += chunk
        n = struct.unpack(">I", self.buffer[:4])[0]
        message = json.loads(self.buffer[4:4 + n])
        self.buffer = self.buffer[4 + n:]
        return message

    def request(self, op, **fields):
        self.req += 1
        self.send({"op": op, "req": self.req, **fields})
        while True:
            message = self.receive()
            if message.get("req") == self.req and "event" not in message:
                return message
            self.events.append(message)

    def wait_event(self, event, child_id=None, timeout=30):
        deadline = time.time() + timeout
        while True:
            for m in self.events:
                if m.get("event") == event and (child_id is None or m.get("id") == child_id):
                    self.events.remove(m)
                    return m
            self.sock.settimeout(max(0.1, deadline - time.time()))
            self.events.append(self.receive())

    def next_event_of(self, child_id, timeout=30):
        """The next event about child_id, in the order the supervisor sent it."""
        deadline = time.time() + timeout
        while True:
            for m in self.events:
                if m.get("id") == child_id and "event" in m:
                    self.events.remove(m)
                    return m
            self.sock.settimeout(max(0.1, deadline - time.time()))
            self.events.append(self.receive())

    def close(self):
        self.sock.close()


class supervised:
    """A sandbox in control mode, shut down and checked for leftovers at exit."""

    def __init__(self, policy=None, create_run_dir=False, extra=(), wrapper=()):
        self.id = "t-" + uuid.uuid4().hex[:12]
        self.tmp = tempfile.mkdtemp(prefix="sandgate-test-")
        self.run_dir = os.path.join(self.tmp, "run")
        if create_run_dir:
            os.mkdir(self.run_dir)
        self.control = os.path.join(self.tmp, "ctl.sock")
        self.proc = subprocess.Popen([*wrapper, SANDBOX, "--policy", policy or POLICY, "--id", self.id,
                                      "--run-dir", self.run_dir, "--control", self.control, *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.client = control_client(self.control)
        self.ready = self.client.receive()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            try:
                self.client.request("shutdown")
            except (OSError, EOFError):
                pass
        try:
            self.stdout, self.stderr = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.stdout, self.stderr = self.proc.communicate()
        self.client.close()


class standalone_tests(unittest.TestCase):
    def test_sees_only_its_own_processes(self):
        r = run(["/bin/ps", "-eo", "pid=,comm="])
        self.assertEqual(r.returncode, 0, r.stderr)
        pids = [int(line.split()[0]) for line in r.stdout.splitlines()]
        self.assertIn(1, pids)
        self.assertLess(len(pids), 4, r.stdout)
        self.assertNotIn("systemd", r.stdout)

    def test_runs_as_unprivileged_user_without_capabilities(self):
        r = run(["/bin/sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status"])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split()
        self.assertEqual(lines[0:2], ["1000", "1000"])
        self.assertIn("CapEff:\t0000000000000000", r.stdout.replace(" ", "\t").replace("\t\t", "\t"))
        status = dict(line.split(":\t") for line in r.stdout.splitlines()[2:])
        for cap in ("CapEff", "CapBnd", "CapPrm"):
            self.assertEqual(int(status[cap], 16), 0, cap)
        self.assertEqual(status["NoNewPrivs"], "1")
        self.assertEqual(status["Seccomp"], "2")

    def test_cannot_read_host_secrets(self):
        secret_dir = tempfile.mkdtemp(prefix="sandgate-secret-")
        secret = os.path.join(secret_dir, "secret.txt")
        with open(secret, "w") as f:
            f.write("host secret")
        r = run(["/bin/sh", "-c", f"cat /etc/shadow; ls /root; cat {secret}; ls /home; cat /proc/1/environ; "
                 "ls /sys/fs/cgroup; echo done"])
        self.assertIn("done", r.stdout)
        self.assertNotIn("host secret", r.stdout)
        self.assertNotIn("root:", r.stdout)
        self.assertEqual(r.stdout.strip(), "done")

    def test_system_dirs_and_root_are_read_only(self):
        r = run(["/bin/sh", "-c", "for p in /x /usr/x /etc/x /bin/x /lib/x /dev/x /run/x; do "
                 "touch $p 2>/dev/null && echo WROTE $p; done; echo ok > /tmp/t && cat /tmp/t; "
                 "echo ok > /workspace/t && cat /workspace/t"])
        self.assertNotIn("WROTE", r.stdout)
        self.assertEqual(r.stdout.split(), ["ok", "ok"])

    def test_workspace_is_bounded(self):
        policy = make_policy(workspace_bytes=4 << 20)
        r = run(["/bin/sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M count=16 2>&1; echo rc=$?"], policy)
        self.assertIn("No space left on device", r.stdout)
        self.assertIn("rc=1", r.stdout)

    def test_host_workspace_dir_is_bound_read_write(self):
        workspace = tempfile.mkdtemp(prefix="sandgate-ws-")
        with open(os.path.join(workspace, "in.txt"), "w") as f:
            f.write("from host")
        os.mkdir(os.path.join(workspace, "sub"))
        target = tempfile.mktemp(prefix="sandgate-linked-")
        with open(target, "w") as f:
            f.write("host file")
        os.symlink(target, os.path.join(workspace, "sub", "link"))
        r = run(["/bin/sh", "-c", "cat /workspace/in.txt; echo from sandbox > /workspace/out.txt; "
                 "echo x > /workspace/sub/new"], extra=("--workspace", workspace))
        self.assertEqual(os.stat(target).st_uid, 0, "links in a workspace are not followed when it is re-owned")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "from host")
        with open(os.path.join(workspace, "out.txt")) as f:
            self.assertEqual(f.read(), "from sandbox\n")
        self.assertNotEqual(os.stat(os.path.join(workspace, "out.txt")).st_uid, 0)

    def test_policy_mounts_bind_host_paths(self):
        data = tempfile.mkdtemp(prefix="sandgate-data-")
        out = tempfile.mkdtemp(prefix="sandgate-out-")
        os.chmod(out, 0o777)
        with open(os.path.join(data, "in.txt"), "w") as f:
            f.write("data\n")
        os.chmod(data, 0o755)
        policy = make_policy(mounts=[{"source": data, "target": "/data"},
                                     {"source": out, "target": "/mnt/out", "read_only": False}])
        r = run(["/bin/sh", "-c", "cat /data/in.txt; touch /data/x 2>/dev/null && echo WROTE; "
                 "echo hi > /mnt/out/o.txt && echo ok"], policy)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["data", "ok"])
        self.assertTrue(os.path.exists(os.path.join(out, "o.txt")))

    def test_no_network(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = ("import socket\ns=socket.socket()\ns.settimeout(3)\n"
                 f"try:\n s.connect(('127.0.0.1',{port})); print('CONNECTED')\n"
                 "except OSError as e: print('refused', e.errno)\n")
        for network in ("none", "loopback"):
            r = run(["/usr/bin/python3", "-c", probe], make_policy(network=network))
            self.assertIn("refused", r.stdout, network + r.stderr)
        listener.close()

    def test_loopback_network_works_inside(self):
        probe = ("import socket\nl=socket.socket(); l.bind(('127.0.0.1',0)); l.listen()\n"
                 "c=socket.create_connection(l.getsockname()); a,_=l.accept(); c.send(b'hi'); print(a.recv(2))\n")
        r = run(["/usr/bin/python3", "-c", probe], make_policy(network="loopback"))
        self.assertIn("b'hi'", r.stdout, r.stderr)
        r = run(["/usr/bin/python3", "-c", probe])
        self.assertNotIn("b'hi'", r.stdout)

    def test_refused_syscalls(self):
        r = run(["/usr/bin/python3", "-c", SYSCALL_PROBE])
        self.assertEqual(r.returncode, 0, r.stderr)
        result = json.loads(r.stdout)
        for name, error in result.items():
            with self.subTest(call=name):
                if name.startswith("ok:"):
                    self.assertEqual(error, 0)
                elif name.startswith("notperm:"):
                    self.assertNotEqual(error, 1)
                elif name == "clone3":
                    self.assertEqual(error, 38)  # ENOSYS, so libc falls back to clone
                else:
                    self.assertEqual(error, 1, f"{name} gave errno {error}")  # EPERM

    def test_fork_bomb_is_bounded(self):
        policy = make_policy(pids=32)
        probe = ("import os, time\nn=0\n"
                 "while n < 1000:\n"
                 "  try:\n    pid=os.fork()\n  except OSError:\n    break\n"
                 "  if pid==0:\n    time.sleep(30); os._exit(0)\n"
                 "  n+=1\nprint(n)\n")
        r = run(["/usr/bin/python3", "-c", probe], policy)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(int(r.stdout), 32)

    def test_exit_status_is_forwarded(self):
        self.assertEqual(run(["/bin/sh", "-c", "exit 7"]).returncode, 7)
        self.assertEqual(run(["/bin/sh", "-c", "kill -TERM $$"]).returncode, 128 + 15)

    def test_scientific_stack_runs(self):
        code = ("import numpy, pandas, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                "df = pandas.DataFrame({'x': numpy.arange(5), 'y': numpy.arange(5) ** 2})\n"
                "df.plot(x='x', y='y'); plt.savefig('/workspace/p.png')\n"
                "import os; print(os.path.getsize('/workspace/p.png') > 1000)\n")
        r = run(["/usr/bin/python3", "-c", code], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "True")

    def test_bash_and_coreutils_run(self):
        r = run(["/bin/bash", "-c", "set -e; cd /tmp; seq 1 100 | sort -rn | head -1 > a; cp a b; "
                 "sha256sum b | cut -c1-8; mkdir d; mv b d/; ls d; date +%Y >/dev/null; "
                 "python3 -c 'import subprocess; print(subprocess.check_output([\"echo\", \"sub\"]).decode().strip())'"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[1:], ["b", "sub"])

    def test_nothing_is_left_behind(self):
        sandbox_id = "t-" + uuid.uuid4().hex[:12]
        marker = "3141" + str(os.getpid())
        r = run(["/bin/sh", "-c", f"(sleep {marker} &) ; sleep {marker} & echo started"],
                extra=("--id", sandbox_id))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(host_processes_with(f"sleep {marker}"), [])
        for d in cgroup_dirs(sandbox_id):
            self.assertFalse(os.path.exists(d), d)

    def test_unprivileged_caller(self):
        if not os.path.exists("/usr/bin/setpriv"):
            self.skipTest("needs setpriv (util-linux)")
        tmp = tempfile.mkdtemp(prefix="sandgate-unpriv-")
        os.chmod(tmp, 0o755)
        binary = os.path.join(tmp, "sandgate-sandbox")
        policy = os.path.join(tmp, "policy.json")
        subprocess.run(["cp", SANDBOX, binary], check=True)
        subprocess.run(["cp", POLICY, policy], check=True)
        os.chmod(policy, 0o644)
        r = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary,
                            "--policy", policy, "--allow-no-cgroup", "--", "/bin/sh", "-c",
                            "id -u; ps -eo pid= | wc -l; grep CapBnd /proc/self/status; touch /usr/x || echo ro"],
                           capture_output=True, text=True, timeout=60, cwd=tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["1000", "4", "CapBnd:", "0000000000000000", "ro"])

    def test_bad_policy_names_the_field(self):
        policy = make_policy(network="internet")
        r = run(["/bin/true"], policy)
        self.assertEqual(r.returncode, 125)
        self.assertIn("network", r.stderr)


class control_tests(unittest.TestCase):
    def test_ready_spawn_exit_and_run_dir(self):
        with supervised() as s:
            ready = s.ready
            self.assertEqual(ready["event"], "ready")
            self.assertEqual(ready["id"], s.id)
            self.assertGreater(ready["host_uid"], 0)
            self.assertGreater(ready["expires_at"], time.time())
            self.assertEqual(ready["children"], [])
            self.assertEqual(os.stat(s.control).st_mode & 0o777, 0o600)
            self.assertEqual(os.stat(s.run_dir).st_uid, ready["host_uid"])
            self.assertTrue(os.path.exists(f"/proc/{ready['pid']}"))
            self.assertEqual(s.client.request("ping")["ok"], True)
            reply = s.client.request("spawn", id="k1", argv=["/bin/sh", "-c", "echo $A > /run/sandgate/out; env | sort > /run/sandgate/env; exit 3"],
                                     env={"A": "hello"}, cwd="/workspace")
            self.assertTrue(reply["ok"], reply)
            self.assertGreater(reply["pid"], 1)
            event = s.client.wait_event("exit", "k1")
            self.assertEqual(event["code"], 3)
            with open(os.path.join(s.run_dir, "out")) as f:
                self.assertEqual(f.read(), "hello\n")
            with open(os.path.join(s.run_dir, "env")) as f:
                names = [line.split("=")[0] for line in f.read().splitlines()]
            self.assertIn("A", names)
            self.assertNotIn("SUDO_USER", names)
            self.assertEqual(os.stat(os.path.join(s.run_dir, "out")).st_uid, ready["host_uid"])
            bad = s.client.request("spawn", id="k2", argv=["/no/such/program"])
            self.assertFalse(bad["ok"])
            self.assertIn("execve(/no/such/program)", bad["error"])
            self.assertFalse(s.client.request("signal", id="nobody", signal=2)["ok"])
            self.assertFalse(s.client.request("frobnicate")["ok"])
        self.assertEqual(s.proc.returncode, 0)
        self.assertFalse(os.path.exists(s.run_dir), "a run dir the supervisor created is removed")
        self.assertFalse(os.path.exists(s.control))
        for d in cgroup_dirs(s.id):
            self.assertFalse(os.path.exists(d), d)

    def test_run_dir_of_the_gateway_is_kept(self):
        with supervised(create_run_dir=True) as s:
            pass
        self.assertTrue(os.path.isdir(s.run_dir))

    def test_gateway_can_reach_a_unix_socket_made_inside(self):
        with supervised() as s:
            code = ("import socket,os\nl=socket.socket(socket.AF_UNIX); l.bind('/run/sandgate/k.sock'); l.listen()\n"
                    "open('/run/sandgate/k.ready','w').close()\na,_=l.accept(); a.send(b'pong'); a.close()\n")
            self.assertTrue(s.client.request("spawn", id="k", argv=["/usr/bin/python3", "-c", code])["ok"])
            wait_for_file(os.path.join(s.run_dir, "k.ready"))
            c = socket.socket(socket.AF_UNIX)
            c.connect(os.path.join(s.run_dir, "k.sock"))
            self.assertEqual(c.recv(4), b"pong")
            c.close()
            self.assertEqual(s.client.wait_event("exit", "k")["code"], 0)

    def test_signal_reaches_the_process_group(self):
        with supervised() as s:
            script = "trap 'exit 42' INT; echo up > /run/sandgate/up; sleep 1000; exit 1"
            self.assertTrue(s.client.request("spawn", id="k", argv=["/bin/sh", "-c", script])["ok"])
            wait_for_file(os.path.join(s.run_dir, "up"))
            time.sleep(0.2)
            self.assertTrue(s.client.request("signal", id="k", signal=2, group=True)["ok"])
            self.assertEqual(s.client.wait_event("exit", "k")["code"], 42)
            # a background job of a group that is terminated goes with it
            script = "sleep 1001 & echo up > /run/sandgate/up2; wait"
            self.assertTrue(s.client.request("spawn", id="k2", argv=["/bin/sh", "-c", script])["ok"])
            wait_for_file(os.path.join(s.run_dir, "up2"))
            self.assertTrue(s.client.request("signal", id="k2", signal=15, group=True)["ok"])
            self.assertEqual(s.client.wait_event("exit", "k2")["signal"], 15)
            check = s.client.request("spawn", id="ps", argv=["/bin/sh", "-c", "ps -eo comm= > /run/sandgate/ps"])
            self.assertTrue(check["ok"])
            s.client.wait_event("exit", "ps")
            with open(os.path.join(s.run_dir, "ps")) as f:
                self.assertNotIn("sleep", f.read())

    def test_oom_kill_is_reported(self):
        policy = make_policy(memory_bytes=64 << 20)
        with supervised(policy) as s:
            code = "x=[]\nwhile True: x.append(bytearray(8<<20))\n"
            self.assertTrue(s.client.request("spawn", id="balloon", argv=["/usr/bin/python3", "-c", code])["ok"])
            event = s.client.wait_event("exit", "balloon", timeout=60)
            self.assertEqual(event.get("signal"), 9, event)
            self.assertTrue(event["oom"], event)
            self.assertTrue(s.client.request("ping")["ok"], "the supervisor survives")

    def test_sandbox_outlives_the_gateway_connection(self):
        with supervised() as s:
            self.assertTrue(s.client.request("spawn", id="long", argv=["/bin/sleep", "1000"])["ok"])
            s.client.close()
            s.client = control_client(s.control)
            ready = s.client.receive()
            self.assertEqual(ready["children"], ["long"])
            self.assertTrue(s.client.request("signal", id="long", signal=15, group=False)["ok"])
            self.assertEqual(s.client.wait_event("exit", "long")["signal"], 15)

    def test_ttl_ends_the_sandbox_without_a_gateway(self):
        policy = make_policy(ttl_s=3)
        with supervised(policy) as s:
            self.assertTrue(s.client.request("spawn", id="k", argv=["/bin/sleep", "1003"])["ok"])
            s.client.close()
            started = time.time()
            s.proc.communicate(timeout=20)
            elapsed = time.time() - started
            self.assertLess(elapsed, 10)
            self.assertLess(time.time(), s.ready["expires_at"] + 5)
            self.assertEqual(s.proc.returncode, 124)
            self.assertEqual(host_processes_with("sleep 1003"), [])
            for d in cgroup_dirs(s.id):
                self.assertFalse(os.path.exists(d), d)

    def test_sigterm_to_the_outer_process_shuts_down_cleanly(self):
        with supervised() as s:
            self.assertTrue(s.client.request("spawn", id="k", argv=["/bin/sleep", "1002"])["ok"])
            s.proc.terminate()
            s.proc.communicate(timeout=15)
            self.assertEqual(s.proc.returncode, 0)
            self.assertEqual(s.client.wait_event("exit", "k")["signal"], 9)
            self.assertEqual(host_processes_with("sleep 1002"), [])
            for d in cgroup_dirs(s.id):
                self.assertFalse(os.path.exists(d), d)

    def test_spawn_log_collects_stdout_and_stderr(self):
        with supervised() as s:
            reply = s.client.request("spawn", id="k", argv=["/bin/sh", "-c", "echo out; echo err >&2; ls /proc/self/fd"],
                                     log="/run/sandgate/k.log")
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(s.client.wait_event("exit", "k")["code"], 0)
            with open(os.path.join(s.run_dir, "k.log")) as f:
                lines = f.read().split()
            self.assertEqual(lines[:2], ["out", "err"])
            self.assertEqual(lines[2:], ["0", "1", "2", "3"], "only stdio (and ls's own directory) are open")

    def test_jupyter_kernel_over_ipc_sockets_in_the_run_dir(self):
        try:
            import jupyter_client  # noqa: F401
            import ipykernel  # noqa: F401
        except ImportError:
            self.skipTest("needs python3-jupyter-client and python3-ipykernel")
        from jupyter_client import BlockingKernelClient
        with supervised() as s:
            key = uuid.uuid4().hex
            info = {"transport": "ipc", "ip": "/run/sandgate/k1", "shell_port": 1, "iopub_port": 2,
                    "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": key,
                    "signature_scheme": "hmac-sha256", "kernel_name": "python3"}
            path = os.path.join(s.run_dir, "k1.json")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(info, f)
            os.chown(path, s.ready["host_uid"], s.ready["host_gid"])
            env = {"PATH": "/usr/bin:/bin", "IPYTHONDIR": "/tmp/.ipython", "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter"}
            reply = s.client.request("spawn", id="k1", argv=["/usr/bin/python3", "-m", "ipykernel_launcher", "-f",
                                                            "/run/sandgate/k1.json"], env=env,
                                     log="/run/sandgate/k1.log")
            self.assertTrue(reply["ok"], reply)
            wait_for_file(os.path.join(s.run_dir, "k1-5"), timeout=60)
            kc = BlockingKernelClient()
            kc.load_connection_info({**info, "ip": os.path.join(s.run_dir, "k1")})
            kc.hb_channel.time_to_dead = 30.0  # a loaded machine must not pass for a dead kernel
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=60)
                outputs = []
                kc.execute_interactive("import numpy; print(numpy.arange(4).sum())", timeout=60,
                                       output_hook=lambda m: outputs.append(m))
                text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
                self.assertEqual(text.strip(), "6")
                self.assertEqual(os.stat(os.path.join(s.run_dir, "k1-1")).st_uid, s.ready["host_uid"])
                # an interrupt through the control socket reaches the kernel
                msg_id = kc.execute("import time; time.sleep(30)")
                time.sleep(1)
                self.assertTrue(s.client.request("signal", id="k1", signal=2, group=False)["ok"])
                result = kc.get_shell_msg(timeout=20)
                self.assertEqual(result["parent_header"]["msg_id"], msg_id)
                self.assertEqual(result["content"]["ename"], "KeyboardInterrupt")
            finally:
                kc.stop_channels()

    def test_a_fifo_planted_at_the_log_path_does_not_hang_the_supervisor(self):
        with supervised() as s:
            self.assertTrue(s.client.request("spawn", id="a", argv=["/usr/bin/mkfifo", "/run/sandgate/k.log"])["ok"])
            s.client.wait_event("exit", "a")
            reply = s.client.request("spawn", id="k", argv=["/bin/true"], log="/run/sandgate/k.log")
            self.assertFalse(reply["ok"])
            self.assertIn("open(/run/sandgate/k.log", reply["error"])
            self.assertTrue(s.client.request("ping")["ok"])

    def test_malformed_frames_close_only_that_connection(self):
        with supervised() as s:
            s.client.sock.sendall(struct.pack(">I", 2 << 20))
            s.client.sock.settimeout(10)
            with self.assertRaises((EOFError, ConnectionResetError)):
                s.client.receive()
            s.client.close()
            s.client = control_client(s.control)
            self.assertEqual(s.client.receive()["event"], "ready")
            self.assertTrue(s.client.request("ping")["ok"])


if __name__ == "__main__":
    SANDBOX = os.path.abspath(sys.argv[1])
    POLICY = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
