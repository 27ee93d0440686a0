"""The OpenAPI document a real gateway serves at /api/openapi.json: valid
OpenAPI 3.0, every path and method in it routed by the gateway (and answered
with a status it documents), every route of the router in it."""

import re
import unittest
import uuid

from sandgate_fixture import GatewayTestCase

try:
    from openapi_spec_validator import validate as validate_openapi  # not in every CI image
except ImportError:
    validate_openapi = None

# Every route gateway/src/api/routes.cpp dispatches (router::routes, the
# health check in router::prepare and router::upgrade), as (method, path template). Keep in step with the router.
ROUTES = {
    ("patch", "/api/sandboxes/{sandbox_id}/network"),
    ("get", "/health"),
    ("get", "/api"),
    ("get", "/api/node"),
    ("patch", "/api/node"),
    ("get", "/api/openapi.json"),
    ("get", "/metrics"),
    ("get", "/api/kernelspecs"),
    ("get", "/api/kernelspecs/{kernel_name}"),
    ("get", "/kernelspecs/{kernel_name}/{resource}"),
    ("get", "/api/kernels"),
    ("post", "/api/kernels"),
    ("get", "/api/kernels/{kernel_id}"),
    ("delete", "/api/kernels/{kernel_id}"),
    ("post", "/api/kernels/{kernel_id}/interrupt"),
    ("post", "/api/kernels/{kernel_id}/restart"),
    ("post", "/api/kernels/{kernel_id}/execute"),
    ("get", "/api/kernels/{kernel_id}/executions/{msg_id}"),
    ("get", "/api/kernels/{kernel_id}/channels"),
    ("get", "/api/sessions"),
    ("post", "/api/sessions"),
    ("get", "/api/sessions/{session_id}"),
    ("patch", "/api/sessions/{session_id}"),
    ("delete", "/api/sessions/{session_id}"),
    ("get", "/api/sandboxes"),
    ("post", "/api/sandboxes"),
    ("get", "/api/sandboxes/{sandbox_id}"),
    ("patch", "/api/sandboxes/{sandbox_id}"),
    ("delete", "/api/sandboxes/{sandbox_id}"),
    ("post", "/api/sandboxes/{sandbox_id}/commands"),
    ("post", "/api/sandboxes/{sandbox_id}/kernels"),
    ("get", "/api/sandboxes/{sandbox_id}/files"),
    ("head", "/api/sandboxes/{sandbox_id}/files"),
    ("get", "/api/sandboxes/{sandbox_id}/files/{path}"),
    ("head", "/api/sandboxes/{sandbox_id}/files/{path}"),
    ("put", "/api/sandboxes/{sandbox_id}/files/{path}"),
    ("delete", "/api/sandboxes/{sandbox_id}/files/{path}"),
    ("get", "/api/sandboxes/{sandbox_id}/processes"),
    ("post", "/api/sandboxes/{sandbox_id}/processes"),
    ("get", "/api/sandboxes/{sandbox_id}/processes/{process_id}"),
    ("delete", "/api/sandboxes/{sandbox_id}/processes/{process_id}"),
    ("get", "/api/sandboxes/{sandbox_id}/processes/{process_id}/wait"),
    ("post", "/api/sandboxes/{sandbox_id}/processes/{process_id}/signal"),
    ("post", "/api/sandboxes/{sandbox_id}/processes/{process_id}/resize"),
    ("post", "/api/sandboxes/{sandbox_id}/processes/{process_id}/stdin"),
    ("get", "/api/sandboxes/{sandbox_id}/processes/{process_id}/attach"),
    ("get", "/api/sandboxes/{sandbox_id}/fs"),
    ("head", "/api/sandboxes/{sandbox_id}/fs"),
    ("put", "/api/sandboxes/{sandbox_id}/fs"),
    ("delete", "/api/sandboxes/{sandbox_id}/fs"),
    ("get", "/api/sandboxes/{sandbox_id}/fs/stat"),
    ("get", "/api/sandboxes/{sandbox_id}/fs/list"),
    ("post", "/api/sandboxes/{sandbox_id}/fs/mkdir"),
    ("post", "/api/sandboxes/{sandbox_id}/fs/rename"),
    ("get", "/api/sandboxes/{sandbox_id}/ports"),
    ("post", "/api/sandboxes/{sandbox_id}/port-urls"),
    ("post", "/mcp"),
    ("delete", "/mcp"),
}
# Paths whose answers are another protocol's (MCP: JSON-RPC 2.0), not the API's errors.
OTHER_PROTOCOLS = ("/mcp",)
METHODS = ("get", "head", "post", "put", "patch", "delete")
# Routed but always refused with 400, as the document's path item says: the
# workspace itself cannot be replaced or removed.
REFUSED = {("put", "/api/sandboxes/{sandbox_id}/files"), ("delete", "/api/sandboxes/{sandbox_id}/files")}


def operations(doc):
    return {(method, path): op for path, item in doc["paths"].items() for method, op in item.items()
            if method in METHODS}


def resolve(doc, ref):
    node = doc
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


class OpenApi(GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.gw.request("GET", "api/openapi.json")
        if r.status != 200:
            raise AssertionError(f"GET /api/openapi.json: {r}")
        cls.response = r
        cls.doc = r.json()
        # A sandbox (on the host: these gateways run kernels unsandboxed) whose
        # files routes answer past the sandbox lookup.
        r = cls.gw.request("POST", "api/sandboxes", {})
        if r.status != 201:
            raise AssertionError(f"POST /api/sandboxes: {r}")
        cls.sandbox_id = r.json()["id"]

    def test_served_as_openapi_3_json_with_this_gateways_server(self):
        self.assertTrue(self.response.headers["Content-Type"].startswith("application/json"))
        self.assertRegex(self.doc["openapi"], r"^3\.0\.\d+$")
        self.assertEqual(self.doc["servers"], [{"url": "/"}])
        for ref in set(refs(self.doc)):
            self.assertTrue(ref.startswith("#/"), ref)
            resolve(self.doc, ref)  # raises KeyError when dangling
        for (method, path), op in operations(self.doc).items():
            self.assertTrue(op.get("operationId"), (method, path))
            self.assertTrue(op.get("responses"), (method, path))
            declared = set(re.findall(r"{(\w+)}", path))
            params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            self.assertEqual(declared, params, (method, path))
        error = self.doc["components"]["schemas"]["Error"]
        self.assertEqual(set(error["required"]), {"reason", "message"})
        if validate_openapi:
            validate_openapi(self.doc)

    def test_needs_the_token_like_the_rest_of_the_api(self):
        self.assertError(self.gw.request("GET", "api/openapi.json", auth=None), 401)
        self.assertError(self.gw.request("GET", "api/openapi.json", token="wrong"), 403)

    def test_every_error_response_is_reason_and_message(self):
        for (method, path), op in operations(self.doc).items():
            if path in OTHER_PROTOCOLS:
                continue
            for status, response in op["responses"].items():
                if "$ref" in response:
                    response = resolve(self.doc, response["$ref"])
                if int(status) < 400:
                    continue
                schema = response["content"]["application/json"]["schema"]
                self.assertEqual(schema, {"$ref": "#/components/schemas/Error"}, (method, path, status))

    def test_the_document_and_the_router_have_the_same_routes(self):
        self.assertEqual(set(operations(self.doc)), ROUTES)

    def test_get_routes_without_parameters_answer_a_documented_status(self):
        called = 0
        for (method, path), op in operations(self.doc).items():
            if method != "get" or "{" in path:
                continue
            r = self.gw.request("GET", path.lstrip("/"))
            self.assertIn(str(r.status), op["responses"], (path, r))
            self.assertLess(r.status, 400, (path, r))
            called += 1
        self.assertGreaterEqual(called, 6)

    def fill(self, path):
        """The path with made-up ids (and the real sandbox for files)."""
        sandbox = self.sandbox_id if "/files" in path or "/fs" in path else str(uuid.uuid4())
        return (path.replace("{sandbox_id}", sandbox).replace("{kernel_id}", str(uuid.uuid4()))
                .replace("{session_id}", str(uuid.uuid4())).replace("{msg_id}", uuid.uuid4().hex)
                .replace("{kernel_name}", "no-such-spec").replace("{resource}", "logo-64x64.png")
                .replace("{path}", "openapi-probe.txt").replace("{process_id}", "p0123456789abcdef"))

    def test_every_documented_operation_is_routed(self):
        for (method, path), op in sorted(operations(self.doc).items()):
            if method == "post" and path in ("/api/kernels", "/api/sessions", "/api/sandboxes"):
                continue  # would start something; the other tests of this suite cover them
            body = b"probe" if method == "put" else (b"{}" if method in ("post", "patch") else None)
            r = self.gw.request(method.upper(), self.fill(path).lstrip("/"), raw=body)
            self.assertIn(str(r.status), op["responses"], (method, path, r))
            self.assertNotEqual(r.status, 405, (method, path, r))
            if r.status == 404 and method != "head" and path not in OTHER_PROTOCOLS:
                self.assertNotEqual(r.json()["message"], "No such path", (method, path))

    def test_methods_a_path_does_not_document_are_refused(self):
        ops = operations(self.doc)
        for path in self.doc["paths"]:
            for method in METHODS:
                if (method, path) in ops:
                    continue
                r = self.gw.request(method.upper(), self.fill(path).lstrip("/"), raw=b"{}")
                if (method, path) in REFUSED:
                    self.assertError(r, 400)
                    self.assertIn("400", self.doc["paths"][path]["description"])
                else:
                    self.assertEqual(r.status, 405, (method, path, r))
                    if method != "head":
                        self.assertError(r, 405)


if __name__ == "__main__":
    unittest.main()
