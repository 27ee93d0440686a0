"""Resource exhaustion: a bounded fork bomb, a memory balloon past the
policy's limit, filling /workspace and /tmp, and descriptor exhaustion. Each
attack is capped by its own counters (forks, MiB, files, descriptors) so it
could not harm an unsandboxed machine; the sandbox must stop it first, the
cause must be visible, and the gateway and another kernel must be unaffected."""

import json
import os
import time
import unittest

from sandgate_fixture import wait_until
from security_case import MiB, SandboxTestCase


class Exhaustion(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)

    def cgroup_value(self, kid, controller, name):
        sid = self.gw.sandbox_id(kid)  # the cgroup is the sandbox's
        path = f"/sys/fs/cgroup/{controller}/sandgate/{sid}/{name}"
        if not os.path.exists(path):  # cgroup v2
            path = f"/sys/fs/cgroup/sandgate/{sid}/{name.replace('limit_in_bytes', 'max')}"
        with open(path) as f:
            return f.read().strip()

    def test_fork_bomb_stopped_by_pids_limit(self):
        k = self.new_kernel()
        pids = self.gw.policy["limits"]["pids"]
        self.assertEqual(int(self.cgroup_value(k.kernel_id, "pids", "pids.max")), pids)
        cap = 4 * pids  # the attack's own bound
        # Children block on a pipe and exit when it closes (or after 30 s).
        res = self.probe(k, f'''
import time, select
r, w = os.pipe()
kids, err = [], None
t0 = time.monotonic()
while len(kids) < {cap} and time.monotonic() - t0 < 30:
    try:
        pid = os.fork()
    except OSError as ex:
        err = ex.errno
        break
    if pid == 0:
        os.close(w)
        select.select([r], [], [], 30)
        os._exit(0)
    kids.append(pid)
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
os.close(r)
_report({{"forked": len(kids), "errno": err}})
''', timeout=120)
        self.assertEqual(res["errno"], 11, f"fork never failed with EAGAIN: {res}")  # EAGAIN
        self.assertLess(res["forked"], pids, res)
        self.assertGreater(res["forked"], pids // 4, f"suspiciously few forks: {res}")
        self.assertKernelWorks(k)

    def test_recursive_fork_bomb_contained(self):
        # A real (bounded) bomb: every process forks children until fork fails
        # or a generation cap is hit; every process exits after 15 s.
        k = self.new_kernel()
        r = k.attempt(r'''
import os, time, subprocess
code = """
import os, time
end = time.monotonic() + 15
gen = 0
while gen < 12 and time.monotonic() < end:
    try:
        if os.fork() == 0:
            gen += 1
            continue
    except OSError:
        pass
    time.sleep(0.05)
while time.monotonic() < end:
    time.sleep(0.5)
os._exit(0)
"""
p = subprocess.Popen(["/usr/bin/python3", "-c", code], start_new_session=True)
time.sleep(6)
print("procs", len([x for x in os.listdir("/proc") if x.isdigit()]))
''', timeout=90)
        # The kernel may have been hit too (fork failures inside ipykernel);
        # what matters: the gateway, the other kernel and, after the bomb
        # ends, this kernel (or its restart) work.
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)
        if r["status"] == "ok":
            n = int(r["stdout"].split()[-1])
            self.assertLessEqual(n, self.gw.policy["limits"]["pids"] + 1)
        time.sleep(12)  # the bomb's own timer ends it
        wait_until(lambda: k.attempt("print(6 * 7)", 20)["stdout"].strip() == "42", 90,
                   "the kernel to work after the bomb")

    def test_memory_balloon_oom_is_reported(self):
        k = self.new_kernel()
        limit = self.gw.policy["limits"]["memory_bytes"]
        self.assertEqual(int(self.cgroup_value(k.kernel_id, "memory", "memory.limit_in_bytes")), limit)
        cap_mib = min(4 * limit // MiB, 2048)  # the balloon's own bound
        self.assertEqual(k.attempt("open('/workspace/kept.txt', 'w').write('survives')")["status"], "ok")
        r = k.attempt(f'''
chunks = []
for i in range({cap_mib} // 16):
    chunks.append(bytearray(16 * 1024 * 1024))  # zero-filled: every page touched
print("balloon survived", len(chunks) * 16, "MiB")
''', timeout=60)
        self.assertNotIn("balloon survived", r["stdout"], "the balloon went past the memory limit")
        msgs = r["other"] + k.drain(3)
        statuses = [m.content for m in msgs if m.msg_type == "status"]
        restarting = [s for s in statuses if s.get("execution_state") in ("restarting", "dead")]
        self.assertTrue(restarting, f"no restarting/dead status reached the client: {statuses}")
        self.assertEqual(restarting[0].get("reason"), "oom", f"the OOM cause is not visible: {restarting}")
        events = [e for e in self.gw.log_events() if e.get("kernel_id") == k.kernel_id and e.get("status") == "oom"]
        self.assertTrue(events, "the gateway did not log the OOM")
        status, body = self.gw.request("GET", "metrics")
        self.assertEqual(status, 200)
        ooms = [float(line.split()[1]) for line in body.decode().splitlines()
                if line.startswith("sandgate_oom_kills_total ")]
        self.assertGreaterEqual(ooms, [1.0], "the OOM kill is not counted in /metrics")
        # The cell's answer and its execution record name the cause too.
        self.assertEqual(r["error"][0], "KernelDied", r["error"])
        self.assertIn("oom", r["error"][1])
        msg_id = r["messages"][0].parent_id
        status, body = self.gw.request("GET", f"api/kernels/{k.kernel_id}/executions/{msg_id}")
        self.assertEqual(status, 200, body)
        record = json.loads(body)
        self.assertEqual((record["status"], record["kernel_restarted"]), ("error", True), record)
        self.assertIn("oom", record["error"]["evalue"])
        # The kernel is restarted and works; its memory is back, its workspace kept.
        wait_until(lambda: k.attempt("print(6 * 7)", 30)["stdout"].strip() == "42", 90, "the restarted kernel")
        self.assertEqual(k.attempt("print(open('/workspace/kept.txt').read())")["stdout"], "survives\n")
        self.assertTrue(self.gw.sandbox_info(k.kernel_id)["outer"], "the sandbox went away after an OOM")

    def fill(self, kernel, directory, cap):
        return self.probe(kernel, f'''
written, err, n = 0, None, 0
chunk = b"\\1" * (1 << 20)
try:
    while written < {cap}:
        with open(f"{directory}/fill-{{n}}", "wb") as f:
            for _ in range(4):
                f.write(chunk)
                f.flush()
                written += len(chunk)
        n += 1
except OSError as ex:
    err = ex.errno
free_after = os.statvfs("{directory}").f_bavail
for i in range(n + 1):
    try:
        os.unlink(f"{directory}/fill-{{i}}")
    except OSError:
        pass
_report({{"written": written, "errno": err, "free_after": free_after}})
''', timeout=120)

    def test_fill_workspace_and_tmp_enospc(self):
        k = self.new_kernel()
        limits = self.gw.policy["limits"]
        for directory, size in (("/workspace", limits["workspace_bytes"]), ("/tmp", limits["tmp_bytes"])):
            res = self.fill(k, directory, 2 * size)
            self.assertEqual(res["errno"], 28, f"{directory}: no ENOSPC: {res}")  # ENOSPC
            self.assertLessEqual(res["written"], size, res)
            self.assertGreater(res["written"], size // 2, res)
        self.assertKernelWorks(k)

    def test_fd_exhaustion_emfile(self):
        k = self.new_kernel()
        limit = self.gw.policy["limits"]["open_files"]
        res = self.probe(k, f'''
import resource
fds, err = [], None
try:
    while len(fds) < {4 * limit}:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as ex:
    err = ex.errno
highest = max(fds) if fds else -1
for fd in fds:
    os.close(fd)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
raise_hard = _probe(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2)))
_report({{"errno": err, "highest": highest, "soft": soft, "hard": hard, "raise": raise_hard}})
''')
        self.assertEqual(res["errno"], 24, f"no EMFILE: {res}")  # EMFILE
        self.assertEqual(res["hard"], limit, res)
        self.assertLess(res["highest"], limit, res)
        self.assertNotIn("ok", res["raise"], f"RLIMIT_NOFILE hard limit raised: {res}")
        self.assertKernelWorks(k)


if __name__ == "__main__":
    unittest.main()
