"""Unit tests of the DSCP/ECN part's capture method without root: tosprobe.py's filter of the
outer packets it counts, its tc program run by a small interpreter of the instructions it uses
on packets that must and must not be re-marked (the ECN field CE, the IPv4 header checksum
still right, the count), its refusals; and datasheet_tos's analysis of records the capture
method writes (the kernel's VXLAN, an encrypted VPN, a re-mark that touched nothing)."""

import copy
import os
import socket
import struct
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import records, tosprobe  # noqa: E402
from tunbedlib.drivers import DRIVERS  # noqa: E402
from tunbedlib.kinds import datasheet_plan as dplan  # noqa: E402
from tunbedlib.kinds import datasheet_tos  # noqa: E402

A, B = "198.18.0.1", "198.18.0.2"
MIN = datasheet_tos.CAPTURE_MIN_LEN


def outer(tos=0x02, src=A, dst=B, port=4789, length=MIN + 50, proto=17, ihl=5):
    """An outer IPv4 packet (its checksum right) with a UDP header to port."""
    opts = b"\x01" * (4 * (ihl - 5))
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, length, 0, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst)) + opts
    h = h[:10] + struct.pack("!H", tosprobe.csum(h)) + h[12:]
    udp = struct.pack("!HHHH", 40000, port, length - len(h), 0)
    return h + udp + bytes(length - len(h) - 8)


class Insn:
    def __init__(self, raw):
        self.code, regs, self.off, self.imm = struct.unpack("=BBhi", raw)
        little = sys.byteorder == "little"
        self.dst, self.src = (regs & 15, regs >> 4) if little else (regs >> 4, regs & 15)


MAP, STACK_TOP, VALUE = 1 << 40, 512, 1024


def run(prog, frame, map_fd=9):
    """The program on an Ethernet frame as tcx runs it: (its return value, the frame after,
    the map's counter). Only the instructions and helpers remark_program uses."""
    ins = [Insn(prog[i:i + 8]) for i in range(0, len(prog), 8)]
    mem, pkt = bytearray(VALUE + 8), bytearray(frame)
    reg = [0] * 11
    reg[10] = STACK_TOP
    u64 = (1 << 64) - 1
    size = {tosprobe.LDX_B: 1, tosprobe.LDX_H: 2, tosprobe.LDX_W: 4, tosprobe.STX_H: 2,
            tosprobe.ST_W: 4}

    def ld(addr, n):
        return int.from_bytes(mem[addr:addr + n], sys.byteorder)

    def st(addr, n, v):
        mem[addr:addr + n] = (v & ((1 << 8 * n) - 1)).to_bytes(n, sys.byteorder)

    def helper(n):
        r1, r2, r3, r4, r5 = reg[1:6]
        if n == tosprobe.BPF_FUNC_SKB_LOAD_BYTES:
            if r2 + r4 > len(pkt):
                return u64  # -EFAULT
            mem[r3:r3 + r4] = pkt[r2:r2 + r4]
            return 0
        if n == tosprobe.BPF_FUNC_SKB_STORE_BYTES:
            pkt[r2:r2 + r4] = mem[r3:r3 + r4]
            return 0
        if n == tosprobe.BPF_FUNC_L3_CSUM_REPLACE:
            assert r5 == 2
            s = int.from_bytes(pkt[r2:r2 + 2], sys.byteorder)
            # RFC 1624's eqn. 3 (what csum_replace2 does): HC' = ~(~HC + ~m + m').
            x = (~s & 0xFFFF) + (~r3 & 0xFFFF) + r4
            while x >> 16:
                x = (x & 0xFFFF) + (x >> 16)
            pkt[r2:r2 + 2] = (~x & 0xFFFF).to_bytes(2, sys.byteorder)
            return 0
        if n == tosprobe.BPF_FUNC_MAP_LOOKUP_ELEM:
            assert r1 == MAP
            return VALUE if ld(r2, 4) == 0 else 0
        raise AssertionError(f"helper {n}")

    pc = 0
    while True:
        i = ins[pc]
        pc += 1
        c, d, s = i.code, i.dst, i.src
        if c == tosprobe.MOV64_X:
            reg[d] = reg[s]
        elif c == tosprobe.MOV64_K:
            reg[d] = i.imm & u64
        elif c == tosprobe.ADD64_K:
            reg[d] = (reg[d] + i.imm) & u64
        elif c == tosprobe.LSH64_K:
            reg[d] = (reg[d] << i.imm) & u64
        elif c == tosprobe.OR64_X:
            reg[d] |= reg[s]
        elif c == tosprobe.OR64_K:
            reg[d] |= i.imm & u64
        elif c in (tosprobe.LDX_B, tosprobe.LDX_H, tosprobe.LDX_W):
            addr = reg[s] + i.off
            assert addr % size[c] == 0, "a misaligned stack access"
            reg[d] = ld(addr, size[c])
        elif c == tosprobe.STX_H:
            st(reg[d] + i.off, 2, reg[s])
        elif c == tosprobe.ST_W:
            st(reg[d] + i.off, 4, i.imm)
        elif c == tosprobe.ATOMIC_ADD_DW:
            st(reg[d] + i.off, 8, ld(reg[d] + i.off, 8) + reg[s])
        elif c == tosprobe.LD_IMM64:
            assert (s, i.imm) == (tosprobe.BPF_PSEUDO_MAP_FD, map_fd)
            reg[d] = MAP
            pc += 1
        elif c == tosprobe.CALL:
            reg[0] = helper(i.imm)
            reg[1:6] = [None] * 5  # clobbered
        elif c == tosprobe.EXIT:
            return reg[0] - (1 << 64) if reg[0] >> 63 else reg[0], bytes(pkt), ld(VALUE, 8)
        else:
            lo = c in (tosprobe.JNE32_K, tosprobe.JLT32_K)
            a = reg[d] & 0xFFFFFFFF if lo else reg[d]
            b = (i.imm & 0xFFFFFFFF if lo else i.imm & u64) if c != tosprobe.JEQ_X else reg[s]
            taken = {tosprobe.JNE_K: a != b, tosprobe.JEQ_K: a == b, tosprobe.JEQ_X: a == b,
                     tosprobe.JNE32_K: a != b, tosprobe.JLT32_K: a < b}[c]
            pc += i.off if taken else 0


ETH = b"\x02" * 12 + b"\x08\x00"


class Remark(unittest.TestCase):
    def setUp(self):
        self.prog = tosprobe.remark_program(socket.inet_aton(A), 4789, MIN, 9)

    def test_marks_the_probes_packets_ce_with_a_right_checksum(self):
        for tos in (0x00, 0x02, 0x01, 0xB8, 0xBA):
            with self.subTest(tos=tos):
                ret, after, count = run(self.prog, ETH + outer(tos))
                self.assertEqual(ret, tosprobe.TCX_NEXT)
                ip = after[14:]
                self.assertEqual((ip[1], tosprobe.csum(ip[:20]), count), (tos | 3, 0, 1))
                self.assertEqual(ip[:1] + ip[2:10] + ip[12:], (outer(tos)[:1] +
                                                               outer(tos)[2:10] + outer(tos)[12:]))

    def test_leaves_every_other_packet(self):
        for name, frame in (("already CE", ETH + outer(0xBB)),
                            ("from another address", ETH + outer(src="198.18.0.3")),
                            ("to another port", ETH + outer(port=4790)),
                            ("not UDP", ETH + outer(proto=47)),
                            ("shorter than a probe's", ETH + outer(length=MIN - 1)),
                            ("with options", ETH + outer(ihl=6)),
                            ("not IPv4", ETH[:12] + b"\x86\xdd" + outer()),
                            ("shorter than the headers", ETH + outer()[:20])):
            with self.subTest(name=name):
                ret, after, count = run(self.prog, frame)
                self.assertEqual((ret, after, count), (tosprobe.TCX_NEXT, frame, 0))

    def test_an_address_above_127_and_a_port_of_two_bytes(self):
        prog = tosprobe.remark_program(socket.inet_aton("203.0.113.200"), 51820, MIN, 9)
        _, after, count = run(prog, ETH + outer(src="203.0.113.200", port=51820))
        self.assertEqual((after[15] & 3, count), (3, 1))
        _, _, count = run(prog, ETH + outer(src="203.0.113.201", port=51820))
        self.assertEqual(count, 0)

    def test_jumps_land_inside_and_it_ends_with_exit(self):
        ins = [Insn(self.prog[i:i + 8]) for i in range(0, len(self.prog), 8)]
        self.assertEqual(ins[-1].code, tosprobe.EXIT)
        for n, i in enumerate(ins):
            if i.code & 0x07 in (0x05, 0x06) and i.code not in (tosprobe.CALL, tosprobe.EXIT):
                self.assertTrue(0 <= n + 1 + i.off < len(ins), n)


class Capture(unittest.TestCase):
    def test_counts_only_the_probes_outer_packets(self):
        src, dst = socket.inet_aton(A), socket.inet_aton(B)
        f = lambda p: tosprobe.outer_tos(p, src, dst, 4789, MIN)
        self.assertEqual(f(outer(0xBA)), 0xBA)
        self.assertEqual(f(outer(0x01, length=MIN)), 0x01)
        self.assertEqual(f(outer(0x02, ihl=6)), 0x02)  # options: the port after them
        for name, p in (("the other way", outer(src=B, dst=A)), ("to another port",
                        outer(port=51820)), ("a keepalive", outer(length=MIN - 1)),
                        ("GRE", outer(proto=47)), ("cut short", outer()[:24]),
                        ("IPv6", b"\x60" + outer()[1:]), ("nothing", b"")):
            with self.subTest(name=name):
                self.assertIsNone(f(p))

    def test_refusals(self):
        for argv in (["send-udp", "--dst", B, "--port", "1", "--end", "--count", "1"],
                     ["send-udp", "--dst", B, "--port", "1", "--count", "1", "--tos", "2"],
                     ["send-udp", "--dst", B, "--port", "1", "--count", "1", "--tos", "256",
                      "--size", "1000"],
                     ["send-udp", "--dst", B, "--port", "1", "--count", "1", "--tos", "2",
                      "--size", "1473"],
                     ["capture", "--dev", "t", "--src", A, "--dst", B, "--port", "1",
                      "--min-len", "27", "--ready-file", "x"],
                     ["remark", "--dev", "t", "--src", "x", "--port", "1", "--min-len",
                      "100", "--ready-file", "x"]):
            with self.subTest(argv=argv), self.assertRaises(SystemExit) as e, \
                    mock.patch.object(sys, "stderr", new=open(os.devnull, "w")) as err:
                self.addCleanup(err.close)
                tosprobe.main(argv)
            self.assertEqual(e.exception.code, 2)


def vxlan_record():
    """A capture record as the kernel's VXLAN makes one (tos 0: outer DSCP 0, CE reset to
    ECT(0); an outer CE carried in, Not-ECT under it dropped)."""
    return {
        "point": {"key": "vxlan", "gateway": "vxlan", "mode": "-"}, "method": "capture",
        "sessions": {cp: {"status": 0, "udp": {}} for cp in ("ect0", "ect1", "ce")},
        "wire": None, "wire_error": None,
        "capture": {"dev": "transit", "port": 4789, "min_len": MIN, "sessions": {
            "ect0": {"tos": {"2": 200}, "packets": 200, "socket_drops": 0},
            "ect1": {"tos": {"1": 199}, "packets": 199, "socket_drops": 0},
            "ce": {"tos": {"2": 200}, "packets": 200, "socket_drops": 0}}},
        "decap": {"probes": [{"inner": "ect0", "dscp": 10, "inner_tos": 42, "sent": 100},
                             {"inner": "ect1", "dscp": 18, "inner_tos": 73, "sent": 100},
                             {"inner": "not-ect", "dscp": 26, "inner_tos": 104, "sent": 100}],
                  "arrived": {"43": 100, "75": 100}, "ended": True, "remarked": 300}}


class Analysis(unittest.TestCase):
    def test_vxlan(self):
        rec = vxlan_record()
        records.check(rec, datasheet_tos.RECORD_SCHEMA, "x.json: record")
        a = datasheet_tos.analyse(rec)
        self.assertEqual([a[k]["verdict"] for k in datasheet_tos.ASPECTS],
                         ["no", "not copied", "yes", None])  # None: a record before the load
        self.assertEqual(a["method"]["name"], "capture")
        self.assertEqual(a["dscp"]["words"], "no: 0 of 599 outer packets of datagrams marked "
                                             "DSCP 46 carried it outside (an outer DSCP of its "
                                             "own: the pipe model, RFC 2983)")
        self.assertEqual(a["encap"]["words"],
                         "not copied (CE reset to ECT(0): RFC 3168's full functionality, not "
                         "RFC 6040's copy): ECT(0) -> ECT(0); ECT(1) -> ECT(1); CE -> ECT(0)")
        self.assertEqual(a["decap"]["words"],
                         "yes: ECT(0) under CE: 100 of 100 arrived CE; ECT(1) under CE: 100 of "
                         "100 arrived CE; Not-ECT under CE: dropped (0 of 100 arrived) (300 "
                         "outer packets re-marked CE on the way)")

    def test_an_encrypted_vpn_and_a_gateway_that_copies(self):
        rec = vxlan_record()
        for c in rec["capture"]["sessions"].values():
            c["tos"] = {"0": c["packets"]}
        rec["decap"]["arrived"] = {"42": 100, "73": 100, "104": 100}
        a = datasheet_tos.analyse(rec)
        self.assertEqual([a[k]["verdict"] for k in datasheet_tos.ASPECTS],
                         ["no", "not copied", "no", None])
        self.assertEqual(a["encap"]["words"], "not copied (not RFC 6040's copy): ECT(0) -> "
                                              "Not-ECT; ECT(1) -> Not-ECT; CE -> Not-ECT")
        self.assertIn("Not-ECT under CE: delivered (100 of 100 arrived)", a["decap"]["words"])
        rec = vxlan_record()
        for cp, c in rec["capture"]["sessions"].items():
            c["tos"] = {str(46 << 2 | datasheet_tos.ECN[cp]): c["packets"]}
        a = datasheet_tos.analyse(rec)
        self.assertEqual((a["dscp"]["verdict"], a["encap"]["verdict"]), ("yes", "copied"))

    def test_nothing_seen_or_remarked_is_not_measured(self):
        rec = vxlan_record()
        rec["decap"]["remarked"] = 0
        for c in rec["capture"]["sessions"].values():
            c["tos"] = {}
        a = datasheet_tos.analyse(rec)
        self.assertEqual([a[k]["verdict"] for k in datasheet_tos.ASPECTS], [None] * 4)
        self.assertEqual(a["decap"]["words"], "not measured: the re-mark on gwb's transit set "
                                              "no probe's outer packet to CE")
        self.assertEqual(a["dscp"]["words"], "not measured: the capture on the transit saw no "
                                             "packet of the sessions")

    def test_a_record_before_the_method_is_the_wires(self):
        rec = vxlan_record()
        del rec["method"]
        self.assertEqual(datasheet_tos.analyse(rec)["method"]["name"], "wire")
        bad = copy.deepcopy(vxlan_record())
        bad["method"] = "cable"
        with self.assertRaises(records.FormatError) as e:
            records.check(bad, datasheet_tos.RECORD_SCHEMA, "x.json: record")
        self.assertEqual(str(e.exception), "x.json: record: method: expected wire, capture")


class Method(unittest.TestCase):
    def test_each_drivers_method(self):
        want = {"gregw": "wire", "gre": "wire", "ovs-gre": "wire", "vxlan": "capture",
                "vxlan-frames": "capture", "vxlan-inherit": "capture",
                "wireguard-go": "capture", "openvpn": "capture",
                "openvpn-none": "capture", "fastd": "capture", "fastd-null": "capture",
                "route": None}
        for g, m in want.items():
            with self.subTest(gateway=g):
                self.assertEqual(DRIVERS[g].tos_method("-" if g != "gregw" else "gre"), m)
                st = dplan.tos_applies(g, DRIVERS[g])
                self.assertEqual(st["status"], "run" if m else "not applicable")
        self.assertEqual({g: DRIVERS[g].transit_port() for g in
                          ("vxlan", "vxlan-inherit", "wireguard-go", "openvpn", "fastd-null")},
                         {"vxlan": 4789, "vxlan-inherit": 4789, "wireguard-go": 51820,
                          "openvpn": 1194, "fastd-null": 10000})


if __name__ == "__main__":
    unittest.main()
