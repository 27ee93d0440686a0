"""A tiny Jupyter kernel for the relay tests (pyzmq + jupyter_client's
Session). It answers kernel_info, shutdown and execute; for the code
"relay" it puts hand-made frames on iopub whose metadata, content and
buffers are byte-exact payloads from relay_payloads.py, and one message
signed with a wrong key.

usage: fake_kernel.py -f CONNECTION_FILE
"""

import hashlib
import hmac
import json
import os
import sys
import uuid
from datetime import datetime, timezone

import zmq
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relay_payloads as P  # noqa: E402

DELIM = b"<IDS|MSG>"


def endpoint(cfg, port_name):
    if cfg["transport"] == "ipc":
        return f"ipc://{cfg['ip']}-{cfg[port_name]}"
    return f"tcp://{cfg['ip']}:{cfg[port_name]}"


class FakeKernel:
    def __init__(self, cfg):
        self.key = cfg["key"].encode()
        self.session = Session(key=self.key, signature_scheme=cfg.get("signature_scheme", "hmac-sha256"),
                               username="fake")
        ctx = zmq.Context()
        self.shell = ctx.socket(zmq.ROUTER)
        self.control = ctx.socket(zmq.ROUTER)
        self.stdin = ctx.socket(zmq.ROUTER)
        # XPUB: the kernel sees the gateway's subscription arrive, and holds
        # kernel_info replies until then, so that no output is sent before
        # anyone listens (the ZeroMQ slow joiner).
        self.iopub = ctx.socket(zmq.XPUB)
        self.hb = ctx.socket(zmq.REP)
        for sock, name in [(self.shell, "shell_port"), (self.control, "control_port"),
                           (self.stdin, "stdin_port"), (self.iopub, "iopub_port"), (self.hb, "hb_port")]:
            sock.bind(endpoint(cfg, name))
        self.count = 0
        self.subscribed = False
        self.held = []  # kernel_info requests waiting for a subscriber

    def header(self, msg_type):
        return {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "fake",
                "session": self.session.session, "date": datetime.now(timezone.utc).isoformat(),
                "version": "5.3"}

    def raw_send(self, sock, msg_type, parent, metadata, content, buffers=(), key=None, idents=()):
        """Frames built by hand so that metadata and content are exactly these bytes."""
        header = json.dumps(self.header(msg_type)).encode()
        parent_header = json.dumps(parent, default=json_default).encode()
        mac = hmac.new(self.key if key is None else key, digestmod=hashlib.sha256)
        for part in (header, parent_header, metadata, content):
            mac.update(part)
        sock.send_multipart([*idents, DELIM, mac.hexdigest().encode(), header, parent_header, metadata,
                             content, *buffers])

    def status(self, state, parent):
        self.session.send(self.iopub, "status", {"execution_state": state}, parent=parent)

    def on_shell(self, sock, idents, msg):
        parent = msg["header"]
        msg_type = parent["msg_type"]
        if msg_type == "kernel_info_request" and not self.subscribed:
            self.held.append((sock, idents, msg))
            return
        self.status("busy", parent)
        if msg_type == "kernel_info_request":
            self.session.send(sock, "kernel_info_reply", {
                "status": "ok", "protocol_version": "5.3", "implementation": "fake",
                "implementation_version": "0.1", "banner": "fake kernel",
                "language_info": {"name": "python", "version": "3", "mimetype": "text/x-python",
                                  "file_extension": ".py"}}, parent=parent, ident=idents)
        elif msg_type == "shutdown_request":
            self.session.send(sock, "shutdown_reply", {"status": "ok", "restart": False}, parent=parent,
                              ident=idents)
            self.status("idle", parent)
            sys.exit(0)
        elif msg_type == "execute_request":
            self.count += 1
            code = msg["content"].get("code", "")
            self.session.send(self.iopub, "execute_input", {"code": code, "execution_count": self.count},
                              parent=parent)
            if code == P.RELAY_CODE:
                self.relay(parent)
            self.session.send(sock, "execute_reply", {"status": "ok", "execution_count": self.count,
                                                      "user_expressions": {}, "payload": []},
                              parent=parent, ident=idents)
        else:
            self.session.send(sock, msg_type.replace("_request", "_reply"), {"status": "ok"}, parent=parent,
                              ident=idents)
        self.status("idle", parent)
        if msg_type == "execute_request" and msg["content"].get("code") == P.LATE_STARTING_CODE:
            self.status("starting", {})

    def relay(self, parent):
        self.raw_send(self.iopub, "display_data", parent, P.DISPLAY_METADATA, P.DISPLAY_CONTENT)
        self.raw_send(self.iopub, "execute_result", parent, P.RESULT_METADATA, P.RESULT_CONTENT)
        self.raw_send(self.iopub, "comm_msg", parent, P.BUFFER_METADATA, P.BUFFER_CONTENT, P.BUFFERS)
        self.raw_send(self.iopub, "stream", parent, b"{}", P.FORGED_CONTENT, key=b"not-the-key")
        self.raw_send(self.iopub, "stream", parent, b"{}", P.AFTER_CONTENT)

    def run(self):
        poller = zmq.Poller()
        for sock in (self.shell, self.control, self.stdin, self.hb, self.iopub):
            poller.register(sock, zmq.POLLIN)
        while True:
            for sock, _ in poller.poll():
                frames = sock.recv_multipart()
                if sock is self.iopub:
                    if frames[0][:1] == b"\x01":
                        self.subscribed = True
                        held, self.held = self.held, []
                        for request in held:
                            self.on_shell(*request)
                    continue
                if sock is self.hb:
                    sock.send_multipart(frames)
                    continue
                idents, rest = self.session.feed_identities(frames, copy=True)
                msg = self.session.deserialize(rest, content=True, copy=True)  # checks the gateway's HMAC
                if sock is not self.stdin:
                    self.on_shell(sock, idents, msg)


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "-f":
        raise SystemExit(__doc__)
    with open(sys.argv[2]) as f:
        cfg = json.load(f)
    FakeKernel(cfg).run()


if __name__ == "__main__":
    main()
