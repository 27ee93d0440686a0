"""Warm pools (--pool) through a real gateway with real sandboxed
sandgate-python kernels: a new kernel or sandbox takes a started one, the
pool refills, a sandbox never serves two owners, request variables reach a
claimed kernel, pool members are nobody's (unlisted, outside --max-kernels),
and they end with the gateway. Needs root (as CI runs)."""

import os
import re
import subprocess
import tempfile
import time
import unittest

from sandgate_fixture import (Gateway, GatewayTestCase, has_sandgate_python, remove_state_dir, result_text,
                              wait_until)

POOL_DEPTH = 2


def pool_metrics(gw, kernel="python"):
    r = gw.request("GET", "metrics")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        m = re.match(r'sandgate_pool_(\w+)\{kernel="([^"]+)"\} (\d+)$', line)
        if m and m.group(2) == kernel:
            out[m.group(1)] = int(m.group(3))
    return out


def wait_for_ready(gw, n, seconds=240, kernel="python"):
    wait_until(lambda: pool_metrics(gw, kernel).get("ready", 0) >= n, seconds,
               f"{n} ready kernels in the {kernel} pool")


def sandbox_processes(state_dir):
    """Supervisors of sandboxes of this state dir, by their command lines."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "sandgate-sandbox" in line and state_dir in line]


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
@unittest.skipUnless(has_sandgate_python(), "the build has no sandgate-python")
class PoolTest(GatewayTestCase):
    sandboxed = True
    gateway_args = ("--pool", f"python={POOL_DEPTH}", "--pool-preload", "ftplib", "--max-kernels", "3",
                    "--kernel-env-allow", "SANDGATE_IT_MARK")

    def setUp(self):
        wait_for_ready(self.gw, POOL_DEPTH)

    def claim(self, body=None):
        before = pool_metrics(self.gw)
        t0 = time.monotonic()
        r = self.gw.request("POST", "api/kernels", {"name": "python", **(body or {})}, timeout=120)
        took = time.monotonic() - t0
        self.assertEqual(r.status, 201, r)
        kernel = r.json()
        self.addCleanup(self._delete_quietly, kernel["id"])
        return kernel, before, pool_metrics(self.gw), took

    def run_code(self, kid, code):
        ks = self.connect(kid)
        reply, iopub = ks.execute(code, timeout=60)
        self.assertEqual(reply.content["status"], "ok", reply.content)
        return result_text(iopub)

    def test_a_new_kernel_is_a_started_pool_kernel_and_the_pool_refills(self):
        kernel, before, after, _ = self.claim()
        self.assertEqual(after["claims_total"], before["claims_total"] + 1)
        self.assertEqual(after["misses_total"], before["misses_total"])
        self.assertEqual(kernel["execution_state"], "idle", kernel)
        # Preloaded while it waited: imported before any cell ran.
        self.assertEqual(self.run_code(kernel["id"], "import sys; 'ftplib' in sys.modules"), "True")
        listed = self.gw.request("GET", "api/kernels").json()
        self.assertEqual([k["id"] for k in listed], [kernel["id"]], "pool members are listed to nobody")
        sandboxes = self.gw.request("GET", "api/sandboxes").json()
        self.assertEqual([s["id"] for s in sandboxes], [kernel["sandbox_id"]])
        wait_for_ready(self.gw, POOL_DEPTH)

    def test_the_pool_measures_what_its_members_cost(self):
        # The PSS of each ready member's whole sandbox: the supervisor alone
        # is a few MiB, a started Python kernel under it tens of MiB.
        m = pool_metrics(self.gw)
        self.assertEqual(m["ready"], POOL_DEPTH)
        each = m["memory_bytes"] / m["ready"]
        self.assertGreater(each, 15 * 1024 * 1024, m)
        self.assertLess(each, 512 * 1024 * 1024, m)

    def test_a_sandbox_is_never_reused(self):
        first, _, _, _ = self.claim()
        self.run_code(first["id"], "open('/tmp/mark', 'w').write('first'); secret = 41")
        self.assertEqual(self.gw.request("DELETE", f"api/kernels/{first['id']}").status, 204)
        seen = {first["sandbox_id"]}
        for _ in range(POOL_DEPTH + 1):  # more than the pool held when the first was deleted
            kernel, _, _, _ = self.claim()
            self.assertNotIn(kernel["sandbox_id"], seen)
            seen.add(kernel["sandbox_id"])
            self.assertEqual(
                self.run_code(kernel["id"], "import os; (os.path.exists('/tmp/mark'), 'secret' in globals())"),
                "(False, False)")
            self.assertEqual(self.gw.request("DELETE", f"api/kernels/{kernel['id']}").status, 204)
        r = self.gw.request("GET", f"api/sandboxes/{first['sandbox_id']}")
        self.assertEqual(r.status, 404, r)

    def test_jupyter_client_variables_reach_a_claimed_kernel(self):
        env = {"KERNEL_USERNAME": "ada lovelace", "KERNEL_WORKING_DIR": "/workspace/it's here"}
        kernel, before, after, _ = self.claim({"env": env})
        self.assertEqual(after["claims_total"], before["claims_total"] + 1, "KERNEL_* variables allow a pool kernel")
        code = ("import os, subprocess; (os.environ['KERNEL_USERNAME'], "
                "subprocess.run(['sh', '-c', 'echo \"$KERNEL_WORKING_DIR\"'], capture_output=True, text=True)"
                ".stdout.strip())")
        self.assertEqual(self.run_code(kernel["id"], code), repr((env["KERNEL_USERNAME"], env["KERNEL_WORKING_DIR"])))
        # A claimed kernel's restart keeps them.
        r = self.gw.request("POST", f"api/kernels/{kernel['id']}/restart", timeout=120)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.run_code(kernel["id"], "import os; os.environ['KERNEL_USERNAME']"),
                         repr(env["KERNEL_USERNAME"]))

    def test_other_variables_get_a_fresh_kernel(self):
        # PYTHON*-like variables act while an interpreter starts: no pool kernel can honour them.
        kernel, before, after, _ = self.claim({"env": {"SANDGATE_IT_MARK": "cold"}})
        self.assertEqual(after["claims_total"], before["claims_total"])
        self.assertEqual(self.run_code(kernel["id"], "import os, sys; (os.environ['SANDGATE_IT_MARK'], "
                                                     "'ftplib' in sys.modules)"), "('cold', False)")

    def test_a_new_sandbox_takes_a_pool_member_and_its_first_kernel(self):
        before = pool_metrics(self.gw)
        r = self.gw.request("POST", "api/sandboxes", {"ttl_s": 600, "metadata": {"chat": "42"}}, timeout=120)
        self.assertEqual(r.status, 201, r)
        sb = r.json()
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/sandboxes/{sb['id']}"))
        self.assertEqual(pool_metrics(self.gw)["claims_total"], before["claims_total"] + 1)
        self.assertEqual(sb["metadata"], {"chat": "42"})
        self.assertEqual(sb["kernels"], [], "the kernel it brings is no one's until asked for")
        expires = time.mktime(time.strptime(sb["expires_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        self.assertAlmostEqual(expires, time.time() + 600, delta=30)
        r = self.gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": sb["id"]}, timeout=120)
        self.assertEqual(r.status, 201, r)
        kernel = r.json()
        self.assertEqual(kernel["sandbox_id"], sb["id"])
        self.assertEqual(self.run_code(kernel["id"], "import sys; 'ftplib' in sys.modules"), "True")
        got = self.gw.request("GET", f"api/sandboxes/{sb['id']}").json()
        self.assertEqual([k["id"] for k in got["kernels"]], [kernel["id"]])
        # A second kernel in it starts cold, beside the first.
        r = self.gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": sb["id"]}, timeout=120)
        self.assertEqual(r.status, 201, r)
        self.assertNotEqual(r.json()["id"], kernel["id"])
        self.assertEqual(self.run_code(r.json()["id"], "import sys; 'ftplib' in sys.modules"), "False")

    def test_a_sandbox_with_its_own_limits_is_made_fresh(self):
        before = pool_metrics(self.gw)
        r = self.gw.request("POST", "api/sandboxes", {"limits": {"memory_bytes": 512 * 1024 * 1024}}, timeout=120)
        self.assertEqual(r.status, 201, r)
        sb = r.json()
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/sandboxes/{sb['id']}"))
        self.assertEqual(pool_metrics(self.gw)["claims_total"], before["claims_total"])
        self.assertEqual(sb["limits"]["memory_bytes"], 512 * 1024 * 1024)

    def test_pool_members_count_against_no_limit(self):
        # --max-kernels 3 with 2 waiting in the pool: three kernels still start.
        ids = [self.claim()[0]["id"] for _ in range(3)]
        self.assertEqual(len(set(ids)), 3)
        r = self.gw.request("POST", "api/kernels", {"name": "python"}, timeout=120)
        self.assertEqual(r.status, 503, r)  # full: a balancer would try another node
        self.assertEqual(r.headers.get("Retry-After"), "1")


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
@unittest.skipUnless(has_sandgate_python(), "the build has no sandgate-python")
class PoolLifetimeTest(unittest.TestCase):
    def test_a_stop_while_pool_kernels_start_is_prompt_and_leaves_nothing(self):
        state_dir = tempfile.mkdtemp(prefix="sandgate-it-")
        gw = Gateway("--pool", "python=2", name="pool-stop", sandboxed=True, state_dir=state_dir)
        try:
            wait_for_ready(gw, 2)
            for _ in range(2):
                self.assertEqual(gw.request("POST", "api/kernels", {"name": "python"}, timeout=120).status, 201)
            wait_until(lambda: pool_metrics(gw).get("starting", 0) >= 1, 30, "a pool kernel starting")
            code, taken = gw.stop()
            self.assertEqual(code, 0)
            self.assertLess(taken, 12)
            wait_until(lambda: not sandbox_processes(state_dir), 10, "no sandbox of the gateway left")
        finally:
            if gw.alive():
                gw.stop()
            remove_state_dir(state_dir)

    def test_pool_members_end_with_the_gateway_but_claimed_sandboxes_stay(self):
        state_dir = tempfile.mkdtemp(prefix="sandgate-it-")
        gw = Gateway("--pool", "python=2", name="pool-lifetime", sandboxed=True, keep_kernels=True,
                     state_dir=state_dir)
        try:
            wait_for_ready(gw, 2)
            r = gw.request("POST", "api/kernels", {"name": "python"}, timeout=120)
            self.assertEqual(r.status, 201, r)
            kept = r.json()
            wait_for_ready(gw, 2)
            self.assertEqual(len(sandbox_processes(gw.state_dir)), 3 * 2, "two processes per sandbox")
            code, _ = gw.stop()
            self.assertEqual(code, 0)
            wait_until(lambda: len(sandbox_processes(gw.state_dir)) == 2, 20,
                       "only the claimed sandbox's supervisor left")
            left = [line for line in sandbox_processes(gw.state_dir) if kept["sandbox_id"] in line]
            self.assertEqual(len(left), 2, sandbox_processes(gw.state_dir))
            # The next gateway takes the claimed kernel back and fills a pool of its own.
            again = Gateway("--pool", "python=1", name="pool-lifetime-2", sandboxed=True, state_dir=gw.state_dir)
            try:
                wait_for_ready(again, 1)
                listed = again.request("GET", "api/kernels").json()
                self.assertEqual([k["id"] for k in listed], [kept["id"]])
            finally:
                again.stop()
        finally:
            if gw.alive():
                gw.stop()
            remove_state_dir(state_dir)


if __name__ == "__main__":
    unittest.main()
