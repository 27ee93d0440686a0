"""A hostile kernel and its run dir: /run/sandgate inside is a host directory
that the gateway (root) writes connection files into and removes at the end.
The kernel plants symlinks, FIFOs and directories there pointing at host
decoys the test created (never at real system files); a restart and a DELETE
must leave the decoys untouched (content, owner, mode), and the gateway must
stay responsive."""

import os
import shutil
import socket
import stat
import struct
import tempfile
import threading
import time
import unittest

from sandgate_fixture import wait_until
from security_case import SandboxTestCase


class HostileRunDir(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)

    def setUp(self):
        self.decoy_dir = tempfile.mkdtemp(prefix="sandgate-sec-decoy-")
        self.addCleanup(shutil.rmtree, self.decoy_dir, True)
        os.chmod(self.decoy_dir, 0o755)
        self.decoy = os.path.join(self.decoy_dir, "precious")
        with open(self.decoy, "w") as f:
            f.write("precious\n")
        os.chmod(self.decoy, 0o640)
        self.decoy_stat = os.stat(self.decoy)

    def assertDecoyIntact(self):
        self.assertTrue(os.path.exists(self.decoy), "the host decoy file was deleted")
        with open(self.decoy) as f:
            self.assertEqual(f.read(), "precious\n", "the host decoy file was overwritten")
        st = os.stat(self.decoy)
        self.assertEqual((st.st_uid, st.st_gid), (self.decoy_stat.st_uid, self.decoy_stat.st_gid),
                         "the host decoy file was chowned")
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640, "the host decoy file was chmodded")
        st = os.stat(self.decoy_dir)
        self.assertEqual(st.st_uid, 0, "the host decoy dir was chowned")

    def test_symlinked_connection_file_on_restart(self):
        k = self.new_kernel()
        k.attempt(f'''
import os
conn = "/run/sandgate/k" + os.environ["JPY_SESSION_NAME"][-8:] + ".json"
os.rename(conn, conn + ".orig")
os.symlink({self.decoy!r}, conn)
os.symlink({self.decoy_dir!r}, "/run/sandgate/decoy-dir")
''')
        status, body = self.gw.request("POST", f"api/kernels/{k.kernel_id}/restart", timeout=120)
        self.assertIn(status, (200, 500, 503), body)
        self.assertDecoyIntact()
        self.assertGatewayUp()
        if status == 200:
            wait_until(lambda: k.attempt("print(6 * 7)", 30)["stdout"].strip() == "42", 90, "the restarted kernel")

    def test_fifo_connection_file_on_restart(self):
        k = self.new_kernel()
        k.attempt('''
import os
conn = "/run/sandgate/k" + os.environ["JPY_SESSION_NAME"][-8:] + ".json"
os.unlink(conn)
os.mkfifo(conn, 0o666)
''')
        t = time.monotonic()
        status, body = self.gw.request("POST", f"api/kernels/{k.kernel_id}/restart", timeout=120)
        self.assertLess(time.monotonic() - t, 90, "restart hung on a FIFO")
        self.assertGatewayUp()

    # The gateway pins each k-N with O_PATH|O_NOFOLLOW (a socket owned by the
    # sandbox user) and connects through /proc/self/fd/N, so ZeroMQ's
    # reconnects never resolve a path the sandbox can swap.
    def test_socket_symlinks_not_followed_by_gateway(self):
        # The kernel swaps its ipc socket files (k-*) for symlinks to a host
        # unix socket the test listens on (root-owned, 0600), then dies. If
        # the gateway (root) reconnects by path, it follows the links and
        # connects to the host socket on the sandbox's behalf.
        decoy_sock = os.path.join(self.decoy_dir, "decoy.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(decoy_sock)
        os.chmod(decoy_sock, 0o600)
        srv.listen(16)
        srv.settimeout(0.2)
        self.addCleanup(srv.close)
        accepted = []
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    c, _ = srv.accept()
                    c.settimeout(0.5)
                    pid, uid, _ = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                    try:
                        data = c.recv(64)
                    except OSError:
                        data = b""
                    accepted.append({"pid": pid, "uid": uid, "gateway": pid == self.gw.pid, "data": data.hex()})
                    c.close()
                except OSError:
                    pass
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        self.addCleanup(t.join, 5)
        self.addCleanup(stop.set)
        k = self.new_kernel()
        k.attempt(f'''
import os
for n in os.listdir("/run/sandgate"):
    if n.startswith("k" + os.environ["JPY_SESSION_NAME"][-8:] + "-"):
        os.rename("/run/sandgate/" + n, "/run/sandgate/old-" + n)
        os.symlink({decoy_sock!r}, "/run/sandgate/" + n)
os._exit(1)
''', timeout=20)
        time.sleep(8)  # ZeroMQ reconnects every 100 ms; the gateway restarts the kernel
        self.assertGatewayUp()
        self.assertEqual(accepted, [], f"the gateway connected to a host socket through the sandbox's "
                                       f"symlinks {len(accepted)} times; first: {accepted[:1]!r}")

    def test_links_in_run_dir_survive_delete(self):
        kid = self.gw.start_kernel()
        k = self.gw.connect(kid)
        r = k.attempt(f'''
import os
os.symlink({self.decoy_dir!r}, "/run/sandgate/evil-dir")
os.symlink({self.decoy!r}, "/run/sandgate/evil-file")
os.makedirs("/run/sandgate/sub/deeper")
os.symlink({self.decoy_dir!r}, "/run/sandgate/sub/deeper/evil")
os.symlink("/", "/run/sandgate/sub/root")
print("planted")
''')
        self.assertIn("planted", r["stdout"], r)
        run_dir = os.path.join(self.gw.state_dir, "run", self.gw.sandbox_id(kid))
        self.assertTrue(os.path.islink(os.path.join(run_dir, "evil-dir")))
        k.close()
        self.gw.delete_kernel(kid)
        wait_until(lambda: not os.path.exists(run_dir), 30, "the run dir to be removed")
        self.assertDecoyIntact()
        self.assertTrue(os.path.exists("/usr/bin/python3"))
        self.assertGatewayUp()


if __name__ == "__main__":
    unittest.main()
