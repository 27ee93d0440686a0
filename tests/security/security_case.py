"""SandboxTestCase, the base of the security tests: a gateway of the shared
fixture (tests/support/sandgate_fixture.py) whose kernels run in sandboxes
under a test policy with small limits, kernels started through
POST /api/kernels and reached over their WebSocket channels, and probes that
run attack code inside them the way an attacker's notebook would.

Every attack the tests run is bounded so that it could not harm an
unsandboxed machine either: loops have counters and deadlines, memory and
disk use have caps of a few hundred MiB, network probes only go to
127.0.0.1 ports the test itself opened. Run as root (the gateway needs it to
create sandboxes).
"""

import json
import os
import unittest

from sandgate_fixture import ARTIFACTS, Gateway

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

# Printed by attack code in front of its JSON result line.
RESULT_MARK = "@@SANDGATE-RESULT@@"

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


def sandbox_gateway(*args, policy=None, **kw):
    """A gateway as the security tests start it: every kernel in a sandbox
    under `policy` (TEST_POLICY unless given) but for the kernelspecs in
    unsandboxed=..., a debug log in <build>/tests/artifacts/security/.
    Takes Gateway's arguments."""
    return Gateway("--log-level", "debug", *args, sandboxed=True, policy=policy or TEST_POLICY,
                   log_dir=os.path.join(ARTIFACTS, "security"), **kw)


class SandboxTestCase(unittest.TestCase):
    """One sandbox_gateway per class, under `policy` (TEST_POLICY unless
    set), its kernels (ipykernel's python3) in sandboxes but for the
    kernelspecs named in `unsandboxed`. The kernels of new_kernel() and
    class_kernel() (KernelSockets) are deleted at the end."""

    gateway_args = ()
    policy = None
    unsandboxed = ()
    gw = None

    @classmethod
    def setUpClass(cls):
        cls.gw = sandbox_gateway(*cls.gateway_args, policy=cls.policy, unsandboxed=cls.unsandboxed,
                                 name=cls.__name__)
        cls._class_kernels = []

    @classmethod
    def tearDownClass(cls):
        if cls.gw:
            for k in cls._class_kernels:
                cls._delete_quietly(k)
            cls.gw.stop(timeout=20)

    @classmethod
    def class_kernel(cls):
        """A kernel that lives for the whole class."""
        k = cls.gw.connect(cls.gw.start_kernel())
        cls._class_kernels.append(k)
        return k

    def new_kernel(self):
        k = self.gw.connect(self.gw.start_kernel())
        self.addCleanup(self._delete_quietly, k)
        return k

    @classmethod
    def _delete_quietly(cls, k):
        k.close()
        if cls.gw.alive():
            try:
                cls.gw.request("DELETE", f"api/kernels/{k.kernel_id}", timeout=30)
            except AssertionError:  # what request() makes of a connection error
                pass

    def probe(self, kernel, body, timeout=120):
        """Runs PROBE_PRELUDE + body (which must call _report(...)) in the
        kernel; returns the object it reported."""
        r = kernel.attempt(PROBE_PRELUDE + body, timeout)
        for line in r["stdout"].splitlines():
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK):])
        raise AssertionError(f"no result from the kernel: status={r['status']} error={r['error']} "
                             f"timed_out={r['timed_out']} stdout={r['stdout'][-800:]!r} "
                             f"stderr={r['stderr'][-800:]!r}")

    def assertGatewayUp(self):
        self.assertTrue(self.gw.alive(), f"gateway died; log: {self.gw.log_tail()}")
        self.assertTrue(self.gw.healthy(), "gateway does not answer GET /api/kernels")

    def assertKernelWorks(self, kernel, timeout=60):
        r = kernel.attempt("print(6 * 7)", timeout)
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"].strip(), "42", r)

    def assertRefused(self, outcome, what, errnos=(1, 38)):
        """A probe outcome is a failure with one of `errnos` (EPERM, ENOSYS by default)."""
        self.assertNotIn("ok", outcome, f"{what} SUCCEEDED inside the sandbox: {outcome}")
        if errnos is not None:
            self.assertIn(outcome.get("errno"), errnos, f"{what}: unexpected failure {outcome}")
