"""Forbidden system calls, privilege and devices: each call is made from
inside a real kernel with ctypes' syscall() (in a forked child, so that a call
that wrongly succeeds cannot disturb the kernel) and must fail with EPERM or
ENOSYS. Arguments are chosen so that the call would be harmless or would
fail on its own if the filter let it through (and many would succeed for
an unprivileged user without the filter: perf_event_open, io_uring_setup,
keyctl, add_key, process_vm_readv, ptrace(TRACEME), unshare(CLONE_NEWUSER))."""

import errno
import unittest

from security_case import SandboxTestCase

# x86_64 system call numbers.
FORBIDDEN = r'''
import struct
def _buf(n, data=b""):
    b = ctypes.create_string_buffer(data, max(n, len(data)))
    return b
KEEP = []
def addr(b):
    KEEP.append(b)
    return ctypes.addressof(b)
def s(text):
    return addr(ctypes.create_string_buffer(text.encode()))
SIGCHLD = 17
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x00020000, 0x20000000, 0x40000000
CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP = 0x08000000, 0x04000000, 0x02000000
# process_vm_readv on our own memory: two iovecs
src = ctypes.create_string_buffer(b"secret", 16); dst = ctypes.create_string_buffer(16)
liov = struct.pack("QQ", ctypes.addressof(dst), 16); riov = struct.pack("QQ", ctypes.addressof(src), 16)
perf_attr = bytearray(128); struct.pack_into("IIQ", perf_attr, 0, 1, 128, 0)  # SOFTWARE, size, CPU_CLOCK
bpf_attr = bytearray(128); struct.pack_into("IIII", bpf_attr, 0, 2, 4, 4, 1)   # ARRAY map 4/4/1
clone_args = bytearray(88); struct.pack_into("Q", clone_args, 0, CLONE_NEWUSER); struct.pack_into("Q", clone_args, 32, SIGCHLD)
handle = bytearray(136); struct.pack_into("Ii", handle, 0, 128, 1)
netns = os.open("/proc/self/ns/net", os.O_RDONLY)
devnull = os.open("/dev/null", os.O_RDONLY)
root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
mypid, ppid = os.getpid(), os.getppid()
def B(x):
    x = bytes(x)
    return addr(ctypes.create_string_buffer(x, len(x)))
CALLS = {
 "mount": (165, s("none"), s("/tmp"), s("tmpfs"), 0, 0),
 "umount2": (166, s("/proc"), 2),
 "unshare(CLONE_NEWUSER)": (272, CLONE_NEWUSER),
 "unshare(CLONE_NEWNS)": (272, CLONE_NEWNS),
 "unshare(CLONE_NEWNET)": (272, CLONE_NEWNET),
 "setns": (308, netns, CLONE_NEWNET),
 "clone(CLONE_NEWUSER)": (56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
 "clone(CLONE_NEWNS|NEWPID)": (56, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0),
 "clone(CLONE_NEWNET|NEWIPC|NEWUTS|NEWCGROUP)": (56, CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD, 0, 0, 0, 0),
 "clone3(CLONE_NEWUSER)": (435, B(clone_args), 88),
 "ptrace(TRACEME)": (101, 0, 0, 0, 0),
 "ptrace(ATTACH parent)": (101, 16, ppid, 0, 0),
 "ptrace(ATTACH 1)": (101, 16, 1, 0, 0),
 "process_vm_readv(self)": (310, mypid, B(liov), 1, B(riov), 1, 0),
 "process_vm_writev(self)": (311, mypid, B(liov), 1, B(riov), 1, 0),
 "keyctl(GET_KEYRING_ID)": (250, 0, -3 & 0xffffffffffffffff, 1),
 "add_key": (248, s("user"), s("sandgate"), s("x"), 1, -2 & 0xffffffffffffffff),
 "request_key": (249, s("user"), s("sandgate"), 0, 0),
 "bpf(MAP_CREATE)": (321, 0, B(bpf_attr), 128),
 "perf_event_open(self)": (298, B(perf_attr), 0, -1 & 0xffffffffffffffff, -1 & 0xffffffffffffffff, 0),
 "userfaultfd": (323, 0),
 "io_uring_setup": (425, 1, B(bytearray(120))),
 "io_uring_enter": (426, 0, 0, 0, 0, 0, 0),
 "io_uring_register": (427, 0, 0, 0, 0),
 "kexec_load": (246, 0, 0, 0, 0),
 "kexec_file_load": (320, devnull, devnull, 0, 0, 0),
 "init_module": (175, 0, 0, s("")),
 "finit_module": (313, devnull, s(""), 0),
 "delete_module": (176, s("sandgate_nonexistent"), 0),
 "reboot(CAD_OFF)": (169, 0xfee1dead, 672274793, 0, 0),
 "swapon": (167, s("/tmp/sandgate-swap"), 0),
 "swapoff": (168, s("/tmp/sandgate-swap")),
 "syslog(SIZE_BUFFER)": (103, 10, 0, 0),
 "acct": (163, 0),
 "quotactl(Q_SYNC)": (179, (0x800001 << 8), 0, 0, 0),
 "open_by_handle_at": (304, root, B(handle), 0),
 "pivot_root": (155, s("/tmp"), s("/tmp")),
 "chroot": (161, s("/tmp")),
 "fsopen": (430, s("tmpfs"), 0),
 "open_tree": (428, root, s("/tmp"), 1),
 "move_mount": (429, root, s("/tmp"), root, s("/workspace"), 0),
 "fsmount": (432, 0, 0, 0),
 "mount_setattr": (442, root, s("/tmp"), 0, 0, 0),
 "pidfd_getfd": (438, 0, 0, 0),
 "kcmp": (312, mypid, ppid, 0, 0, 0),
 "iopl": (172, 3),
 "ioperm": (173, 0x80, 1, 1),
 "settimeofday": (164, 0, 0),
 "sethostname": (170, s("evil"), 4),
 "lookup_dcookie": (212, 0, 0, 0),
 "vhangup": (153,),
}
'''

RUN_IN_CHILD = r'''
def in_child(nr, *args, timeout=5.0):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ret = _sys(nr, *args)
            if ret == 0 and nr in (56, 435):  # a clone that worked: we are the new child
                os._exit(0)
            out = {"ok": ret}
        except OSError as ex:
            out = {"errno": ex.errno, "error": str(ex)}
        except BaseException as ex:
            out = {"errno": None, "error": repr(ex)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    import time, select
    end = time.monotonic() + timeout
    data = b""
    while time.monotonic() < end:
        rr, _, _ = select.select([r], [], [], 0.1)
        if rr:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
    os.close(r)
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"errno": None, "error": "no answer (child killed or stopped)"}
out = {}
for name, (nr, *args) in CALLS.items():
    out[name] = in_child(nr, *args)
_report(out)
'''


class ForbiddenCalls(SandboxTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.k = cls.class_kernel()
        cls.other = cls.class_kernel()

    def tearDown(self):
        self.assertGatewayUp()
        self.assertKernelWorks(self.other)

    def test_forbidden_syscalls_fail(self):
        res = self.probe(self.k, FORBIDDEN + RUN_IN_CHILD, timeout=180)
        allowed = (errno.EPERM, errno.ENOSYS)
        bad = {name: o for name, o in res.items() if "ok" in o or o.get("errno") not in allowed}
        self.assertEqual(bad, {}, "system calls that were not refused with EPERM/ENOSYS")
        self.assertEqual(res["clone3(CLONE_NEWUSER)"].get("errno"), errno.ENOSYS, res["clone3(CLONE_NEWUSER)"])
        self.assertKernelWorks(self.k)

    def test_filter_not_bypassed_by_other_abis(self):
        # unshare(CLONE_NEWUSER) through the x32 ABI (nr | 0x40000000) and the
        # i386 ABI (int 0x80, nr 310), and TIOCSTI on a fresh pty. Each runs in
        # a forked child; being killed by the filter (SIGSYS) also counts as
        # refused.
        res = self.probe(self.k, r'''
import fcntl, mmap, termios, time
def child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = {"ok": fn()}
        except OSError as ex:
            out = {"errno": ex.errno, "error": str(ex)}
        except BaseException as ex:
            out = {"errno": None, "error": repr(ex)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    end = time.monotonic() + 5
    while time.monotonic() < end:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if data:
        return json.loads(data)
    return {"killed_by": os.WTERMSIG(st) if os.WIFSIGNALED(st) else None, "exit": os.WEXITSTATUS(st) if os.WIFEXITED(st) else None}
def int80():
    # mov eax, 310 (i386 unshare); mov ebx, CLONE_NEWUSER; int 0x80; ret
    code = bytes.fromhex("b836010000" "bb00000010" "cd80" "c3")
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
    ret = fn()
    if ret < 0:
        raise OSError(-ret, os.strerror(-ret))
    return ret
def tiocsti():
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSTI, b"x")
    return "injected"
_report({"x32_unshare": child(lambda: _sys(0x40000000 | 272, 0x10000000)),
         "x32_mount": child(lambda: _sys(0x40000000 | 165, 0, 0, 0, 0, 0)),
         "i386_unshare": child(int80),
         "tiocsti": child(tiocsti)})
''')
        for what, o in res.items():
            self.assertNotIn("ok", o, f"{what} SUCCEEDED: {o}")
            if "errno" in o and o["errno"] is not None:
                self.assertIn(o["errno"], (1, 38, 14), f"{what}: {o}")
            elif "killed_by" in o:
                self.assertIn(o["killed_by"], (31, 9, 11), f"{what}: {o}")  # SIGSYS/SIGKILL/SIGSEGV
            else:
                self.fail(f"{what}: {o}")
        self.assertKernelWorks(self.k)

    def test_no_privilege(self):
        res = self.probe(self.k, r'''
import resource, shutil, subprocess
out = {}
out["setuid0"] = _probe(lambda: os.setuid(0))
out["seteuid0"] = _probe(lambda: os.seteuid(0))
out["setgid0"] = _probe(lambda: os.setgid(0))
out["setgroups"] = _probe(lambda: os.setgroups([0]))
out["status"] = {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
                 if k in ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")}
out["nosuid_usr"] = bool(os.statvfs("/usr/bin").f_flag & os.ST_NOSUID)
suid = []
for d in ("/usr/bin", "/usr/sbin", "/usr/lib/dbus-1.0", "/usr/lib/openssh"):
    try:
        for n in os.listdir(d):
            p = os.path.join(d, n)
            try:
                if os.stat(p).st_mode & 0o4000:
                    suid.append(p)
            except OSError:
                pass
    except OSError:
        pass
out["suid"] = suid
for tool, argv in (("su", ["su", "-c", "id -u", "root"]), ("sudo", ["sudo", "-n", "id", "-u"]),
                   ("pkexec", ["pkexec", "id", "-u"]), ("newgrp", ["newgrp", "root"])):
    path = shutil.which(tool)
    if path:
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=15)
            out[tool] = {"rc": p.returncode, "out": p.stdout.decode(errors="replace")[:200],
                         "err": p.stderr.decode(errors="replace")[:200]}
        except subprocess.TimeoutExpired:
            out[tool] = {"rc": None, "out": "", "err": "timeout"}
soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
out["raise_nproc"] = _probe(lambda: resource.setrlimit(resource.RLIMIT_NPROC, (hard + 1, hard + 1)) if hard != resource.RLIM_INFINITY else "unlimited")
def write_now(path, text):  # unbuffered: the error must come from write(), not a silent close
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.write(fd, text.encode())
    finally:
        os.close(fd)
out["oom_adj"] = _probe(lambda: write_now("/proc/self/oom_score_adj", "-1000"))
out["oom_adj_value"] = open("/proc/self/oom_score_adj").read().strip()
out["oom_adj_1"] = _probe(lambda: write_now("/proc/1/oom_score_adj", "1000"))
_report(out)
''', timeout=120)
        for what in ("setuid0", "seteuid0", "setgid0", "setgroups"):
            self.assertRefused(res[what], what, errnos=(1,))
        st = res["status"]
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(st[cap], 16), 0, f"{cap} = {st[cap]}")
        self.assertEqual(st["NoNewPrivs"], "1")
        self.assertEqual(st["Seccomp"], "2")
        self.assertNotIn("0", st["Uid"].split(), st)
        self.assertTrue(res["nosuid_usr"], "/usr/bin is not mounted nosuid")
        for tool in ("su", "sudo", "pkexec", "newgrp"):
            if tool in res:
                r = res[tool]
                self.assertFalse(r["rc"] == 0 and r["out"].strip() == "0", f"{tool} gave root: {r}")
        self.assertRefused(res["raise_nproc"], "raising RLIMIT_NPROC", errnos=None)
        self.assertRefused(res["oom_adj"], "lowering oom_score_adj to -1000", errnos=(13, 1))
        self.assertNotEqual(res["oom_adj_value"], "-1000")
        self.assertRefused(res["oom_adj_1"], "writing the supervisor's oom_score_adj", errnos=(13, 1))

    def test_no_host_devices(self):
        res = self.probe(self.k, r'''
import stat
out = {"dev": sorted(os.listdir("/dev"))}
out["chardevs"] = {}
for n in out["dev"]:
    try:
        st = os.stat("/dev/" + n)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            out["chardevs"][n] = [os.major(st.st_rdev), os.minor(st.st_rdev)]
    except OSError:
        pass
for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/vda", "/dev/sda", "/dev/nvme0n1",
          "/dev/kvm", "/dev/net/tun", "/dev/fuse", "/dev/loop0", "/dev/loop-control", "/dev/console", "/dev/tty0"):
    out[p] = _probe(lambda: os.close(os.open(p, os.O_RDONLY)))
out["mknod"] = _probe(lambda: os.mknod("/tmp/sandgate-mem", 0o20666, os.makedev(1, 1)))
out["mknod_ws"] = _probe(lambda: os.mknod("/workspace/sandgate-vda", 0o60666, os.makedev(253, 0)))
out["dev_write"] = _probe(lambda: open("/dev/sandgate-x", "w").write("x"))
_report(out)
''')
        allowed = {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "fd", "stdin",
                   "stdout", "stderr", "console", "core", "mqueue"}
        self.assertLessEqual(set(res["dev"]), allowed, f"unexpected entries in /dev: {res['dev']}")
        ok_devices = {(1, 3), (1, 5), (1, 7), (1, 8), (1, 9), (5, 0), (5, 2)}
        for n, (ma, mi) in res["chardevs"].items():
            self.assertIn((ma, mi), ok_devices, f"/dev/{n} is device {ma}:{mi}")
        for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/vda", "/dev/sda", "/dev/nvme0n1",
                  "/dev/kvm", "/dev/net/tun", "/dev/fuse", "/dev/loop0", "/dev/loop-control", "/dev/console",
                  "/dev/tty0"):
            self.assertRefused(res[p], f"opening {p}", errnos=None)
        for what in ("mknod", "mknod_ws", "dev_write"):
            self.assertRefused(res[what], what, errnos=(1, 13, 30))

    def test_proc_and_sys_not_writable(self):
        # Open for writing only; if an open succeeded, write back the value
        # that is already there, so that even a success changes nothing.
        files = ["/proc/sys/kernel/hostname", "/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern",
                 "/proc/sys/kernel/modprobe", "/proc/sys/vm/overcommit_memory", "/proc/sys/net/ipv4/ip_forward",
                 "/proc/sys/fs/file-max", "/proc/sysrq-trigger", "/proc/1/oom_score_adj",
                 "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/pids/pids.max",
                 "/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/setgroups"]
        res = self.probe(self.k, f'''
out = {{}}
def rewrite(p):
    try:
        cur = open(p, "rb").read()
    except OSError:
        cur = None
    fd = os.open(p, os.O_WRONLY)
    try:
        if cur is not None and p != "/proc/sysrq-trigger":
            os.write(fd, cur)
        return "opened for writing"
    finally:
        os.close(fd)
for p in {files!r}:
    out[p] = _probe(lambda: rewrite(p))
out["sys"] = _probe(lambda: sorted(os.listdir("/sys")))
out["cgroup_dir"] = _probe(lambda: sorted(os.listdir("/sys/fs/cgroup")))
_report(out)
''')
        for p in files:
            self.assertRefused(res[p], f"opening {p} for writing", errnos=None)


if __name__ == "__main__":
    unittest.main()
