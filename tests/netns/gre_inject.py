#!/usr/bin/env python3
"""Injects crafted GRE packets for the namespace tests, from a raw IPv4 socket.

  gre_inject.py --src A --dst B --kind KIND --count N [--key K] [--seq] [--csum] [--udp PORT]

Each KIND is one defect, named after the drop reason gregw must count it under:
  good          a well-formed packet (with --key/--seq/--csum as the receiver expects)
  unknown_peer  good, but from a spoofed source address (--spoof)
  bad_version   GRE version 1
  bad_flags     GRE routing bit set
  bad_key       key off by one
  no_seq        no sequence number
  no_csum       no checksum
  bad_csum      checksum off by one
  bad_proto     payload EtherType 0x0806 (ARP)
  bad_inner     payload is not an IP packet
  truncated     the packet ends inside the GRE options
The kernel fills the outer IP checksum and length (IP_HDRINCL), so outer defects are left to
the unit tests. The inner packet is UDP 198.18.1.77:9 -> 198.18.3.77:9 and goes nowhere.
With --udp PORT the GRE packet travels in UDP from port 50000 to PORT (GRE-in-UDP, RFC 8086),
without a UDP checksum (allowed over IPv4).
"""
import argparse
import socket
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def inner_udp():
    payload = b"tunbed-inject"
    udp = struct.pack("!HHHH", 9, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton("198.18.1.77"), socket.inet_aton("198.18.3.77"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return ip + udp


def gre(kind, key, seq, want_csum, n):
    flags, proto, body = 0, 0x0800, inner_udp()
    use_key = key is not None
    use_seq = seq and kind != "no_seq"
    use_csum = want_csum and kind != "no_csum" or kind == "bad_csum"
    if kind == "bad_version":
        flags |= 1
    if kind == "bad_flags":
        flags |= 0x4000
    if kind == "bad_proto":
        proto = 0x0806
    if kind == "bad_inner":
        body = b"\x00" * 40
    if use_csum:
        flags |= 0x8000
    if use_key:
        flags |= 0x2000
    if use_seq:
        flags |= 0x1000
    opts = b""
    if use_csum:
        opts += b"\0\0\0\0"
    if use_key:
        opts += struct.pack("!I", (key + 1 if kind == "bad_key" else key) & 0xFFFFFFFF)
    if use_seq:
        opts += struct.pack("!I", 0x70000000 + n)
    pkt = struct.pack("!HH", flags, proto) + opts + body
    if use_csum:
        c = csum(pkt)
        if kind == "bad_csum":
            c = (c + 1) & 0xFFFF
        pkt = pkt[:4] + struct.pack("!H", c) + pkt[6:]
    if kind == "truncated":
        pkt = pkt[:4 + len(opts) - 2] if opts else pkt[:3]
    return pkt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--spoof", default="198.18.0.99")
    ap.add_argument("--kind", required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--key", type=int)
    ap.add_argument("--seq", action="store_true")
    ap.add_argument("--csum", action="store_true")
    ap.add_argument("--udp", type=int, metavar="PORT")
    args = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src = args.spoof if args.kind == "unknown_peer" else args.src
    for n in range(args.count):
        body, proto = gre(args.kind, args.key, args.seq, args.csum, n), 47
        if args.udp:
            body, proto = struct.pack("!HHHH", 50000, args.udp, 8 + len(body), 0) + body, 17
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0x4000, 64, proto, 0,
                         socket.inet_aton(src), socket.inet_aton(args.dst))
        s.sendto(ip + body, (args.dst, 0))


if __name__ == "__main__":
    main()
