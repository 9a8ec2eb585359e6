"""One run of one point of `tunbed tunnels` (tunnels.py) on the tunnels bed (topo/topologies/
tunnels.topo), which is up for it: topo/tunnels.sh's files for the point's tunnel count, the
gateway set up on gwa and gwb with them (tunnel_driver: gregw started with the files, the
seconds from its start until its control socket answers and its memory then; vxlan, a device a
tunnel, drivers/kernel.py's VxlanTunnels: the seconds of its `ip -batch` and the kernel's
memory; wireguard-go, a peer a tunnel, drivers/vpn.py's WireguardGoTunnels; Open vSwitch's
GRE, a port a tunnel, drivers/ovs.py's OvsGreTunnels), the traffic
servers, the sessions spread over the tunnels by tunbed-traffic's --pairs (session i on
tunnel i mod N, from the client's site of the tunnel to the server's) while every CPU is
sampled (matrix_point.Run: the matrix's own steps), then gregw's memory and the gateway's
per-tunnel counters (gregw's a page at a time, the devices' statistics, wg's bytes a peer,
the OpenFlow rules' counts). A
churn run's sessions go over the first half of the tunnels alone while tunnels_churn.py, in
the client's namespace, removes and adds the other half at the point's rate. Everything it
started it stops."""

import csv
import json
import os
import select
import subprocess
import sys
import time

from ..bed import ADDRS
from ..common import ROOT, Failure, run
from ..drivers.gregw import Gregw
from ..drivers.kernel import VxlanTunnels
from ..drivers.ovs import OvsGreTunnels
from ..drivers.vpn import WireguardGoTunnels
from .. import inifile
from . import matrix_point, tunnels_churn

TUNNELS_SH = os.path.join(ROOT, "topo", "tunnels.sh")
# The largest page of gregw's `tunnels FROM COUNT` (docs/gregw.md, the control socket).
PAGE = 1024
# Between two asks of a starting gregw: the setup time of a few tunnels is tens of milliseconds.
READY_POLL_S = 0.005
# /proc/PID/status's lines of a process's memory, and the record's names for them (KiB).
MEMORY = {"VmRSS": "rss_kib", "VmHWM": "rss_peak_kib"}
# A tunnel's counters the record keeps (gregw's `tunnels` command has them all).
COUNTERS = ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")
# What a receiving gregw loses before it knows a packet's tunnel, so counts by no tunnel
# (docs/gregw.md, "Counters"): its packet rings' drops and the drops before the lookup.
UNATTRIBUTED = ("truncated", "zero_length", "bad_outer", "outer_fragment", "unknown_peer",
                "bad_version", "bad_flags", "bad_key")
CHURN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tunnels_churn.py")
# How long the churn program takes to say ready, and to finish after its input ends (it waits
# for its replies and pings, tunnels_churn.DRAIN_S).
CHURN_READY_S = 30
CHURN_STOP_S = tunnels_churn.DRAIN_S + 10
# gregw's counts that say what the churn did to it: from its stats, before and after.
CHURN_STATS = {"changes": ("tunnels", "changes"), "busy_retries": ("tunnels", "busy_retries"),
               "bad_key": ("total", "drops", "bad_key"),
               "unknown_peer": ("total", "drops", "unknown_peer"),
               "tx_no_tunnel": ("total", "drops", "tx_no_tunnel")}


class TunnelGregw(Gregw):
    """gregw with a tunnel file (--tunnels) in place of --remote: the point's tunnels, their
    prefixes routed into its TUN by gregw itself."""

    def __init__(self, bed, point, files):
        super().__init__(bed, point)
        self.files, self.ready_s = files, {}

    def setup(self):
        for role, _, _, addr, _, _ in self.sides():
            h = self.host(role)
            sock = f"{h.state}/gregw.sock"
            cmd = [h.bin("gregw"), "--tunnels", os.path.join(self.files, f"{role}.tunnels"),
                   "--addr", addr, "--addr6", ADDRS[6]["ta" if role == "gwa" else "tb"],
                   "--workers", str(self.point.workers), "--ctl", sock,
                   "--encap", self.point.mode]
            if self.pins.get(role):
                cmd += ["--cpus", self.pins[role]]
            self.ready_s[role] = self.start(role, cmd, sock, READY_POLL_S)

    def setup_record(self):
        """{role: {ready_s, rss_kib, rss_peak_kib}} of the setup: its time, its memory now."""
        mem = self.memory()
        return {role: {"ready_s": s} | mem.get(role, {}) for role, s in self.ready_s.items()}

    def unattributed(self, role, link_drops):
        """What the role's gregw lost by no tunnel (unattributed()), from its stats."""
        return unattributed(self.stats.get(role), link_drops)

    def memory(self):
        """{role: {rss_kib, rss_peak_kib}} of each gregw now, from /proc/PID/status."""
        out = {}
        for role, p in self.procs.items():
            text = self.host(role).run(["cat", f"/proc/{p.pid}/status"], check=False)
            fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            out[role] = {name: int(fields[key].split()[0]) for key, name in MEMORY.items()
                         if key in fields and fields[key].split()[0].isdigit()}
        return out

    def tunnels(self, role):
        """Every tunnel's counters on the role's gregw: {name: tunnel}, page by page."""
        h, sock, out, start = self.host(role), self.socks[role], {}, 0
        while True:
            page = json.loads(h.run([h.bin("gregw"), "ctl", sock, "tunnels", str(start),
                                     str(PAGE)]))
            for t in page["list"]:
                out[t["name"]] = t
            if page["next"] >= page["tunnels"] or page["next"] <= start:
                return out
            start = page["next"]


def read_tunnel_file(text, filename="tunnel file", peers=False):
    """[(name, key, [prefix, ...])] of a tunnel file topo/tunnels.sh wrote (gregw's format,
    docs/gregw.md: a section `[tunnel NAME]` a tunnel, `key = N`, `prefixes = P, P`, with peers
    its `peer = ADDR` too, the fourth of each, None without; its other keys are gregw's alone),
    by the runner's INI reader; a Failure naming the line of anything else, and of a tunnel
    without its key or prefixes."""
    def section(name, _):
        if not name.startswith("tunnel "):
            raise ValueError(f"expected a [tunnel NAME] section, got [{name}]")
        return name[len("tunnel "):]

    out = {}
    for _, name, key, value in inifile.entries(text, filename, Failure, section,
                                                "a [tunnel NAME] section"):
        t = out.setdefault(name, [name, None, [], None])
        if key == "key" and value.isdigit():
            t[1] = int(value)
        elif key == "prefixes":
            t[2] = inifile.words(value)
        elif key == "peer":
            t[3] = value
    if any(key is None or not prefixes for _, key, prefixes, _ in out.values()):
        raise Failure(f"{filename}: a tunnel without its key or prefixes")
    return [tuple(t if peers else t[:3]) for t in out.values()]


def tunnel_driver(bed, point, files, setup_limit):
    """The driver of the point's gateway with the tunnels of files: TunnelGregw, the
    kernel's VxlanTunnels, WireguardGoTunnels or OvsGreTunnels (each side's setup within
    setup_limit seconds; Open vSwitch's tunnels with their peers)."""
    if point.gateway == "gregw":
        return TunnelGregw(bed, point, files)
    tunnels = {}
    for role in ("gwa", "gwb"):
        with open(os.path.join(files, f"{role}.tunnels")) as f:
            tunnels[role] = read_tunnel_file(f.read(), f.name, point.gateway == "ovs-gre")
    cls = {"vxlan": VxlanTunnels, "wireguard-go": WireguardGoTunnels,
           "ovs-gre": OvsGreTunnels}[point.gateway]
    return cls(bed, point, tunnels, setup_limit)


def write_files(files, point):
    """topo/tunnels.sh's files of the point's tunnels in files, and the pairs file of the
    sessions (a line a tunnel: the client's site, the server's); returns tunnels.tsv's rows."""
    # A gateway without modes (mode -) takes the files' keys and prefixes alone.
    run([TUNNELS_SH, str(point.tunnels), files,
         *(["--encap", point.mode] if point.mode != "-" else [])])
    with open(os.path.join(files, "tunnels.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if len(rows) != point.tunnels:
        raise Failure(f"topo/tunnels.sh wrote {len(rows)} tunnels, not {point.tunnels}")
    with open(os.path.join(files, "pairs"), "w") as f:
        f.write("# the client's site, the server's: a line a tunnel with sessions "
                "(tunnels.tsv)\n")
        f.writelines(f"{r['client4']} {r['server4']}\n" for r in rows[:point.steady()])
    return rows


def churn_plan(files, rows, point, socks):
    """The plan tunnels_churn.py takes: the rate, gregw's sockets, and each changed tunnel
    (the second half of rows) with its `add` line on each gateway (its section of the
    gateway's tunnel file) and the sites a ping through it goes between."""
    adds = {}
    for role in ("gwa", "gwb"):
        with open(os.path.join(files, f"{role}.tunnels")) as f:
            adds[role] = tunnels_churn.add_lines(f.read())
    return {"rate": point.churn, "socks": socks,
            "tunnels": [{"name": r["name"], "src": r["client4"], "dst": r["server4"],
                         "add": {role: adds[role][r["name"]] for role in adds}}
                        for r in rows[point.steady():]]}


def churn_stats(before, after):
    """{role: {count: after - before}} of gregw's CHURN_STATS."""
    def get(doc, path):
        for k in path:
            doc = (doc or {}).get(k) if isinstance(doc, dict) else None
        return doc if isinstance(doc, (int, float)) else 0
    return {role: {name: get(after.get(role), path) - get(before.get(role), path)
                   for name, path in CHURN_STATS.items()} for role in after}


def unattributed(stats, link_drops):
    """The packets a gregw's stats (its `stats` document) say it lost by no tunnel, and those
    its transit device dropped before gregw saw them (link_drops)."""
    total = (stats or {}).get("total") or {}
    drops = total.get("drops") or {}
    return link_drops + total.get("ring_drops", 0) + sum(drops.get(k, 0) for k in UNATTRIBUTED)


# The most segments a superpacket of a bucket of gregw's histogram (total.cost.tun_to_wire.
# superpacket_segments) may carry; "65+": 65,535 bytes of IPv4's least MSS, 536.
BUCKET_TOP = {"1": 1, "2": 2, "3-4": 4, "5-8": 8, "9-16": 16, "17-32": 32, "33-64": 64,
              "65+": 123}


def segments_max(stats):
    """The most segments one superpacket a gregw sent towards the peer can have carried (the
    top of its histogram's largest bucket that counted one), from its `stats` document; 1
    without one. A drop that the transit device or the peer's ring counts is one skb, a
    superpacket of that many of the sender's segments at most (the TAP path)."""
    hist = ((((stats or {}).get("total") or {}).get("cost") or {}).get("tun_to_wire") or {}
            ).get("superpacket_segments") or {}
    return max([BUCKET_TOP.get(k, 1) for k, v in hist.items() if v] or [1])


def link_drops(bed, role):
    """What the role's transit device dropped on receipt (ip -s link: rx dropped), or 0."""
    h = bed.host(role)
    try:
        link = json.loads(h.run(["ip", "-j", "-s", "link", "show", "dev",
                                 bed.transit_iface(role)]))[0]
        return int(link["stats64"]["rx"]["dropped"])
    except (Failure, ValueError, IndexError, KeyError, TypeError):
        return 0


def counters(rows, traffic, gwa, gwb, churned=()):
    """What each tunnel that carried sessions counted on both gateways, beside the bytes its
    sessions moved (tunbed-traffic's per-session local and remote name the tunnels' sites);
    the tunnels without sessions summed, and apart from them those churned (names: they
    carry the churn's pings, and start their counters again at each add). gwa and gwb:
    TunnelGregw.tunnels()."""
    by_site = {r["server4"]: r["name"] for r in rows}
    sessions = {}
    for s in ((traffic or {}).get("tcp") or {}).get("per_session") or []:
        name = by_site.get(s.get("remote"))
        if name is not None:
            sessions.setdefault(name, []).append(s)
    carried = []
    idle, moved = ({"tunnels": 0, "packets": 0, "bytes": 0} for _ in range(2))
    churned = set(churned)
    for r in rows:
        a, b = gwa.get(r["name"], {}), gwb.get(r["name"], {})
        if r["name"] not in sessions:
            x = moved if r["name"] in churned else idle
            x["tunnels"] += 1
            x["packets"] += sum(t.get(k, 0) for t in (a, b)
                                for k in ("tx_packets", "rx_packets"))
            # Bytes too: wireguard-go counts no packets.
            x["bytes"] += sum(t.get(k, 0) for t in (a, b) for k in ("tx_bytes", "rx_bytes"))
            continue
        ss = sessions[r["name"]]
        carried.append({
            "name": r["name"], "site": r["server4"], "sessions": len(ss),
            "bits_per_second": sum(s.get("bits_per_second") or 0 for s in ss),
            "sent": sum(s.get("sent") or 0 for s in ss),
            "server_received": sum(s.get("server_received") or 0 for s in ss),
            "received": sum(s.get("received") or 0 for s in ss),
            **{role: {**{k: t.get(k, 0) for k in COUNTERS},
                      "drops": sum((t.get("drops") or {}).values())}
               for role, t in (("gwa", a), ("gwb", b))}})
    out = {"carried": carried, "idle": idle}
    if churned:
        out["churned"] = moved
    return out


def client_args(files, point):
    """tunbed-traffic's client options of a point: the sessions on the tunnels' pairs, each
    paced at the point's rate where it has one."""
    return ["--pairs", os.path.join(files, "pairs"),
            *(["--rate", str(point.rate)] if point.rate else [])]


class TunnelsRun(matrix_point.Run):
    """The matrix's run with the point's gateway of many tunnels (tunnel_driver) and the
    sessions on the pairs."""

    def __init__(self, sc, point, bed, files, rows, setup_limit):
        super().__init__(sc, point, bed)
        self.files, self.rows, self.setup_limit = files, rows, setup_limit
        self.client_args = client_args(files, point)
        self.churn, self.churn_result = None, None

    def gateway_up(self):
        self.driver = tunnel_driver(self.bed, self.point, self.files, self.setup_limit)
        return matrix_point.gateway_up(self.driver, self.bed, self.rows[0]["server4"])

    def load(self):
        """The sessions (matrix_point.Run.load); with a churn rate, the churn program runs
        from before they start until they have ended, and its result is churn_result."""
        if not self.point.churn:
            return super().load()
        h = self.bed.host("client")
        plan = churn_plan(self.files, self.rows, self.point, dict(self.driver.socks))
        self.churn = h.spawn("churn", [sys.executable, "-B", CHURN_PY], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        self.churn.local.stdin.write(json.dumps(plan) + "\n")
        self.churn.local.stdin.flush()
        line = churn_line(self.churn, CHURN_READY_S)
        if line != "ready":
            raise Failure(f"the churn program did not start: {line or self.churn_error()}")
        self.watch("client", self.churn.pid, "churn (tunnels_churn.py)")
        try:
            return super().load()
        finally:
            self.churn_result = self.churn_stop()

    def churn_error(self):
        _, err = self.churn.stop()
        return ((err or "").strip().splitlines() or ["no message"])[-1]

    def churn_stop(self):
        """Ends the churn (the end of its input) and returns its result."""
        p, self.churn = self.churn, None
        try:
            p.local.stdin.close()
        except OSError:
            pass
        try:
            out, err = p.communicate(timeout=CHURN_STOP_S)
        except subprocess.TimeoutExpired:
            p.stop()
            raise Failure(f"the churn program did not end within {CHURN_STOP_S} s of its "
                          "input's end") from None
        try:
            return json.loads((out or "").strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise Failure("the churn program: " + ((err or "").strip().splitlines()
                                                   or ["no result"])[-1]) from None

    def stop(self):
        if self.churn is not None and self.churn.poll() is None:
            self.churn.stop()
        self.churn = None
        super().stop()


def churn_line(proc, timeout):
    """The first line proc writes (stripped), or '' when it ends or timeout passes first."""
    ready, _, _ = select.select([proc.local.stdout], [], [], timeout)
    return proc.local.stdout.readline().strip() if ready else ""


def measure(sc, point, repeat, bed, setup_limit):
    """Runs point once on bed, which is up for it (bed.point), the gateway's setup of a side
    within setup_limit seconds; returns the raw record (JSON-ready). What it starts it stops,
    whatever happens."""
    record = {"point": point.record(), "repeat": repeat, "started": time.time(),
              "pins": bed.pins}
    # The namespaces share this machine's files: gwa's state directory serves all three.
    files = bed.host("gwa").state
    rows = write_files(files, point)
    run_ = TunnelsRun(sc, point, bed, files, rows, setup_limit)
    try:
        driver_pids, record["gateway_info"] = run_.gateway_up()
        record["setup"] = run_.driver.setup_record()
        run_.servers_up()
        before = json.loads(json.dumps(run_.driver.telemetry())) if point.churn else {}
        clocks = run_.sample(driver_pids)
        record.update(run_.traffic(run_.load()))
        record["gateway"] = run_.driver.telemetry()
        record["loaded"] = run_.driver.memory()
        if run_.churn_result is not None:
            record["churn"] = dict(run_.churn_result,
                                   gregw=churn_stats(before, record["gateway"] or {}))
            if record["churn"].get("error"):
                raise Failure(f"churn: {record['churn']['error']}")
        churned = [r["name"] for r in rows[point.steady():]] if point.churn is not None else ()
        record["tunnels"] = counters(rows, record["traffic"], run_.driver.tunnels("gwa"),
                                     run_.driver.tunnels("gwb"), churned)
        record["tunnels"]["unattributed"] = {
            role: run_.driver.unattributed(role, link_drops(bed, role)) for role in ("gwa", "gwb")}
        stats = getattr(run_.driver, "stats", None) or {}
        if stats:
            record["tunnels"]["segments_max"] = {
                role: segments_max(stats.get(role)) for role in ("gwa", "gwb")}
        record["hosts"] = run_.hosts(clocks)
    finally:
        run_.stop()
    record["finished"] = time.time()
    return record
