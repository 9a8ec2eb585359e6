"""The churn of `tunbed tunnels --churn` (docs/tunnels.md, issue 34 step 4): tunnels removed
and added again through gregw's control socket on both gateways at a rate, while the steady
tunnels carry sessions, and a ping through each tunnel right after it is added again.

It runs as a program of its own in the client's namespace (`python3 tunnels_churn.py`, the
standard library alone), started by tunnels_point.py: its plan as one JSON line on standard
input, `ready` on standard output, then changes until its standard input ends; then it waits
for the replies still out and the pings still unanswered, and prints what it did as one JSON
line. gregw's sockets are files: a process in any namespace reaches them; the pings leave from
the client's addresses, so it lives in the client's namespace.

A change is the removal or the addition of one tunnel, made on both gateways: a command on
each gateway's control connection, one connection a gateway for the whole churn (gregw's
`keep`: replies of one line, in the order of the commands), each command sent when its change
starts, whether or not the commands before it are answered, at most CTL_IN_FLIGHT out on a
gateway at once. A change's reply time runs from its start (both commands sent) to its second
reply; it counts as done at both replies. The changes are due at start + k / rate; one that finds no tunnel free
(every candidate has a change or a ping out) waits, and is late. Each reply is checked: one
that is not `{"changed": VERB, "tunnel": NAME}` stops the churn, its text in the result's
`error`, and so does a connection that fails or closes with commands out. The pure parts
(Schedule, add_lines, reply_error, reply_keep, echo building and parsing) are tested by
tests/python/test_tunnels_kind.py, and its loop against two fake gregws."""

import collections
import json
import math
import os
import select
import signal
import socket
import struct
import sys
import time

# Commands out on one gateway at once. gregw answers a connection's commands one at a time,
# the rest waiting in its socket: the bound keeps a change's reply time that of a queue of at
# most 8, and a churn that gregw cannot follow late (late_max_ms) rather than queued.
CTL_IN_FLIGHT = 8
# A command without its reply this long fails the churn (gregw answers in a millisecond; a
# change waiting for the workers' passes is refused after 1 s, TUNCTL_WAIT_MS).
REPLY_TIMEOUT_S = 5.0
# A take-effect ping's echoes after the first, until one is answered: the second this long
# after the first, the others ECHO_EVERY_S apart (the first may come before the receiving
# gateway's workers take the new table).
SECOND_ECHO_S = 0.010
ECHO_EVERY_S = 0.1
# A tunnel whose echoes have no answer this long after its add carried none: `never`. Long, so
# that a loaded machine's slow replies (hundreds of milliseconds under a sanitizer) are not
# taken for a tunnel that does not work; the tunnel is not changed again meanwhile.
PING_GIVE_UP_S = 5.0
# After the end of standard input: the replies and pings still out get this long.
DRAIN_S = PING_GIVE_UP_S + 1
ICMP_ECHO, ICMP_ECHO_REPLY = 8, 0
MAX_TUNNELS_ABSENT = 8
# A kept connection without a command this long is opened again before the next one: gregw
# closes one idle 10 s (CTL_IDLE_MS), and a command must not cross that close on its way.
IDLE_REOPEN_S = 5.0


def add_lines(text):
    """{name: 'add NAME k = v; ...'} of a tunnel file's text (common/tunfile.c's INI, as
    topo/tunnels.sh writes it): a section's lines joined by '; ', as the control socket's `add`
    takes them (docs/gregw.md)."""
    out, name, keys = {}, None, []
    for raw in text.splitlines() + ["[end]"]:
        line = raw.split(";", 1)[0].strip() if not raw.lstrip().startswith(";") else ""
        if not line:
            continue
        if line.startswith("["):
            if name is not None:
                out[name] = f"add {name} " + "; ".join(keys)
            head = line.strip("[]").split()
            name = head[1] if len(head) == 2 and head[0] == "tunnel" else None
            keys = []
        elif name is not None:
            k, _, v = line.partition("=")
            keys.append(f"{k.strip()} = {v.strip()}")
    return out


def reply_error(reply, verb, name):
    """None when reply (the bytes gregw sent) says VERB of NAME was made; else the words of
    what went wrong: gregw's own error text, or what the reply was instead."""
    try:
        doc = json.loads(reply)
    except ValueError:
        return f"not JSON: {reply[:200]!r}"
    if not isinstance(doc, dict):
        return f"not a JSON object: {reply[:200]!r}"
    if "error" in doc:
        return str(doc["error"])
    if doc.get("changed") != verb or doc.get("tunnel") != name:
        return f"unexpected reply {json.dumps(doc)[:200]}"
    return None


def reply_keep(reply):
    """None when reply says gregw keeps the connection ({"keep": true}); else what it said."""
    try:
        if json.loads(reply) == {"keep": True}:
            return None
    except ValueError:
        pass
    return f"gregw does not keep the connection: {reply[:200]}"


class Schedule:
    """Which change comes next, without I/O. Tunnels are present (in both tables) or absent;
    a tunnel with a change or a ping out is busy and not chosen. The churn removes until
    `lag` tunnels are absent, then adds the one absent longest and removes the one present
    longest in turn, so that a tunnel stays away for about `lag` changes; when the preferred
    verb finds no free tunnel, the other is taken; when neither does, nothing (the change
    waits)."""

    def __init__(self, names, lag=None):
        self.present = list(names)  # oldest first
        self.absent = []            # removed longest ago first
        self.busy = set()
        self.lag = lag if lag is not None else max(1, min(MAX_TUNNELS_ABSENT, len(names) // 2))

    def next(self):
        """(verb, name) of the next change, marked busy, or None."""
        prefer_add = len(self.absent) >= self.lag
        for verb, names in ((("add", self.absent), ("remove", self.present)) if prefer_add
                            else (("remove", self.present), ("add", self.absent))):
            name = next((n for n in names if n not in self.busy), None)
            if name is not None:
                self.busy.add(name)
                return verb, name
        return None

    def made(self, verb, name):
        """The change was made on both gateways (the tunnel stays busy until free())."""
        if verb == "remove":
            self.present.remove(name)
            self.absent.append(name)
        else:
            self.absent.remove(name)
            self.present.append(name)

    def free(self, name):
        self.busy.discard(name)


def due(start, rate, now):
    """How many changes are due by now at rate a second from start (the first at start)."""
    # A nanosecond's slack: (10.01 - 10.0) * 100 is 0.99999..., change 1 is due at 10.01.
    return 0 if now < start else int((now - start) * rate + 1e-9) + 1


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def echo(ident, seq):
    """An ICMP echo request (RFC 792) of identifier ident and number seq, 16 bytes of data."""
    body = struct.pack("!HH", ident, seq) + b"tunbed-churn-pin"
    head = struct.pack("!BBH", ICMP_ECHO, 0, 0)
    return struct.pack("!BBH", ICMP_ECHO, 0, checksum(head + body)) + body


def echo_reply(packet, ident):
    """The number of an echo reply of identifier ident in packet (an IPv4 datagram, as a raw
    socket gives it), or None for anything else."""
    if len(packet) < 20:
        return None
    ihl = (packet[0] & 0x0f) * 4
    if packet[0] >> 4 != 4 or ihl < 20 or len(packet) < ihl + 8:
        return None
    typ, _, _, got_id, seq = struct.unpack("!BBHHH", packet[ihl:ihl + 8])
    return seq if typ == ICMP_ECHO_REPLY and got_id == ident else None


class Command:
    """One command on one gateway's control socket: its line, its change, when it was sent."""

    __slots__ = ("role", "line", "change", "deadline")

    def __init__(self, role, line, change, now):
        self.role, self.line, self.change = role, line, change
        self.deadline = now + REPLY_TIMEOUT_S


class Gateway:
    """One gateway's control connection, kept for the whole churn (gregw's `keep`, docs/gregw.md):
    its lines sent ahead, each reply one line, in the order of the lines. Opened again when
    gregw closed it, or before a command after IDLE_REOPEN_S without one (gregw closes a kept
    connection idle CTL_IDLE_MS)."""

    def __init__(self, role, path, poller, socks):
        self.role, self.path, self.poller, self.socks = role, path, poller, socks
        self.sock, self.out, self.buf = None, b"", b""
        self.pending = collections.deque()  # Commands sent, oldest first; None: the keep line
        self.last_io = 0.0

    def open(self, now):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Blocking: a Unix socket's connect with the listen queue full fails with EAGAIN
            # when non-blocking, where it should wait for gregw's next accept.
            s.settimeout(REPLY_TIMEOUT_S)
            s.connect(self.path)
            s.setblocking(False)
        except OSError:
            s.close()
            raise
        self.sock, self.out, self.buf, self.last_io = s, b"keep\n", b"", now
        self.pending.append(None)
        self.socks[s.fileno()] = self
        self.poller.register(s, select.POLLIN | select.POLLOUT)

    def close(self):
        """Closes the connection; returns the commands that had no reply."""
        lost = [c for c in self.pending if c is not None]
        if self.sock is not None:
            del self.socks[self.sock.fileno()]
            self.poller.unregister(self.sock)
            self.sock.close()
        self.sock, self.out, self.buf = None, b"", b""
        self.pending.clear()
        return lost

    def send(self, c, now):
        """Sends command c (after opening the connection, if it is not open)."""
        if self.sock is not None and not self.pending and now - self.last_io > IDLE_REOPEN_S:
            self.close()
        if self.sock is None:
            self.open(now)
        self.pending.append(c)
        self.out += (c.line + "\n").encode()
        self.flush()

    def flush(self):
        """Sends what the socket takes of what is to send; polls for the rest."""
        if self.out:
            try:
                n = self.sock.send(self.out)
            except BlockingIOError:
                n = 0
            self.out = self.out[n:]
        self.poller.modify(self.sock, select.POLLIN | (select.POLLOUT if self.out else 0))

    def commands(self):
        return len(self.pending) - (1 if self.pending and self.pending[0] is None else 0)


class Change:
    def __init__(self, verb, name, due_at, started):
        self.verb, self.name, self.due_at, self.started = verb, name, due_at, started
        self.left = 2  # gwa's reply and gwb's
        self.failed = False


class Churn:
    """The churn's I/O: the two control connections and pings in one poll loop."""

    def __init__(self, plan):
        self.rate = float(plan["rate"])
        self.tunnels = {t["name"]: t for t in plan["tunnels"]}
        self.schedule = Schedule(sorted(self.tunnels))
        self.poller = select.poll()
        self.socks = {}   # fd: Gateway
        self.gateways = {role: Gateway(role, plan["socks"][role], self.poller, self.socks)
                         for role in ("gwa", "gwb")}
        self.counts = {"asked": 0, "started": 0, "done": 0, "add": 0, "remove": 0}
        self.late_max_s = 0.0
        self.reply_s = []
        self.error = None
        self.ident = os.getpid() & 0xffff
        self.seq = 0
        self.raw = {}     # source address: raw ICMP socket bound to it
        self.raw_fds = {}  # fd: that socket
        self.echoes = {}  # seq: (name, which, sent)
        self.pings = {}   # name: {"sent": t, "first": rtt or None, "second": ..., "deadline"}
        self.ping_counts = {"pinged": 0, "first": 0, "later": 0, "never": 0}
        self.first_rtt = []
        self.later_echo = []  # of a ping answered later: which echo was (1: the second)
        self.stopping = False
        # Without pings (the unit test's fake gregw, which carries no packets): an add frees
        # its tunnel at its replies.
        self.pinging = plan.get("ping", True)

    # Control connections.
    def start_change(self, verb, name, due_at):
        now = time.monotonic()
        ch = Change(verb, name, due_at, now)
        for role, gw in self.gateways.items():
            line = (self.tunnels[name]["add"][role] if verb == "add" else f"remove {name}")
            c = Command(role, line, ch, now)
            try:
                gw.send(c, now)
            except OSError as e:
                if gw.pending and gw.pending[-1] is c:
                    gw.pending.pop()
                self.gateway_failed(gw, f"{role}: {line[:120]}: control socket: "
                                        f"{e.strerror or e}")
                self.command_done(c, None, failed=True)
        self.counts["started"] += 1
        self.late_max_s = max(self.late_max_s, ch.started - due_at)

    def in_flight(self):
        return max(gw.commands() for gw in self.gateways.values())

    def gateway_failed(self, gw, why):
        """The connection failed (why, unless an error is told already): every command
        without its reply fails."""
        if self.error is None and why is not None:
            self.error = why
        for c in gw.close():
            self.command_done(c, None, failed=True)

    def command_done(self, c, reply, failed=False):
        why = None if failed else reply_error(reply, c.change.verb, c.change.name)
        if why is not None and self.error is None:
            self.error = f"{c.role}: {c.line[:120]}: {why}"
        ch = c.change
        ch.left -= 1
        if why is not None or failed:
            ch.failed = True
        if ch.left:
            return
        if ch.failed:
            self.schedule.free(ch.name)
            return
        self.reply_s.append(time.monotonic() - ch.started)
        self.counts["done"] += 1
        self.counts[ch.verb] += 1
        self.schedule.made(ch.verb, ch.name)
        if ch.verb == "add" and not self.stopping and self.pinging:
            self.ping(ch.name)
        else:
            self.schedule.free(ch.name)

    def gateway_io(self, gw, ev, now):
        closed = False
        try:
            if ev & select.POLLOUT:
                gw.flush()
            # One read a wake-up: poll says again what is left (no read to find EAGAIN).
            if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                data = gw.sock.recv(65536)
                closed = not data
                gw.buf += data
        except BlockingIOError:
            pass
        except OSError as e:
            self.gateway_failed(gw, f"{gw.role}: control socket: {e.strerror or e}")
            return
        gw.last_io = now
        *lines, gw.buf = gw.buf.split(b"\n")
        for line in lines:
            if not gw.pending:
                self.gateway_failed(gw, f"{gw.role}: a reply to no command: {line[:200]!r}")
                return
            c = gw.pending.popleft()
            text = line.decode("utf-8", "replace")
            if c is None:
                why = reply_keep(text)
                if why is not None:
                    self.gateway_failed(gw, f"{gw.role}: keep: {why}")
                    return
                continue
            self.command_done(c, text)
        if closed:
            first = next((c for c in gw.pending if c is not None), None)
            self.gateway_failed(gw, None if first is None else
                                f"{gw.role}: {first.line[:120]}: control socket closed by "
                                "gregw before its reply")

    # Pings.
    def raw_for(self, src):
        if src not in self.raw:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            s.setblocking(False)
            s.bind((src, 0))
            self.raw[src] = s
            self.raw_fds[s.fileno()] = s
            self.poller.register(s, select.POLLIN)
        return self.raw[src]

    def send_echo(self, name, which):
        """Sends echo number which (0: the first) of the tunnel's ping."""
        t = self.tunnels[name]
        self.seq = (self.seq + 1) & 0xffff
        self.echoes[self.seq] = (name, which, time.monotonic())
        try:
            self.raw_for(t["src"]).sendto(echo(self.ident, self.seq), (t["dst"], 0))
        except OSError:
            pass  # a send refused is an echo without reply

    def ping(self, name):
        now = time.monotonic()
        self.pings[name] = {"answered": None, "rtt": None, "sent": 1,
                            "next_at": now + SECOND_ECHO_S, "deadline": now + PING_GIVE_UP_S}
        self.ping_counts["pinged"] += 1
        self.send_echo(name, 0)

    def ping_io(self, s):
        # One read a wake-up: poll says again what is left (no read to find EAGAIN).
        try:
            packet = s.recv(2048)
        except BlockingIOError:
            return
        seq = echo_reply(packet, self.ident)
        got = self.echoes.pop(seq, None) if seq is not None else None
        if got is None:
            return
        name, which, sent = got
        p = self.pings.get(name)
        if p is not None and p["answered"] is None:
            p["answered"], p["rtt"] = which, time.monotonic() - sent
            self.ping_settle(name)

    def ping_settle(self, name, now=None):
        """Ends a tunnel's ping once an echo is answered (the first: it took effect for
        the first packet; another: later) or its time is up (never)."""
        p = self.pings[name]
        over = now is not None and now >= p["deadline"]
        if not over and p["answered"] is None:
            return
        del self.pings[name]
        for seq in [k for k, e in self.echoes.items() if e[0] == name]:
            del self.echoes[seq]
        if p["answered"] == 0:
            self.ping_counts["first"] += 1
            self.first_rtt.append(p["rtt"])
        elif p["answered"] is not None:
            self.ping_counts["later"] += 1
            self.later_echo.append(p["answered"])
        else:
            self.ping_counts["never"] += 1
        self.schedule.free(name)

    def ping_timers(self, now):
        for name, p in list(self.pings.items()):
            if now >= p["next_at"] and now < p["deadline"]:
                self.send_echo(name, p["sent"])
                p["sent"] += 1
                p["next_at"] = now + ECHO_EVERY_S
            self.ping_settle(name, now)

    # The loop.
    def run(self, stdin):
        start = time.monotonic()
        end = None
        # The connections before the first change, so that it does not wait for them.
        for role, gw in self.gateways.items():
            try:
                gw.open(start)
            except OSError as e:
                self.gateway_failed(gw, f"{role}: cannot connect: {e.strerror or e}")
        stdin_fd = stdin.fileno()
        self.poller.register(stdin_fd, select.POLLIN | select.POLLHUP)
        while True:
            now = time.monotonic()
            if not self.stopping and self.error is None:
                want = due(start, self.rate, now)
                while self.counts["started"] < want and self.error is None:
                    if self.in_flight() >= CTL_IN_FLIGHT:
                        break
                    pick = self.schedule.next()
                    if pick is None:
                        break
                    self.start_change(*pick, start + self.counts["started"] / self.rate)
                self.counts["asked"] = want
            elif end is None:
                end = now
            self.ping_timers(now)
            for gw in self.gateways.values():
                first = next((c for c in gw.pending if c is not None), None)
                if first is not None and now > first.deadline:
                    self.gateway_failed(gw, f"{gw.role}: {first.line[:120]}: no reply within "
                                            f"{REPLY_TIMEOUT_S:g} s")
            if (self.stopping or self.error is not None) and not self.in_flight() and \
                    not self.pings:
                break
            if end is not None and now > end + DRAIN_S:
                break
            # Until the next change is due, the next echo or a deadline: at least a
            # millisecond (a change that waits for a free tunnel waits for a reply or a
            # ping's end, which wake the poll), at most 0.1 s; rounded up, so that the loop
            # does not wake just before what it waits for and go round again.
            wait = 0.1
            if not self.stopping and self.error is None:
                wait = min(wait, start + self.counts["started"] / self.rate - now)
            if self.pings:
                wait = min(wait, min(p["next_at"] for p in self.pings.values()) - now)
            for fd, ev in self.poller.poll(max(1, math.ceil(wait * 1000))):
                if fd == stdin_fd:
                    if not os.read(fd, 4096):
                        self.stopping = True
                        self.poller.unregister(fd)
                        self.counts["asked"] = due(start, self.rate, time.monotonic())
                elif fd in self.socks:
                    self.gateway_io(self.socks[fd], ev, time.monotonic())
                elif fd in self.raw_fds:
                    self.ping_io(self.raw_fds[fd])
        for gw in self.gateways.values():
            gw.close()
        span = (end or time.monotonic()) - start
        return self.result(span)

    def result(self, span):
        rs = sorted(self.reply_s)
        return {"rate": self.rate, "span_s": span, **self.counts,
                "late_max_ms": self.late_max_s * 1e3,
                "reply_ms": {"median": rs[len(rs) // 2] * 1e3, "max": rs[-1] * 1e3} if rs
                else None,
                "absent_at_end": sorted(self.schedule.absent),
                "pings": dict(self.ping_counts, still_out=len(self.pings),
                              first_rtt_ms_max=max(self.first_rtt) * 1e3 if self.first_rtt
                              else None,
                              later_echo_max=max(self.later_echo) + 1 if self.later_echo
                              else None),
                "error": self.error}


def main():
    # The runner ends the churn (the end of its input, or SIGTERM); a Ctrl-C at the terminal
    # reaches this process too, and the runner's own handling of it ends the churn then.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    plan = json.loads(sys.stdin.buffer.readline())
    churn = Churn(plan)
    print("ready", flush=True)
    out = churn.run(sys.stdin)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
