"""tunbed intranet: the cloud same-zone benchmark (docs/intranet.md). Two hosts, a client and a
server on one link, measured the way published VM-to-VM benchmarks measure two VMs of one
zone: ping idle and during a full-rate transfer, 1 to 16 TCP streams, UDP at a rate with loss
and jitter. In namespaces each run builds the pair under an instance profile: the link's tbf
cap with its burst, the CPUs each endpoint's processes may use, socket buffers and the
congestion control. With --hosts the pair is two machines of an inventory, with no cap of
ours, measured against the nominal bandwidth the inventory states.

This module holds the profiles, the scenario file and the checks made before anything starts;
intranet.py is the kind (the command and its run), intranet_bed.py measures,
intranet_report.py reports.

    [intranet]
    name = zone-a               ; results/<UTC time>-NAME/ (default intranet)
    profiles = c1-1g, c2-2g     ; which profiles run (default: the file's, else the shipped)
    streams = 1, 4, 8, 16       ; TCP streams, 1-10000
    time = 10                   ; measured seconds per run, 1-3600
    warmup = 2                  ; 0-600
    repeats = 3                 ; 1-100
    udp_rate = 1gbit, 50%       ; UDP rates: bit/s, or a share of the profile's cap
    ping_count = 100            ; ICMP echo probes idle (and at most under load), 1-100000
    ping_interval = 0.2         ; seconds between probes, 0.001-60

    [profile c1-1g]
    label = 1 vCPU, 1 Gbit/s cap    ; the profile's name in the report (default: made up)
    vcpus = 1                   ; CPUs each endpoint's processes may use (default: all)
    rate = 1gbit                ; tbf cap on both ends' egress (default: none)
    burst = 125k                ; tbf bucket in bytes (default: 1 ms at the rate)
    limit = 1375k               ; tbf queue in bytes (default: burst + 10 ms at the rate)
    congestion = cubic          ; the streams' TCP congestion control (default: the system's)
    sockbuf = 1m                ; the client's SO_SNDBUF and SO_RCVBUF, as iperf3 -w
    tcp_rmem = 4096 131072 16777216   ; net.ipv4.tcp_rmem of both ends
    tcp_wmem = 4096 16384 16777216    ; net.ipv4.tcp_wmem of both ends
    mtu = 9000                  ; both links' MTU, 1280-65535 (default 1500); UDP fills it

Every error is one line (FILE:LINE: what, for the file) and exit status 2, before anything is
installed, built or started."""

import dataclasses
import os
import re

from .. import files, inifile, inventory, limits, units

STREAMS_MAX = 10000  # tunbed-traffic --sessions
RATE_MIN, RATE_MAX = 8000, 32 * 10**9  # a tbf cap, as tunbed-topo takes it (docs/topology.md)
UDP_RATE_MAX = 100 * 10**9
BURST_MS, LIMIT_MS = 1, 10  # tunbed-topo's defaults: the bucket holds 1 ms, the queue 10 ms more
PING_COUNT_MAX = 100000  # tunbed-traffic --icmp-count
IP_UDP = {4: 28, 6: 48}  # IP and UDP headers: a datagram fills the MTU with its payload
# A group outside the client's net.ipv4.ping_group_range cannot open a ping socket.
PING_GROUPS = "0 2147483647"


def udp_size(mtu, addr):
    """The UDP payload that fills an MTU, as iperf3's UDP default does: no fragments."""
    return mtu - IP_UDP[6 if ":" in addr else 4]


class IntranetError(ValueError):
    """A bad value or file: one line, exit status 2."""


def parse_rate(text, what):
    """A bit rate as tunbed's tools read it (units.rate): '1gbit', '2.5g', '100mbit'; at
    least 1 bit/s."""
    try:
        bps = round(units.rate(text, what))
    except ValueError as e:
        raise IntranetError(str(e)) from None
    if bps < 1:
        raise IntranetError(f"bad value '{text}' for {what}: expected a bit rate above 0")
    return bps


def parse_size(text, what):
    """Bytes as tunbed's tools read them (units.size): '64k', '1m', '125000'."""
    try:
        return units.size(text, what)
    except ValueError as e:
        raise IntranetError(str(e)) from None


rate_text = units.rate_text


def number(text, lo, hi, what, whole=False):
    try:
        return inifile.number(text, lo, hi, what, whole)
    except ValueError as e:
        raise IntranetError(str(e)) from None


words = inifile.words


@dataclasses.dataclass
class Profile:
    """What makes two cloud instances differ, as a profile of the namespace pair."""
    name: str
    label: str = ""
    vcpus: int = 0  # CPUs each endpoint's processes may use; 0: all of this machine's
    rate: int = 0  # tbf cap in bit/s on both ends' egress; 0: none
    burst: int = 0  # bytes; 0: BURST_MS at the rate
    limit: int = 0  # bytes; 0: the burst and LIMIT_MS at the rate
    congestion: str = ""  # "": the system's
    sockbuf: int = 0  # the client's SO_SNDBUF and SO_RCVBUF; 0: autotuning
    tcp_rmem: str = ""
    tcp_wmem: str = ""
    mtu: int = 0  # both links'; 0: the topology's (1500)
    nominal: int = 0  # hosts mode: the inventory's nominal bandwidth, bit/s

    def title(self):
        """'2 vCPU, 2 Gbit/s cap': the label, or one made of the profile."""
        if self.label:
            return self.label
        cpus = f"{self.vcpus} vCPU" if self.vcpus else "all CPUs"
        return f"{cpus}, {rate_text(self.rate) + ' cap' if self.rate else 'uncapped'}"

    def bucket(self):
        """(burst, limit) in bytes of the cap, the defaults filled in; (0, 0) uncapped."""
        if not self.rate:
            return 0, 0
        burst = self.burst or self.rate * BURST_MS // 8000
        return burst, self.limit or burst + self.rate * LIMIT_MS // 8000

    def reference(self):
        """The rate results are compared with: the cap, else the nominal bandwidth; 0 none."""
        return self.rate or self.nominal

    def as_dict(self):
        burst, limit = self.bucket()
        return dataclasses.asdict(self) | {"title": self.title(), "burst": burst, "limit": limit}


# Three instances that fit a 2-CPU machine, after the seeds' small cloud VMs.
SHIPPED = {p.name: p for p in (
    Profile("c1-1.5g", vcpus=1, rate=1500 * 10**6),
    Profile("c2-2g", vcpus=2, rate=2 * 10**9),
    Profile("c2-nocap", vcpus=2),
)}


@dataclasses.dataclass
class UdpRate:
    """A UDP rate as given: bit/s, or a share of the profile's cap (or nominal bandwidth)."""
    text: str
    bps: int = 0
    percent: float = 0.0

    def of(self, profile):
        return self.bps or round(profile.reference() * self.percent / 100)


def parse_udp_rates(text, what="udp_rate"):
    out = []
    for w in words(text):
        if w.endswith("%"):
            pct = number(w[:-1], 1, 1000, what)
            out.append(UdpRate(w, percent=pct))
        else:
            bps = parse_rate(w, what)
            if bps > UDP_RATE_MAX:
                raise IntranetError(f"bad value '{w}' for {what}: expected at most 100gbit")
            out.append(UdpRate(w, bps=bps))
    if not out:
        raise IntranetError(f"{what} needs at least one rate")
    return out


def parse_streams(text, what="streams"):
    out = [int(number(w, 1, STREAMS_MAX, what, whole=True)) for w in words(text)]
    if not out:
        raise IntranetError(f"{what} needs at least one stream count")
    return sorted(set(out))


@dataclasses.dataclass
class Scenario:
    name: str = "intranet"
    profiles: list = dataclasses.field(default_factory=list)  # names; []: the default
    streams: list = dataclasses.field(default_factory=lambda: [1, 4, 8, 16])
    time: float = 10.0
    warmup: float = 2.0
    repeats: int = 3
    udp_rates: list = dataclasses.field(default_factory=lambda: [UdpRate("1gbit", 10**9)])
    ping_count: int = 100
    ping_interval: float = 0.2
    defined: dict = dataclasses.field(default_factory=dict)  # the file's profiles


def _name(v, what):
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}", v):
        raise IntranetError(f"bad {what} '{v}': 1 to 32 of letters, digits, '.', '-' and '_'")
    return v


def _congestion(v):
    if not re.fullmatch(r"[A-Za-z0-9_]{1,15}", v):
        raise IntranetError(f"bad value '{v}' for congestion: expected an algorithm's name, "
                            "e.g. cubic or bbr")
    return v


def _tcp_mem(v, what):
    parts = v.split()
    if len(parts) != 3 or not all(re.fullmatch(r"[0-9]{1,19}", p) for p in parts) or \
            not int(parts[0]) <= int(parts[1]) <= int(parts[2]):
        raise IntranetError(f"bad value '{v}' for {what}: expected three byte counts, min "
                            f"default max, such as 4096 131072 16777216")
    return " ".join(parts)


SCENARIO_KEYS = {
    "name": lambda s, v: setattr(s, "name", _name(v, "name")),
    "profiles": lambda s, v: setattr(s, "profiles", [_name(w, "profile") for w in words(v)]),
    "streams": lambda s, v: setattr(s, "streams", parse_streams(v)),
    "time": lambda s, v: setattr(s, "time", number(v, 1, 3600, "time")),
    "warmup": lambda s, v: setattr(s, "warmup", number(v, 0, 600, "warmup")),
    "repeats": lambda s, v: setattr(s, "repeats", int(number(v, 1, 100, "repeats", True))),
    "udp_rate": lambda s, v: setattr(s, "udp_rates", parse_udp_rates(v)),
    "ping_count": lambda s, v: setattr(s, "ping_count",
                                       int(number(v, 1, PING_COUNT_MAX, "ping_count", True))),
    "ping_interval": lambda s, v: setattr(s, "ping_interval",
                                          number(v, 0.001, 60, "ping_interval")),
}


def _rate_cap(v):
    bps = parse_rate(v, "rate")
    if not RATE_MIN <= bps <= RATE_MAX:
        raise IntranetError(f"bad value '{v}' for rate: expected 8kbit to 32gbit (tbf's range)")
    return bps


def _bytes(v, what, lo, hi):
    n = parse_size(v, what)
    if not lo <= n <= hi:
        raise IntranetError(f"bad value '{v}' for {what}: expected {lo} to {hi} bytes")
    return n


PROFILE_KEYS = {
    "label": lambda p, v: setattr(p, "label", v),
    "vcpus": lambda p, v: setattr(p, "vcpus", int(number(v, 1, 1024, "vcpus", True))),
    "rate": lambda p, v: setattr(p, "rate", _rate_cap(v)),
    "burst": lambda p, v: setattr(p, "burst", _bytes(v, "burst", 1, 2**32 - 1)),
    "limit": lambda p, v: setattr(p, "limit", _bytes(v, "limit", 1, 2**32 - 1)),
    "congestion": lambda p, v: setattr(p, "congestion", _congestion(v)),
    "sockbuf": lambda p, v: setattr(p, "sockbuf", _bytes(v, "sockbuf", 4096, 2**30)),
    "tcp_rmem": lambda p, v: setattr(p, "tcp_rmem", _tcp_mem(v, "tcp_rmem")),
    "tcp_wmem": lambda p, v: setattr(p, "tcp_wmem", _tcp_mem(v, "tcp_wmem")),
    "mtu": lambda p, v: setattr(p, "mtu", int(number(v, 1280, 65535, "mtu", True))),
}


def parse(text, filename="scenario"):
    """A scenario file's text as a Scenario. Raises IntranetError naming FILE:LINE."""
    sc = Scenario()
    headers = {}

    def section(name, n):
        if name == "intranet":
            if name in headers:
                raise IntranetError(f"[intranet] given twice (first at line {headers[name]})")
        elif name.startswith("profile "):
            profile = _name(name[8:], "profile name")
            if profile in sc.defined:
                raise IntranetError(f"profile '{profile}' defined twice (first at line "
                                    f"{headers[name]})")
            sc.defined[profile] = Profile(profile)
        else:
            raise IntranetError(f"unknown section [{name}]: expected [intranet] or "
                                f"[profile NAME]")
        headers[name] = n
        return name

    for n, name, key, value in inifile.entries(text, filename, IntranetError, section,
                                               "a section"):
        if key is None:
            continue
        target = sc if name == "intranet" else sc.defined[name[8:]]
        keys = SCENARIO_KEYS if target is sc else PROFILE_KEYS
        if not value and key in keys:
            raise IntranetError(f"{filename}:{n}: key '{key}' has no value")
        inifile.apply(keys, target, key, value, f"{filename}:{n}", IntranetError,
                      f"unknown key '{key}' in [{name}]: expected one of {', '.join(keys)}")
    return sc


def load(path):
    """The scenario file at path, a regular file of at most limits.SCENARIO_BYTES."""
    return parse(files.read_text(path, limits.SCENARIO_BYTES, IntranetError, "scenario file"),
                 path)


def overrides(sc, args):
    """The command line over the file."""
    if args.profiles is not None:
        sc.profiles = [_name(w, "profile") for w in words(args.profiles)] or \
            [_name(args.profiles, "profile")]
    if args.streams is not None:
        sc.streams = parse_streams(args.streams, "--streams")
    if args.time is not None:
        sc.time = number(args.time, 1, 3600, "--time")
    if args.warmup is not None:
        sc.warmup = number(args.warmup, 0, 600, "--warmup")
    if args.repeats is not None:
        sc.repeats = int(number(args.repeats, 1, 100, "--repeats", True))
    if args.udp_rate is not None:
        sc.udp_rates = parse_udp_rates(args.udp_rate, "--udp-rate")
    if args.ping_count is not None:
        sc.ping_count = int(number(args.ping_count, 1, PING_COUNT_MAX, "--ping-count", True))
    if args.ping_interval is not None:
        sc.ping_interval = number(args.ping_interval, 0.001, 60, "--ping-interval")
    return sc


def machine_cpus():
    return sorted(os.sched_getaffinity(0))


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


def plan_cpus(profile, cpus):
    """{"client": "0", "server": "1", "shared": False}: the CPUs of each endpoint's processes.
    The client takes the first vCPUs of this machine, the server the next; a machine with fewer
    than twice as many lets the server have the last ones, shared with the client."""
    if not profile.vcpus:
        return {"client": "", "server": "", "shared": True}
    v = profile.vcpus
    client = cpus[:v]
    server = cpus[v:2 * v] if 2 * v <= len(cpus) else cpus[-v:]
    return {"client": cpu_list(client), "server": cpu_list(server),
            "shared": bool(set(client) & set(server))}


HOSTS_KEYS = ("congestion", "sockbuf", "label")  # what a profile may set in the hosts mode


def resolve(sc, hosts=None, nominal=0, cpus=None, available_cc=None):
    """The profiles to run, each checked: every mistake is an IntranetError before anything
    starts. hosts: the inventory (the hosts mode); nominal: its bandwidth; cpus: this
    machine's; available_cc: the congestion controls this kernel offers."""
    known = SHIPPED | sc.defined
    names = sc.profiles or (list(sc.defined) if sc.defined else list(SHIPPED))
    if hosts and not sc.profiles:
        names = []
    out = []
    for name in names:
        if name not in known:
            raise IntranetError(f"unknown profile '{name}': expected one of {', '.join(known)}")
        p = dataclasses.replace(known[name])
        if hosts:
            bad = [k for k in ("vcpus", "rate", "burst", "limit", "tcp_rmem", "tcp_wmem", "mtu")
                   if getattr(p, k)]
            if bad:
                raise IntranetError(f"profile '{name}' sets {', '.join(bad)}: the hosts mode "
                                    f"measures the hosts as they are, with no cap of ours (a "
                                    f"profile there may set only {', '.join(HOSTS_KEYS)})")
            p.nominal = nominal
        out.append(p)
    if hosts and not out:
        c, s = hosts.one("client"), hosts.one("server")
        out = [Profile("hosts", label=f"{c.name} -> {s.name}", nominal=nominal)]
    for p in out:
        if not hosts and p.vcpus and cpus is not None and p.vcpus > len(cpus):
            raise IntranetError(f"profile '{p.name}': {p.vcpus} vCPUs per endpoint, but this "
                                f"machine has {len(cpus)} CPU{'s' if len(cpus) > 1 else ''} "
                                f"({cpu_list(cpus)})")
        if p.congestion and available_cc is not None and p.congestion not in available_cc:
            raise IntranetError(f"profile '{p.name}': congestion control '{p.congestion}' is "
                                f"not available here (available: {', '.join(available_cc)})")
        if p.rate:
            burst, limit = p.bucket()
            if limit < burst:
                raise IntranetError(f"profile '{p.name}': limit {limit} is below the burst "
                                    f"{burst}: tbf's queue must hold its bucket")
        for r in sc.udp_rates:
            if r.percent and not p.reference():
                raise IntranetError(f"--udp-rate {r.text}: profile '{p.name}' has no cap "
                                    f"{'or nominal bandwidth ' if hosts else ''}to take a share "
                                    f"of: give a bit rate such as 1gbit")
    check_keys(sc, out)
    return out


def check_keys(sc, profiles):
    """Refuses a profile named twice: its runs would have one key (point_of), their records
    one file."""
    seen = set()
    for p in profiles:
        if p.name in seen:
            raise IntranetError(f"profile '{p.name}' given twice")
        seen.add(p.name)


def inventory_nominal(path, inv):
    """The inventory's nominal bandwidth (tunbed_nominal, bit/s: on the client, else on the
    server, else on all); 0 when it gives none."""
    _, hostvars = inventory.load(path)
    for role in ("client", "server"):
        h = inv.one(role)
        v = hostvars.get(h.name, {}).get("tunbed_nominal")
        if v not in (None, ""):
            try:
                return parse_rate(str(v), "tunbed_nominal")
            except IntranetError as e:
                raise inventory.InventoryError(f"host {h.name}: {e}") from None
    return 0


def runs_of(sc, profile):
    """The runs of one profile, in order: idle latency, each stream count, each UDP rate."""
    out = [("idle", 0, 0)]
    out += [("tcp", s, 0) for s in sc.streams]
    # Two rates that are one for this profile (1gbit and 50% of a 2gbit cap) are one point,
    # measured once, as stream counts given twice are.
    out += [("udp", 0, rate) for rate in dict.fromkeys(r.of(profile) for r in sc.udp_rates)]
    return out


def point_of(profile, kind, streams, rate):
    """The raw record's point: what records.py needs (key), and what the report sorts by."""
    key = {"idle": f"{profile.name}-idle", "tcp": f"{profile.name}-tcp-s{streams}",
           "udp": f"{profile.name}-udp-{rate}bps"}[kind]
    return {"key": key, "config": profile.name, "profile": profile.name, "kind": kind,
            "streams": streams, "udp_rate_bps": rate}
