"""What a kernel start request's `env` may set: KERNEL_* and the names the
operator allows (--kernel-env-allow), as Kernel Gateway does. Jupyter Server
and Notebook send their whole environment; the rest never reaches the
sandbox."""

import unittest

from sandgate_fixture import GatewayTestCase

# What a Jupyter Server process might hold, and what a hostile client might try.
CLIENT_ENV = {
    "KERNEL_USERNAME": "ada",
    "KERNEL_WORKING_DIR": "/home/ada/notebooks",
    "MY_SETTING": "on",
    "HOME": "/root",
    "PATH": "/home/ada/.local/bin:/usr/bin",
    "AWS_SECRET_ACCESS_KEY": "leaked-secret",
    "JUPYTER_TOKEN": "leaked-token",
    "LD_PRELOAD": "/tmp/evil.so",
    "PYTHONSTARTUP": "/tmp/evil.py",
    "JPY_SESSION_NAME": "analysis.ipynb",
    "BASH_FUNC_f%%": "() {  echo exported function; }",
}


class KernelEnvFilter(GatewayTestCase):
    sandboxed = True
    gateway_args = ("--kernel-env-allow", "MY_SETTING")

    def kernel_environment(self, env):
        r = self.gw.request("POST", "api/kernels", {"name": "bash", "env": env}, timeout=120)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/kernels/{kid}"))
        r = self.gw.request("POST", f"api/kernels/{kid}/execute", {"code": "env -0", "timeout_s": 30})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["status"], "ok", r.json())
        return dict(item.split("=", 1) for item in r.json()["stdout"].split("\0") if "=" in item)

    def test_only_kernel_variables_and_allowed_names_reach_the_kernel(self):
        seen = self.kernel_environment(CLIENT_ENV)
        self.assertEqual(seen.get("KERNEL_USERNAME"), "ada")
        self.assertEqual(seen.get("KERNEL_WORKING_DIR"), "/home/ada/notebooks")
        self.assertEqual(seen.get("MY_SETTING"), "on")
        for name in ("AWS_SECRET_ACCESS_KEY", "JUPYTER_TOKEN", "LD_PRELOAD", "PYTHONSTARTUP", "BASH_FUNC_f%%"):
            self.assertNotIn(name, seen)
        self.assertNotEqual(seen.get("JPY_SESSION_NAME"), "analysis.ipynb", "the gateway sets its own")
        self.assertNotIn("leaked", "".join(seen.values()))
        # HOME and PATH are the sandbox policy's, not the client's.
        self.assertEqual(seen.get("HOME"), "/workspace")
        self.assertEqual(seen.get("PATH"), "/usr/local/bin:/usr/bin:/bin")

    def test_a_restart_keeps_the_same_filtered_environment(self):
        r = self.gw.request("POST", "api/kernels", {"name": "bash", "env": CLIENT_ENV}, timeout=120)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/kernels/{kid}"))
        self.assertEqual(self.gw.request("POST", f"api/kernels/{kid}/restart", timeout=120).status, 200)
        r = self.gw.request("POST", f"api/kernels/{kid}/execute",
                            {"code": "echo \"$KERNEL_USERNAME|${AWS_SECRET_ACCESS_KEY-unset}\"", "timeout_s": 30})
        self.assertEqual(r.json()["stdout"], "ada|unset\n", r.json())

    def test_a_malformed_env_is_still_refused(self):
        for env in ({"KERNEL_X": 1}, {"DROPPED": ["not", "a", "string"]}, ["KERNEL_X=1"], "KERNEL_X=1"):
            with self.subTest(env=env):
                self.assertError(self.gw.request("POST", "api/kernels", {"name": "bash", "env": env}), 400)


class KernelEnvAllowAll(GatewayTestCase):
    sandboxed = True
    gateway_args = ("--kernel-env-allow", "*")

    def test_star_lets_every_identifier_through(self):
        r = self.gw.request("POST", "api/kernels", {"name": "bash", "env": CLIENT_ENV}, timeout=120)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        self.addCleanup(lambda: self.gw.request("DELETE", f"api/kernels/{kid}"))
        r = self.gw.request("POST", f"api/kernels/{kid}/execute",
                            {"code": "echo \"$AWS_SECRET_ACCESS_KEY|$JPY_SESSION_NAME\"", "timeout_s": 30})
        self.assertEqual(r.json()["stdout"], "leaked-secret|analysis.ipynb\n", r.json())


if __name__ == "__main__":
    unittest.main()
