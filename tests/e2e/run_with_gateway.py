"""Starts a sandgate (tests/support/sandgate_fixture.py), runs a command with
SANDGATE_URL, SANDGATE_WS_URL, SANDGATE_TOKEN and SANDGATE_KERNELS in its
environment, then stops the gateway and checks it exits 0 on SIGTERM.

usage: run_with_gateway.py [--timeout S] [--sandboxed] [--tls] -- COMMAND ARGS...

--sandboxed runs kernels in real sandboxes (needs root).
--tls serves https/wss with a certificate of a throwaway CA, which the
command trusts through NODE_EXTRA_CA_CERTS and SSL_CERT_FILE.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from sandgate_fixture import Gateway, TestCertificates, kernel_names  # noqa: E402


def main():
    args = sys.argv[1:]
    timeout = 600
    if args[:1] == ["--timeout"]:
        timeout = float(args[1])
        args = args[2:]
    sandboxed = args[:1] == ["--sandboxed"]
    if sandboxed:
        args = args[1:]
    tls = args[:1] == ["--tls"]
    if tls:
        args = args[1:]
    if args[:1] != ["--"] or len(args) < 2:
        raise SystemExit(__doc__)
    command = args[1:]
    certs_dir = tempfile.TemporaryDirectory(prefix="sandgate-e2e-tls-") if tls else None
    certs = TestCertificates(certs_dir.name) if tls else None
    gw = Gateway(name="e2e-" + os.path.basename(command[-1]) + ("-tls" if tls else ""), sandboxed=sandboxed,
                 tls=certs)
    try:
        env = dict(os.environ, SANDGATE_URL=gw.url, SANDGATE_WS_URL=gw.ws_base, SANDGATE_TOKEN=gw.token,
                   SANDGATE_KERNELS=",".join(kernel_names()), SANDGATE_GATEWAY_LOG=gw.log_path)
        if certs:
            env.update(NODE_EXTRA_CA_CERTS=certs.ca, SSL_CERT_FILE=certs.ca)
        try:
            result = subprocess.run(command, env=env, timeout=timeout, cwd=os.path.dirname(os.path.abspath(__file__)))
            code = result.returncode
        except subprocess.TimeoutExpired:
            print(f"run_with_gateway: {command} ran over {timeout} s", file=sys.stderr)
            code = 1
        if not gw.alive():
            print("run_with_gateway: the gateway died during the run:\n" + gw.log_tail(), file=sys.stderr)
            code = code or 1
    finally:
        stop_code, taken = gw.stop()
        if certs_dir:
            certs_dir.cleanup()
    if stop_code != 0:
        print(f"run_with_gateway: sandgate exited {stop_code} on SIGTERM", file=sys.stderr)
        code = code or 1
    if code != 0:
        print(f"run_with_gateway: gateway log at {gw.log_path}", file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
