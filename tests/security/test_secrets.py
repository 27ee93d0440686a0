"""Secrets and writes: what a kernel can read of the host and of the gateway,
and where it can write. Each attack runs inside a real sandboxed kernel
started through POST /api/kernels and must fail; the gateway and a second
kernel must be unaffected."""

import json
import os
import unittest

from security_case import MiB, SandboxTestCase


class SecretsAndWrites(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.k = cls.class_kernel()
        cls.other = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)

    def test_host_secret_files_unreadable(self):
        paths = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/root/.bash_history", "/root/.ssh/id_rsa",
                 "/var/lib/dpkg/status", "/home", "/var/log/syslog"]
        res = self.probe(self.k, f'''
out = {{}}
for p in {paths!r}:
    out[p] = _probe(lambda: open(p, "rb").read(64).hex())
out["/root"] = _probe(lambda: os.listdir("/root"))
out["/home"] = _probe(lambda: os.listdir("/home"))
out["passwd"] = _probe(lambda: open("/etc/passwd").read())
_report(out)
''')
        for p in paths + ["/root", "/home"]:
            self.assertRefused(res[p], f"reading {p}", errnos=None)
        # /etc/passwd is generated: no host users.
        passwd = res["passwd"]["ok"]
        users = {line.split(":")[0] for line in passwd.splitlines() if line}
        self.assertLessEqual(users, {"root", "sandbox", "nobody"}, passwd)

    def test_gateway_state_and_other_sandboxes_unreadable(self):
        sd = self.gw.state_dir
        other_sandbox = self.gw.sandbox_id(self.other.kernel_id)
        other_run = os.path.join(sd, "run", other_sandbox)
        self.assertTrue(os.path.isdir(other_run), f"expected the other sandbox's run dir at {other_run}")
        targets = [sd, os.path.join(sd, "run"), other_run,
                   os.path.join(other_run, "k" + self.other.kernel_id[-8:] + ".json"),
                   os.path.join(sd, "control"), os.path.join(sd, "control", other_sandbox + ".sock"),
                   os.path.join(sd, "logs"), self.gw.policy_path,
                   "/run/sandgate/../" + other_sandbox]
        res = self.probe(self.k, f'''
out = {{}}
for p in {targets!r}:
    out[p] = _probe(lambda: os.listdir(p) if not p.endswith((".json", ".sock")) else open(p, "rb").read(64).hex())
def _uds(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        return "connected"
    finally:
        s.close()
out["control"] = _probe(lambda: _uds({os.path.join(sd, "control", other_sandbox + ".sock")!r}))
out["other_shell"] = _probe(lambda: _uds({os.path.join(other_run, "k" + self.other.kernel_id[-8:] + "-1")!r}))
_report(out)
''')
        for p in targets:
            self.assertRefused(res[p], f"reading {p}", errnos=None)
        self.assertRefused(res["control"], "connecting to the other sandbox's control socket", errnos=None)
        self.assertRefused(res["other_shell"], "connecting to the other kernel's ipc socket", errnos=None)

    def test_token_not_in_env_nor_proc(self):
        token = self.gw.token
        res = self.probe(self.k, r'''
out = {"environ": dict(os.environ), "procs": {}}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    entry = {}
    for f in ("cmdline", "environ"):
        try:
            entry[f] = open(f"/proc/{pid}/{f}", "rb").read().decode(errors="replace")
        except OSError as ex:
            entry[f] = None
    out["procs"][pid] = entry
# Files the kernel can read in its run dir.
out["run"] = {}
for name in os.listdir("/run/sandgate"):
    try:
        out["run"][name] = open("/run/sandgate/" + name, "rb").read(1 << 20).decode(errors="replace")
    except OSError:
        pass
try:
    out["mountinfo"] = open("/proc/self/mountinfo").read()
except OSError:
    out["mountinfo"] = ""
_report(out)
''')
        env = res["environ"]
        self.assertFalse([k for k in env if k.startswith("SANDGATE")], f"SANDGATE_* variables in the kernel: {env}")
        self.assertNotIn(token, json.dumps(env))
        for pid, entry in res["procs"].items():
            for f, text in entry.items():
                self.assertNotIn(token, text or "", f"gateway token in /proc/{pid}/{f} inside the sandbox")
                self.assertNotIn("--auth-token", text or "", f"/proc/{pid}/{f}")
        for name, text in res["run"].items():
            self.assertNotIn(token, text, f"gateway token in /run/sandgate/{name}")
        self.assertNotIn(token, res["mountinfo"])
        # Only the sandbox's processes: the supervisor (1) and the kernel and its children.
        self.assertIn("1", res["procs"])

    def test_host_pid1_environ_not_visible(self):
        with open("/proc/1/cmdline", "rb") as f:
            host_init = f.read()
        res = self.probe(self.k, r'''
_report({"cmdline": _probe(lambda: open("/proc/1/cmdline", "rb").read().decode(errors="replace")),
         "environ": _probe(lambda: open("/proc/1/environ", "rb").read().decode(errors="replace")),
         "status": _probe(lambda: open("/proc/1/status").read())})
''')
        # pid 1 inside is the sandbox supervisor, not the host's init.
        self.assertIn("ok", res["cmdline"], res)
        if host_init and b"sandgate-sandbox" not in host_init:
            self.assertNotEqual(res["cmdline"]["ok"], host_init.decode(errors="replace"))
        self.assertIn("sandgate-sandbox", res["cmdline"]["ok"])
        # The supervisor is another user (root inside): its environ is not readable.
        self.assertRefused(res["environ"], "reading the supervisor's /proc/1/environ", errnos=(13, 1))

    def test_writes_outside_workspace_and_tmp_fail(self):
        marker = "sandgate-sec-write-" + self.k.kernel_id
        dirs = ["/", "/usr", "/usr/bin", "/usr/local/bin", "/etc", "/bin", "/lib", "/sbin", "/var", "/run",
                "/dev", "/proc", "/sys", "/run/sandgate/..", "/run/sandgate/../..", "/dev/shm/../..",
                "/workspace/../etc", "/tmp/../usr"]
        res = self.probe(self.k, f'''
out = {{}}
for d in {dirs!r}:
    p = os.path.join(d, {marker!r})
    def w():
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"x")
        os.close(fd)
        os.unlink(p)
        return "written"
    out[d] = _probe(w)
out["chmod /etc/passwd"] = _probe(lambda: os.chmod("/etc/passwd", 0o666))
out["append /etc/passwd"] = _probe(lambda: os.open("/etc/passwd", os.O_WRONLY | os.O_APPEND))
out["symlink in /usr"] = _probe(lambda: os.symlink("/tmp", "/usr/" + {marker!r}))
out["workspace"] = _probe(lambda: open("/workspace/ok.txt", "w").write("ok"))
out["tmp"] = _probe(lambda: open("/tmp/ok.txt", "w").write("ok"))
out["var_tmp"] = _probe(lambda: open("/var/tmp/ok2.txt", "w").write("ok"))
_report(out)
''')
        for d in dirs:
            self.assertRefused(res[d], f"creating a file in {d}", errnos=(1, 13, 30, 2))
        for what in ("chmod /etc/passwd", "append /etc/passwd", "symlink in /usr"):
            self.assertRefused(res[what], what, errnos=(1, 13, 30))
        for what in ("workspace", "tmp", "var_tmp"):
            self.assertIn("ok", res[what], f"writing {what} should work: {res[what]}")
        # Nothing reached the host.
        for d in ["/", "/usr", "/usr/bin", "/usr/local/bin", "/etc", "/bin", "/lib", "/sbin", "/var", "/run"]:
            self.assertFalse(os.path.lexists(os.path.join(d, marker)), f"{d}/{marker} exists on the host")

    # The run dir is a per-sandbox tmpfs the gateway mounts (16 MiB), so
    # the sandbox cannot fill the disk that holds the gateway's state.
    def test_run_dir_is_size_limited(self):
        limits = self.gw.policy["limits"]
        budget = limits["workspace_bytes"] + limits["tmp_bytes"]
        cap = budget + 32 * MiB  # stop here whatever happens
        res = self.probe(self.k, f'''
written = 0
err = None
chunk = b"\\0" * (1 << 20)
n = 0
try:
    while written < {cap}:
        with open(f"/run/sandgate/fill-{{n}}", "wb") as f:
            for _ in range(8):
                f.write(chunk)
                written += len(chunk)
        n += 1
except OSError as ex:
    err = ex.errno
finally:
    for i in range(n + 1):
        try:
            os.unlink(f"/run/sandgate/fill-{{i}}")
        except OSError:
            pass
_report({{"written": written, "errno": err}})
''', timeout=180)
        self.assertIsNotNone(res["errno"], f"wrote {res['written'] // MiB} MiB into /run/sandgate without "
                                           f"error (workspace + tmp budget {budget // MiB} MiB)")
        self.assertLessEqual(res["written"], budget, res)


if __name__ == "__main__":
    unittest.main()
