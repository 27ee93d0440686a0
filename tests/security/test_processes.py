"""Processes and cross-session isolation: a kernel sees only its own sandbox's
processes, cannot signal the gateway nor another sandbox's kernel, and two
kernels' files, processes and IPC endpoints are invisible to each other."""

import os
import unittest
import uuid

from sandgate_fixture import comm, host_processes, wait_until
from security_case import SandboxTestCase


class Processes(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = cls.class_kernel()
        cls.b = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.b)

    def host_kernel_pid(self, kernel):
        """Host pid of a kernel's python process (a descendant of its sandbox)."""
        info = self.gw.sandbox_info(kernel.kernel_id)
        pids = [p for p in set(info["all"]) if comm(p) and comm(p).startswith("python")]
        self.assertTrue(pids, f"no python process found under the sandbox of {kernel.kernel_id}: {info}")
        return pids[0]

    def test_only_own_processes_visible(self):
        res = self.probe(self.a, r'''
procs = {}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            procs[pid] = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        except OSError as ex:
            procs[pid] = "?" + str(ex)
_report({"procs": procs, "self": os.getpid(), "ppid": os.getppid()})
''')
        procs = res["procs"]
        info = self.gw.sandbox_info(self.a.kernel_id)
        # The supervisor (pid 1) and the kernel and its children, nothing else.
        self.assertIn("1", procs)
        self.assertIn("sandgate-sandbox", procs["1"])
        self.assertEqual(res["ppid"], 1)
        self.assertLessEqual(len(procs), len(set(info["all"])) + 1, procs)
        for pid, cmd in procs.items():
            self.assertNotIn("--auth-token", cmd, f"gateway visible as pid {pid} inside")
            self.assertNotIn(self.b.kernel_id, cmd, f"the other sandbox visible as pid {pid} inside")

    def test_kill_gateway_fails(self):
        gw_pid = self.gw.pid
        res = self.probe(self.a, f'''
import signal
out = {{}}
inside = {{int(p) for p in os.listdir("/proc") if p.isdigit()}}
out["collides"] = {gw_pid} in inside
if not out["collides"]:
    out["kill0"] = _probe(lambda: os.kill({gw_pid}, 0))
    out["killTERM"] = _probe(lambda: os.kill({gw_pid}, signal.SIGTERM))
    out["killpg"] = _probe(lambda: os.killpg({gw_pid}, signal.SIGKILL))
    out["pidfd"] = _probe(lambda: os.pidfd_open({gw_pid}))
_report(out)
''')
        if res.get("collides"):
            self.skipTest("the gateway's host pid is also a pid inside the sandbox")
        for what in ("kill0", "killTERM", "killpg", "pidfd"):
            self.assertRefused(res[what], f"{what} on the gateway pid {gw_pid}", errnos=(3,))  # ESRCH
        self.assertTrue(self.gw.alive())

    def test_signal_supervisor_fails(self):
        res = self.probe(self.a, r'''
import signal
_report({"term": _probe(lambda: os.kill(1, signal.SIGTERM)),
         "kill": _probe(lambda: os.kill(1, signal.SIGKILL)),
         "stop": _probe(lambda: os.kill(1, signal.SIGSTOP))})
''')
        for what in ("term", "kill", "stop"):
            self.assertRefused(res[what], f"signal {what} to the supervisor", errnos=(1,))
        self.assertTrue(self.gw.sandbox_info(self.a.kernel_id)["outer"])
        self.assertKernelWorks(self.a)

    def test_signal_other_sandbox_kernel_fails(self):
        target = self.host_kernel_pid(self.b)
        res = self.probe(self.a, f'''
import signal
inside = {{int(p) for p in os.listdir("/proc") if p.isdigit()}}
out = {{"collides": {target} in inside}}
if not out["collides"]:
    out["kill"] = _probe(lambda: os.kill({target}, signal.SIGKILL))
    out["killpg"] = _probe(lambda: os.killpg({target}, signal.SIGKILL))
_report(out)
''')
        if res["collides"]:
            self.skipTest("the other kernel's host pid is also a pid inside the sandbox")
        self.assertRefused(res["kill"], "SIGKILL to the other sandbox's kernel", errnos=(3,))
        self.assertRefused(res["killpg"], "SIGKILL to the other sandbox's kernel group", errnos=(3,))
        self.assertTrue(os.path.exists(f"/proc/{target}"))
        self.assertKernelWorks(self.b)

    def test_kill_everything_visible_stays_inside(self):
        # kill(-1) reaches every process the caller may signal in its pid
        # namespace; run it in a disposable kernel and check that the gateway
        # and the other kernel are untouched.
        k = self.new_kernel()
        r = k.attempt("import os, signal\nos.kill(-1, signal.SIGKILL)", timeout=20)
        self.assertTrue(self.gw.alive())
        self.assertKernelWorks(self.b)
        self.assertKernelWorks(self.a)
        del r


class CrossSession(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = cls.class_kernel()
        cls.b = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()

    def test_files_invisible(self):
        tag = uuid.uuid4().hex
        self.probe(self.a, f'''
for d in ("/workspace", "/tmp", "/dev/shm", "/run/sandgate"):
    open(f"{{d}}/secret-{tag}", "w").write("{tag}")
_report(sorted(os.listdir("/workspace")))
''')
        res = self.probe(self.b, f'''
out = {{}}
for d in ("/workspace", "/tmp", "/dev/shm", "/run/sandgate"):
    out[d] = _probe(lambda: open(f"{{d}}/secret-{tag}").read())
    out[d + " listing"] = os.listdir(d)
_report(out)
''')
        for d in ("/workspace", "/tmp", "/dev/shm", "/run/sandgate"):
            self.assertRefused(res[d], f"kernel B reading A's {d}/secret", errnos=(2,))
            self.assertNotIn(f"secret-{tag}", res[d + " listing"])

    def test_processes_invisible(self):
        marker = "sandgate-sec-proc-" + uuid.uuid4().hex
        self.probe(self.a, f'''
import subprocess
p = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(60)", {marker!r}])
_report(p.pid)
''')
        wait_until(lambda: any(marker.encode() in c for _, c, _ in host_processes()), 15, "A's marker process")
        res = self.probe(self.b, f'''
hits = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if {marker!r}.encode() in open(f"/proc/{{pid}}/cmdline", "rb").read():
                hits.append(pid)
        except OSError:
            pass
_report(hits)
''')
        self.assertEqual(res, [], "kernel B sees kernel A's process")
        self.a.attempt("p.kill(); p.wait()")

    def test_ipc_endpoints_unreachable(self):
        name = "sandgate-sec-" + uuid.uuid4().hex[:12]
        # A listens on an abstract unix socket and a unix socket in /tmp, and
        # creates a System V shared memory segment and a POSIX message queue name.
        made = self.probe(self.a, f'''
import threading
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\\0{name}")
srv.listen(4)
srv2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv2.bind("/tmp/{name}.sock")
srv2.listen(4)
_libc.shmget.restype = ctypes.c_int
shmid = _libc.shmget(0x5a6b7c, 4096, 0o1666)  # IPC_CREAT | 0666
_report({{"shmid": shmid}})
''')
        self.assertGreaterEqual(made["shmid"], 0, "A could not create its SysV shm segment")
        res = self.probe(self.b, f'''
def conn(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        return "connected"
    finally:
        s.close()
_libc.shmget.restype = ctypes.c_int
def shm():
    r = _libc.shmget(0x5a6b7c, 0, 0)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
out = {{"abstract": _probe(lambda: conn("\\0{name}")),
        "tmp": _probe(lambda: conn("/tmp/{name}.sock")),
        "shm": _probe(shm),
        "a_kernel_shell": _probe(lambda: conn({os.path.join(self.gw.state_dir, "run", self.a.kernel_id, "k-1")!r}))}}
_report(out)
''')
        self.assertRefused(res["abstract"], "B connecting to A's abstract unix socket", errnos=(111, 2))
        self.assertRefused(res["tmp"], "B connecting to A's /tmp unix socket", errnos=(2,))
        self.assertRefused(res["shm"], "B attaching A's SysV shm segment", errnos=(2,))
        self.assertRefused(res["a_kernel_shell"], "B connecting to A's kernel ipc socket by host path",
                           errnos=(2,))
        self.a.attempt("srv.close(); srv2.close()")


if __name__ == "__main__":
    unittest.main()
