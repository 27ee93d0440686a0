"""A DNS server for the egress tests (stdlib only), on 127.0.0.1 of the host,
that the proxy asks through the gateway's --egress-resolver. Each name has a
list of answers, one per A query in turn (the last one repeats), so that a
name can answer an allowed address first and a refused one the next time
(DNS rebinding), or the other way round. AAAA queries get no records, names
it does not know NXDOMAIN. Every question is recorded."""

import socket
import struct
import threading

A, AAAA = 1, 28


def parse_question(message):
    """(id, name, qtype) of a query, or None when it is not one."""
    if len(message) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", message[:6])
    if flags & 0x8000 or qdcount != 1:
        return None
    labels, at = [], 12
    while at < len(message):
        n = message[at]
        if n == 0 or n & 0xC0:
            break
        labels.append(message[at + 1:at + 1 + n].decode("ascii", "replace").lower())
        at += 1 + n
    if at + 5 > len(message) or message[at] != 0:
        return None
    qtype, = struct.unpack("!H", message[at + 1:at + 3])
    return qid, ".".join(labels), qtype, message[12:at + 5]


class DnsServer:
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answers = {}  # name -> [[ipv4, ...], ...], one entry per A query
        self.queries = []  # (name, qtype) of every question, in order
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def set(self, name, *answers):
        """The A answers `name` gives, one list of addresses per query in turn."""
        with self.lock:
            self.answers[name] = [list(a) for a in answers]

    def count(self, name, qtype=A):
        with self.lock:
            return sum(1 for q in self.queries if q == (name, qtype))

    def _answer(self, name, qtype):
        """(rcode, [rdata]) for one question."""
        with self.lock:
            self.queries.append((name, qtype))
            if name not in self.answers:
                return 3, []
            if qtype != A:
                return 0, []
            asked = sum(1 for q in self.queries if q == (name, A))
            plan = self.answers[name]
            return 0, [socket.inet_aton(a) for a in plan[min(asked, len(plan)) - 1]]

    def _serve(self):
        while True:
            try:
                message, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            q = parse_question(message)
            if not q:
                continue
            qid, name, qtype, question = q
            rcode, rdata = self._answer(name, qtype)
            reply = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(rdata), 0, 0) + question
            for data in rdata:  # the owner is the question's name, by a pointer to offset 12
                reply += struct.pack("!HHHIH", 0xC00C, A, 1, 0, len(data)) + data
            self.sock.sendto(reply, peer)
