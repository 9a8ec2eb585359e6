"""The datasheet's probes of what a tunnel does with the DS field (RFC 2983, RFC 6040), run as a
program in a host's namespace. Standard library only: it runs where the runner's package is not
importable.

For a tunnel tunbed-wire decodes (the "wire" method): `send` puts crafted GRE packets on the
transit from gwa, their outer ECN field CE as a router's mark on the way would be, around a UDP
datagram to the server whose DS field is the inner one.

For any other tunnel over one UDP port (the "capture" method): `capture` reads on a transit
device, with a packet socket, the TOS byte of each outer packet from one address to another on
that port, at least --min-len bytes long (the probe's, not the tunnel's keepalives); `remark`
sets the ECN field of those packets to CE as they come in on the decapsulating gateway's
transit device (a tc program attached with tcx, its IPv4 header checksum fixed), as a router's
mark on the way would; `send-udp` sends datagrams of a DS field of its own from the client.

`recv`, on the server, counts the datagrams that arrive on a UDP port by their DS field
(IP_RECVTOS) until --time is up or the end datagram of `send-udp --end` arrives. `capture`,
`recv` and `remark` print one JSON line when they stop (SIGTERM, or their end).

  tosprobe.py send --src A --dst B --inner-src C --inner-dst D --port P --count N
                   --outer-tos T --inner-tos T [--key K] [--csum]
  tosprobe.py send-udp --dst D --port P (--count N --tos T --size S [--pps R] | --end)
  tosprobe.py recv --port P --time S
  tosprobe.py capture --dev DEV --src A --dst B --port P --min-len L --ready-file F
  tosprobe.py remark --dev DEV --src A --port P --min-len L --ready-file F"""

import argparse
import ctypes
import json
import os
import platform
import select
import signal
import socket
import struct
import sys
import time

GRE_PROTO = 47
GRE_F_CSUM, GRE_F_KEY = 0x8000, 0x2000
ETH_P_IP, ETH_P_ALL = 0x0800, 0x0003
SOURCE_PORT = 50001
PAYLOAD = b"tunbed-tosprobe".ljust(48, b".")
END = b"tunbed-tosprobe-end"  # send-udp --end: recv stops at it
COUNT_MAX = 100000
TIME_MAX_S = 60.0
PPS_MAX = 100000
SIZE_MIN, SIZE_MAX = len(PAYLOAD), 1472  # send-udp's datagrams: a 1500-byte packet at most
ECN_MASK, CE = 0x03, 0x03
IPV4_HEADER, UDP_HEADER, ETH_HEADER = 20, 8, 14
IP_TOS_OFFSET, IP_LEN_OFFSET, IP_PROTO_OFFSET, IP_CSUM_OFFSET = 1, 2, 9, 10
IP_SRC_OFFSET, IP_DST_OFFSET = 12, 16
UDP_DPORT_OFFSET = 2
SOL_PACKET, PACKET_STATISTICS = 263, 6

# The kernel's eBPF interface as include/uapi/linux/bpf.h numbers it, each with the Linux
# version it came with: the re-mark needs 6.6 (tcx).
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_PROG_LOAD = 0, 1, 5  # 3.18
BPF_LINK_CREATE = 28                                          # 5.7
BPF_MAP_TYPE_ARRAY = 2                                        # 3.19
BPF_PROG_TYPE_SCHED_CLS = 3                                   # 4.1
BPF_TCX_INGRESS = 46                                          # 6.6
BPF_PSEUDO_MAP_FD = 1                                         # 3.18
BPF_FUNC_MAP_LOOKUP_ELEM = 1                                  # 3.18
BPF_FUNC_SKB_STORE_BYTES = 9                                  # 4.1
BPF_FUNC_L3_CSUM_REPLACE = 10                                 # 4.1
BPF_FUNC_SKB_LOAD_BYTES = 26                                  # 4.5
TCX_NEXT = -1                                                 # 6.6: the next program, or pass
# The bpf system call's number per machine (the kernel's syscall tables).
SYS_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "loongarch64": 280,
           "ppc64le": 361, "s390x": 351, "i686": 357, "armv7l": 386}
# Instructions (include/uapi/linux/bpf_common.h and bpf.h): class | operation | source. JMP32
# (Linux 5.1) compares the low 32 bits, which an address or a port needs.
MOV64_X, MOV64_K, ADD64_K, LSH64_K, OR64_X, OR64_K = 0xBF, 0xB7, 0x07, 0x67, 0x4F, 0x47
LDX_B, LDX_H, LDX_W, STX_H, ST_W, ATOMIC_ADD_DW = 0x71, 0x69, 0x61, 0x6B, 0x62, 0xDB
JNE_K, JEQ_K, JEQ_X, JNE32_K, JLT32_K = 0x55, 0x15, 0x1D, 0x56, 0xA6
LD_IMM64, CALL, EXIT = 0x18, 0x85, 0x95
R0, R1, R2, R3, R4, R5, R6, R7, R8, R10 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 10
# Where the program keeps, on its stack, the headers it reads: an Ethernet header, IPv4's
# without options and UDP's ports, so placed that IPv4's 16-bit words and its addresses are
# aligned (the verifier refuses a misaligned stack access).
HEADERS_AT, HEADERS_LEN = -54, ETH_HEADER + IPV4_HEADER + 4
VERIFIER_LOG = 65536


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


def send_udp(a):
    """a.count datagrams of a.size bytes to a.dst:a.port, their TOS byte a.tos, a.pps a second
    (the pace spares a tunnel's queues a burst); or with a.end the one datagram recv stops
    at, too short for capture and remark to take for a probe's."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if a.end:
        s.sendto(END, (a.dst, a.port))
        print(json.dumps({"sent": 0, "end": True}))
        return
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
    body, gap = PAYLOAD.ljust(a.size, b"."), 1.0 / a.pps
    due = time.monotonic()
    for _ in range(a.count):
        s.sendto(body, (a.dst, a.port))
        due += gap
        time.sleep(max(0.0, due - time.monotonic()))
    print(json.dumps({"sent": a.count}))


def recv(a):
    """Counts datagrams on a.port by their TOS byte until a.time is up or END arrives."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("", a.port))
    print(json.dumps({"ready": True}), flush=True)
    counts, end, ended = {}, time.monotonic() + a.time, False
    while not ended and (left := end - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            continue
        data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(4))
        if data == END:
            ended = True
            continue
        tos = next((d[0] for lvl, typ, d in anc
                    if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS and d), None)
        if tos is not None:
            counts[str(tos)] = counts.get(str(tos), 0) + 1
    print(json.dumps({"tos": counts, "end": ended}), flush=True)


def outer_tos(pkt, src, dst, port, min_len):
    """The TOS byte of pkt (an IPv4 packet, as a packet socket of SOCK_DGRAM reads it) when it
    goes from src to dst (4 bytes each) over UDP to port and is at least min_len bytes long;
    else None. A packet shorter than its headers say is none of the probe's."""
    if len(pkt) < IPV4_HEADER or pkt[0] >> 4 != 4:
        return None
    ihl = (pkt[0] & 0x0F) * 4
    if (ihl < IPV4_HEADER or len(pkt) < ihl + UDP_HEADER
            or pkt[IP_PROTO_OFFSET] != socket.IPPROTO_UDP
            or pkt[IP_SRC_OFFSET:IP_SRC_OFFSET + 4] != src
            or pkt[IP_DST_OFFSET:IP_DST_OFFSET + 4] != dst
            or int.from_bytes(pkt[ihl + UDP_DPORT_OFFSET:ihl + UDP_DPORT_OFFSET + 2], "big")
            != port):
        return None
    if int.from_bytes(pkt[IP_LEN_OFFSET:IP_LEN_OFFSET + 2], "big") < min_len:
        return None
    return pkt[IP_TOS_OFFSET]


class Stop(Exception):
    """SIGTERM: the caller has what it wanted measured."""


def stop(*_):
    raise Stop


def ready(path):
    with open(path, "x"):
        pass


def capture(a):
    """Counts the outer packets of a probe on a.dev by TOS byte until SIGTERM."""
    src, dst = socket.inet_aton(a.src), socket.inet_aton(a.dst)
    counts, seen = {}, 0
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0)
    try:
        signal.signal(signal.SIGTERM, stop)
        # Bound to the device before it takes a packet: nothing of another device. To every
        # protocol: a packet the device sends reaches only the taps of all of them
        # (dev_queue_xmit_nit), not one bound to IPv4.
        s.bind((a.dev, ETH_P_ALL))
        ready(a.ready_file)
        while True:
            pkt, (_, proto, *_) = s.recvfrom(65535)
            tos = outer_tos(pkt, src, dst, a.port, a.min_len) if proto == ETH_P_IP else None
            if tos is not None:
                counts[str(tos)] = counts.get(str(tos), 0) + 1
                seen += 1
    except Stop:
        pass
    _, drops = struct.unpack("=II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    print(json.dumps({"tos": counts, "packets": seen, "socket_drops": drops}), flush=True)


def insn(code, dst=0, src=0, off=0, imm=0):
    """One eBPF instruction (struct bpf_insn: the registers' nibbles in the host's order)."""
    regs = dst | src << 4 if sys.byteorder == "little" else dst << 4 | src
    return struct.pack("=BBhi", code, regs, off, imm)


def assemble(prog):
    """The bytes of prog: instructions as insn's arguments, ("label", NAME) marks, jumps as
    (code, dst, NAME, imm[, src]) to a label ahead, and (LD_IMM64, dst, map fd), the load of a
    map, which takes two instructions."""
    at, n = {}, 0
    for x in prog:
        if x[0] == "label":
            at[x[1]] = n
        else:
            n += 2 if x[0] == LD_IMM64 else 1
    out, n = [], 0
    for x in prog:
        if x[0] == "label":
            continue
        if len(x) >= 4 and isinstance(x[2], str):
            code, dst, name, imm, *src = x
            out.append(insn(code, dst, *src, off=at[name] - n - 1, imm=imm))
        elif x[0] == LD_IMM64:
            out += [insn(LD_IMM64, x[1], BPF_PSEUDO_MAP_FD, imm=x[2]), insn(0)]
        else:
            out.append(insn(*x))
        n += 2 if x[0] == LD_IMM64 else 1
    return b"".join(out)


def remark_program(src, port, min_len, map_fd):
    """A tc program (tcx, direct action) that sets to CE the ECN field of the IPv4 packets from
    src (4 bytes) over UDP to port, at least min_len bytes long, fixes their header checksum
    (RFC 1624, bpf_l3_csum_replace) and counts them in the first u64 of map_fd; it lets every
    packet through. An outer header with options is left alone: no tunnel here sends one."""
    h = lambda off: HEADERS_AT + ETH_HEADER + off  # an IPv4 header's byte on the stack
    word = int.from_bytes(b"\0" + bytes([CE]), sys.byteorder)  # CE in the version's 16 bits
    checks = [(HEADERS_AT + 12, ETH_P_IP >> 8), (HEADERS_AT + 13, ETH_P_IP & 0xFF),
              (h(0), 0x45), (h(IP_PROTO_OFFSET), socket.IPPROTO_UDP),
              (h(IPV4_HEADER + UDP_DPORT_OFFSET), port >> 8),
              (h(IPV4_HEADER + UDP_DPORT_OFFSET + 1), port & 0xFF)]
    prog = [(MOV64_X, R6, R1),
            (MOV64_X, R1, R6), (MOV64_K, R2, 0, 0, 0), (MOV64_X, R3, R10),
            (ADD64_K, R3, 0, 0, HEADERS_AT), (MOV64_K, R4, 0, 0, HEADERS_LEN),
            (CALL, 0, 0, 0, BPF_FUNC_SKB_LOAD_BYTES), (JNE_K, R0, "pass", 0)]
    for off, v in checks:
        prog += [(LDX_B, R2, R10, off), (JNE32_K, R2, "pass", v)]
    prog += [(LDX_W, R2, R10, h(IP_SRC_OFFSET)),
             (JNE32_K, R2, "pass", int.from_bytes(src, sys.byteorder, signed=True)),
             (LDX_B, R2, R10, h(IP_LEN_OFFSET)), (LSH64_K, R2, 0, 0, 8),
             (LDX_B, R3, R10, h(IP_LEN_OFFSET + 1)), (OR64_X, R2, R3),
             (JLT32_K, R2, "pass", min_len),
             (LDX_H, R7, R10, h(0)), (MOV64_X, R8, R7), (OR64_K, R8, 0, 0, word),
             (JEQ_X, R8, "pass", 0, R7),
             (STX_H, R10, R8, -8),
             (MOV64_X, R1, R6), (MOV64_K, R2, 0, 0, ETH_HEADER), (MOV64_X, R3, R10),
             (ADD64_K, R3, 0, 0, -8), (MOV64_K, R4, 0, 0, 2), (MOV64_K, R5, 0, 0, 0),
             (CALL, 0, 0, 0, BPF_FUNC_SKB_STORE_BYTES), (JNE_K, R0, "pass", 0),
             (MOV64_X, R1, R6), (MOV64_K, R2, 0, 0, ETH_HEADER + IP_CSUM_OFFSET),
             (MOV64_X, R3, R7), (MOV64_X, R4, R8), (MOV64_K, R5, 0, 0, 2),
             (CALL, 0, 0, 0, BPF_FUNC_L3_CSUM_REPLACE),
             (ST_W, R10, 0, -4, 0), (LD_IMM64, R1, map_fd), (MOV64_X, R2, R10),
             (ADD64_K, R2, 0, 0, -4), (CALL, 0, 0, 0, BPF_FUNC_MAP_LOOKUP_ELEM),
             (JEQ_K, R0, "pass", 0), (MOV64_K, R1, 0, 0, 1), (ATOMIC_ADD_DW, R0, R1, 0, 0),
             ("label", "pass"), (MOV64_K, R0, 0, 0, TCX_NEXT), (EXIT,)]
    return assemble(prog)


class Bpf:
    """The bpf system call through the C library (ctypes), each command's attribute union
    packed as include/uapi/linux/bpf.h lays it out."""

    def __init__(self):
        self.nr = SYS_BPF.get(platform.machine())
        if self.nr is None:
            raise OSError(f"no bpf system call number known for {platform.machine()}")
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.keep = []  # what the kernel reads through an address during a call

    def buf(self, data):
        b = ctypes.create_string_buffer(data, len(data))
        self.keep.append(b)
        return ctypes.addressof(b)

    def call(self, cmd, attr, what):
        a = ctypes.create_string_buffer(attr.ljust(128, b"\0"), 128)
        r = self.libc.syscall(self.nr, cmd, a, 128)
        if r < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"{what}: {os.strerror(e)}")
        return r

    def array_u64(self):
        """A one-slot array map of a u64."""
        return self.call(BPF_MAP_CREATE, struct.pack("=IIIII", BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0),
                         "BPF_MAP_CREATE")

    def load(self, prog, log_level=0):
        """A SCHED_CLS program's fd. Refused, the verifier's last line says why."""
        log = ctypes.create_string_buffer(VERIFIER_LOG)
        # The kernel's licence check: none of the program's helpers is GPL-only.
        attr = struct.pack("=IIQQIIQII16s", BPF_PROG_TYPE_SCHED_CLS, len(prog) // 8,
                           self.buf(prog), self.buf(b"GPL\0"), log_level,
                           VERIFIER_LOG if log_level else 0,
                           ctypes.addressof(log) if log_level else 0, 0, 0, b"tunbed_remark")
        try:
            return self.call(BPF_PROG_LOAD, attr, "BPF_PROG_LOAD")
        except OSError as e:
            if log_level:
                said = log.value.decode(errors="replace").strip().splitlines()
                raise OSError(e.errno, f"{e.strerror}: {said[-1] if said else ''}") from None
            return self.load(prog, log_level=1)

    def tcx_ingress(self, prog_fd, ifindex):
        """prog_fd attached to ifindex's ingress (tcx); detached when the link's fd closes."""
        return self.call(BPF_LINK_CREATE, struct.pack("=IIII", prog_fd, ifindex,
                                                      BPF_TCX_INGRESS, 0),
                         "BPF_LINK_CREATE (tcx ingress, Linux 6.6)")

    def lookup_u64(self, map_fd):
        key, val = ctypes.c_uint32(0), ctypes.c_uint64(0)
        self.call(BPF_MAP_LOOKUP_ELEM, struct.pack("=IIQQQ", map_fd, 0, ctypes.addressof(key),
                                                   ctypes.addressof(val), 0),
                  "BPF_MAP_LOOKUP_ELEM")
        return val.value


def remark(a):
    """Re-marks the probe's packets CE as they come in on a.dev until SIGTERM; prints how
    many it re-marked. What it attached goes with the process."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        bpf = Bpf()
        counter = bpf.array_u64()
        prog = bpf.load(remark_program(socket.inet_aton(a.src), a.port, a.min_len, counter))
        bpf.tcx_ingress(prog, socket.if_nametoindex(a.dev))
    except OSError as e:
        print(f"tosprobe.py remark: {e.strerror or e}", file=sys.stderr)
        return 1
    ready(a.ready_file)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    print(json.dumps({"remarked": bpf.lookup_u64(counter)}), flush=True)
    return 0


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
    port = dict(type=int, choices=range(1, 65536), metavar="PORT")
    count = dict(type=int, choices=range(1, COUNT_MAX + 1), metavar="N")
    s = sub.add_parser("send")
    for o in ("--src", "--dst", "--inner-src", "--inner-dst"):
        s.add_argument(o, required=True, type=addr)
    s.add_argument("--port", required=True, **port)
    s.add_argument("--count", required=True, **count)
    s.add_argument("--outer-tos", required=True, type=byte)
    s.add_argument("--inner-tos", required=True, type=byte)
    s.add_argument("--key", type=int, choices=range(0, 2 ** 32), metavar="KEY")
    s.add_argument("--csum", action="store_true")
    u = sub.add_parser("send-udp")
    u.add_argument("--dst", required=True, type=addr)
    u.add_argument("--port", required=True, **port)
    u.add_argument("--count", **count)
    u.add_argument("--tos", type=byte)
    u.add_argument("--size", type=int, choices=range(SIZE_MIN, SIZE_MAX + 1), metavar="S")
    u.add_argument("--pps", type=int, default=1000, choices=range(1, PPS_MAX + 1),
                   metavar="R")
    u.add_argument("--end", action="store_true")
    r = sub.add_parser("recv")
    r.add_argument("--port", required=True, **port)
    r.add_argument("--time", required=True, type=float)
    for name in ("capture", "remark"):
        c = sub.add_parser(name)
        c.add_argument("--dev", required=True)
        c.add_argument("--src", required=True, type=addr)
        if name == "capture":
            c.add_argument("--dst", required=True, type=addr)
        c.add_argument("--port", required=True, **port)
        c.add_argument("--min-len", required=True, type=int,
                       choices=range(IPV4_HEADER + UDP_HEADER, 65536), metavar="L")
        c.add_argument("--ready-file", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "recv":
        if not 0 < a.time <= TIME_MAX_S:
            ap.error(f"--time: '{a.time:g}' is not above 0 and at most {TIME_MAX_S:g} s")
        recv(a)
    elif a.cmd == "send-udp":
        given = [v is not None for v in (a.count, a.tos, a.size)]
        if any(given) if a.end else not all(given):
            ap.error("send-udp: either --count, --tos and --size, or --end")
        send_udp(a)
    elif a.cmd == "capture":
        capture(a)
    elif a.cmd == "remark":
        return remark(a)
    else:
        send(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
