"""Three real sandgate nodes (separate state dirs, each on a loopback address
of its own) behind real HAProxy on the shipped share/cluster/haproxy.cfg:
ids route to their node under churn, lists span the cluster, creates go where
there is room, a full or draining node is passed over, a node joins at run
time, and a node killed with SIGKILL costs only its own kernels.

Each test class brings up its own cluster on its own 127.0.N.0/24 block, so
classes may run at once (CTest runs each class as a test of its own)."""

import concurrent.futures
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import unittest

from haproxy_fixture import LoadBalancer, free_port
from sandgate_fixture import (Deadline, Gateway, KernelSocket, cmdline, parent_pid, process_tree, processes_of,
                              remove_state_dir, result_text, wait_until)

TOKEN = "cluster-" + os.urandom(8).hex()


def node_of(some_id):
    """The node number an id carries in its first 16 bits."""
    return int(some_id[:4], 16)


class Through:
    """A client of HAProxy's address, as the fixture's clients expect of a
    gateway (request(), and KernelSocket(through, kernel_id))."""

    tls = None
    base_path = "/"
    request = Gateway.request

    def __init__(self, lb, token):
        self.lb = lb
        self.host, self.port = lb.bind
        self.token = token
        self.url = f"http://{self.host}:{self.port}/"
        self.ws_base = f"ws://{self.host}:{self.port}/"

    def describe(self):
        return f"HAProxy at {self.host}:{self.port}; its log ends:\n{self.lb.log()[-3000:]}"


class Cluster:
    """Nodes 1..n on 127.0.<block>.<10+N>, each with --peers-file listing all
    of them, and HAProxy in front. Call stop() at the end."""

    def __init__(self, block, n=3, node_args=(), sandboxed=False):
        self.block = block
        self.node_args = tuple(node_args)
        self.sandboxed = sandboxed
        self.dir = tempfile.mkdtemp(prefix="sandgate-cluster-")
        self.peers_file = os.path.join(self.dir, "peers")
        open(self.peers_file, "w").close()  # the nodes' lines go in once they listen (write_peers)
        # One agent port for all nodes: each has an address of its own.
        self.agent_port = free_port(self.addr(1))
        self.nodes = {}
        self.lb = None
        try:
            for i in range(1, n + 1):
                self.start_node(i)
            self.write_peers()
            self.lb = LoadBalancer({i: (self.addr(i), gw.port) for i, gw in self.nodes.items()},
                                   agent_port=self.agent_port)
            for i in self.nodes:
                self.lb.wait_server_state(i, "UP", timeout=10)
            self.through = Through(self.lb, TOKEN)
        except BaseException:
            self.stop()
            raise

    def addr(self, node):
        return f"127.0.{self.block}.{10 + node}"

    def start_node(self, node, *extra):
        gw = Gateway("--ip", self.addr(node), "--node-id", str(node), "--peers-file", self.peers_file,
                     "--max-connections-per-address", "0",
                     "--agent-check-port", str(self.agent_port), *self.node_args, *extra,
                     token=TOKEN, name=f"cluster-node{node}", sandboxed=self.sandboxed)
        self.nodes[node] = gw
        return gw

    def write_peers(self):
        tmp = self.peers_file + ".new"
        with open(tmp, "w") as f:
            for i, gw in sorted(self.nodes.items()):
                f.write(f"{i} http://{self.addr(i)}:{gw.port}/\n")
        os.replace(tmp, self.peers_file)

    def request(self, method, path, body=None, **kw):
        """A request through HAProxy."""
        return self.through.request(method, path, body, **kw)

    def stop(self):
        if self.lb:
            self.lb.stop()
        for gw in self.nodes.values():
            if gw.alive():
                gw.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class ClusterTestCase(unittest.TestCase):
    block = 1
    node_args = ()
    sandboxed = False
    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(cls.block, node_args=cls.node_args, sandboxed=cls.sandboxed)

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()

    def start_kernel(self, path="api/kernels", body=None):
        r = self.cluster.request("POST", path, body or {"name": "python3"}, timeout=90)
        self.assertEqual(r.status, 201, r)
        kid = r.json()["id"]
        self.addCleanup(lambda: self.cluster.request("DELETE", f"api/kernels/{kid}", timeout=30))
        return kid

    def execute(self, kid, code):
        r = self.cluster.request("POST", f"api/kernels/{kid}/execute", {"code": code}, timeout=60)
        self.assertEqual(r.status, 200, r)
        return r.json()


class Routing(ClusterTestCase):
    block = 1

    def test_creates_spread_and_every_id_reaches_its_node_under_churn(self):
        # Kernels are created, executed, listed and deleted from 6 threads at
        # once; every request that names an id must reach that id's node.
        misrouted, failures = [], []
        nodes_used = set()
        lock = threading.Lock()

        def churn(worker):
            for round_ in range(3):
                r = self.cluster.request("POST", "api/kernels", {"name": "python3"}, timeout=90)
                if r.status != 201:
                    with lock:
                        failures.append(("create", r.status, r.body[:200]))
                    continue
                kid = r.json()["id"]
                with lock:
                    nodes_used.add(node_of(kid))
                for method, path, body in (("GET", f"api/kernels/{kid}", None),
                                           ("POST", f"api/kernels/{kid}/execute", {"code": f"{worker}*{round_}"}),
                                           ("GET", f"api/kernels/{kid}", None),
                                           ("DELETE", f"api/kernels/{kid}", None)):
                    r = self.cluster.request(method, path, body, timeout=60)
                    if r.status == 404 or (r.status >= 400 and b"other_node" in r.body):
                        with lock:
                            misrouted.append((method, path, r.status, r.body[:200]))
                    elif r.status not in (200, 204):
                        with lock:
                            failures.append((method, path, r.status, r.body[:200]))
                    if method == "POST":
                        self.assertEqual(r.json()["status"], "ok", r)

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            list(pool.map(churn, range(6)))
        self.assertEqual(misrouted, [])
        self.assertEqual(failures, [])
        self.assertEqual(nodes_used, {1, 2, 3}, "leastconn should have used every node")

    def test_every_resource_routes_by_its_id(self):
        r = self.cluster.request("POST", "api/sandboxes", {"metadata": {"test": "routing"}})
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        self.addCleanup(lambda: self.cluster.request("DELETE", f"api/sandboxes/{sid}", timeout=30))
        # A kernel in it, both ways: by the path, and by the body's sandbox_id.
        k1 = self.start_kernel(f"api/sandboxes/{sid}/kernels", {"name": "python3"})
        k2 = self.start_kernel("api/kernels", {"name": "python3", "sandbox_id": sid})
        self.assertEqual({node_of(k1), node_of(k2)}, {node_of(sid)})
        r = self.cluster.request("PUT", f"api/sandboxes/{sid}/files/data.txt", raw=b"hello cluster")
        self.assertEqual(r.status, 201, r)
        out = self.execute(k1, "print(open('data.txt').read())")
        self.assertIn("hello cluster", json.dumps(out))
        r = self.cluster.request("GET", f"api/sandboxes/{sid}/files/data.txt")
        self.assertEqual((r.status, r.body), (200, b"hello cluster"))
        r = self.cluster.request("POST", "api/sessions", {"path": "a.ipynb", "type": "notebook",
                                                         "kernel": {"id": k1}})
        self.assertEqual(r.status, 201, r)
        session = r.json()
        self.assertEqual(node_of(session["id"]), node_of(sid))
        self.assertEqual(self.cluster.request("GET", f"api/sessions/{session['id']}").json()["kernel"]["id"], k1)
        self.assertEqual(self.cluster.request("DELETE", f"api/sessions/{session['id']}").status, 204)

    def test_channels_websocket_reaches_the_kernels_node(self):
        kid = self.start_kernel()
        for auth in ("header", "query"):
            ks = KernelSocket(self.cluster.through, kid, auth=auth)
            self.addCleanup(ks.close)
            reply, iopub = ks.execute("21 * 2")
            self.assertEqual(reply.content["status"], "ok")
            self.assertEqual(result_text(iopub), "42")

    def test_lists_span_the_cluster_and_each_node_has_its_part(self):
        kids = set()
        deadline = Deadline(120)
        while {node_of(k) for k in kids} != {1, 2, 3} and deadline.remaining() > 0:
            kids.add(self.start_kernel())
        self.assertEqual({node_of(k) for k in kids}, {1, 2, 3})
        for node, gw in self.cluster.nodes.items():
            # Any node, asked directly, lists the whole cluster ...
            r = gw.request("GET", "api/kernels")
            self.assertEqual(r.status, 200, r)
            self.assertNotIn("X-Sandgate-Missing-Nodes", r.headers)
            listed = [k["id"] for k in r.json()]
            self.assertEqual(len(listed), len(set(listed)), "an item listed twice")
            self.assertTrue(kids <= set(listed), (node, kids - set(listed)))
            # ... and its own part only when asked for it.
            mine = {k["id"] for k in gw.request("GET", "api/kernels?scope=node").json()}
            self.assertEqual({node_of(k) for k in mine} - {node}, set())
            self.assertEqual({k for k in kids if node_of(k) == node}, mine & kids)
        through_lb = {k["id"] for k in self.cluster.request("GET", "api/kernels").json()}
        self.assertTrue(kids <= through_lb)
        sandboxes = {s["id"] for s in self.cluster.request("GET", "api/sandboxes").json()}
        self.assertEqual({node_of(s) for s in sandboxes} & {1, 2, 3}, {1, 2, 3})

    def test_a_list_shows_only_what_the_caller_owns_on_every_node(self):
        kid = self.start_kernel()
        r = self.cluster.request("GET", "api/kernels", token="not-a-token")
        self.assertEqual(r.status, 403, r)
        # Query-string tokens are forwarded to the peers as a header.
        r = self.cluster.request("GET", "api/kernels", auth="query")
        self.assertEqual(r.status, 200, r)
        self.assertIn(kid, {k["id"] for k in r.json()})
        self.assertNotIn("X-Sandgate-Missing-Nodes", r.headers)

    def test_an_id_of_another_node_is_a_404_naming_that_node(self):
        kid = self.start_kernel()
        owner = node_of(kid)
        other = next(n for n in self.cluster.nodes if n != owner)
        r = self.cluster.nodes[other].request("GET", f"api/kernels/{kid}")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["reason"], "other_node")
        self.assertIn(f"node {owner}", r.json()["message"])
        # Its channels too, and a kernel for another node's sandbox.
        with self.assertRaises(Exception) as caught:
            KernelSocket(self.cluster.nodes[other], kid)
        self.assertIn("404", str(caught.exception))
        sid = self.cluster.request("GET", f"api/kernels/{kid}").json()["sandbox_id"]
        r = self.cluster.nodes[other].request("POST", "api/kernels", {"name": "python3", "sandbox_id": sid})
        self.assertEqual((r.status, r.json()["reason"]), (404, "other_node"), r)
        # A node with no slot in HAProxy: any node answers, naming it.
        ghost = "0009" + kid[4:]
        r = self.cluster.request("GET", f"api/kernels/{ghost}")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["reason"], "other_node")
        self.assertIn("node 9", r.json()["message"])


class Capacity(ClusterTestCase):
    block = 2
    node_args = ("--max-kernels", "2")

    def test_a_full_node_is_passed_over_and_answers_503_itself(self):
        kids = [self.start_kernel() for _ in range(6)]  # 3 nodes x 2: every slot
        self.assertEqual(sorted(node_of(k) for k in kids), [1, 1, 2, 2, 3, 3])
        for node in self.cluster.nodes:
            self.cluster.lb.wait_server_state(node, "DRAIN", timeout=5)
        gw = self.cluster.nodes[1]
        r = gw.request("POST", "api/kernels", {"name": "python3"})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.headers.get("Retry-After"), "1")
        r = self.cluster.request("POST", "api/kernels", {"name": "python3"}, timeout=30)
        # The whole cluster is full: the client hears it, in JSON, with a time to retry.
        self.assertEqual(r.status, 503, r)
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"), r.headers)
        self.assertEqual(r.headers.get("Retry-After"), "1")
        self.assertIn(r.json()["reason"], ("no_capacity", "Service Unavailable"))
        # A slot freed on node 2: the next create goes there, whatever HAProxy tried first.
        victim = next(k for k in kids if node_of(k) == 2)
        self.assertEqual(self.cluster.request("DELETE", f"api/kernels/{victim}").status, 204)
        self.cluster.lb.wait_server_state(2, "UP", timeout=5)  # its agent says so within a second
        self.assertEqual(node_of(self.start_kernel()), 2)

    def test_a_drained_node_takes_no_creates_but_serves_its_ids(self):
        kid = None
        for _ in range(12):  # leastconn: node 3 comes within a few creates
            k = self.start_kernel()
            if node_of(k) == 3:
                kid = k
                break
        self.assertIsNotNone(kid, "no create reached node 3")
        node3 = self.cluster.nodes[3]
        # Through HAProxy, ?node= picks the node; a node refuses what is meant for another.
        r = self.cluster.nodes[1].request("PATCH", "api/node?node=0003", {"draining": True})
        self.assertEqual((r.status, r.json()["reason"]), (404, "other_node"), r)
        self.assertFalse(node3.request("GET", "api/node").json()["draining"])
        r = self.cluster.request("PATCH", "api/node?node=0003", {"draining": True})
        self.assertEqual((r.status, r.json()["node_id"], r.json()["draining"]), (200, 3, True), r)
        self.addCleanup(lambda: node3.request("PATCH", "api/node", {"draining": False}))
        self.cluster.lb.wait_server_state(3, "DRAIN", timeout=5)
        self.assertEqual(self.execute(kid, "1 + 1")["status"], "ok")
        for _ in range(3):
            k = self.start_kernel()
            self.assertNotEqual(node_of(k), 3)
            self.cluster.request("DELETE", f"api/kernels/{k}")
        # The node's own answer to a create, had HAProxy sent one there.
        self.assertEqual(node3.request("POST", "api/sandboxes", {}).status, 503)
        r = self.cluster.request("PATCH", "api/node?node=0003", {"draining": False})
        self.assertEqual((r.json()["node_id"], r.json()["draining"]), (3, False))
        self.cluster.lb.wait_server_state(3, "UP", timeout=5)

    def test_a_drain_must_be_well_formed(self):
        node1 = self.cluster.nodes[1]
        self.assertEqual(node1.request("PATCH", "api/node", {"draining": "yes"}).status, 400)
        self.assertEqual(node1.request("PATCH", "api/node?node=3", {"draining": True}).status, 400)
        self.assertEqual(node1.request("PATCH", "api/node", raw=b"{nope").status, 400)
        self.assertFalse(node1.request("GET", "api/node").json()["draining"])
        for n in (1, 2, 3):
            r = self.cluster.request("GET", f"api/node?node={n:04x}")
            self.assertEqual((r.status, r.json()["node_id"]), (200, n), r)


class Membership(ClusterTestCase):
    block = 3

    def test_a_node_joins_at_run_time(self):
        gw4 = self.cluster.start_node(4)

        def leave():  # node 4 leaves as it came: out of HAProxy and the peers file, then stopped
            self.cluster.lb.runtime("disable server node_0004/node4")
            del self.cluster.nodes[4]
            self.cluster.write_peers()
            gw4.stop()

        self.addCleanup(leave)
        self.cluster.write_peers()
        self.cluster.lb.join(4, self.cluster.addr(4), gw4.port)
        self.cluster.lb.wait_server_state(4, "UP", timeout=10)
        # Drain the others in HAProxy: the next create can only go to node 4.
        for n in (1, 2, 3):
            self.cluster.lb.drain(n)
        try:
            kid = self.start_kernel()
        finally:
            for n in (1, 2, 3):
                self.cluster.lb.ready(n)
        self.assertEqual(node_of(kid), 4)
        self.assertEqual(self.execute(kid, "6 * 7")["status"], "ok")
        # Node 1 reads the peers file again: its list has node 4's kernel.
        wait_until(lambda: kid in {k["id"] for k in self.cluster.nodes[1].request("GET", "api/kernels").json()},
                   5, "node 4's kernel in node 1's list")

    def test_kill_9_of_a_node_costs_only_its_own_kernels(self):
        kids = {}
        deadline = Deadline(120)
        while set(kids) != {1, 2, 3} and deadline.remaining() > 0:
            k = self.start_kernel()
            kids.setdefault(node_of(k), k)
        self.assertEqual(set(kids), {1, 2, 3})
        for k in kids.values():
            self.execute(k, "x = 41")
        victim = self.cluster.nodes[3]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        killed_at = time.monotonic()
        # Its ids answer a JSON 404 from HAProxy within 2 s.
        while True:
            r = self.cluster.request("GET", f"api/kernels/{kids[3]}")
            if r.status == 404:
                break
            self.assertLess(time.monotonic() - killed_at, 2.0, f"still {r.status} after 2 s")
            time.sleep(0.05)
        self.assertLess(time.monotonic() - killed_at, 2.0)
        self.assertEqual(r.json()["reason"], "node_gone")
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"))
        # The others' kernels kept their state.
        for n in (1, 2):
            out = self.execute(kids[n], "print(x + 1)")
            self.assertIn("42", json.dumps(out))
        # Creates go to the survivors.
        for _ in range(4):
            self.assertIn(node_of(self.start_kernel()), (1, 2))
        # Lists leave the dead node out, and say so.
        r = self.cluster.request("GET", "api/kernels")
        listed = {k["id"] for k in r.json()}
        self.assertNotIn(kids[3], listed)
        self.assertTrue({kids[1], kids[2]} <= listed)
        self.assertEqual(r.headers.get("X-Sandgate-Missing-Nodes"), "3")


def process_tree_uids(root_pid):
    """The real uids of root_pid and every process below it."""
    uids = set()
    for pid in process_tree([root_pid]):
        try:
            with open(f"/proc/{pid}/status") as f:
                uids.add(next(int(line.split()[1]) for line in f if line.startswith("Uid:")))
        except (OSError, StopIteration):
            continue
    return uids


class SandboxedNodes(ClusterTestCase):
    """Real sandboxes on nodes that share a host."""
    block = 6
    sandboxed = True

    def test_nodes_on_one_host_never_share_host_uids(self):
        uids = {}
        for node, gw in self.cluster.nodes.items():
            r = gw.request("POST", "api/sandboxes", {})
            self.assertEqual(r.status, 201, r)
            sid = r.json()["id"]
            self.addCleanup(gw.request, "DELETE", f"api/sandboxes/{sid}")
            r = gw.request("POST", f"api/sandboxes/{sid}/kernels", {"name": "python"}, timeout=120)
            self.assertEqual(r.status, 201, r)
            kid = r.json()["id"]
            r = gw.request("POST", f"api/kernels/{kid}/execute", {"code": "import os; print(os.getuid())"})
            self.assertEqual(r.json()["status"], "ok", r)
            # On the host: the sandbox's supervisor and everything under it.
            # (sandgate-sandbox is two processes: the outer one, the gateway's child, and the sandbox's pid 1.)
            supervisors = [p for p in processes_of(gw.state_dir)
                           if f"--id {sid}" in cmdline(p) and parent_pid(p) == gw.proc.pid]
            self.assertEqual(len(supervisors), 1, [cmdline(p) for p in processes_of(gw.state_dir)])
            uids[node] = process_tree_uids(supervisors[0]) - {0}
            self.assertTrue(uids[node], f"node {node}'s sandbox runs only as root")
        for a in uids:
            for b in uids:
                if a < b:
                    self.assertFalse(uids[a] & uids[b], f"nodes {a} and {b} share host uids {uids[a] & uids[b]}")


class NodeIds(unittest.TestCase):
    def test_a_state_dir_restarted_under_another_node_id_keeps_its_sandboxes(self):
        state = tempfile.mkdtemp(prefix="sandgate-it-")
        gw = Gateway(name="node-id-0", sandboxed=True, keep_kernels=True, state_dir=state)
        try:
            r = gw.request("POST", "api/sandboxes", {})
            self.assertEqual(r.status, 201, r)
            sid = r.json()["id"]
            self.assertEqual(node_of(sid), 0)
            self.assertEqual(gw.stop()[0], 0)
            gw = Gateway("--node-id", "5", name="node-id-5", sandboxed=True, state_dir=state)
            # Its own sandbox, though the id says node 0 ...
            self.assertEqual(gw.request("GET", f"api/sandboxes/{sid}").status, 200)
            # ... while node 0's ids it does not hold are node 0's.
            r = gw.request("GET", f"api/sandboxes/0000{sid[4:-1]}{'0' if sid[-1] != '0' else '1'}")
            self.assertEqual((r.status, r.json()["reason"]), (404, "other_node"), r)
            self.assertEqual(gw.request("DELETE", f"api/sandboxes/{sid}").status, 204)
        finally:
            gw.stop()
            remove_state_dir(state)


if __name__ == "__main__":
    unittest.main()
