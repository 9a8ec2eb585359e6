"""The datasheet's probe of a tunnel's decapsulation (RFC 6040, 4.2), run as a program in a
host's namespace: `send` puts crafted GRE packets on the transit from gwa, their outer ECN
field CE as a router's mark on the way would be, around a UDP datagram to the server whose
DS field is the inner one; `recv` on the server counts the datagrams that arrive on a UDP port
by their DS field (IP_RECVTOS) until --time is up, and prints one JSON line. Standard library
only: it runs where the runner's package is not importable.

  tosprobe.py send --src A --dst B --inner-src C --inner-dst D --port P --count N
                   --outer-tos T --inner-tos T [--key K] [--csum]
  tosprobe.py recv --port P --time S"""

import argparse
import json
import select
import socket
import struct
import sys
import time

GRE_PROTO = 47
GRE_F_CSUM, GRE_F_KEY = 0x8000, 0x2000
ETH_P_IP = 0x0800
SOURCE_PORT = 50001
PAYLOAD = b"tunbed-tosprobe".ljust(48, b".")
COUNT_MAX = 100000
TIME_MAX_S = 60.0


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, tos, ttl=64):
    """An IPv4 header (DF, its checksum) and payload."""
    h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), 0, 0x4000, ttl, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def inner(src, dst, port, tos):
    udp = struct.pack("!HHHH", SOURCE_PORT, port, 8 + len(PAYLOAD), 0) + PAYLOAD
    return ipv4(src, dst, socket.IPPROTO_UDP, udp, tos)


def gre(body, key=None, with_csum=False):
    """A GRE header (RFC 2784, RFC 2890's key) around an IPv4 packet."""
    flags = (GRE_F_CSUM if with_csum else 0) | (GRE_F_KEY if key is not None else 0)
    opts = (b"\0\0\0\0" if with_csum else b"") + (struct.pack("!I", key) if key is not None
                                                   else b"")
    pkt = struct.pack("!HH", flags, ETH_P_IP) + opts + body
    if with_csum:
        pkt = pkt[:4] + struct.pack("!H", csum(pkt)) + pkt[6:]
    return pkt


def frame(a):
    """The outer IPv4 packet of one probe (the kernel sends it as it is: IP_HDRINCL)."""
    return ipv4(a.src, a.dst, GRE_PROTO,
                gre(inner(a.inner_src, a.inner_dst, a.port, a.inner_tos), a.key, a.csum),
                a.outer_tos)


def send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    pkt = frame(a)
    for _ in range(a.count):
        s.sendto(pkt, (a.dst, 0))
    print(json.dumps({"sent": a.count}))


def recv(a):
    """Counts datagrams on a.port by their TOS byte until a.time is up."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("", a.port))
    print(json.dumps({"ready": True}), flush=True)
    counts, end = {}, time.monotonic() + a.time
    while (left := end - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            continue
        _, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(4))
        tos = next((d[0] for lvl, typ, d in anc
                    if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS and d), None)
        if tos is not None:
            counts[str(tos)] = counts.get(str(tos), 0) + 1
    print(json.dumps({"tos": counts}), flush=True)


def addr(v):
    try:
        return socket.inet_ntoa(socket.inet_aton(v))
    except OSError:
        raise ValueError(v) from None


def byte(v):
    n = int(v, 0)
    if not 0 <= n <= 255:
        raise ValueError(v)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tosprobe.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    for o in ("--src", "--dst", "--inner-src", "--inner-dst"):
        s.add_argument(o, required=True, type=addr)
    s.add_argument("--port", required=True, type=int, choices=range(1, 65536), metavar="PORT")
    s.add_argument("--count", required=True, type=int, choices=range(1, COUNT_MAX + 1),
                   metavar="N")
    s.add_argument("--outer-tos", required=True, type=byte)
    s.add_argument("--inner-tos", required=True, type=byte)
    s.add_argument("--key", type=int, choices=range(0, 2 ** 32), metavar="KEY")
    s.add_argument("--csum", action="store_true")
    r = sub.add_parser("recv")
    r.add_argument("--port", required=True, type=int, choices=range(1, 65536), metavar="PORT")
    r.add_argument("--time", required=True, type=float)
    a = ap.parse_args(argv)
    if a.cmd == "recv":
        if not 0 < a.time <= TIME_MAX_S:
            ap.error(f"--time: '{a.time:g}' is not above 0 and at most {TIME_MAX_S:g} s")
        recv(a)
    else:
        send(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
