"""The MCP endpoint (/mcp) at the protocol's edges, over raw HTTP: the
transport's status codes for each kind of bad request, version negotiation,
the stateless 2026-07-28 requests with their headers, and ownership between
two principals. The clients' view (the official SDK, @ai-sdk/mcp) is
tests/ai-sdk/mcp.test.mjs."""

import hashlib
import json
import os
import tempfile
import unittest
import uuid

from sandgate_fixture import Gateway

ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"


def modern_meta():
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Mcp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tokens = {name: f"{name}-{uuid.uuid4().hex}" for name in ("alice", "bob")}
        fd, cls.tokens_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"principals": [{"name": n, "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
                                      for n, t in cls.tokens.items()]}, f)
        cls.gw = Gateway("--tokens-file", cls.tokens_path, name="Mcp", sandboxed=True)
        cls.gw.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.gw.stop(timeout=20)
        os.unlink(cls.tokens_path)

    def post(self, body, headers=None, who="alice", raw=None):
        h = {"Content-Type": "application/json", "Accept": ACCEPT}
        h.update(headers or {})
        data = raw if raw is not None else json.dumps(body).encode()
        return self.gw.request("POST", "mcp", raw=data, headers=h, token=self.tokens.get(who, who), auth="bearer")

    def initialize(self, who="alice", version="2025-11-25"):
        r = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "1"}}}, who=who)
        self.assertEqual(r.status, 200, r.body)
        sid = r.headers["Mcp-Session-Id"]
        self.assertRegex(sid, r"^[\x21-\x7e]{16,}$")
        negotiated = r.json()["result"]["protocolVersion"]
        return {"Mcp-Session-Id": sid, "MCP-Protocol-Version": negotiated}, negotiated

    def call(self, session, name, arguments, who="alice", rid=1):
        r = self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}, session, who=who)
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def modern(self, method, params=None, headers=None, rid=1):
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": modern_meta(), **(params or {})}}
        h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if method == "tools/call":
            h["Mcp-Name"] = params["name"]
        h.update(headers or {})
        return self.post(body, h)

    def test_bad_requests_get_the_transports_status_codes(self):
        session, _ = self.initialize()
        r = self.post(None, raw=b"{not json")
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32700))
        self.assertNotIn("id", r.json())
        r = self.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], session)
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32600))
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Content-Type": "text/plain", **session})
        self.assertEqual(r.status, 415)
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        self.assertEqual(r.status, 400, "a request with no session and no 2026-07-28 _meta")
        self.assertIn("Mcp-Session-Id", r.json()["error"]["message"])
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Mcp-Session-Id": "f" * 32})
        self.assertEqual(r.status, 404)
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {**session, "MCP-Protocol-Version": "1999-01-01"})
        self.assertEqual(r.status, 400)
        r = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        self.assertEqual((r.status, r.body), (202, b""))
        r = self.post({"jsonrpc": "2.0", "id": 2, "method": "no/such"}, session)
        self.assertEqual(r.json()["error"]["code"], -32601)
        r = self.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, {**session, "Origin": "https://evil.example"})
        self.assertEqual(r.status, 403)
        r = self.gw.request("GET", "mcp", headers={"Accept": "text/event-stream", **session},
                            token=self.tokens["alice"], auth="bearer")
        self.assertEqual((r.status, r.headers.get("Allow")), (405, "POST, DELETE"))
        deep = (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"create_sandbox","arguments":'
                b'{"network":' + b"[" * 200000 + b"]" * 200000 + b"}}}")
        r = self.post(None, session, raw=deep)
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32700), "nesting is bounded")
        # The session still answers after all that.
        self.assertEqual(self.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, session).json()["result"], {})
        r = self.gw.request("DELETE", "mcp", headers=session, token=self.tokens["alice"], auth="bearer")
        self.assertEqual(r.status, 204)
        self.assertEqual(self.post({"jsonrpc": "2.0", "id": 5, "method": "ping"}, session).status, 404)

    def test_tokens_are_bearer_tokens_and_a_wrong_one_is_401(self):
        for token in ("wrong", ""):
            r = self.gw.request("POST", "mcp", raw=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                headers={"Content-Type": "application/json", "Accept": ACCEPT}, token=token,
                                auth="bearer" if token else None)
            self.assertEqual(r.status, 401, token)
            self.assertTrue(r.headers["WWW-Authenticate"].startswith("Bearer"), r.headers)

    def test_the_version_is_negotiated_and_2025_06_18_makes_bad_arguments_a_protocol_error(self):
        _, negotiated = self.initialize(version="1999-01-01")
        self.assertEqual(negotiated, "2025-11-25")
        session, negotiated = self.initialize(version="2025-06-18")
        self.assertEqual(negotiated, "2025-06-18")
        self.assertEqual(self.call(session, "run_code", {"code": 7})["error"]["code"], -32602)
        newer, _ = self.initialize()
        result = self.call(newer, "run_code", {"code": 7})["result"]
        self.assertTrue(result["isError"])
        self.assertEqual(self.call(newer, "nope", {})["error"]["code"], -32602)

    def test_stateless_requests_check_their_headers_and_pass_the_sandbox_back(self):
        r = self.modern("server/discover")
        self.assertEqual(r.status, 200, r.body)
        d = r.json()["result"]
        self.assertEqual(d["resultType"], "complete")
        self.assertIn(MODERN, d["supportedVersions"])
        self.assertIn("tools", d["capabilities"])
        self.assertIn(d["cacheScope"], ("public", "private"))
        self.assertEqual(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "sandgate")
        r = self.modern("tools/list", headers={"Mcp-Method": "tools/call"})
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32020))
        r = self.modern("tools/call", {"name": "run_code", "arguments": {"code": "1"}}, {"Mcp-Name": "run_shell"})
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32020))
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {**modern_meta(), "io.modelcontextprotocol/protocolVersion": "1900-01-01"}}}
        r = self.post(body, {"MCP-Protocol-Version": "1900-01-01", "Mcp-Method": "tools/list"})
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, -32022))
        self.assertEqual(r.json()["error"]["data"]["requested"], "1900-01-01")
        r = self.modern("no/such")
        self.assertEqual((r.status, r.json()["error"]["code"]), (404, -32601))
        r = self.modern("tools/list")
        self.assertEqual(r.json()["result"]["resultType"], "complete")
        self.assertIn("ttlMs", r.json()["result"])

        first = self.modern("tools/call", {"name": "run_code", "arguments": {"code": "y = 5"}}).json()["result"]
        sid = first["structuredContent"]["sandbox_id"]
        again = self.modern("tools/call", {"name": "run_code", "arguments": {"code": "y * 3", "sandbox_id": sid}})
        self.assertEqual(again.json()["result"]["structuredContent"]["result"], "15")
        fresh = self.modern("tools/call", {"name": "run_code", "arguments": {"code": "'y' in dir()"}})
        self.assertNotEqual(fresh.json()["result"]["structuredContent"]["sandbox_id"], sid)
        self.assertEqual(fresh.json()["result"]["structuredContent"]["result"], "False")

    def test_another_principals_sandbox_and_session_are_not_reachable(self):
        alice, _ = self.initialize("alice")
        made = self.call(alice, "create_sandbox", {"ttl_s": 600, "metadata": {"who": "alice"}})["result"]
        sid = made["structuredContent"]["sandbox_id"]
        self.assertEqual(self.call(alice, "run_code", {"code": "secret = 1", "sandbox_id": sid})["result"]["isError"],
                         False)
        bob, _ = self.initialize("bob")
        for tool, args in (("run_code", {"code": "secret", "sandbox_id": sid}),
                           ("read_file", {"path": "/etc/hostname", "sandbox_id": sid}),
                           ("close_sandbox", {"sandbox_id": sid})):
            result = self.call(bob, tool, args, who="bob")["result"]
            self.assertTrue(result["isError"], (tool, result))
            self.assertIn("does not exist", result["content"][0]["text"])
        listed = self.call(bob, "list_sandboxes", {}, who="bob")["result"]["structuredContent"]["sandboxes"]
        self.assertNotIn(sid, [s["sandbox_id"] for s in listed])
        # Alice's session id with Bob's token is no session of his.
        self.assertEqual(self.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, alice, who="bob").status, 404)
        r = self.post({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                       "params": {"uri": f"sandgate://sandboxes/{sid}/files/x.txt"}}, bob, who="bob")
        self.assertEqual(r.json()["error"]["code"], -32002)
        self.assertTrue(self.call(alice, "close_sandbox", {"sandbox_id": sid})["result"]["structuredContent"]["closed"])


if __name__ == "__main__":
    unittest.main()
