#!/usr/bin/env python3
"""Injects crafted GRE packets for the namespace tests, from a raw IPv4 socket.

  gre_inject.py --src A --dst B --kind KIND --count N [--key K] [--seq] [--csum] [--udp PORT]
                [--seq-base S] [--inner-src ADDR] [--inner-dst ADDR]
                [--outer-tos T] [--inner-tos T] [--outer-ttl N]

Each KIND is one defect, named after the drop reason gregw must count it under:
  good            a well-formed packet (with --key/--seq/--csum as the receiver expects)
  unknown_peer    good, but from a spoofed source address (--spoof)
  bad_version     GRE version 1
  bad_flags       GRE routing bit set
  bad_key         key off by one
  no_seq          no sequence number
  no_csum         no checksum
  bad_csum        checksum off by one
  bad_proto       payload EtherType 0x0806 (ARP)
  bad_inner       payload is not an IP packet
  truncated       the packet ends inside the GRE options
  zero_length     no GRE header at all: an outer packet (or UDP datagram) with an empty payload
  outer_fragment  good, sent as two outer IPv4 fragments that reassemble
  lone_fragment   the first of those two fragments alone: it never reassembles
  spoofed_source  good, but the inner source is --inner-src (default 198.18.3.66, a host of
                  the receiving gateway's own LAN in ras.topo)
  spoofed_source6 good, but the inner packet is IPv6 (2001:2:0:3::66 -> 2001:2:0:1::77)
  tunnel_loop     good, but the inner destination is --inner-dst (default 198.19.0.77: the
                  tunnel subnet, not the receiver's address)
Kinds the receiver accepts, for its sequence accounting (with --seq):
  out_of_window   good, numbered far from --seq-base (2^30 on) and from each other (2^17
                  apart, twice gregw's window)
  resync          good, numbered in a row from --seq-base - 2^30: a peer that restarted
With --udp only:
  bad_udp_csum    good, in a UDP datagram whose checksum is off by one (the kernel drops it)
The kernel fills the outer IP checksum and length (IP_HDRINCL), so outer defects are left to
the unit tests; the outer TOS byte and TTL go as given (--outer-tos, --outer-ttl: 0 and 64
unless told), and so does the inner IPv4 packet's TOS byte (--inner-tos; its TTL is 64): what
tunbed-wire holds the outer header against (RFC 6040, RFC 2983). The inner packet is UDP 198.18.1.77:9 -> 198.18.3.77:9 and goes nowhere. Good
packets are numbered --seq-base + n (default 0x70000000 + n). With --udp PORT the GRE packet
travels in UDP from port 50000 to PORT (GRE-in-UDP, RFC 8086), without a UDP checksum
(allowed over IPv4) unless the kind needs one; every datagram is longer than 76 bytes, so a
bad checksum is found at the socket (shorter ones the kernel checks before, on arrival).
"""
import argparse
import socket
import struct

PAD = 48  # inner UDP payload: the datagram exceeds 76 bytes (the kernel's CHECKSUM_BREAK)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def inner_udp(src, dst, tos=0):
    payload = b"tunbed-inject".ljust(PAD, b".")
    udp = struct.pack("!HHHH", 9, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return ip + udp


def inner_udp6(src, dst):
    payload = b"tunbed-inject".ljust(PAD, b".")
    udp = struct.pack("!HHHH", 9, 9, 8 + len(payload), 0) + payload
    s, d = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    pseudo = s + d + struct.pack("!IxxxB", len(udp), 17)
    udp = udp[:6] + struct.pack("!H", csum(pseudo + udp) or 0xFFFF) + udp[8:]
    return struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + s + d + udp


def seq_of(kind, base, n):
    if kind == "out_of_window":
        return base + 0x40000000 + (n % 8192) * 0x20000
    if kind == "resync":
        return base + 0xC0000000 + n
    return base + n


def gre(args, n):
    kind = args.kind
    flags, proto = 0, 0x0800
    if kind == "spoofed_source6":
        proto, body = 0x86DD, inner_udp6("2001:2:0:3::66", "2001:2:0:1::77")
    else:
        src = args.inner_src if kind == "spoofed_source" else "198.18.1.77"
        dst = args.inner_dst if kind == "tunnel_loop" else "198.18.3.77"
        body = inner_udp(src, dst, args.inner_tos)
    use_key = args.key is not None
    use_seq = args.seq and kind != "no_seq"
    use_csum = args.csum and kind != "no_csum" or kind == "bad_csum"
    if kind == "zero_length":
        return b""
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
        opts += struct.pack("!I", (args.key + 1 if kind == "bad_key" else args.key) & 0xFFFFFFFF)
    if use_seq:
        opts += struct.pack("!I", seq_of(kind, args.seq_base, n) & 0xFFFFFFFF)
    pkt = struct.pack("!HH", flags, proto) + opts + body
    if use_csum:
        c = csum(pkt)
        if kind == "bad_csum":
            c = (c + 1) & 0xFFFF
        pkt = pkt[:4] + struct.pack("!H", c) + pkt[6:]
    if kind == "truncated":
        pkt = pkt[:4 + len(opts) - 2] if opts else pkt[:3]
    return pkt


def udp_wrap(body, args, src, dst):
    udp = struct.pack("!HHHH", 50000, args.udp, 8 + len(body), 0) + body
    if args.kind == "bad_udp_csum":
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!xBH", 17, len(udp))
        c = csum(pseudo + udp) or 0xFFFF
        c = c + 1 if c < 0xFFFF else 1
        udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    return udp


def ipv4(src, dst, proto, payload, ident=0, frag=0x4000, tos=0, ttl=64):
    return struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), ident, frag, ttl, proto, 0,
                       socket.inet_aton(src), socket.inet_aton(dst)) + payload


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--spoof", default="198.18.0.99")
    ap.add_argument("--kind", required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--key", type=int)
    ap.add_argument("--seq", action="store_true")
    ap.add_argument("--seq-base", type=lambda v: int(v, 0), default=0x70000000)
    ap.add_argument("--csum", action="store_true")
    ap.add_argument("--udp", type=int, metavar="PORT")
    ap.add_argument("--inner-src", default="198.18.3.66")
    ap.add_argument("--inner-dst", default="198.19.0.77")
    ap.add_argument("--outer-tos", type=lambda v: int(v, 0), default=0)
    ap.add_argument("--inner-tos", type=lambda v: int(v, 0), default=0)
    ap.add_argument("--outer-ttl", type=int, default=64)
    args = ap.parse_args()
    if args.kind == "bad_udp_csum" and not args.udp:
        ap.error("bad_udp_csum needs --udp")
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src = args.spoof if args.kind == "unknown_peer" else args.src
    for n in range(args.count):
        body, proto = gre(args, n), 47
        if args.udp:
            body, proto = udp_wrap(body, args, src, args.dst), 17
        if args.kind in ("outer_fragment", "lone_fragment"):
            # Two fragments cut at 24 bytes (a multiple of 8) of the outer payload, one
            # identification each pair; DF would forbid them.
            ident = 0x4000 + n % 0xC000
            pieces = [ipv4(src, args.dst, proto, body[:24], ident, 0x2000, args.outer_tos,
                           args.outer_ttl)]
            if args.kind == "outer_fragment":
                pieces.append(ipv4(src, args.dst, proto, body[24:], ident, 24 // 8,
                                   args.outer_tos, args.outer_ttl))
        else:
            pieces = [ipv4(src, args.dst, proto, body, tos=args.outer_tos, ttl=args.outer_ttl)]
        for p in pieces:
            s.sendto(p, (args.dst, 0))


if __name__ == "__main__":
    main()
