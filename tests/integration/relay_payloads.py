"""The exact bytes the fake kernel puts on the wire for the relay tests.
Imported by fake_kernel.py (which sends them) and test_relay.py (which
checks that clients receive them unchanged). Deterministic."""

import base64
import random
import struct
import zlib


def png_bytes(width=512, height=512, seed=7):
    """A real, valid RGB PNG of random pixels (so it does not compress)."""
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


PNG_B64 = base64.b64encode(png_bytes()).decode()  # about 1 MiB of base64

# (a) display_data: odd spacing, keys out of order, \u escapes, raw
# non-ASCII, number spellings a re-serialiser would change.
DISPLAY_CONTENT = (
    '{  "transient" : {},"metadata":{"image/png" :{"width":512 ,"height": 512.0}} ,\n'
    '  "data" : { "text/plain" : "<Figure caf\\u00e9 \\ud83d\\ude00 \u65e5\u672c \u2603 \\"q\\" \\/ >",'
    '"image/png":"' + PNG_B64 + '\\n" } }'
).encode("utf-8")
DISPLAY_METADATA = (
    '{"zeta" :1, "alpha":[1.0, 2.50, 1e3, -0.0],\t"snow":"\\u2603 \u2603", "nested":{"b":null,"a":true}}'
).encode("utf-8")

# (b) execute_result with text/html.
RESULT_CONTENT = (
    '{"execution_count":1,"data":{"text/html":"<table class=\\"df\\"><tr><td>\\u003cb\\u003e &amp; '
    '\u00fc\u00df</td></tr></table>\\n","text/plain":"  a  b\\n0 1  2"},"metadata":{ }}'
).encode("utf-8")
RESULT_METADATA = b'{ }'

# (c) a message with binary buffers (every byte value, frame-delimiter look-alikes, an empty one).
BUFFERS = [bytes(range(256)) * 64, b"<IDS|MSG>\x00\xff\x00{\"not\": \"json\"", b""]
BUFFER_CONTENT = b'{"comm_id":"c0ffee","data":{"method":"update","state":{},"buffer_paths":[["a"],["b"],["c"]]}}'
BUFFER_METADATA = b'{"version":"2.1.0"}'

# (d) signed with the wrong key: must never reach a client.
FORGED_TEXT = "FORGED-MESSAGE-MUST-NOT-ARRIVE"
FORGED_CONTENT = ('{"name":"stdout","text":"' + FORGED_TEXT + '\\n"}').encode()

# After the forgery, a normal stream proves the channel still flows.
AFTER_CONTENT = b'{"name": "stdout", "text": "after the forgery\\n"}'

RELAY_CODE = "relay"  # the fake kernel sends all of the above for this code
# ... and for this one, after the execute's idle, a status "starting" with no
# parent, as ipykernel publishes once its control thread has already answered
LATE_STARTING_CODE = "late starting"
