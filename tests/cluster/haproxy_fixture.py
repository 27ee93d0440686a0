"""HAProxy in front of Sandgate nodes, for the cluster tests.

Runs /usr/sbin/haproxy on the shipped share/cluster/haproxy.cfg, unchanged,
with its environment (SANDGATE_NODE1.., SANDGATE_LB_BIND, SANDGATE_LB_SOCKET,
SANDGATE_AGENT_PORT) saying where the nodes are, and drives it through its
runtime API:

    lb = LoadBalancer({1: ("127.0.0.11", 8888), 2: ("127.0.0.12", 8888)})
    try:
        lb.wait_server_state(1, "UP")
        ... requests to lb.url ...
        lb.join(4, "127.0.0.14", 8888)
        lb.drain(2)
    finally:
        lb.stop()

Python 3 standard library only.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "share", "cluster", "haproxy.cfg")
HAPROXY = "/usr/sbin/haproxy"
# Node slots the shipped config declares (node_0001..node_0008).
SLOTS = range(1, 9)


def free_port(host):
    """A TCP port that was free on `host` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def slot_backend(node_id):
    """The backend that takes the requests naming node_id's ids: node_0004."""
    return "node_%04x" % node_id


def server_name(node_id):
    """The server of node_id, in its slot backend and in the "any" backend."""
    return "node%d" % node_id


class LoadBalancer:
    """One HAProxy process on the shipped config, a child of this process.

    nodes: {node_id: (addr, port)} of the nodes whose slots start enabled;
    the other slots start as disabled spares (see join()).
    bind: (addr, port) clients connect to; default 127.0.0.1 and a free port.
    agent_port: the nodes' --agent-check-port.
    config: the HAProxy config file (default: share/cluster/haproxy.cfg).
    start_timeout: seconds HAProxy has to listen, else RuntimeError with its log.
    env: more variables for HAProxy, e.g. {"SANDGATE_LB_DNS": "1"} when the
    node addresses are DNS names.

    Starts at once; stop() (or leaving a with block) ends it. The temp dir
    (log, runtime socket) is removed by stop() unless keep_dir is true.
    """

    def __init__(self, nodes, bind=None, agent_port=8889, config=CONFIG, haproxy=HAPROXY,
                 start_timeout=10.0, keep_dir=False, env=None):
        for node_id in nodes:
            if node_id not in SLOTS:
                raise ValueError("node %d has no slot in the config (slots: %d-%d)"
                                 % (node_id, SLOTS[0], SLOTS[-1]))
        self.nodes = {n: (a, int(p)) for n, (a, p) in nodes.items()}
        host, port = bind if bind else ("127.0.0.1", 0)
        self.bind = (host, port or free_port(host))
        self.agent_port = agent_port
        self.keep_dir = keep_dir
        self.dir = tempfile.mkdtemp(prefix="sandgate-lb-")
        self.socket_path = os.path.join(self.dir, "admin.sock")
        self.log_path = os.path.join(self.dir, "haproxy.log")

        extra = env or {}
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SANDGATE_NODE") and not k.startswith("SANDGATE_LB_")
               and k != "SANDGATE_AGENT_PORT"}
        env.update(extra)
        env["SANDGATE_LB_BIND"] = "%s:%d" % self.bind
        env["SANDGATE_LB_SOCKET"] = self.socket_path
        env["SANDGATE_AGENT_PORT"] = str(agent_port)
        for node_id, (addr, p) in self.nodes.items():
            env["SANDGATE_NODE%d" % node_id] = "%s:%d" % (addr, p)

        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([haproxy, "-f", config, "-db"], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)
        try:
            self._wait_listening(start_timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self):
        """Base URL clients use: http://ADDR:PORT (no trailing slash)."""
        return "http://%s:%d" % self.bind

    def log(self):
        """What HAProxy wrote so far (its request log and its alerts)."""
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("haproxy exited with %d before listening:\n%s"
                                   % (self.proc.returncode, self.log()))
            if os.path.exists(self.socket_path):
                try:
                    socket.create_connection(self.bind, timeout=0.5).close()
                    return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError("haproxy did not listen on %s:%d within %.0f s:\n%s"
                                   % (self.bind + (timeout, self.log())))
            time.sleep(0.02)

    def runtime(self, command, timeout=5.0):
        """Sends one command to the runtime API (stats socket, level admin)
        and returns its answer, e.g. runtime("show servers state")."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.socket_path)
            s.sendall(command.encode() + b"\n")
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        return out.decode(errors="replace")

    def _command(self, command):
        answer = self.runtime(command).strip()
        # Successful commands answer nothing or a notice; failures say so.
        lowered = answer.lower()
        if any(word in lowered for word in ("unknown", "no such", "invalid", "require",
                                            "not found", "failed", "error")):
            raise RuntimeError("%s: %s" % (command, answer))
        return answer

    def join(self, node_id, addr, port, agent_port=None):
        """Brings node_id's spare slot in at addr:port without a reload:
        points both of its servers (the slot's and the "any" backend's) at
        the node, then enables the slot. Its health check then runs (the
        slot is routable at once and DOWN after 2 failed checks) and the
        "any" server, which tracks it, follows; its agent check follows the
        new address (agent_port: if the node's differs from the config's).
        """
        slot, name = slot_backend(node_id), server_name(node_id)
        self._command("set server %s/%s addr %s port %d" % (slot, name, addr, port))
        self._command("set server any/%s addr %s port %d" % (name, addr, port))
        if agent_port is not None:
            self._command("set server any/%s agent-port %d" % (name, agent_port))
        self._command("enable server %s/%s" % (slot, name))
        self.nodes[node_id] = (addr, int(port))

    def drain(self, node_id):
        """Takes node_id out of load balancing (creates, lists) while the
        requests naming its ids still reach it: "state drain" on the slot's
        server, inherited by the "any" server, where the node's agent (which
        answers "ready N%" while it has room) cannot undo it."""
        self._command("set server %s/%s state drain" % (slot_backend(node_id), server_name(node_id)))

    def ready(self, node_id):
        """Undoes drain(): node_id takes creates again (unless its own agent
        says "drain")."""
        self._command("set server %s/%s state ready" % (slot_backend(node_id), server_name(node_id)))

    def stat(self):
        """"show stat" as {(backend, server): row dict} (keys: status,
        weight, check_status, agent_status, ...)."""
        lines = self.runtime("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = {}
        for line in lines[1:]:
            if not line:
                continue
            row = dict(zip(header, line.split(",")))
            rows[(row["pxname"], row["svname"])] = row
        return rows

    def server_state(self, node_id, backend="any"):
        """node_id's server state as "show stat" gives it, first word only:
        "UP", "DOWN", "DRAIN", "MAINT", "NOLB" (a transition such as
        "UP 1/2", going down, is "UP"; "MAINT (via ...)" is "MAINT").

        backend "any" (default): the server in load balancing, which tracks
        the slot, so it shows health, maintenance and both kinds of drain
        (agent and runtime). backend "slot": the slot's own server, which
        takes the id-routed requests (DRAIN only when drained at run time).
        """
        px = "any" if backend == "any" else slot_backend(node_id)
        row = self.stat().get((px, server_name(node_id)))
        if row is None:
            raise KeyError("no server %s/%s" % (px, server_name(node_id)))
        status = row["status"].split()
        return status[0] if status else ""

    def server_weight(self, node_id):
        """The current weight of node_id in the "any" backend (100 = all of
        its capacity free; the agent's "ready N%" sets N; 0 while drained)."""
        return int(self.stat()[("any", server_name(node_id))]["weight"])

    def wait_server_state(self, node_id, state, timeout=5.0, backend="any"):
        """Polls server_state(node_id, backend) until it is `state`; raises
        AssertionError with the last state seen and the log's end after
        `timeout` seconds. Returns the seconds it took."""
        start = time.monotonic()
        deadline = start + timeout
        while True:
            seen = self.server_state(node_id, backend)
            if seen == state:
                return time.monotonic() - start
            if time.monotonic() > deadline:
                raise AssertionError("node %d (%s): state %s, not %s after %.1f s\n%s"
                                     % (node_id, backend, seen, state, timeout, self.log()[-3000:]))
            time.sleep(0.05)

    def stop(self):
        """Ends HAProxy (SIGTERM, then SIGKILL after 5 s) and removes its temp
        dir (unless keep_dir). Safe to call twice."""
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        log = getattr(self, "_log", None)
        if log is not None and not log.closed:
            log.close()
        if not self.keep_dir and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
