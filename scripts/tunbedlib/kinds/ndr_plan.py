"""What `tunbed ndr` (ndr.py) plans, checked before anything runs: its settings (the command
line's, or a scenario file's [ndr] section), the frame sizes of every gateway configuration
(RFC 2544's: the Ethernet frame the client sends, FCS included, whose inner IP packet is 18
bytes shorter; on transit the tunnel adds its driver's overhead()), the simple IMIX (7:4:1 of
64, 594 and 1518-byte frames, its largest member capped at what a tunnel carries), and the
searches, in order. Pure: tested without root (tests/python/test_ndr.py)."""

import dataclasses
import re

from .. import files, inifile, limits, scenario, search, units
from ..common import ScenarioError
from ..drivers import DRIVERS

ETHERNET = 18              # Ethernet header and FCS: RFC 2544's frame sizes count both
ETHERNET_MIN = 64          # a shorter frame is padded to this
WIRE_GAP = 20              # preamble and inter-frame gap: what a frame costs on a wire beyond itself
IP_HEADER = {4: 20, 6: 40}
UDP_HEADER = 8
PAYLOAD_MIN = 18           # tunbed-traffic's short header (PROTO_UDP_SHORT_HLEN)
DEFAULT_SIZES = [64, 512, 1280]
FULL_SIZES = [64, 128, 256, 512, 1024, 1280, 1518]  # RFC 2544, section 9.1
# The simple IMIX (docs/ndr.md, "IMIX"): 7 frames of 64 bytes, 4 of 594 and 1 of 1518 in every
# 12, the IP packets of 40 (padded to the 64-byte frame), 576 and 1500 bytes of the common
# definition; its mean frame is 4342 / 12 = 361.8 bytes.
IMIX = "imix"
IMIX_MEMBERS = ((64, 7), (594, 4), (1518, 1))
FRACTIONS = (0.1, 0.5, 0.9)  # of PDR, where latency is measured (as CSIT does)
DIRECT = "direct"          # the pseudo-gateway of the ceiling: no gateway at all


def overhead(gateway, mode, family):
    """Bytes a gateway's tunnel adds to each inner IP packet on transit (its driver's
    overhead()), or None if unknown."""
    if gateway == DIRECT:
        return 0
    driver = DRIVERS.get(gateway)
    return driver.overhead(mode, IP_HEADER[family]) if driver else None


def size_key(size):
    """Frame sizes in order: the numbers ascending, then the IMIX."""
    return (1, 0) if size == IMIX else (0, size)


def size_of(key):
    """A frame size of a JSON document's keys ('64', 'imix'), as the run has it."""
    return key if key == IMIX else int(key)


def size_words(size):
    """'64-byte frames', or 'IMIX frames'."""
    return "IMIX frames" if size == IMIX else f"{size}-byte frames"


def imix(gateway, mode, family, transit_mtu, lan_mtu):
    """The frame of the IMIX, as frame() gives one, with `mix`: each member's frame and its
    `weight`; `inner_ip`, `udp_payload` and `transit` the means over the mix, per datagram. A
    member the LAN or the tunnel cannot carry is capped at the largest frame that both carry
    (`capped_from`: the member's size), one below the smallest frame tunbed-traffic sends over
    the family raised to it (`raised_from`: 64 over IPv6): full-size packets through a tunnel
    are the tunnel's full size. ValueError when not even the smallest frame is carried."""
    smallest = PAYLOAD_MIN + UDP_HEADER + IP_HEADER[family] + ETHERNET
    oh = overhead(gateway, mode, family)
    if oh is None:
        frame(smallest, gateway, mode, family, transit_mtu, lan_mtu)  # raises its line
    largest = min(lan_mtu, transit_mtu - oh) + ETHERNET
    if largest < smallest:
        frame(smallest, gateway, mode, family, transit_mtu, lan_mtu)  # raises its line
    mix = []
    for size, weight in IMIX_MEMBERS:
        use = min(max(size, smallest), largest)
        m = dict(frame(use, gateway, mode, family, transit_mtu, lan_mtu), weight=weight)
        if use > size:
            m["raised_from"] = size
        elif use < size:
            m["capped_from"] = size
        mix.append(m)
    total = sum(m["weight"] for m in mix)
    mean = lambda k: sum(m[k] * m["weight"] for m in mix) / total  # noqa: E731
    return {"lan": IMIX, "lan_mean": mean("lan"), "inner_ip": mean("inner_ip"),
            "udp_payload": mean("udp_payload"), "overhead": oh, "transit": mean("transit"),
            "tunnel_mtu": transit_mtu - oh, "family": family, "mix": mix}


def imix_note(fr):
    """The words of an IMIX frame's members that differ from the mix's sizes, or ''."""
    words = [f"its {m['capped_from']}-byte member capped at {m['lan']}, the largest frame "
             "carried" for m in fr.get("mix") or () if m.get("capped_from")]
    words += [f"its {m['raised_from']}-byte member raised to {m['lan']}, the smallest frame "
              f"over IPv{fr.get('family')}" for m in fr.get("mix") or () if m.get("raised_from")]
    return "; ".join(words)


def frame(size, gateway, mode, family, transit_mtu, lan_mtu):
    """The frame sizes of one search: `lan` (asked: the client's Ethernet frame), `inner_ip`,
    `udp_payload` (tunbed-traffic's --size), `transit` (the Ethernet frame the tunnel puts on
    transit), `overhead` and `tunnel_mtu`. Raises ValueError with one line for a size the
    generator cannot build or the tunnel cannot carry. size IMIX: imix()'s."""
    if size == IMIX:
        return imix(gateway, mode, family, transit_mtu, lan_mtu)
    inner = size - ETHERNET
    payload = inner - IP_HEADER[family] - UDP_HEADER
    smallest = PAYLOAD_MIN + UDP_HEADER + IP_HEADER[family] + ETHERNET
    if payload < PAYLOAD_MIN:
        raise ValueError(f"frame size {size} is below the smallest frame tunbed-traffic sends "
                         f"over IPv{family}: {smallest} bytes (IP, UDP and its {PAYLOAD_MIN}-byte "
                         "header)")
    oh = overhead(gateway, mode, family)
    if oh is None:
        raise ValueError(f"gateway {gateway}: its tunnel overhead is not known to tunbed ndr "
                         "(its driver's overhead(), scripts/tunbedlib/drivers/)")
    what = gateway if mode == "-" else f"{gateway} {mode}"
    if inner > lan_mtu:
        raise ValueError(f"frame size {size} is too big for the LAN: its inner IP packet "
                         f"({inner} bytes) exceeds the link MTU {lan_mtu}")
    if inner > transit_mtu - oh:
        raise ValueError(f"frame size {size} is too big for {what}: its inner IP packet "
                         f"({inner} bytes) exceeds the tunnel MTU {transit_mtu - oh} (transit "
                         f"MTU {transit_mtu} - {oh} of tunnel headers)")
    return {"lan": size, "inner_ip": inner, "udp_payload": payload, "overhead": oh,
            "transit": max(ETHERNET_MIN, inner + oh + ETHERNET), "tunnel_mtu": transit_mtu - oh,
            "family": family}


def parse_rate(v, what):
    """Datagrams a second (units.rate): '800000', '800k', '1.5m'; 1 to 100 million."""
    x = units.rate(v, what, "pps")
    if not 1 <= x <= 1e8:
        raise ValueError(f"bad value '{v}' for {what}: expected 1 to 100m datagrams a second")
    return x


@dataclasses.dataclass
class Ndr:
    """What an NDR run searches, beyond the scenario's gateways, modes, workers, mtu and time
    (the final trials' duration)."""
    sizes: list = dataclasses.field(default_factory=lambda: list(DEFAULT_SIZES))
    flows: int = 8             # UDP sessions, each its own source port
    width: float = 0.02        # the goal width at the final duration
    pdr_loss: float = 0.5      # percent
    initial_time: float = 1.0  # the first phase's trials, seconds
    min_rate: float = 1000.0
    max_rate: float = 0.0      # 0: the generator's ceiling
    direct_topology: str = "direct"
    ceiling_from: str = ""     # a results directory whose direct searches are the ceiling


def _sizes(v):
    """Frame sizes, whole numbers or `imix`, each once; the numbers ascending, then imix."""
    words = inifile.words(v)
    mix = [w for w in words if w.lower() == IMIX]
    nums = [w for w in words if w.lower() != IMIX]
    if len(mix) > 1:
        raise ValueError("imix given twice in sizes")
    out = sorted(inifile.ints(",".join(nums), 1, 65535, "sizes")) if nums or not mix else []
    return out + [IMIX] * len(mix)


NDR_SETTERS = {
    "sizes": lambda n, v: setattr(n, "sizes", _sizes(v)),
    "flows": lambda n, v: setattr(n, "flows", inifile.ints(v, 1, 1000, "flows")[0]),
    "width": lambda n, v: setattr(n, "width", inifile.number(v, 0.001, 0.5, "width")),
    "pdr_loss": lambda n, v: setattr(n, "pdr_loss", inifile.number(v, 0, 50, "pdr_loss")),
    "initial_time": lambda n, v: setattr(n, "initial_time",
                                         inifile.number(v, 0.1, 3600, "initial_time")),
    "min_rate": lambda n, v: setattr(n, "min_rate", parse_rate(v, "min_rate")),
    "max_rate": lambda n, v: setattr(n, "max_rate", parse_rate(v, "max_rate")),
    "direct_topology": lambda n, v: setattr(n, "direct_topology", v),
    "ceiling_from": lambda n, v: setattr(n, "ceiling_from", v),
}
# Scenario keys an NDR run has no use for: refused in a file with an [ndr] section.
NOT_FOR_NDR = ("sessions", "pattern", "rr", "congestion", "wire_audit", "verify", "warmup",
               "gateway_cpu", "client_cpu")


def from_section(sc, path):
    """The Ndr of a scenario's [ndr] section (scenario.py keeps its lines); ScenarioError
    FILE:LINE for a bad key or value, or a [scenario] key that does not apply."""
    nd = Ndr()
    for key in NOT_FOR_NDR:
        if key in sc.lines:
            raise ScenarioError(f"{path}:{sc.lines[key]}: '{key}' does not apply to an "
                                         "NDR search (its keys are in [ndr])")
    for n, key, value in sc.ndr:
        inifile.apply(NDR_SETTERS, nd, key, value, f"{path}:{n}", ScenarioError,
                      f"unknown key '{key}' in [ndr]")
    return nd


topology_path = scenario.topology_path


def links(path):
    """{link: {"mtu": int, "addrs": [a.addr values]}} of a topology file, read before anything
    runs (tunbed-topo checks the file itself when it builds it)."""
    out, cur = {}, None
    text = files.read_text(path, limits.SCENARIO_BYTES, ScenarioError, "topology file")
    for line in text.splitlines():
        line = line.split(" ;")[0].strip()
        m = re.fullmatch(r"\[link\s+(\S+)\]", line)
        if m:
            cur = out.setdefault(m[1], {"mtu": 1500, "addrs": []})
        elif line.startswith("["):
            cur = None
        elif cur is not None and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            if k == "mtu" and re.fullmatch(r"[0-9]{1,6}", v):
                cur["mtu"] = int(v)
            elif k == "a.addr":
                cur["addrs"] += v.replace(",", " ").split()
    return out


# What the hosts mode plans frames with (the hosts' own MTUs are checked once they are
# reached: ndr.check_host_mtus).
HOSTS_MTU = 1500


def frames(sc, nd, hosts_family=None):
    """{(gateway, mode): {size: frame}} for every configuration of the run, direct first;
    ScenarioError (one line, exit 2) for a size one of them cannot take. hosts_family: on the
    hosts of an inventory (its family), every MTU is taken as HOSTS_MTU."""
    if hosts_family:
        family, transit_mtu, lan, wire = hosts_family, HOSTS_MTU, HOSTS_MTU, HOSTS_MTU
    else:
        path = topology_path(sc.topology)
        ls = links(path)
        transit = ls.get("transit")
        if not transit or not transit["addrs"]:
            raise ScenarioError(f"topology '{sc.topology}': no link 'transit' with "
                                "addresses (tunbed ndr needs a RAS-shaped topology)")
        family = 6 if ":" in transit["addrs"][0] else 4
        transit_mtu = transit["mtu"]
        lan = min(ls.get(n, {"mtu": 1500})["mtu"] for n in ("lan-a", "lan-b"))
        wire = links(topology_path(nd.direct_topology)).get("wire", {"mtu": 1500})["mtu"]
    out = {}
    configs = [(DIRECT, "-", wire, wire)] if not nd.ceiling_from else []
    for g in sc.gateways:
        for m in (sc.modes if DRIVERS[g].has_modes else ["-"]):
            for mtu in sc.mtu:
                configs.append((g, m, mtu or transit_mtu, lan))
    for g, m, tmtu, lmtu in configs:
        for size in nd.sizes:
            try:
                out.setdefault((g, m), {})[size] = frame(size, g, m, family, tmtu, lmtu)
            except ValueError as e:
                raise ScenarioError(str(e)) from None
    return family, out


def point_key(point):
    """A search's name without its frame size: gregw-gre-w2, vxlan, direct, gregw-gre-w2-mtu9000."""
    gw = scenario.file_name(point.gateway)
    key = gw if point.mode == "-" else f"{gw}-{point.mode}-w{point.workers}"
    return key + (f"-mtu{point.mtu}" if point.mtu else "")


def above_ceiling(nd, ceiling):
    """The line for a --max-rate the generator cannot offer at some frame size, or None."""
    for size in nd.sizes:
        c = ceiling.get(size)
        if c is not None and nd.max_rate > c:
            return (f"--max-rate {nd.max_rate:g} is above the generator's ceiling at "
                    f"{size_words(size)} ({c:g} datagrams/s, measured alone on "
                    f"{nd.direct_topology}): a result there would be the generator's, not the "
                    "gateway's")
    return None


def plan(sc, nd):
    """The searches of a run, in order: the generator alone at every frame size (unless the
    ceiling comes from an earlier run), then every gateway configuration at every size."""
    direct = [] if nd.ceiling_from else [scenario.Point(DIRECT, "-", 0, 0, "udp", nd.flows)]
    gws = [scenario.Point(p.gateway, p.mode, p.workers, p.mtu, "udp", nd.flows)
           for p in scenario.points(dataclasses.replace(sc, sessions=[nd.flows],
                                                        pattern=["udp"]))]
    return [(p, size) for p in direct + list(dict.fromkeys(gws)) for size in nd.sizes]


def check(sc, nd, hosts_family=None):
    """Everything about the searches that can be refused before anything runs (ScenarioError:
    one line, exit status 2); returns (family, frames)."""
    try:
        search.Params(min_rate=nd.min_rate, max_rate=max(nd.max_rate, nd.min_rate * 2),
                      final_s=sc.time, initial_s=min(nd.initial_time, sc.time), width=nd.width,
                      pdr_loss=nd.pdr_loss / 100).check()
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    if nd.max_rate and nd.max_rate <= nd.min_rate:
        raise ScenarioError(f"--max-rate {nd.max_rate:g} is not above --min-rate "
                            f"{nd.min_rate:g}")
    return frames(sc, nd, hosts_family)


def check_ceiling(nd, ceiling):
    """Refuses a ceiling of an earlier run (--ceiling-from) that lacks a frame size, or a
    --max-rate above it."""
    for size in nd.sizes:
        if size not in ceiling:
            raise ScenarioError(f"{nd.ceiling_from}: no ceiling measured at {size_words(size)}")
    line = above_ceiling(nd, ceiling)
    if line:
        raise ScenarioError(line)
