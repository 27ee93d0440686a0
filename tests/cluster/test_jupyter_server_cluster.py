"""Jupyter Server 1.x (what JupyterLab runs on) with --gateway-url pointing at
HAProxy in front of three sandgate nodes: sessions, executes, interrupts and
restarts, as through one gateway (the Notebook e2e test's cases), and its
kernels spread over the nodes.

Run a class by name (python3 -m unittest test_jupyter_server_cluster.JupyterServerThroughCluster):
the module imports the single-gateway test class it reuses."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from test_cluster import Cluster, node_of  # noqa: E402
from test_notebook_gateway import NotebookThroughGateway  # noqa: E402


class JupyterServerThroughCluster(NotebookThroughGateway):
    app = "jupyter_server"

    @classmethod
    def start_gateway(cls):
        cls.cluster = Cluster(5)
        return cls.cluster.through  # what the base class's cases ask sandgate directly

    @classmethod
    def stop_gateway(cls):
        cls.cluster.stop()

    def test_kernels_spread_over_the_nodes_and_all_are_listed(self):
        kids = []
        for _ in range(6):
            status, kernel = self.nb_request("POST", "api/kernels", {"name": "python3"})
            self.assertEqual(status, 201, kernel)
            kids.append(kernel["id"])
        try:
            self.assertGreater(len({node_of(k) for k in kids}), 1, kids)
            # Jupyter Server lists the gateway's kernels; it must see every one.
            status, listed = self.nb_request("GET", "api/kernels")
            self.assertEqual(status, 200)
            self.assertTrue(set(kids) <= {k["id"] for k in listed})
        finally:
            for k in kids:
                self.nb_request("DELETE", f"api/kernels/{k}")


if __name__ == "__main__":
    unittest.main()
