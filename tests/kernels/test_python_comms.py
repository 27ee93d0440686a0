"""Kernel-side comms of sandgate-python through jupyter_client, as a frontend
sees them: comms the kernel opens, comms the frontend opens, messages both
ways, close from either side, comm_info, ipywidgets' state sync, and a
thousand comms without a crash or growth."""

import json
import time
import unittest
import uuid

from kernel_harness import KernelTestCase

REPLY_TIMEOUT_S = 20


class PythonCommsTest(KernelTestCase):
    kernel_name = "python"

    # -- helpers -----------------------------------------------------------
    def send_shell(self, msg_type, content):
        """Sends a frontend message on shell; returns its msg_id."""
        return self.kernel.send_shell(msg_type, content).msg_id

    def iopub_of(self, msg_id, until_idle=True):
        """The iopub messages whose parent is msg_id, up to its idle status."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for the idle status of {msg_id}: {seen}")
            try:
                msg = self.kernel.client.get_iopub_msg(timeout=left)
            except Exception:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return seen

    def value(self, expression):
        """The kernel's repr of expression, through an execute_result."""
        cell = self.kernel.run(expression)
        self.assertOk(cell)
        results = cell.of_type("execute_result")
        self.assertEqual(len(results), 1, cell.iopub)
        return results[0]["data"]["text/plain"]

    def comm_info(self, target_name=None):
        content = {} if target_name is None else {"target_name": target_name}
        return self.kernel.request(lambda: self.send_shell("comm_info_request", content))

    def assertAlive(self):
        self.assertTrue(self.kernel.manager.is_alive(), "the kernel died")
        self.assertEqual(self.value("1 + 1"), "2")

    # -- comms the kernel opens --------------------------------------------
    def test_a_comm_to_a_target_the_kernel_never_registered(self):
        cell = self.kernel.run(
            "from ipykernel.comm import Comm\n"
            "print('before')\n"
            "c = Comm(target_name='sandgate.t1', data={'a': 1}, metadata={'m': 2})\n"
            "print(c.comm_id)")
        self.assertOk(cell)
        opens = [m for m in cell.iopub if m["msg_type"] == "comm_open"]
        self.assertEqual(len(opens), 1, cell.iopub)
        self.assertEqual(opens[0]["content"]["target_name"], "sandgate.t1")
        self.assertEqual(opens[0]["content"]["data"], {"a": 1})
        self.assertEqual(opens[0]["metadata"], {"m": 2})
        comm_id = opens[0]["content"]["comm_id"]
        self.assertEqual(cell.text(), f"before\n{comm_id}\n")
        # What the cell printed first goes first.
        kinds = [m["msg_type"] for m in cell.iopub if m["msg_type"] in ("stream", "comm_open")]
        self.assertEqual(kinds[:2], ["stream", "comm_open"], cell.iopub)
        self.assertAlive()

    def test_an_unkept_comm_stays_open_until_closed(self):
        cell = self.kernel.run(
            "from ipykernel.comm import Comm\n"
            "Comm(target_name='sandgate.unkept', data={})")
        self.assertOk(cell)
        comm_id = cell.of_type("comm_open")[0]["comm_id"]
        self.assertIn(comm_id, self.comm_info("sandgate.unkept")["comms"])
        cell = self.kernel.run(f"get_ipython().kernel.comm_manager.get_comm({comm_id!r}).close()")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("comm_close")[0]["comm_id"], comm_id)
        self.assertNotIn(comm_id, self.comm_info()["comms"])

    def test_an_unregistered_comm_is_gone_from_xeus_too(self):
        cell = self.kernel.run(
            "from ipykernel.comm import Comm\nimport gc\n"
            "u = Comm(target_name='sandgate.unregistered')\n"
            "get_ipython().kernel.comm_manager.unregister_comm(u)\n"
            "del u\ngc.collect()")
        self.assertOk(cell)
        comm_id = cell.of_type("comm_open")[0]["comm_id"]
        self.assertNotIn(comm_id, self.comm_info()["comms"])
        self.iopub_of(self.send_shell("comm_msg", {"comm_id": comm_id, "data": {}}))
        self.assertAlive()

    def test_messages_both_ways_and_close_from_the_kernel(self):
        cell = self.kernel.run(
            "from ipykernel.comm import Comm\n"
            "received = []\n"
            "echo = Comm(target_name='sandgate.echo')\n"
            "def on_msg(msg):\n"
            "    received.append(msg['content']['data'])\n"
            "    echo.send({'echo': msg['content']['data']}, buffers=[b'\\x00\\x01binary'])\n"
            "echo.on_msg(on_msg)")
        self.assertOk(cell)
        comm_id = cell.of_type("comm_open")[0]["comm_id"]

        msg_id = self.send_shell("comm_msg", {"comm_id": comm_id, "data": {"n": 1}})
        iopub = self.iopub_of(msg_id)
        echoes = [m for m in iopub if m["msg_type"] == "comm_msg"]
        self.assertEqual(len(echoes), 1, iopub)
        self.assertEqual(echoes[0]["content"], {"comm_id": comm_id, "data": {"echo": {"n": 1}}})
        self.assertEqual([bytes(b) for b in echoes[0]["buffers"]], [b"\x00\x01binary"])
        self.assertEqual(self.value("received"), "[{'n': 1}]")

        cell = self.kernel.run("echo.close({'bye': True}); echo.send({'after': 'close'})")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("comm_close"), [{"comm_id": comm_id, "data": {"bye": True}}])
        self.assertEqual(cell.of_type("comm_msg"), [], "nothing is sent on a closed comm")
        self.assertNotIn(comm_id, self.comm_info()["comms"])
        # A frontend that still writes to it gets nothing back; the kernel stays up.
        self.iopub_of(self.send_shell("comm_msg", {"comm_id": comm_id, "data": {"n": 2}}))
        self.assertEqual(self.value("received"), "[{'n': 1}]")
        self.assertAlive()

    # -- comms the frontend opens ------------------------------------------
    def test_a_comm_the_frontend_opens_lives_past_its_handler(self):
        cell = self.kernel.run(
            "events = []\n"
            "def opened(comm, msg):\n"
            "    events.append(('open', msg['content']['data']))\n"
            "    comm.on_msg(lambda m: (events.append(('msg', m['content']['data'])),\n"
            "                           comm.send({'got': m['content']['data']})))\n"
            "    comm.on_close(lambda m: events.append(('close', m['content']['data'])))\n"
            "get_ipython().kernel.comm_manager.register_target('sandgate.frontend', opened)")
        self.assertOk(cell)
        comm_id = uuid.uuid4().hex
        self.iopub_of(self.send_shell("comm_open", {"comm_id": comm_id, "target_name": "sandgate.frontend",
                                                    "data": {"hello": 1}}))
        info = self.comm_info("sandgate.frontend")
        self.assertEqual(info["comms"], {comm_id: {"target_name": "sandgate.frontend"}}, info)

        iopub = self.iopub_of(self.send_shell("comm_msg", {"comm_id": comm_id, "data": {"x": 5}}))
        self.assertEqual([m["content"] for m in iopub if m["msg_type"] == "comm_msg"],
                         [{"comm_id": comm_id, "data": {"got": {"x": 5}}}])

        self.iopub_of(self.send_shell("comm_close", {"comm_id": comm_id, "data": {"end": 1}}))
        self.assertEqual(self.value("events"),
                         "[('open', {'hello': 1}), ('msg', {'x': 5}), ('close', {'end': 1})]")
        self.assertNotIn(comm_id, self.comm_info()["comms"])
        self.assertAlive()

    def test_a_comm_to_a_target_without_a_handler_is_closed(self):
        comm_id = uuid.uuid4().hex
        iopub = self.iopub_of(self.send_shell("comm_open", {"comm_id": comm_id, "target_name": "sandgate.nobody",
                                                            "data": {}}))
        self.assertNotIn(comm_id, self.comm_info()["comms"])
        # A target the kernel opened a comm to has no handler either.
        self.assertOk(self.kernel.run("from ipykernel.comm import Comm\nComm(target_name='sandgate.out').close()"))
        other = uuid.uuid4().hex
        iopub = self.iopub_of(self.send_shell("comm_open", {"comm_id": other, "target_name": "sandgate.out",
                                                            "data": {}}))
        self.assertEqual([m["content"]["comm_id"] for m in iopub if m["msg_type"] == "comm_close"], [other])
        self.assertAlive()

    def test_a_comm_to_a_target_never_registered_is_closed(self):
        # Answered with comm_close, as ipykernel answers it: a frontend that
        # opens a control comm the kernel lacks falls back on that.
        comm_id = uuid.uuid4().hex
        iopub = self.iopub_of(self.send_shell("comm_open", {"comm_id": comm_id, "target_name": "sandgate.unheard",
                                                            "data": {}}))
        self.assertEqual([m["content"]["comm_id"] for m in iopub if m["msg_type"] == "comm_close"], [comm_id])
        self.assertNotIn(comm_id, self.comm_info()["comms"])
        # A handler registered for that name afterwards gets the next one.
        self.assertOk(self.kernel.run(
            "opened = []\n"
            "get_ipython().kernel.comm_manager.register_target("
            "'sandgate.unheard', lambda comm, msg: opened.append(comm.comm_id))"))
        second = uuid.uuid4().hex
        iopub = self.iopub_of(self.send_shell("comm_open", {"comm_id": second, "target_name": "sandgate.unheard",
                                                            "data": {}}))
        self.assertEqual([m for m in iopub if m["msg_type"] == "comm_close"], [])
        self.assertEqual(self.value("opened"), repr([second]))
        self.assertIn(second, self.comm_info()["comms"])
        self.iopub_of(self.send_shell("comm_close", {"comm_id": second, "data": {}}))
        self.assertNotIn(second, self.comm_info()["comms"])
        self.assertAlive()

    def test_callbacks_that_raise_leave_the_kernel_up(self):
        cell = self.kernel.run(
            "from ipykernel.comm import Comm\n"
            "def boom(*args):\n"
            "    raise RuntimeError('handler failed')\n"
            "bad = Comm(target_name='sandgate.bad')\n"
            "bad.on_msg(boom)\n"
            "get_ipython().kernel.comm_manager.register_target('sandgate.bad_open', boom)")
        self.assertOk(cell)
        comm_id = cell.of_type("comm_open")[0]["comm_id"]
        iopub = self.iopub_of(self.send_shell("comm_msg", {"comm_id": comm_id, "data": {}}))
        errors = "".join(m["content"]["text"] for m in iopub if m["msg_type"] == "stream")
        self.assertIn("RuntimeError: handler failed", errors)

        opened = uuid.uuid4().hex
        iopub = self.iopub_of(self.send_shell("comm_open", {"comm_id": opened, "target_name": "sandgate.bad_open",
                                                            "data": {}}))
        self.assertIn("RuntimeError: handler failed",
                      "".join(m["content"]["text"] for m in iopub if m["msg_type"] == "stream"))
        self.assertEqual([m["content"]["comm_id"] for m in iopub if m["msg_type"] == "comm_close"], [opened])
        self.assertAlive()

    def test_frontend_messages_for_unknown_comms_are_harmless(self):
        for msg_type, content in (("comm_msg", {"comm_id": "no-such-comm", "data": {}}),
                                  ("comm_close", {"comm_id": "no-such-comm", "data": {}}),
                                  ("comm_open", {"comm_id": uuid.uuid4().hex, "target_name": "sandgate.never",
                                                 "data": {}})):
            self.iopub_of(self.send_shell(msg_type, content))
        self.assertAlive()

    # -- the comm package's API and volume ---------------------------------
    def test_the_comm_package_api(self):
        cell = self.kernel.run(
            "import comm\n"
            "c = comm.create_comm(target_name='sandgate.pkg', data={'v': 1})\n"
            "assert comm.get_comm_manager().get_comm(c.comm_id) is c\n"
            "c.close()")
        self.assertOk(cell)
        self.assertEqual(cell.of_type("comm_open")[0]["target_name"], "sandgate.pkg")
        self.assertEqual(len(cell.of_type("comm_close")), 1)

    def test_a_thousand_comms_leave_memory_flat(self):
        # Each comm carries 16 KiB of its own that nothing sends, so a comm
        # that leaked would show in RSS, while the messages themselves stay
        # small. RSS is read in a cell of its own, once the client has read
        # all of a churn's messages, so queued iopub does not count.
        churn = (
            "def churn(n):\n"
            "    for i in range(n):\n"
            "        c = Comm(target_name='sandgate.churn', data={'i': i})\n"
            "        c.ballast = os.urandom(16 * 1024)\n"
            "        c.send({'i': i})\n"
            "        c.close()\n"
            "def rss_kib():\n"
            "    with open('/proc/self/status') as f:\n"
            "        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS:'))\n")
        self.assertOk(self.kernel.run("from ipykernel.comm import Comm\nimport gc, json, os\n" + churn))
        cell = self.kernel.run("already = len(get_ipython().kernel.comm_manager.comms)\nchurn(1000)", timeout=120)
        self.assertOk(cell)
        self.assertEqual(len(cell.of_type("comm_open")), 1000)
        self.assertEqual(len(cell.of_type("comm_close")), 1000)
        self.assertOk(self.kernel.run("gc.collect(); first = rss_kib()"))
        self.assertOk(self.kernel.run("churn(2000)", timeout=180))
        cell = self.kernel.run(
            "gc.collect()\n"
            "print(json.dumps({'growth_kib': rss_kib() - first,\n"
            "                  'open': len(get_ipython().kernel.comm_manager.comms) - already,\n"
            "                  'comms': sum(type(o).__name__ == 'Comm' for o in gc.get_objects())}))")
        self.assertOk(cell)
        numbers = json.loads(cell.text().strip().splitlines()[-1])
        self.assertEqual(numbers["open"], 0, numbers)
        self.assertLessEqual(numbers["comms"], 1, numbers)  # the last one, still named c in churn's frame
        # 2000 more comms after the first 1000: a leak of each comm's 16 KiB
        # would be 32 MiB; allocator noise stays well under 8.
        self.assertLess(numbers["growth_kib"], 8 * 1024, numbers)
        self.assertAlive()

    # -- ipywidgets ----------------------------------------------------------
    def test_an_int_slider_syncs_both_ways(self):
        cell = self.kernel.run(
            "import ipywidgets\n"
            "slider = ipywidgets.IntSlider(value=3, min=0, max=10)\n"
            "changes = []\n"
            "slider.observe(lambda change: changes.append(change['new']), names='value')\n"
            "slider")
        self.assertOk(cell)
        opens = {m["content"]["comm_id"]: m["content"] for m in cell.iopub if m["msg_type"] == "comm_open"}
        sliders = [c for c in opens.values() if c["data"].get("_model_name") == "IntSliderModel"]
        self.assertEqual(len(sliders), 1, opens)
        model_id = sliders[0]["comm_id"]
        self.assertEqual(sliders[0]["target_name"], "jupyter.widget")
        self.assertEqual(sliders[0]["data"]["value"], 3)
        views = [m for m in cell.of_type("display_data") + cell.of_type("execute_result")
                 if "application/vnd.jupyter.widget-view+json" in m["data"]]
        self.assertEqual(views[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"], model_id)

        # Frontend -> kernel: the slider was dragged to 7.
        self.iopub_of(self.send_shell("comm_msg", {"comm_id": model_id,
                                                   "data": {"method": "backbone", "sync_data": {"value": 7}}}))
        self.assertEqual(self.value("slider.value, changes"), "(7, [7])")

        # Kernel -> frontend: a cell sets it to 9.
        cell = self.kernel.run("slider.value = 9")
        self.assertOk(cell)
        updates = [m["data"] for m in cell.of_type("comm_msg") if m["comm_id"] == model_id]
        self.assertEqual(updates[0]["method"], "update", updates)
        self.assertEqual(updates[0]["state"], {"value": 9})

        cell = self.kernel.run("slider.close()")
        self.assertOk(cell)
        self.assertIn(model_id, [m["comm_id"] for m in cell.of_type("comm_close")])
        self.assertAlive()


if __name__ == "__main__":
    unittest.main()
