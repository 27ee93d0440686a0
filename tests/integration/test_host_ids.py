"""Host uids of sandboxes across gateways on one host.

Each sandbox runs under host uids of its own slot. Gateways on one host may
share a node number (two state dirs, both node 0), and a killed gateway's
sandboxes live on: the slot of a running sandbox is locked host-wide (the
supervisor holds the lock for its whole life), so no other gateway's
sandbox ever gets the same host uids.
"""

import os
import signal
import tempfile
import unittest

from sandgate_fixture import Gateway, processes_of, remove_state_dir, wait_until


def sandbox_processes(gw):
    """(slots, host uids) of a gateway's sandboxes: the slots its supervisors
    were started with, and the host uids of every process under them."""
    slots, uids = set(), set()
    for pid in gw.sandbox_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{pid}/status") as f:
                uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
        except OSError:
            continue
        if b"--host-id-slot" in args:
            slots.add(int(args[args.index(b"--host-id-slot") + 1]))
        if uid != 0:
            uids.add(uid)
    return slots, uids


@unittest.skipUnless(os.geteuid() == 0, "sandboxes need root")
class GatewaysOnOneHost(unittest.TestCase):
    def setUp(self):
        self.locks = tempfile.mkdtemp(prefix="sandgate-host-ids-")

    def gateway(self, name, **kw):
        gw = Gateway("--host-id-lock-dir", self.locks, sandboxed=True, name=name, **kw)
        self.addCleanup(lambda: gw.stopped or gw.stop())
        return gw

    def sandbox_with_kernel(self, gw):
        r = gw.request("POST", "api/sandboxes", {"ttl_s": 600}, timeout=60)
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        r = gw.request("POST", "api/kernels", {"name": "python", "sandbox_id": sid}, timeout=120)
        self.assertEqual(r.status, 201, r)
        return sid

    def test_two_live_node_0_gateways(self):
        first = self.gateway("first")
        second = self.gateway("second")
        self.sandbox_with_kernel(first)
        self.sandbox_with_kernel(second)
        slots_a, uids_a = sandbox_processes(first)
        slots_b, uids_b = sandbox_processes(second)
        self.assertEqual(len(slots_a), 1, slots_a)
        self.assertEqual(len(slots_b), 1, slots_b)
        self.assertFalse(slots_a & slots_b, f"both gateways gave slot {slots_a & slots_b}")
        self.assertTrue(uids_a and uids_b, (uids_a, uids_b))
        self.assertFalse(uids_a & uids_b, f"sandboxes of two gateways share host uids {uids_a & uids_b}")
        # The second one says that the two share a node number.
        self.assertTrue(any(e.get("event") == "node_shared_on_host" for e in second.log_events()),
                        second.log_tail())
        self.assertFalse(any(e.get("event") == "node_shared_on_host" for e in first.log_events()))

    def test_a_killed_gateways_sandboxes_keep_their_slots(self):
        first = self.gateway("killed", keep_kernels=True)
        self.sandbox_with_kernel(first)
        slots_a, uids_a = sandbox_processes(first)
        self.assertEqual(len(slots_a), 1, slots_a)
        first.crash()  # its sandbox goes on, and so does the lock of its slot
        self.addCleanup(self.end_sandboxes_of, first.state_dir)

        later = self.gateway("later")  # another state dir, the same node, alone on the host now
        self.assertFalse(any(e.get("event") == "node_shared_on_host" for e in later.log_events()))
        self.sandbox_with_kernel(later)
        slots_b, uids_b = sandbox_processes(later)
        self.assertEqual(len(slots_b), 1, slots_b)
        self.assertFalse(slots_a & slots_b, f"a new sandbox took slot {slots_a & slots_b} of a running one")
        self.assertFalse(uids_a & uids_b, f"a new sandbox runs under host uids {uids_a & uids_b} in use")

    def end_sandboxes_of(self, state_dir):
        for pid in processes_of(state_dir):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        wait_until(lambda: not processes_of(state_dir), 30, "the killed gateway's sandboxes to end")
        remove_state_dir(state_dir)


if __name__ == "__main__":
    unittest.main()
