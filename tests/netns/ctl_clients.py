#!/usr/bin/env python3
"""Clients of gregw's control socket that misbehave, for gregw_ctl.sh.

  ctl_clients.py request PATH BYTES   send BYTES (Python bytes literal, e.g. 'b"x\\n"'), print
                                      the reply as it came, and whether it is one JSON document
  ctl_clients.py abuse PATH --slow N --idle M --ticks T
                                      N slow clients, each sending one byte every 0.9 s on
                                      its connection, connecting again when gregw closes it,
                                      and M idle connections that send nothing, opened at the
                                      start; prints "ready", then "tick K" each tick, and a
                                      JSON summary at the end (or once gregw is gone)
  ctl_clients.py hold PATH CMD        send CMD and read nothing until gregw hangs up (POLLHUP,
                                      at most 30 s), then read what is there; prints a JSON
                                      summary
  ctl_clients.py keep PATH LINE...    send "keep" and the lines at once on one connection,
                                      read a reply line for each (until gregw closes, at most
                                      30 s); prints a JSON summary: each reply parsed (or its
                                      text), and whether the connection is still open

Every wait is bounded; none is needed for correctness but the ticks of the slow clients,
which are the point.
"""
import ast
import json
import select
import socket
import sys
import time

TICK = 0.9


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)  # blocking: with the listen queue full, a timeout's EAGAIN would fail it
    s.setblocking(False)
    return s


def closed_by_peer(s):
    """True when the peer hung up (EOF or reset); reads and drops whatever it sent."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def request(path, raw):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(raw)
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        try:
            data = s.recv(65536)
        except ConnectionResetError:  # gregw left unread what came after a line too long
            break
        if not data:
            break
        out += data
    try:
        doc = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        print(json.dumps({"valid": False, "why": str(e), "reply": out.decode("latin-1")}))
        return 0
    print(json.dumps({"valid": True, "doc": doc}))
    return 0


class Slow:
    def __init__(self, path):
        self.path = path
        self.sock = None
        self.sent = 0
        self.closed = 0
        self.most = 0

    def tick(self):
        """One byte; a connection gregw closed is counted and replaced."""
        if self.sock is not None and closed_by_peer(self.sock):
            self.sock.close()
            self.sock = None
            self.closed += 1
        if self.sock is None:
            self.sock = connect(self.path)
            self.sent = 0
        try:
            self.sock.send(b"s")
            self.sent += 1
        except OSError:
            pass  # closed since the check: found at the next tick
        self.most = max(self.most, self.sent)


def abuse(path, nslow, nidle, ticks):
    idle = [connect(path) for _ in range(nidle)]
    slow = [Slow(path) for _ in range(nslow)]
    for c in slow:
        c.tick()
    print("ready", flush=True)
    gone = None
    idle_closed = 0
    start = time.monotonic()
    for k in range(1, ticks + 1):
        time.sleep(max(0.0, start + k * TICK - time.monotonic()))
        try:
            for c in slow:
                c.tick()
        except OSError:
            gone = k  # gregw no longer listens
            break
        # Counted while gregw runs: at its exit every connection closes anyway.
        still = [s for s in idle if not closed_by_peer(s)]
        idle_closed += len(idle) - len(still)
        idle = still
        print(f"tick {k} idle_closed {idle_closed}", flush=True)
    print(json.dumps({"gone_at_tick": gone, "slow_most_bytes": max(c.most for c in slow),
                      "slow_closed": sum(c.closed for c in slow),
                      "idle_closed": idle_closed}), flush=True)
    return 0


def hold(path, cmd):
    s = connect(path)
    s.setblocking(True)
    s.sendall(cmd.encode() + b"\n")
    print("holding", flush=True)
    p = select.poll()
    p.register(s, select.POLLHUP)
    hup = any(ev & select.POLLHUP for _, ev in p.poll(30000))
    s.settimeout(30)
    out = b""
    while True:
        try:
            data = s.recv(65536)
        except OSError:
            break
        if not data:
            break
        out += data
    try:
        json.loads(out)
        complete = True
    except ValueError:
        complete = False
    print(json.dumps({"hup": hup, "bytes": len(out), "complete": complete}), flush=True)
    return 0


def keep(path, lines):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(("keep\n" + "".join(line + "\n" for line in lines)).encode())
    buf, still_open = b"", True
    while buf.count(b"\n") < len(lines) + 1:
        try:
            data = s.recv(65536)
        except ConnectionResetError:  # gregw left unread what came after a line too long
            data = b""
        if not data:
            still_open = False
            break
        buf += data
    if still_open:  # nothing more to read, and not closed: recv would block
        s.setblocking(False)
        try:
            extra = s.recv(65536)
            buf += extra
            still_open = bool(extra)
        except BlockingIOError:
            pass
        except OSError:
            still_open = False
    replies = []
    for raw in buf.split(b"\n")[:-1]:
        try:
            replies.append(json.loads(raw))
        except ValueError:
            replies.append({"raw": raw.decode("latin-1")})
    print(json.dumps({"replies": replies, "open": still_open,
                      "rest": buf.rsplit(b"\n", 1)[-1].decode("latin-1")}))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "request":
        return request(argv[2], ast.literal_eval(argv[3]))
    if len(argv) >= 3 and argv[1] == "keep":
        return keep(argv[2], argv[3:])
    if len(argv) >= 3 and argv[1] == "hold":
        return hold(argv[2], argv[3])
    if len(argv) >= 3 and argv[1] == "abuse":
        opts = dict(zip(argv[3::2], argv[4::2]))
        return abuse(argv[2], int(opts["--slow"]), int(opts["--idle"]), int(opts["--ticks"]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
