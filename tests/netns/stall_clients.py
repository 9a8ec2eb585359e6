#!/usr/bin/python3
"""Clients that stall a tunbed-traffic server: N TCP connections to HOST PORT, each sending a
part of what the protocol wants and then nothing more. For tests/netns/traffic_hostile.sh.

  stall_clients.py HOST PORT N WHAT STATUS [--exit]

WHAT: nothing (connect only), hello-part (the first 10 bytes of a hello), control-half (a whole
control hello and the first 8 bytes of a request). Opens all N (in one thread, a connect after
the other), then writes "open N" to STATUS. With --exit it then exits, which closes every
connection (FIN); otherwise it holds them and rewrites STATUS as "open N closed K" each time
the server closes more of them, until SIGTERM. Only addresses the test gives it: the test's
namespaces and the benchmarking ranges.
"""
import os
import selectors
import signal
import socket
import struct
import sys

MAGIC_HELLO, MAGIC_REQ, VERSION, KIND_CONTROL, CTL_RESULTS = 0x54425452, 0x54424351, 1, 3, 2


def payload(what):
    hello = bytearray(64)
    struct.pack_into(">IHBB", hello, 0, MAGIC_HELLO, VERSION, KIND_CONTROL, 0)
    struct.pack_into(">Q", hello, 8, 0x5354414c4c)  # the test id: "STALL"
    req = bytearray(16)
    struct.pack_into(">IB", req, 0, MAGIC_REQ, CTL_RESULTS)
    return {"nothing": b"", "hello-part": bytes(hello[:10]),
            "control-half": bytes(hello) + bytes(req[:8])}[what]


def write_status(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


def main():
    host, port, n, what, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    leave = "--exit" in sys.argv[6:]
    data = payload(what)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=30)
        if data:
            s.sendall(data)
        s.setblocking(False)
        socks.append(s)
    write_status(status, f"open {n}")
    if leave:
        return
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    while closed < n:
        for key, _ in sel.select():
            try:
                more = key.fileobj.recv(4096)
            except ConnectionError:
                more = b""
            if not more:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                closed += 1
        write_status(status, f"open {n} closed {closed}")
    signal.pause()


if __name__ == "__main__":
    main()
