"""run_with_gateway.py with a gateway whose policy lets sandboxes ask for
egress to the names *.test on a loopback HTTP server that this script serves,
for the @sandgate/ai-sdk network tests. Nothing but 127.0.0.1 is contacted.

usage: run_with_egress_gateway.py [--timeout S] [--sandboxed] -- COMMAND ARGS...

The command gets, besides run_with_gateway.py's variables,
SANDGATE_TEST_HTTP_PORT (the server's port on 127.0.0.1) and
SANDGATE_TEST_HOSTS (the names that resolve to it for the egress proxy,
through --egress-hosts-file). The server is the egress tests'
(tests/security/egress_servers.py): GET / answers "hello from HOST:PORT /".
The policy is share/sandgate/policies/default.json (network "none") with a
network_ceiling of {"mode": "allow", "hosts": ["*.test"],
"cidrs": ["127.0.0.1/32"], "ports": [SANDGATE_TEST_HTTP_PORT]}.
"""

import functools
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "security"))
import egress_servers  # noqa: E402
import run_with_gateway  # noqa: E402  (puts tests/support on sys.path)

HOSTS = ["files.test", "blocked.test"]


def main():
    server = egress_servers.serve()
    port = server.server_address[1]
    with open(os.path.join(HERE, "..", "..", "share", "sandgate", "policies", "default.json")) as f:
        policy = json.load(f)
    policy["network_ceiling"] = {"mode": "allow", "hosts": ["*.test"], "cidrs": ["127.0.0.1/32"], "ports": [port]}
    with tempfile.TemporaryDirectory(prefix="sandgate-ai-sdk-egress-") as work:
        policy_file = os.path.join(work, "policy.json")
        hosts_file = os.path.join(work, "hosts")
        with open(policy_file, "w") as f:
            json.dump(policy, f)
        with open(hosts_file, "w") as f:
            f.write("127.0.0.1 " + " ".join(HOSTS) + "\n")
        os.environ.update(SANDGATE_TEST_HTTP_PORT=str(port), SANDGATE_TEST_HOSTS=",".join(HOSTS))
        # run_with_gateway.py starts its gateway with these options added.
        run_with_gateway.Gateway = functools.partial(run_with_gateway.Gateway, "--policy", policy_file,
                                                     "--egress-hosts-file", hosts_file)
        try:
            run_with_gateway.main()
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
