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
    # What lenient server stacks read before (or around) a hello, each before one naming another server.
    other = client_hello("other.example.org")
    before = {
        "alert-first": b"\x15\x03\x01\x00\x02\x01\x5a",
        "ccs-first": b"\x14\x03\x03\x00\x01\x01",
        "empty-first": b"\x16\x03\x01\x00\x00",
        "appdata-first": b"\x17\x03\x03\x00\x01z",
        "heartbeat-first": b"\x18\x03\x03\x00\x03\x01\x00\x00",
    }
    for name, record in before.items():
        write("fuzz_client_hello", name, record + other)
    write("fuzz_client_hello", "version-0", b"\x16\x00\x01" + other[3:])
    body = other[5:]
    write("fuzz_client_hello", "bytewise", b"".join(b"\x16\x03\x01\x00\x01" + body[i:i + 1]
                                                    for i in range(len(body))))
    write("fuzz_client_hello", "sslv2", b"\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10" + b"a" * 37)
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
    for name, (qtype, records) in dns_answers().items():
        write("fuzz_dns_answer", name, bytes([1 if qtype == 28 else 0]) + records)


def dns_answers():
    """Answers to files.example.org: direct, through a CNAME chain, compressed and not."""
    def labels(name):
        return b"".join(bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\0"

    def message(qtype, records, rcode=0):
        head = struct.pack("!HHHHHH", 0x1234, 0x8180 | rcode, 1, len(records), 0, 0)
        return head + labels("files.example.org") + struct.pack("!HH", qtype, 1) + b"".join(records)

    def record(owner, rtype, rdata):
        return owner + struct.pack("!HHIH", rtype, 1, 60, len(rdata)) + rdata

    at_question = b"\xc0\x0c"
    a = record(at_question, 1, bytes([93, 184, 216, 34]))
    a2 = record(at_question, 1, bytes([93, 184, 216, 35]))
    cname = record(at_question, 5, labels("cdn.example.net"))
    # The CNAME's target is at offset 12 + 19 + 4 + 12 (question, then the CNAME's fixed part).
    via = record(b"\xc0\x2f", 1, bytes([203, 0, 113, 9]))
    aaaa = record(at_question, 28, bytes.fromhex("20010db8000000000000000000000001"))
    return {
        "a": (1, message(1, [a, a2])),
        "a-uncompressed": (1, message(1, [record(labels("files.example.org"), 1, bytes([1, 2, 3, 4]))])),
        "cname": (1, message(1, [cname, via])),
        "aaaa": (28, message(28, [aaaa])),
        "nxdomain": (1, message(1, [], rcode=3)),
    }


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
