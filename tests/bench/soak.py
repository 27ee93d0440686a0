#!/usr/bin/python3
"""Soak test: clients doing random work against one real gateway for a long time.

Nothing may be lost, repeated or leaked.

    /usr/bin/python3 tests/bench/soak.py --build-dir DIR [--duration S | --short] [--markdown]

Starts <build>/bin/sandgate (as tests/support/sandgate_fixture.py does:
--port 0, a token, a temporary --state-dir, kernels unsandboxed unless
--sandboxed) and runs --clients threads (16) for --duration seconds (1800;
--short: 60) that pick operations at random, with at most --max-kernels (6)
kernels alive or starting and at most 2 starting at once:

  start      POST /api/kernels
  execute    open a channels WebSocket (legacy JSON and
             v1.kernel.websocket.jupyter.org alternate, connection by
             connection), send 1-3 execute_requests that print numbered
             lines (--lines-per-print lines per stream message; at most 100
             messages and 500 lines a request) and check that every line
             arrives exactly once and in order, with exactly one
             execute_reply (status ok), execute_input, busy and idle status
  reconnect  one execute with slower output (a line every 2-20 ms); close
             the WebSocket cleanly before its output, in the middle of it or
             after its last line, stay away up to 1 s, reconnect with the same
             session_id (protocols still alternating) and check the same
             over what the first connection got plus what the gateway
             replayed: every line and message exactly once, in order
  delete     stop new work on a kernel, wait until its clients are done,
             DELETE it and check that it then answers 404

Kernels are shared: several clients work on one kernel at once and each
watches only its own requests. After its requests a connection sends a fence
(kernel_info_request): the kernel answers shell requests in order and
publishes iopub in order, so once the fence's reply and idle status are in
(or 10 s after its reply, its idle status is lost too), everything of the
earlier requests has arrived, and whatever is missing is lost, not late. The connection is then closed cleanly or dropped with a TCP
reset. A request with a problem is looked up in the gateway's execution log
(GET /api/kernels/{id}/executions/{msg_id}): when the gateway's record holds
all the output, the loss happened in the gateway; when it does not, the
message never reached the gateway (the kernel's iopub socket drops beyond its
high-water mark). Both count as lost.

The first part of the run (--warmup) is a warm-up. After it, then every
--segment seconds and at the end, the clients stop and every kernel is
deleted; once the kernel processes are gone, one client lets 32 MiB of output
queue in the gateway and then reads it (after such a burst the gateway gives
its free heap pages back with malloc_trim, so RSS shows what is kept rather
than the run's peak), and once the gateway's fd count is steady its VmRSS and
open fds are read (/proc/PID/status, /proc/PID/fd): each sample is of an idle
gateway with no kernel and no client. Fails (exit 1) when a line or message
was lost or duplicated, an operation failed, the gateway died or did not stop
cleanly on SIGTERM, kernel processes outlived their kernels, or from the
warm-up sample to the last one fds grew by more than --fd-slack (16) or RSS by
more than max(--rss-slack-pct (25) % of the warm-up sample, --rss-slack-mib
(32) MiB); docs/benchmarks.md, "Soak", gives the reasons for these numbers.
--heap-stats adds glibc's count of heap bytes in use to each sample (gdb
calls malloc_stats() in the gateway), for a closer look at a growth.

Prints progress to stderr, a one-line JSON summary to stdout and, with
--markdown, a row for the table in docs/benchmarks.md.
"""

import argparse
import collections
import datetime
import json
import os
import platform
import random
import re
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

KINDS = ("start", "execute", "reconnect", "delete")
# Relative frequency of each operation. A kernel start costs sandgate-python
# 2-3 s of CPU; on 2 cores starts and deletes are kept rare.
WEIGHTS = (1.0, 6.0, 4.0, 0.35)
START_TIMEOUT_S = 120     # POST /api/kernels with kernels starting on a loaded machine
WAIT_TIMEOUT_S = 60       # any wait for messages or a close frame
FENCE_IDLE_GRACE_S = 10   # a fence's idle status not in this long after its reply is lost
MAX_STARTING = 2          # kernel starts at once (sandgate-python takes 2-3 s of CPU to start)
DRAIN_TIMEOUT_S = 240     # a delete waits this long for the kernel's clients to finish
# At most how many messages (print calls) and lines one execute prints; the
# lines per print come from --lines-per-print.
EXEC_MAX_PRINTS = 100
EXEC_MAX_LINES = 500
RECONNECT_LINES = (20, 120)
RECONNECT_DELAYS_S = (0.002, 0.005, 0.01, 0.02)
AWAY_S = (0.0, 0.0, 0.05, 0.2, 0.5, 1.0)
SAMPLE_EVERY_S = 5
TRIM_BURST_MIB = 32       # output queued for one client before each sample (see Soak.trim_burst)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.environ.get("SANDGATE_BUILD_DIR") or os.path.join(REPO, "build"),
                   help="build directory holding bin/sandgate (default $SANDGATE_BUILD_DIR or ./build)")
    p.add_argument("--duration", type=float, default=1800, help="seconds of load, warm-up included")
    p.add_argument("--short", action="store_true", help="60 s, 30 s of it warm-up (CTest)")
    p.add_argument("--warmup", type=float, help="seconds of warm-up (default: a tenth of the run, 30-120 s)")
    p.add_argument("--segment", type=float, default=300,
                   help="after the warm-up, stop every SEGMENT seconds to delete all kernels and sample the "
                        "idle gateway (default 300)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--max-kernels", type=int, default=6, help="kernels alive or starting at once")
    p.add_argument("--kernel", default="auto",
                   help="kernelspec (default: python, i.e. sandgate-python, when built, else python3)")
    p.add_argument("--sandboxed", action="store_true", help="run kernels in sandboxes (needs root)")
    p.add_argument("--seed", type=int, help="random seed (default: random; printed in the summary)")
    p.add_argument("--fd-slack", type=int, default=16, help="open fds the end may have above the warm-up")
    p.add_argument("--rss-slack-pct", type=float, default=25.0,
                   help="RSS growth allowed, in %% of the warm-up sample, if more than --rss-slack-mib")
    p.add_argument("--rss-slack-mib", type=float, default=32.0, help="RSS growth allowed, in MiB, at least")
    p.add_argument("--lines-per-print", default="1,10,50",
                   help="choices of lines per stream message in the execute operation (default 1,10,50; "
                        "'1' gives the most messages per second)")
    p.add_argument("--gateway-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for sandgate (repeatable)")
    p.add_argument("--heap-stats", action="store_true",
                   help="at each quiet point also read the gateway's heap in use (glibc malloc_stats() called "
                        "with gdb, which must be installed; reported, not checked)")
    p.add_argument("--markdown", action="store_true", help="also print a row for docs/benchmarks.md")
    args = p.parse_args()
    if args.short:
        args.duration = 60
    if args.warmup is None:
        args.warmup = max(30.0, min(120.0, args.duration / 10))
    if args.warmup >= args.duration:
        p.error("--warmup must be shorter than --duration")
    args.lines_per_print = [int(x) for x in args.lines_per_print.split(",")]
    args.seed = random.randrange(1 << 32) if args.seed is None else args.seed
    return args


ARGS = parse_args()
os.environ["SANDGATE_BUILD_DIR"] = os.path.abspath(ARGS.build_dir)
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import sandgate_fixture as fx  # noqa: E402  (reads SANDGATE_BUILD_DIR when imported)


def log(text):
    print(f"[soak {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def proc_sample(pid):
    """{"rss_kib", "fds"} of a live process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return {"rss_kib": rss, "fds": len(os.listdir(f"/proc/{pid}/fd"))}


# --- what one request produced ------------------------------------------------

class Track:
    """The messages whose parent is one request, from every connection of
    its session, in arrival order."""

    def __init__(self, msg_id, tag=None, lines=0):
        self.msg_id = msg_id
        self.tag = tag
        self.expected_lines = lines
        self.msgs = []
        self.replies = 0
        self.busy = 0
        self.idle = 0
        self.inputs = 0
        self.stdout = []
        self.lines_seen = 0
        self.sources = collections.Counter()  # connection ("a", "b") -> messages it delivered
        self.reply_source = None

    def add(self, m, source):
        self.msgs.append(m)
        self.sources[source] += 1
        if m.channel == "shell":
            self.replies += 1
            self.reply_source = self.reply_source or source
        elif m.channel == "iopub":
            if m.msg_type == "status":
                state = m.content.get("execution_state")
                self.busy += state == "busy"
                self.idle += state == "idle"
            elif m.msg_type == "execute_input":
                self.inputs += 1
            elif m.msg_type == "stream" and m.content.get("name") == "stdout":
                self.stdout.append(m.content["text"])
                self.lines_seen += m.content["text"].count("\n")

    def ended(self):
        return self.idle >= 1

    def done(self):
        return self.replies >= 1 and self.idle >= 1

    def expected_text(self):
        return "".join(f"{self.tag} {i}\n" for i in range(self.expected_lines))

    def check(self):
        """(lost lines, duplicated lines, lost messages, duplicated messages, other problems)."""
        problems = []
        ids = [m.header.get("msg_id") for m in self.msgs]
        dup_msgs = len(ids) - len(set(ids))
        lost_msgs = sum(1 for n in (self.replies, self.inputs, self.busy, self.idle) if n == 0)
        for what, n in (("execute_reply", self.replies), ("execute_input", self.inputs),
                        ("busy status", self.busy), ("idle status", self.idle)):
            if n > 1 and dup_msgs == 0:
                problems.append(f"{n} {what} messages with distinct msg_ids")
        replies = [m for m in self.msgs if m.channel == "shell"]
        if replies and replies[0].content.get("status") != "ok":
            problems.append(f"execute_reply status {replies[0].content.get('status')!r}: "
                            f"{json.dumps(replies[0].content)[:300]}")
        text = "".join(self.stdout)
        if text == self.expected_text():
            return 0, 0, lost_msgs, dup_msgs, problems
        got = text.split("\n")
        if got and got[-1] == "":
            got.pop()
        else:
            problems.append("stdout does not end with a newline")
        expected = [f"{self.tag} {i}" for i in range(self.expected_lines)]
        counts = collections.Counter(got)
        wanted = set(expected)
        lost_lines = sum(1 for line in expected if counts[line] == 0)
        dup_lines = sum(c - 1 for line, c in counts.items() if line in wanted and c > 1)
        unexpected = [line for line in counts if line not in wanted]
        if unexpected:
            problems.append(f"{len(unexpected)} unexpected stdout lines, e.g. {unexpected[:3]!r}")
        if not lost_lines and not dup_lines and not unexpected:
            problems.append("every line arrived once, out of order")
        return lost_lines, dup_lines, lost_msgs, dup_msgs, problems


class Conn:
    """One channels WebSocket and the requests it watches."""

    def __init__(self, gw, kernel_id, v1, session, label="a"):
        self.gw = gw
        self.kernel_id = kernel_id
        self.v1 = v1
        self.session = session
        self.label = label
        self.ks = fx.KernelSocket(gw, kernel_id, session_id=session, v1=v1, timeout=WAIT_TIMEOUT_S)
        self.tracks = {}
        self.last = collections.deque(maxlen=6)  # the last messages read, for a failure's report

    def feed(self, m):
        self.last.append(m)
        t = self.tracks.get(m.parent_id)
        if t is not None:
            t.add(m, self.label)

    def pump(self, done, what):
        d = fx.Deadline(WAIT_TIMEOUT_S)
        while not done():
            try:
                m = self.ks.recv(max(0.001, d.remaining()))
            except AssertionError:
                raise AssertionError(f"timed out after {WAIT_TIMEOUT_S} s waiting for {what}; {self.describe()}")
            self.feed(m)
            # Messages of other clients' requests are not kept.
            if len(self.ks.received) > 64:
                del self.ks.received[:]

    def describe(self):
        """The connection's requests as the client saw them and as the gateway recorded them."""
        parts = [f"kernel {self.kernel_id}, session {self.session}, {'v1' if self.v1 else 'legacy'}"]
        for t in self.tracks.values():
            parts.append(f"{t.msg_id}: replies {t.replies} input {t.inputs} busy {t.busy} idle {t.idle} "
                         f"lines {t.lines_seen}/{t.expected_lines} from {dict(t.sources)}")
            if t.tag is not None:
                parts.append(f"  the gateway's record: {gateway_record(self.gw, self.kernel_id, t)}")
        r = self.gw.request("GET", f"api/kernels/{self.kernel_id}")
        parts.append(f"kernel: {r.status} {r.body[:300]!r}")
        parts.append(f"last messages read: {list(self.last)}")
        return "\n    ".join(parts)

    def execute(self, code, tag, lines):
        msg_id = self.ks.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False})
        track = self.tracks[msg_id] = Track(msg_id, tag, lines)
        return track

    def await_fence(self, fence, what):
        """Reads until the fence's reply and idle status are in; False when
        the reply came but the idle status did not follow within
        FENCE_IDLE_GRACE_S (it is lost, like whatever else had not come)."""
        d = fx.Deadline(WAIT_TIMEOUT_S)
        grace = None
        while not fence.done():
            if fence.replies and grace is None:
                grace = fx.Deadline(FENCE_IDLE_GRACE_S)
            limit = grace or d
            if limit.remaining() <= 0:
                if grace is not None:
                    return False
                raise AssertionError(f"timed out after {WAIT_TIMEOUT_S} s waiting for {what}; {self.describe()}")
            try:
                m = self.ks.recv(limit.remaining())
            except AssertionError:
                continue
            self.feed(m)
            if len(self.ks.received) > 64:
                del self.ks.received[:]
        return True

    def send_fence(self):
        """A kernel_info_request: its reply and idle status come after
        everything of the requests sent before it."""
        fid = self.ks.send("shell", "kernel_info_request", {})
        t = self.tracks[fid] = Track(fid)
        return t

    def close_cleanly(self):
        try:
            got = self.ks.close_cleanly(WAIT_TIMEOUT_S)
        except AssertionError:
            raise AssertionError(f"no close frame within {WAIT_TIMEOUT_S} s; {self.describe()}")
        for m in got:
            self.feed(m)

    def end(self, rng):
        if rng.random() < 0.7:
            self.close_cleanly()
        else:
            self.ks.abort()


def gateway_record(gw, kernel_id, track):
    """What the gateway's execution log holds of a request: whether it has
    all the output ("complete"), and its status."""
    r = gw.request("GET", f"api/kernels/{kernel_id}/executions/{track.msg_id}")
    if r.status != 200:
        return {"http_status": r.status}
    rec = r.json()
    return {"status": rec.get("status"), "complete": rec.get("stdout") == track.expected_text(),
            "stdout_lines": rec.get("stdout", "").count("\n"), "duration_ms": rec.get("duration_ms")}


# --- kernels shared by the clients ------------------------------------------

class Kernel:
    def __init__(self, kernel_id):
        self.id = kernel_id
        self.users = 0
        self.draining = False


class Pool:
    """The live kernels; at most `limit` alive or starting."""

    def __init__(self, limit):
        self.limit = limit
        self.cond = threading.Condition()
        self.kernels = {}
        self.starting = 0

    def reserve_start(self):
        with self.cond:
            if not (len(self.kernels) + self.starting < self.limit and self.starting < MAX_STARTING):
                return False
            self.starting += 1
            return True

    def started(self, kernel_id):
        with self.cond:
            self.starting -= 1
            if kernel_id:
                self.kernels[kernel_id] = Kernel(kernel_id)
            self.cond.notify_all()

    def lease(self, stop, wait_s=10):
        """The least used kernel that is not being deleted, or None."""
        with self.cond:
            d = fx.Deadline(wait_s)
            while not stop.is_set():
                ready = [k for k in self.kernels.values() if not k.draining]
                if ready:
                    k = min(ready, key=lambda k: k.users)
                    k.users += 1
                    return k
                if d.remaining() <= 0:
                    return None
                self.cond.wait(min(1.0, d.remaining()))
            return None

    def started_idle(self, kernel_id):
        """A kernel the main thread started itself, to be deleted with the rest."""
        with self.cond:
            self.kernels[kernel_id] = Kernel(kernel_id)

    def release(self, k):
        with self.cond:
            k.users -= 1
            self.cond.notify_all()

    def can_start(self):
        with self.cond:
            return len(self.kernels) + self.starting < self.limit and self.starting < MAX_STARTING

    def empty(self):
        with self.cond:
            return not self.kernels

    def drain_one(self, rng, keep=1):
        """Marks a kernel for deletion (no new leases) and waits until its
        users are done; None when at most `keep` kernels are usable."""
        with self.cond:
            ready = [k for k in self.kernels.values() if not k.draining]
            if len(ready) <= keep:
                return None
            k = rng.choice(ready)
            k.draining = True
            if not self.cond.wait_for(lambda: k.users == 0, DRAIN_TIMEOUT_S):
                k.draining = False
                self.cond.notify_all()
                raise AssertionError(f"kernel {k.id} still had {k.users} clients after {DRAIN_TIMEOUT_S} s")
            return k

    def removed(self, k):
        with self.cond:
            self.kernels.pop(k.id, None)
            self.cond.notify_all()

    def take_all(self):
        with self.cond:
            ks = list(self.kernels.values())
            self.kernels.clear()
            return ks


# --- tallies ----------------------------------------------------------------

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = collections.Counter()
        self.errors = collections.Counter()
        self.error_samples = []
        self.lines_checked = 0
        self.requests_checked = 0
        self.lost = collections.Counter()  # lines, messages
        self.lost_before_gateway = collections.Counter()  # the part of `lost` the gateway never received
        self.duplicated = collections.Counter()
        self.bad = []  # requests with a problem, for the report

    def op(self, kind):
        with self.lock:
            self.ops[kind] += 1

    def error(self, kind, exc):
        with self.lock:
            self.errors[kind] += 1
            if len(self.error_samples) < 20:
                self.error_samples.append(f"{utc_now()} {kind}: {type(exc).__name__}: {str(exc)[:3000]}")

    def checked(self, kind, gw, kernel_id, track, context):
        lost_lines, dup_lines, lost_msgs, dup_msgs, problems = track.check()
        record = None
        if lost_lines or dup_lines or lost_msgs or dup_msgs or problems:
            record = gateway_record(gw, kernel_id, track)
        with self.lock:
            self.requests_checked += 1
            self.lines_checked += track.expected_lines
            self.lost["lines"] += lost_lines
            self.lost["messages"] += lost_msgs
            self.duplicated["lines"] += dup_lines
            self.duplicated["messages"] += dup_msgs
            if record is None:
                return
            if (lost_lines or lost_msgs) and not record.get("complete"):
                self.lost_before_gateway["lines"] += lost_lines
                self.lost_before_gateway["messages"] += lost_msgs
            if problems:
                self.errors[kind + "_check"] += 1
            if len(self.bad) < 20:
                self.bad.append(dict(context, time=utc_now(), kernel=kernel_id, msg_id=track.msg_id,
                                     lines=track.expected_lines, lost_lines=lost_lines, dup_lines=dup_lines,
                                     lost_msgs=lost_msgs, dup_msgs=dup_msgs, problems=problems,
                                     replies=track.replies, inputs=track.inputs, busy=track.busy,
                                     idle=track.idle, sources=dict(track.sources), reply_from=track.reply_source,
                                     gateway_record=record))

    def fence_idle_lost(self, kind, kernel_id, conn):
        with self.lock:
            self.lost["messages"] += 1
            if len(self.bad) < 20:
                self.bad.append({"op": kind, "time": utc_now(), "kernel": kernel_id, "session_id": conn.session,
                                 "problems": [f"the fence's idle status did not come within {FENCE_IDLE_GRACE_S} s "
                                              f"of its reply"]})

    def failed_checks(self):
        return sum(self.lost.values()) + sum(self.duplicated.values())


# --- the clients --------------------------------------------------------------

def printing_code(tag, lines, per_print):
    """Prints `tag i` for i < lines, per_print lines per print()."""
    return (f"for s in range(0, {lines}, {per_print}):\n"
            f"    print('\\n'.join(f'{tag} {{i}}' for i in range(s, min(s + {per_print}, {lines}))))\n")


class Soak:
    def __init__(self, gw, kernel_name):
        self.gw = gw
        self.kernel_name = kernel_name
        self.pool = Pool(ARGS.max_kernels)
        self.stats = Stats()
        self.stop = threading.Event()
        self.protocol_lock = threading.Lock()
        self.connections = 0

    def next_v1(self):
        """Legacy JSON and v1 alternate, connection by connection."""
        with self.protocol_lock:
            self.connections += 1
            return self.connections % 2 == 0

    def worker(self, index, deadline):
        rng = random.Random(ARGS.seed * 1000 + index + int(deadline))
        while not self.stop.is_set() and time.monotonic() < deadline:
            kind = rng.choices(KINDS, WEIGHTS)[0]
            if kind == "start" and not self.pool.can_start():
                kind = "execute"
            try:
                getattr(self, "op_" + kind)(rng, index)
            except Exception as e:  # every failure is counted, none stops the run
                self.stats.error(kind, e)
                if not self.gw.alive():
                    self.stop.set()

    def op_start(self, rng, index):
        if not self.pool.reserve_start():
            return
        kernel_id = None
        try:
            kernel_id = self.gw.start_kernel(self.kernel_name, timeout=START_TIMEOUT_S)
            self.stats.op("start")
        finally:
            self.pool.started(kernel_id)

    def leased(self, rng, index):
        if self.pool.empty() and self.pool.can_start():
            self.op_start(rng, index)
        return self.pool.lease(self.stop)

    def op_execute(self, rng, index):
        k = self.leased(rng, index)
        if k is None:
            return
        try:
            conn = Conn(self.gw, k.id, self.next_v1(), uuid.uuid4().hex)
            try:
                tracks = []
                for _ in range(rng.choice((1, 1, 2, 3))):
                    per_print = rng.choice(ARGS.lines_per_print)
                    n = rng.randint(1, min(EXEC_MAX_LINES, EXEC_MAX_PRINTS * per_print))
                    tag = f"c{index}-{uuid.uuid4().hex[:8]}"
                    tracks.append(conn.execute(printing_code(tag, n, per_print), tag, n))
                fence = conn.send_fence()
                fence_ok = conn.await_fence(fence, "the fence's reply and idle status")
                conn.end(rng)
            except BaseException:
                conn.ks.close()
                raise
            if not fence_ok:
                self.stats.fence_idle_lost("execute", k.id, conn)
            for t in tracks:
                self.stats.op("execute")
                self.stats.checked("execute", self.gw, k.id, t, {"op": "execute", "v1": conn.v1})
        finally:
            self.pool.release(k)

    def op_reconnect(self, rng, index):
        k = self.leased(rng, index)
        if k is None:
            return
        try:
            session = uuid.uuid4().hex
            n = rng.randint(*RECONNECT_LINES)
            delay = rng.choice(RECONNECT_DELAYS_S)
            tag = f"r{index}-{uuid.uuid4().hex[:8]}"
            code = (f"import time\nfor i in range({n}):\n    print(f'{tag} {{i}}', flush=True)\n"
                    f"    time.sleep({delay})\n")
            # Lines to see before leaving: 0 leaves right after sending, n after the last.
            cut = rng.choice((0, rng.randint(1, n), rng.randint(1, n), n))
            a = Conn(self.gw, k.id, self.next_v1(), session, label="a")
            try:
                track = a.execute(code, tag, n)
                a.pump(lambda: track.lines_seen >= cut or track.ended(), f"{cut} lines of {track.msg_id}")
                a.close_cleanly()
            except BaseException:
                a.ks.close()
                raise
            lines_before = track.lines_seen
            away = rng.choice(AWAY_S)
            time.sleep(away)
            b = Conn(self.gw, k.id, self.next_v1(), session, label="b")
            b.tracks[track.msg_id] = track
            try:
                fence = b.send_fence()
                fence_ok = b.await_fence(fence, f"the fence's reply and idle status after reconnecting for "
                                                f"{track.msg_id}")
                b.end(rng)
            except BaseException:
                b.ks.close()
                raise
            if not fence_ok:
                self.stats.fence_idle_lost("reconnect", k.id, b)
            self.stats.op("reconnect")
            self.stats.checked("reconnect", self.gw, k.id, track, {
                "op": "reconnect", "session_id": session, "v1_before": a.v1, "v1_after": b.v1,
                "lines_before_disconnect": lines_before, "away_s": away, "line_every_s": delay})
        finally:
            self.pool.release(k)

    def op_delete(self, rng, index):
        k = self.pool.drain_one(rng)
        if k is None:
            return
        try:
            self.gw.delete_kernel(k.id)
            r = self.gw.request("GET", f"api/kernels/{k.id}")
            if r.status != 404:
                raise AssertionError(f"GET of deleted kernel {k.id}: {r}")
            self.stats.op("delete")
        finally:
            self.pool.removed(k)

    # --- phases -------------------------------------------------------------
    def run_phase(self, seconds, peak):
        deadline = time.monotonic() + seconds
        threads = [threading.Thread(target=self.worker, args=(i, deadline), daemon=True, name=f"client-{i}")
                   for i in range(ARGS.clients)]
        for t in threads:
            t.start()
        last_sample = last_progress = 0.0
        while any(t.is_alive() for t in threads):
            now = time.monotonic()
            if not self.gw.alive():
                self.stop.set()
                break
            if now - last_sample >= SAMPLE_EVERY_S:
                last_sample = now
                s = proc_sample(self.gw.proc.pid)
                peak["rss_kib"] = max(peak["rss_kib"], s["rss_kib"])
                peak["fds"] = max(peak["fds"], s["fds"])
            if now - last_progress >= 30:
                last_progress = now
                log(f"ops {dict(self.stats.ops)} errors {dict(self.stats.errors)} "
                    f"lost {dict(self.stats.lost)} duplicated {dict(self.stats.duplicated)} "
                    f"kernels {len(self.pool.kernels)} gateway {proc_sample(self.gw.proc.pid)}")
            if now > deadline + START_TIMEOUT_S + 3 * WAIT_TIMEOUT_S + DRAIN_TIMEOUT_S:
                self.stop.set()
                raise AssertionError("client threads still busy long after the deadline: "
                                     + ", ".join(t.name for t in threads if t.is_alive()))
            time.sleep(0.5)
        for t in threads:
            t.join(START_TIMEOUT_S)

    def quiesce(self):
        """Deletes every kernel, waits for their processes to end, makes the
        gateway give its free heap back (trim_burst), waits for its fd count
        to hold still, and samples it."""
        self.delete_all()
        rss_before = proc_sample(self.gw.proc.pid)["rss_kib"]
        self.trim_burst()
        self.delete_all()
        kernels = self.gw.request("GET", "api/kernels").json()
        if kernels:
            raise AssertionError(f"kernels left after deleting them all: {kernels}")
        d = fx.Deadline(30)
        prev, since = None, time.monotonic()
        while d.remaining() > 0:
            s = proc_sample(self.gw.proc.pid)
            if s["fds"] != prev:
                prev, since = s["fds"], time.monotonic()
            elif time.monotonic() - since >= 2:
                break
            time.sleep(0.25)
        sample = proc_sample(self.gw.proc.pid)
        sample["rss_before_trim_kib"] = rss_before
        if ARGS.heap_stats:
            sample["heap_in_use_kib"] = heap_in_use_kib(self.gw)
        return sample

    def delete_all(self):
        for k in self.pool.take_all():
            self.gw.delete_kernel(k.id)
        fx.wait_until(lambda: not self.gw.kernel_pids(), 60, "the kernel processes to end")

    def trim_burst(self):
        """glibc keeps freed heap, so an idle gateway's RSS is the high-water
        mark of the run so far. The gateway gives free pages back
        (malloc_trim) once a WebSocket queue that grew past 8 MiB has drained
        (ws_session::on_write): one client lets TRIM_BURST_MIB of output queue
        up, then reads it all. The RSS sampled after that is about live
        memory, so two samples compare what was kept, not the peaks."""
        kernel_id = self.gw.start_kernel(self.kernel_name, timeout=START_TIMEOUT_S)
        self.pool.started_idle(kernel_id)
        conn = Conn(self.gw, kernel_id, True, uuid.uuid4().hex)
        try:
            track = conn.execute(f"for i in range({TRIM_BURST_MIB}):\n    print('x' * (1 << 20), flush=True)\n",
                                 "x", 0)
            time.sleep(3)  # not reading: the output queues in the gateway
            conn.pump(track.done, "the end of the output burst")
            conn.close_cleanly()
        except BaseException:
            conn.ks.close()
            raise


def heap_in_use_kib(gw):
    """glibc's count of heap bytes in use (allocated, not freed) in the
    gateway, unlike RSS blind to the allocator keeping freed memory: gdb
    calls malloc_stats() in it, which writes to its stderr, i.e. its log."""
    gw.log_file.flush()
    offset = os.path.getsize(gw.log_path)
    subprocess.run(["gdb", "-p", str(gw.proc.pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
    with open(gw.log_path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    found = re.findall(r"Total \(incl\. mmap\):\s*system bytes\s*=\s*\d+\s*in use bytes\s*=\s*(\d+)", text)
    return int(found[-1]) // 1024 if found else None


def choose_kernel():
    if ARGS.kernel != "auto":
        return ARGS.kernel
    return "python" if fx.has_sandgate_python() else "python3"


def markdown_row(s):
    def mib(kib):
        return f"{kib / 1024:.1f}"

    ops = " / ".join(str(s["ops"].get(k, 0)) for k in KINDS)
    lost = s["lost"]["lines"] + s["lost"]["messages"]
    dup = s["duplicated"]["lines"] + s["duplicated"]["messages"]
    w, e, p = s.get("warmup") or {}, s.get("end") or {}, s["peak"]
    rss = f"{mib(w.get('rss_kib', 0))} → {mib(e.get('rss_kib', 0))} ({mib(p['rss_kib'])})"
    fds = f"{w.get('fds', '-')} → {e.get('fds', '-')} ({p['fds']})"
    cells = [s["date"], f"{s['duration_s']:.0f}", s["kernel"], str(s["clients"]), ops, str(s["lines_checked"]),
             str(lost), str(dup), str(sum(s["errors"].values())), rss, fds, "pass" if s["ok"] else "**fail**"]
    return "| " + " | ".join(cells) + " |"


def main():
    kernel_name = choose_kernel()
    started = time.monotonic()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    gw = fx.Gateway(*ARGS.gateway_arg, name="soak", sandboxed=ARGS.sandboxed)
    log(f"gateway pid {gw.proc.pid} at {gw.url}, log {gw.log_path}; kernel {kernel_name}, "
        f"{ARGS.clients} clients, {ARGS.duration:.0f} s ({ARGS.warmup:.0f} s warm-up), seed {ARGS.seed}")
    soak = Soak(gw, kernel_name)
    peak = proc_sample(gw.proc.pid)
    failures = []
    warm = end = None
    gateway_exit = None
    idle_samples = []  # each quiet point: seconds of load so far and the sample
    try:
        soak.run_phase(ARGS.warmup, peak)
        if gw.alive():
            warm = soak.quiesce()
            idle_samples.append(dict(load_s=round(ARGS.warmup), **warm))
            log(f"after the warm-up: {warm}")
        done_s = ARGS.warmup
        while gw.alive() and not soak.stop.is_set() and done_s < ARGS.duration - 0.5:
            segment = min(ARGS.segment, ARGS.duration - done_s)
            soak.run_phase(segment, peak)
            done_s += segment
            if gw.alive():
                end = soak.quiesce()
                idle_samples.append(dict(load_s=round(done_s), **end))
                log(f"quiet after {done_s:.0f} s of load: {end}")
    except Exception as e:
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        soak.stop.set()
        if not gw.alive():
            failures.append(f"the gateway died (exit code {gw.proc.returncode}); log {gw.log_path}:\n"
                            f"{gw.log_tail(25)}")
        else:
            try:
                gateway_exit, taken = gw.stop()
                if gateway_exit != 0:
                    failures.append(f"sandgate exited {gateway_exit} on SIGTERM")
                elif taken > 12:
                    failures.append(f"sandgate took {taken:.1f} s to stop")
            except AssertionError as e:
                failures.append(str(e))
    st = soak.stats
    if st.failed_checks():
        failures.append(f"lost {dict(st.lost)} (of which the gateway never received "
                        f"{dict(st.lost_before_gateway)}), duplicated {dict(st.duplicated)}; requests with "
                        f"problems:\n  " + "\n  ".join(json.dumps(b) for b in st.bad))
    if sum(st.errors.values()):
        failures.append(f"{sum(st.errors.values())} operations failed: {dict(st.errors)}; first ones:\n  "
                        + "\n  ".join(st.error_samples))
    if warm and end:
        if end["fds"] > warm["fds"] + ARGS.fd_slack:
            failures.append(f"open fds grew from {warm['fds']} after the warm-up to {end['fds']} "
                            f"(slack {ARGS.fd_slack})")
        rss_slack_kib = max(warm["rss_kib"] * ARGS.rss_slack_pct / 100, ARGS.rss_slack_mib * 1024)
        if end["rss_kib"] > warm["rss_kib"] + rss_slack_kib:
            failures.append(f"RSS grew from {warm['rss_kib']} KiB after the warm-up to {end['rss_kib']} KiB "
                            f"(slack {rss_slack_kib:.0f} KiB)")
    elif not failures:
        failures.append("no samples were taken")
    for kind in ("execute", "reconnect"):
        if not st.ops[kind]:
            failures.append(f"no {kind} operation completed")
    summary = {
        "ok": not failures, "date": date, "duration_s": ARGS.duration, "warmup_s": ARGS.warmup,
        "wall_s": round(time.monotonic() - started, 1), "kernel": kernel_name, "sandboxed": ARGS.sandboxed,
        "clients": ARGS.clients, "max_kernels": ARGS.max_kernels, "seed": ARGS.seed,
        "gateway_args": ARGS.gateway_arg, "lines_per_print": ARGS.lines_per_print,
        "machine": {"nproc": os.cpu_count(), "uname": f"{platform.system()} {platform.release()}",
                    "loadavg_start": [round(x, 2) for x in load],
                    "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "ops": {k: st.ops.get(k, 0) for k in KINDS}, "requests_checked": st.requests_checked,
        "lines_checked": st.lines_checked,
        "lost": {"lines": st.lost["lines"], "messages": st.lost["messages"],
                 "never_reached_gateway": dict(st.lost_before_gateway)},
        "duplicated": {"lines": st.duplicated["lines"], "messages": st.duplicated["messages"]},
        "errors": dict(st.errors), "warmup": warm, "end": end, "peak": peak, "idle_samples": idle_samples,
        "gateway_exit": gateway_exit, "gateway_log": gw.log_path,
        "failures": [f.splitlines()[0][:300] for f in failures],
    }
    print(json.dumps(summary), flush=True)
    if ARGS.markdown:
        print(markdown_row(summary), flush=True)
    if failures:
        print("soak: FAILED\n" + "\n".join(failures), file=sys.stderr, flush=True)
        return 1
    print("soak: passed", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
