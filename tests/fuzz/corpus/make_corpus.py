#!/usr/bin/python3
"""Seed corpora for the libFuzzer targets, from the unit tests' golden vectors
(tests/jupyter-protocol/fixtures/golden.json), and for the egress parsers
TLS ClientHellos Python's ssl writes and proxy request heads. Rewrites
corpus/<target>/.
    /usr/bin/python3 tests/fuzz/corpus/make_corpus.py
"""

import base64
import hashlib
import hmac
import json
import os
import ssl
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "jupyter-protocol", "fixtures", "golden.json")
FUZZ_KEY = b"fuzz-key"
DELIM = b"<IDS|MSG>"


def wire_seed(frames, signed):
    start = frames.index(DELIM)
    frames = list(frames)
    if signed:
        frames[start + 1] = hmac.new(FUZZ_KEY, b"".join(frames[start + 2:start + 6]), hashlib.sha256).hexdigest().encode()
    else:
        frames[start + 1] = b""
    out = bytes([1 if signed else 0])
    for f in frames:
        f = f[:65535]
        out += struct.pack("<H", len(f)) + f
    return out


def write(target, name, data):
    directory = os.path.join(HERE, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def client_hello(name):
    """The first flight of Python's TLS client, naming `name` (or no name)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    obj = ctx.wrap_bio(ssl.MemoryBIO(), out := ssl.MemoryBIO(), server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def egress_seeds():
    write("fuzz_client_hello", "named", client_hello("files.example.org"))
    write("fuzz_client_hello", "unnamed", client_hello(None))
    hello = client_hello("split.example.org")
    body = hello[5:]
    split = b"".join(b"\x16\x03\x01" + struct.pack(">H", len(body[i:i + 64])) + body[i:i + 64]
                     for i in range(0, len(body), 64))
    write("fuzz_client_hello", "split", split)
    write("fuzz_client_hello", "ssh", b"SSH-2.0-OpenSSH_9.2\r\n")
    heads = {
        "connect": b"CONNECT files.test:443 HTTP/1.1\r\nHost: files.test:443\r\n\r\n",
        "connect-v6": b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n",
        "absolute": b"GET http://files.test:8080/a?b#c HTTP/1.1\r\nHost: evil.test\r\nConnection: x-drop\r\n"
                    b"X-Drop: 1\r\nProxy-Authorization: secret\r\n\r\n",
        "origin": b"POST /upload HTTP/1.0\r\nHost: Files.Test.:80\r\nContent-Length: 3\r\n\r\nabc",
        "authority": b"files.test:65535",
    }
    for name, head in heads.items():
        write("fuzz_proxy_request", name, head)


def main():
    with open(GOLDEN) as f:
        cases = json.load(f)["cases"]
    for case in cases:
        name = case["name"]
        frames = [base64.b64decode(x) for x in case["zmq_frames"]]
        write("fuzz_wire", name + "-signed", wire_seed(frames, True))
        write("fuzz_wire", name + "-unsigned", wire_seed(frames, False))
        for kind in ("legacy", "client_legacy"):
            frame = case[kind]
            write("fuzz_ws_legacy", name + "-" + kind, bytes([1 if frame["binary"] else 0]) + base64.b64decode(frame["data"]))
        write("fuzz_ws_v1", name, base64.b64decode(case["v1"]))
    egress_seeds()


if __name__ == "__main__":
    main()
