"""gregw, tunbed's own gateway, and its modes: an encapsulation (gre, gre-udp) and options,
each of which is here once, with the gregw flags it gives, the words --modes' help has for it,
what the wire audit expects of the frames with it and without it, and the bytes it adds on
transit. The matrix (Gregw), tunbed ndr (overhead) and tunbed failover (flags) all read them
here (docs/runner.md, docs/gregw.md)."""

import collections
import json
import os
import time

from ..common import GREGW, Failure
from .base import GRE_HEADER, START_TIMEOUT_S, UDP_HEADER, Driver

ENCAPS = ("gre", "gre-udp")
Option = collections.namedtuple("Option", "flags words wire_on wire_off header_bytes encaps")
OPTIONS = {
    "key": Option(("--key", "7"), None, ("--key", "7"), ("--no-key",), 4, ENCAPS),
    "seq": Option(("--seq",), None, ("--seq",), ("--no-seq",), 4, ENCAPS),
    "csum": Option(("--csum",), None, ("--csum",), ("--no-csum",), 4, ENCAPS),
    "nooffload": Option(("--offload", "off"), None, (), (), 0, ENCAPS),
    "aqm": Option(("--aqm", "codel"), "CoDel: --aqm codel", (), (), 0, ENCAPS),
    # GRE-in-UDP always leaves on its UDP sockets.
    "iptx": Option(("--wire-tx", "ip"), "plain GRE on the IP path: --wire-tx ip", (), (), 0,
                   ("gre",)),
    "nofq": Option(("--fair-queue", "off"), "first in, first out: --fair-queue off", (), (), 0,
                   ENCAPS),
    "merge": Option(("--tx-merge", "on"), "a flow's reads merged: --tx-merge on", (), (), 0,
                    ENCAPS),
    # Not a flag: the bed's transit devices without tunnel segmentation (frames of the MTU on
    # the wire, as vxlan-frames); gregw sees it at start and sends frame by frame.
    "frames": Option((), "frames of the MTU on the wire: the transits' tunnel segmentation off",
                     (), (), 0, ENCAPS),
}


def modes_help():
    """What --modes' help says of the modes."""
    return ("gregw modes: gre or gre-udp, with " + ", ".join(
        f"+{name}" + (f" ({o.words})" if o.words else "") for name, o in OPTIONS.items())
        + " (e.g. gre-udp+seq,gre+nooffload)")


def check_mode(mode, allowed=tuple(OPTIONS), what="mode"):
    """The parts of a mode (encapsulation, options) checked: each option one of allowed and
    given once; ValueError with the words of the mistake otherwise."""
    encap, *opts = mode.split("+")
    if encap not in ENCAPS or any(o not in allowed for o in opts) or len(set(opts)) != len(opts):
        raise ValueError(f"bad {what} '{mode}': expected gre or gre-udp, optionally "
                         + ", ".join(f"+{o}" for o in allowed))
    for o in opts:
        if encap not in OPTIONS[o].encaps:
            raise ValueError(f"bad {what} '{mode}': +{o} is plain GRE's (gre): GRE-in-UDP "
                             "always leaves on UDP sockets")
    return encap, opts


def flags(mode):
    """gregw's flags of a mode: its encapsulation, then each option's, in OPTIONS' order."""
    encap, *opts = mode.split("+")
    return ["--encap", encap, *(f for name, o in OPTIONS.items() if name in opts
                                for f in o.flags)]


def overhead(mode, family_header):
    """Bytes a mode adds to an inner packet on transit, with an outer IP header of
    family_header bytes."""
    encap, *opts = mode.split("+")
    return (family_header + (UDP_HEADER if encap == "gre-udp" else 0) + GRE_HEADER
            + sum(OPTIONS[o].header_bytes for o in opts))


class Gregw(Driver):
    name = "gregw"
    transit_format = "gre"
    has_modes = True
    can_budget = True
    can_pair = True

    def __init__(self, *a):
        super().__init__(*a)
        self.procs, self.socks, self.stats = {}, {}, {}

    @classmethod
    def available(cls, hosts_mode=False):
        if not hosts_mode and not os.access(GREGW, os.X_OK):
            return False, f"{GREGW} is not built"
        return True, ""

    @classmethod
    def overhead(cls, mode, ip_header):
        return overhead(mode, ip_header)

    def setup(self):
        if "frames" in self.point.mode.split("+")[1:]:
            self.transit_frames()  # before gregw starts: it chooses its send path then
        sides = list(self.sides())
        if "gwb2" in self.bed.roles:
            # A gateway pair (docs/failover.md): the passive runs hot, as gwb does.
            sides.append(("gwb2", *sides[1][1:]))
        for role, local, remote, addr, _, nets in sides:
            h = self.host(role)
            sock = f"{h.state}/gregw.sock"
            cmd = [h.bin("gregw"), "--remote", remote, "--local", local,
                   *(x for net in nets for x in ("--route", net)),
                   "--addr" if ":" not in addr else "--addr6", addr,
                   "--workers", str(self.point.workers), "--ctl", sock,
                   *flags(self.point.mode), *self.bed.any_address(role)]
            if self.pins.get(role):
                cmd += ["--cpus", self.pins[role]]
            self.start(role, cmd, sock)

    def start(self, role, cmd, sock, poll_s=0.05):
        """Starts gregw's cmd on the role's host with its control socket sock; returns once
        the socket answers, with the seconds from the start to then (to within poll_s and one
        `gregw ctl`). A Failure with gregw's last line when it exits or the deadline passes."""
        h = self.host(role)
        self.socks[role] = sock
        started = time.monotonic()
        self.procs[role] = h.spawn("gregw", cmd)
        deadline = started + START_TIMEOUT_S
        while h.call([h.bin("gregw"), "ctl", sock, "stats"]).returncode:
            if self.procs[role].poll() is not None or time.monotonic() > deadline:
                err = (self.procs[role].local.stderr.read() or "").strip().splitlines() \
                    if self.procs[role].poll() is not None else ["no answer"]
                raise Failure(f"gregw on {h.label()} did not start: "
                              f"{err[-1] if err else 'no message'}")
            time.sleep(poll_s)
        return time.monotonic() - started

    def pids(self):
        return [(r, p.pid, f"gregw {r}") for r, p in self.procs.items()]

    def info(self):
        h = self.host("gwa")
        out = h.run([h.bin("gregw"), "--version"], check=False).strip().splitlines()
        return {"version": out[0] if out else None, "cipher": "none"}

    def telemetry(self):
        """Each gateway's `gregw ctl stats`, as it is now (the thread ids name the workers)."""
        for role, sock in self.socks.items():
            h = self.host(role)
            try:
                self.stats[role] = json.loads(h.run([h.bin("gregw"), "ctl", sock, "stats"]))
            except (Failure, ValueError):
                pass
        return self.stats

    @classmethod
    def gre_options(cls, mode):
        encap, *opts = mode.split("+")
        if encap != "gre" or "seq" in opts:
            return None
        key = OPTIONS["key"].flags[1]
        return {"key": int(key) if "key" in opts else None, "csum": "csum" in opts}

    def wire_expectations(self):
        """Exactly the options of the mode: key 7, sequence numbers, checksums, or none."""
        opts = self.point.mode.split("+")[1:]
        return [f for name, o in OPTIONS.items()
                for f in (o.wire_on if name in opts else o.wire_off)]

    def thread_labels(self):
        labels = {}
        for role, st in self.stats.items():
            for w in st.get("workers", []):
                labels[(role, w["tid"])] = f"gregw {role} worker {w['id']}"
        return labels

    def teardown(self):
        self.stop_all(self.procs)
        self.procs = {}
