#!/usr/bin/python3
"""Seed corpora for the libFuzzer targets, from the unit tests' golden vectors
(tests/jupyter-protocol/fixtures/golden.json). Rewrites corpus/<target>/.
    /usr/bin/python3 tests/fuzz/corpus/make_corpus.py
"""

import base64
import hashlib
import hmac
import json
import os
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


if __name__ == "__main__":
    main()
