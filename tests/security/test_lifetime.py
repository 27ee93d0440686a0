"""Lifetime: whatever a kernel starts (a double-forked, setsid daemon that
ignores SIGTERM and SIGHUP) is gone after DELETE /api/kernels/{id}, checked
from the host: no process with the daemon's marker, no cgroup left under
/sys/fs/cgroup/*/sandgate/<id>, no run dir, no control socket. The daemon
sleeps at most 120 s on its own, so it ends even without a sandbox."""

import glob
import os
import unittest
import uuid

from sandgate_fixture import host_processes, wait_until
from security_case import SandboxTestCase

DAEMON = r'''
import os, signal, subprocess, time
code = """
import os, signal, sys, time
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
for fd in (0, 1, 2):
    os.close(fd)
time.sleep(120)
"""
subprocess.run(["/usr/bin/python3", "-c", code, MARKER])
print("daemon started")
'''


class Lifetime(SandboxTestCase):

    def marker_pids(self, marker):
        return [pid for pid, cmd, _ in host_processes() if marker.encode() in cmd]

    def cgroup_dirs(self, kid):
        return (glob.glob(f"/sys/fs/cgroup/*/sandgate/{kid}") + glob.glob(f"/sys/fs/cgroup/sandgate/{kid}"))

    def test_daemon_gone_after_delete(self):
        other = self.new_kernel()
        kid = self.gw.start_kernel()
        k = self.gw.connect(kid)
        marker = "sandgate-sec-daemon-" + uuid.uuid4().hex
        r = k.attempt(DAEMON.replace("MARKER", repr(marker)), timeout=60)
        self.assertIn("daemon started", r["stdout"], r)
        pids = wait_until(lambda: self.marker_pids(marker), 15, "the daemon on the host")
        sid = self.gw.sandbox_id(kid)
        run_dir = os.path.join(self.gw.state_dir, "run", sid)
        control = os.path.join(self.gw.state_dir, "control", sid + ".sock")
        self.assertTrue(os.path.isdir(run_dir), run_dir)
        self.assertTrue(self.cgroup_dirs(sid), "no cgroup found for the sandbox")
        # The daemon runs as the sandbox user, in the sandbox's cgroup.
        with open(f"/proc/{pids[0]}/cgroup") as f:
            self.assertIn(sid, f.read())
        k.close()
        self.gw.delete_kernel(kid)
        wait_until(lambda: not self.marker_pids(marker), 30, f"the daemon {marker} to end after DELETE")
        wait_until(lambda: not self.cgroup_dirs(sid), 30, f"the cgroups of {sid} to be removed")
        wait_until(lambda: not os.path.exists(run_dir), 30, f"the run dir {run_dir} to be removed")
        wait_until(lambda: not os.path.exists(control), 30, f"the control socket {control} to be removed")
        self.assertFalse(self.gw.sandbox_info(kid)["outer"], "the sandbox processes outlived DELETE")
        status, _ = self.gw.request("GET", f"api/kernels/{kid}")
        self.assertEqual(status, 404)
        self.assertGatewayUp()
        self.assertKernelWorks(other)

    def test_daemon_gone_when_supervisor_killed(self):
        # A kernel whose sandbox is killed from outside (SIGKILL to the
        # supervisor, as the docs allow) takes its daemon with it.
        kid = self.gw.start_kernel()
        k = self.gw.connect(kid)
        self.addCleanup(self._delete_quietly, k)
        marker = "sandgate-sec-daemon-" + uuid.uuid4().hex
        k.attempt(DAEMON.replace("MARKER", repr(marker)), timeout=60)
        wait_until(lambda: self.marker_pids(marker), 15, "the daemon on the host")
        sid = self.gw.sandbox_id(kid)
        info = self.gw.sandbox_info(kid)
        supervisors = [p for p in info["outer"] if p in info["all"]]
        self.assertTrue(supervisors, info)
        other = self.new_kernel()
        os.kill(supervisors[0], 9)
        wait_until(lambda: not self.marker_pids(marker), 30, "the daemon to end with its supervisor")
        wait_until(lambda: not self.cgroup_dirs(sid), 30, f"the cgroups of {sid} to be removed")
        self.assertGatewayUp()
        self.assertKernelWorks(other)


if __name__ == "__main__":
    unittest.main()
