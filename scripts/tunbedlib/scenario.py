"""Scenario files: the matrix of a run, in a small INI file (docs/runner.md).

    [scenario]
    name = ras
    topology = ras              ; built-in name or path
    gateways = gregw, route     ; drivers (drivers/); cmd:PATH for a user's own
                                ; (PATH relative to this file)
    modes = gre                 ; gregw: gre or gre-udp, +key +seq +csum +nooffload +aqm +iptx +nofq +merge
    workers = 1, 2              ; gregw worker threads
    sessions = 1, 8, 64         ; concurrent TCP sessions
    mtu = 0                     ; transit link MTU (0: the topology's)
    pattern = push              ; push, pull, duplex
    time = 10                   ; seconds measured per run
    warmup = 2                  ; seconds before, not measured
    repeats = 3
    rr = yes                    ; latency probes, idle and under load
    congestion = cubic          ; TCP congestion control of the sessions (default: the system's)
    wire_audit = no             ; tunbed-wire on the transit link during each run
    verify = no                 ; every byte of every session checked (tunbed-traffic --verify)
    gateway_cpu = off           ; each gateway thread's CPU budget, 1-100 (% of a core), or off
    client_cpu = off            ; each traffic client's CPU budget, all its threads, or off

An [ndr] section makes the file an NDR search (`tunbed run` hands it to ndr.py, which
reads the section's keys: docs/ndr.md).

Every error names file:line and the value, as the C tools do.
"""

import dataclasses
import hashlib
import os
import re

from . import budget, drivers, files, inifile, limits
from .common import TOPOLOGIES, ScenarioError
from .drivers import DRIVERS, GATEWAYS
from .drivers import gregw

PATTERNS = ("push", "pull", "duplex")


@dataclasses.dataclass
class Scenario:
    name: str = "scenario"
    topology: str = "ras"
    gateways: list = dataclasses.field(default_factory=lambda: ["gregw"])
    modes: list = dataclasses.field(default_factory=lambda: ["gre"])
    workers: list = dataclasses.field(default_factory=lambda: [2])
    sessions: list = dataclasses.field(default_factory=lambda: [1, 8])
    mtu: list = dataclasses.field(default_factory=lambda: [0])
    pattern: list = dataclasses.field(default_factory=lambda: ["push"])
    time: float = 10.0
    warmup: float = 2.0
    repeats: int = 3
    rr: bool = True
    congestion: str = ""  # the system's default
    wire_audit: bool = False
    verify: bool = False
    gateway_cpu: float = None  # each gateway thread's budget, percent of a core; None: off
    client_cpu: float = None  # each traffic client's budget (all its threads); None: off
    # Where each key of the file was (key: line), and an [ndr] section's (line, key, value)
    # lines, None without one: ndr.py reads them.
    lines: dict = dataclasses.field(default_factory=dict)
    ndr: list = None


@dataclasses.dataclass(frozen=True)
class Point:
    """One cell of the matrix, measured `repeats` times."""
    gateway: str
    mode: str
    workers: int
    mtu: int
    pattern: str
    sessions: int

    def key(self):
        """A name for files and tables: gregw-gre-w2-mtu0-push-s8; a cmd:PATH gateway as
        file_name() has it."""
        return (f"{file_name(self.gateway)}-{self.mode}-w{self.workers}-mtu{self.mtu}-"
                f"{self.pattern}-s{self.sessions}")

    def config(self):
        """The gateway configuration, without the session count: a line of a plot."""
        if self.mode != "-":
            return f"{self.gateway} {self.mode} {self.workers}w"
        return self.gateway


GATEWAY_NAME_CHARS = 100


def file_name(gateway):
    """A gateway's name as part of a file name: every character but ASCII letters, digits and
    . _ + - as _; a long one (a cmd:PATH) cut, with a digest of the whole, so that the name of
    a point stays a name (records.KEY)."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", gateway)
    if len(name) > GATEWAY_NAME_CHARS:
        name = name[:GATEWAY_NAME_CHARS - 13] + "-" + \
            hashlib.sha256(gateway.encode()).hexdigest()[:12]
    return name


def listed(v, allowed, what):
    """The values of a list (commas or blanks between them), at least one, each once, each of
    allowed when it is given; ValueError in words otherwise (`--gateway: ...` when a command's
    option is read, file:line when a file's key is)."""
    out = inifile.words(v)
    if not out:
        raise ValueError(f"{what} needs at least one value")
    for w in out:
        if allowed and w not in allowed:
            raise ValueError(f"unknown {what} '{w}': expected one of {', '.join(allowed)}")
    return inifile.once_each(out, {"gateway": "gateways", "mode": "modes"}.get(what, what))


def _gateways(v, base):
    out = listed(v, None, "gateway")
    for g in out:
        if g not in GATEWAYS and not (g.startswith("cmd:") and drivers.lookup(g, base)):
            raise ValueError(f"unknown gateway '{g}': expected one of {', '.join(GATEWAYS)}, "
                             "or cmd:PATH")
    names = {}
    for g in out:
        other = names.setdefault(file_name(g), g)
        if other != g:
            raise ValueError(f"gateways {other} and {g} have one file name ({file_name(g)}): "
                             "rename one")
    return out


def _modes(v):
    out = listed(v, None, "mode")
    for m in out:
        gregw.check_mode(m)
    return out


def _set_name(sc, v):
    # The results directory's name ends with it.
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", v):
        raise ValueError(f"bad name '{v}': use letters, digits, '-' and '_' (at most 64)")
    sc.name = v


def _set_congestion(sc, v):
    if not re.fullmatch(r"[A-Za-z0-9_]{1,15}", v):
        raise ValueError(f"bad value '{v}' for congestion: expected an algorithm's name, e.g. "
                         f"cubic or bbr")
    sc.congestion = v


def _set_mtu(sc, v):
    mtus = inifile.ints(v, 0, 65535, "mtu")
    for m in mtus:
        if 0 < m < 1280:
            raise ValueError(f"bad value '{m}' for mtu: 0 (the topology's) or 1280 to 65535")
    sc.mtu = mtus


def share_setter(key, whose, name=None):
    """The setter of a budget key: one share of a core for every one of whose, or off; a
    ValueError names it as name (the key's option, say), else as the key."""
    def setter(sc, v):
        try:
            shares = budget.parse_shares(v, name or key)
        except budget.BudgetError as e:
            raise ValueError(str(e)) from None
        if shares and len(shares) > 1:
            raise ValueError(f"bad value '{v}' for {name or key}: one share for every {whose}")
        setattr(sc, key, shares[0] if shares else None)
    return setter


SETTERS = {
    "name": _set_name,
    "topology": lambda s, v: setattr(s, "topology", v),
    "gateways": lambda s, v, base="": setattr(s, "gateways", _gateways(v, base)),
    "modes": lambda s, v: setattr(s, "modes", _modes(v)),
    "workers": lambda s, v: setattr(s, "workers", inifile.ints(v, 1, 64, "workers")),
    "sessions": lambda s, v: setattr(s, "sessions", inifile.ints(v, 1, 10000, "sessions")),
    "mtu": _set_mtu,
    "pattern": lambda s, v: setattr(s, "pattern", listed(v, PATTERNS, "pattern")),
    "time": lambda s, v: setattr(s, "time", inifile.number(v, 1, 3600, "time")),
    "warmup": lambda s, v: setattr(s, "warmup", inifile.number(v, 0, 600, "warmup")),
    "repeats": lambda s, v: setattr(s, "repeats", inifile.ints(v, 1, 100, "repeats")[0]),
    "rr": lambda s, v: setattr(s, "rr", inifile.flag(v, "rr")),
    "congestion": _set_congestion,
    "wire_audit": lambda s, v: setattr(s, "wire_audit", inifile.flag(v, "wire_audit")),
    "verify": lambda s, v: setattr(s, "verify", inifile.flag(v, "verify")),
    "gateway_cpu": share_setter("gateway_cpu", "gateway thread"),
    "client_cpu": share_setter("client_cpu", "client"),
}


def parse(text, filename="scenario"):
    """Parses a scenario file's text. Raises ScenarioError naming file:line."""
    sc = Scenario(name=os.path.splitext(os.path.basename(filename))[0] or "scenario")
    # A cmd:PATH gateway's PATH is relative to the file.
    setters = dict(SETTERS, gateways=lambda s, v: SETTERS["gateways"](s, v,
                                                                       os.path.dirname(filename)))
    for n, section, key, value in inifile.entries(text, filename, ScenarioError, _section,
                                                  "[scenario]"):
        if section == "ndr":
            sc.ndr = sc.ndr or []
            if key is not None:
                sc.ndr.append((n, key, value))
        elif key is not None:
            sc.lines[key] = n
            inifile.apply(setters, sc, key, value, f"{filename}:{n}", ScenarioError,
                          f"unknown key '{key}'")
    return sc


def _section(name, n):
    if name not in ("scenario", "ndr"):
        raise ValueError(f"unknown section [{name}]: expected [scenario] or [ndr]")
    return name


def load(path):
    """The scenario file at path, a regular file of at most limits.SCENARIO_BYTES."""
    return parse(files.read_text(path, limits.SCENARIO_BYTES, ScenarioError, "scenario file"),
                 path)


def topology_path(topology):
    """The file of a topology: a built-in name's in topo/topologies/, else the path given."""
    return topology if "/" in topology or topology.endswith(".topo") else \
        os.path.join(TOPOLOGIES, f"{topology}.topo")


def topology_hosts(text):
    """The names of the [host NAME] sections of a topology file's text (tunbed-topo checks the
    rest when it builds it)."""
    return set(re.findall(r"^[ \t]*\[[ \t]*host[ \t]+([^\]\s]+)[ \t]*\]", text, re.M))


def topology_file(topology):
    """The path of a topology, checked to be a regular file of at most limits.SCENARIO_BYTES
    (tunbed-topo and the runner read it); ScenarioError if not."""
    path = topology_path(topology)
    files.read_text(path, limits.SCENARIO_BYTES, ScenarioError, "topology file")
    return path


def size(sc):
    """How many runs sc's matrix has (points, repeats), without making it."""
    n = 0
    for gw in sc.gateways:
        modes = len(sc.modes) * len(sc.workers) if DRIVERS[gw].has_modes else 1
        n += modes * len(sc.mtu) * len(sc.pattern) * len(sc.sessions)
    return n * sc.repeats, n


def points(sc):
    """The matrix of sc, gateway configuration by configuration, sessions innermost; a
    ScenarioError for one past limits.MATRIX_RUNS or with two points of one key."""
    runs, n = size(sc)
    if runs > limits.MATRIX_RUNS:
        raise ScenarioError(f"the matrix has {runs:,} runs ({n:,} points, {sc.repeats} "
                            f"repeats): at most {limits.MATRIX_RUNS:,}")
    out = []
    for gw in sc.gateways:
        modes = sc.modes if DRIVERS[gw].has_modes else ["-"]
        workers = sc.workers if DRIVERS[gw].has_modes else [0]
        for mode in modes:
            for w in workers:
                for mtu in sc.mtu:
                    for pat in sc.pattern:
                        for s in sc.sessions:
                            out.append(Point(gw, mode, w, mtu, pat, s))
    keys = {}
    for p in out:
        other = keys.setdefault(p.key(), p)
        if other != p:
            raise ScenarioError(f"{other.config()} and {p.config()} have one key, {p.key()}: "
                                "their records would be one file")
    return out
