"""What `tunbed datasheet` (datasheet.py) plans, before anything runs: the time budget
(`--budget`) and the settings chosen to fit it, and which part applies to which gateway, with
the reason where one does not. Pure: tested without root (tests/python/test_datasheet.py).

The parts: throughput at 1, 8 and 64 sessions (the matrix's point, matrix_point.py), DSCP and
ECN across the tunnel (datasheet_tos.py; gateways whose transit tunbed-wire reads or whose
tunnel crosses on one UDP port), NDR and
PDR at 64- and 1518-byte frames and the simple IMIX (the ndr kind's search), the failover of a pair
(failover.py; gregw alone can run as one) and interoperability (the guest tests', never run
by a datasheet). The DSCP/ECN part's last step, marks and drops under load, takes the seconds
of the plan (Tier.load_s), and the least plan leaves it out."""

import dataclasses
import re

from .. import search
from ..common import ScenarioError
from ..drivers import DRIVERS
from . import datasheet_interop
from .ndr_plan import DIRECT, IMIX, size_words

SESSIONS = (1, 8, 64)
SIZES = (64, 1518, IMIX)
PARTS = ("throughput", "tos", "ndr", "failover", "interop")
# The parts meta.json must have for each gateway: a datasheet written before the DSCP/ECN part
# (tos) has none of it, and its page says so.
NEEDED_PARTS = ("throughput", "ndr", "failover", "interop")
BUDGET_MAX_S = 24 * 3600

# What a part costs beyond its measured seconds (an estimate, for the plan and never a
# verdict): a throughput run's topology, gateway, servers, idle latency and teardown; a
# search's topology, gateway and server, and each trial's client start; a failover repeat's
# pair topology, FRR's BGP and BFD up, three gregw and their health checks.
RUN_SETUP_S = 3.5
SEARCH_SETUP_S = 5.0
TRIAL_SETUP_S = 0.5
FIRST_PHASE_TRIALS = 8     # a search's trials in its first phase: down from the ceiling
LATER_PHASE_TRIALS = 4     # in each later one: the inherited bounds again, then narrowing
LATENCY_TRIALS = 3         # at 10, 50 and 90% of PDR, at the final duration
PAIR_SETUP_S = 8.0
# The DSCP/ECN part: the topology and gateway, three UDP sessions of 1 s with their client's
# start, the wire audit's start and stop, the crafted probes' receiver (datasheet_tos.py).
TOS_S = 10.0
# Its load beyond its seconds: the sessions' connections and end, nstat and the gateway's
# counters read before and after.
LOAD_SETUP_S = 1.5
# The part's words of a load the plan leaves out (its record's load_why).
LOAD_LEFT_OUT = "not run: left out to fit --budget (the {} plan)"

# Until prepare() has read the guest tests' records for the build (datasheet_interop.py).
INTEROP_NOT_RUN = ("the guest tests (netns/guest_gre, guest_gre6, guest_gregw; "
                   "docs/testing.md) are not part of a datasheet, and no result of theirs for "
                   "this build is recorded")


@dataclasses.dataclass(frozen=True)
class Tier:
    """One way to spend a budget: the name, the throughput runs' repeats, measured and warm-up
    seconds, the searches' final and first trial seconds, goal width and frame sizes, the
    failover's faults, repeats and its fail-at, failback-after and tail seconds, and the
    seconds of the DSCP/ECN part's load (0: left out)."""
    name: str
    repeats: int
    time: float
    warmup: float
    ndr_time: float
    ndr_initial: float
    width: float
    sizes: tuple
    faults: tuple
    failover_repeats: int
    timeline: tuple
    load_s: float = 0

    def words(self):
        return (f"the {self.name} plan: throughput {self.repeats} repeat"
                f"{'s' if self.repeats > 1 else ''} of {self.time:g} s after {self.warmup:g} s "
                f"of warm-up at {', '.join(map(str, SESSIONS))} sessions; NDR and PDR at "
                f"{sizes_words(self.sizes)}, final trials "
                f"{self.ndr_time:g} s (first {self.ndr_initial:g} s), goal width "
                f"{self.width * 100:g}%; failover: {', '.join(self.faults)}, "
                f"{self.failover_repeats} repeat{'s' if self.failover_repeats > 1 else ''}, "
                f"fault at {self.timeline[0]:g} s, repaired {self.timeline[1]:g} s later, "
                f"{self.timeline[2]:g} s after; DSCP/ECN under load: " +
                (f"{SESSIONS[-1]} ECN sessions (CUBIC) for {self.load_s:g} s" if self.load_s
                 else "left out"))


def sizes_words(sizes):
    """'64-byte frames', '64-byte, 1518-byte and IMIX frames'."""
    words = [size_words(s).removesuffix(" frames") for s in sizes]
    return (", ".join(words[:-1]) + " and " if len(words) > 1 else "") + words[-1] + " frames"


# The richest first; the last is the least a datasheet can be (one point of each part): 64-byte
# frames alone and no DSCP/ECN load, so that route and gregw fit two minutes
# (netns/runner_datasheet).
TIERS = (
    Tier("full", 3, 10, 2, 5, 1, 0.02, SIZES, ("kill", "link"), 1, (3, 4, 3), 5),
    Tier("standard", 2, 5, 1, 3, 1, 0.05, SIZES, ("kill",), 1, (3, 4, 3), 4),
    Tier("short", 1, 3, 1, 2, 0.5, 0.1, SIZES, ("kill",), 1, (2, 2, 2), 3),
    Tier("brief", 1, 2, 0.5, 1, 0.5, 0.2, SIZES, ("kill",), 1, (1, 2, 1), 3),
    Tier("least", 1, 1, 0, 1, 0.5, 0.25, SIZES[:1], ("kill",), 1, (1, 1, 1)),
)


def parse_budget(text):
    """Seconds of a budget: '20m', '90s', '1h30m', '600' (seconds); ScenarioError otherwise."""
    t = (text or "").strip().lower()
    m = re.fullmatch(r"(?:([0-9]{1,3})h)?(?:([0-9]{1,4})m)?(?:([0-9]{1,6})s?)?", t)
    if not t or not m:
        raise ScenarioError(f"--budget: bad value '{text}': expected a duration such as 20m, "
                            "1h30m or 90s")
    s = int(m[1] or 0) * 3600 + int(m[2] or 0) * 60 + int(m[3] or 0)
    if not 1 <= s <= BUDGET_MAX_S:
        raise ScenarioError(f"--budget: '{text}' is not 1 s to 24 h")
    return s


def search_s(tier):
    """A search's seconds, estimated from its phases (search.phases)."""
    ph = search.phases(search.Params(min_rate=1, max_rate=2, final_s=tier.ndr_time,
                                     initial_s=tier.ndr_initial, width=tier.width))
    trials = [(FIRST_PHASE_TRIALS if i == 0 else LATER_PHASE_TRIALS, d)
              for i, (d, _) in enumerate(ph)] + [(LATENCY_TRIALS, tier.ndr_time)]
    return SEARCH_SETUP_S + sum(n * (d + TRIAL_SETUP_S) for n, d in trials)


def run_s(tier):
    """A throughput run's seconds, estimated."""
    return RUN_SETUP_S + tier.time + tier.warmup


def tos_s(tier):
    """The DSCP/ECN part's seconds for a gateway, estimated: its probes and its load."""
    return TOS_S + (tier.load_s + LOAD_SETUP_S if tier.load_s else 0)


def pair_s(tier):
    """A failover repeat's seconds, estimated."""
    return PAIR_SETUP_S + sum(tier.timeline)


def estimate(tier, parts):
    """{part: seconds} of a tier for the applicable parts (parts: applicability())."""
    gws = list(parts)
    runs = tier.repeats * len(SESSIONS) * sum(parts[g]["throughput"]["status"] == "run"
                                              for g in gws)
    searches = [s for g in gws for s in tier.sizes if ndr_size(parts[g], s) is None]
    # The generator alone once at each size some gateway is searched at.
    searches += list(dict.fromkeys(searches))
    pairs = tier.failover_repeats * len(tier.faults) * sum(
        parts[g]["failover"]["status"] == "run" for g in gws)
    tos = sum(parts[g].get("tos", {}).get("status") == "run" for g in gws)
    return {"throughput": runs * run_s(tier), "tos": tos * tos_s(tier),
            "ndr": len(searches) * search_s(tier), "failover": pairs * pair_s(tier)}


def ndr_size(part, size):
    """Why a gateway is not searched at size ('not applicable: ...', 'not run: ...'), or
    None."""
    ndr = part["ndr"]
    if ndr["status"] != "run":
        return f"{ndr['status']}: {ndr['reason']}"
    return (ndr.get("sizes") or {}).get(str(size))


def leave_out(parts, sizes, tier):
    """The frame sizes of SIZES that tier leaves out, said as such in each gateway's part."""
    for p in parts.values():
        ndr = p["ndr"]
        for size in SIZES:
            if ndr["status"] == "run" and size not in sizes and ndr["sizes"][str(size)] is None:
                ndr["sizes"][str(size)] = f"not run: left out to fit --budget (the {tier} plan)"


def clock(seconds):
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def choose(budget_s, parts):
    """(tier, {part: seconds}): the richest tier that fits budget_s; a ScenarioError in one
    line when not even the least does."""
    for tier in TIERS:
        est = estimate(tier, parts)
        if sum(est.values()) <= budget_s:
            return tier, est
    est = estimate(TIERS[-1], parts)
    raise ScenarioError(
        f"--budget {clock(budget_s)} is too small for one point of each part: the least is "
        f"~{clock(sum(est.values()))} for {', '.join(parts)} (" +
        ", ".join(f"{k} ~{clock(v)}" for k, v in est.items() if v) + ")")


NA = "not applicable"


def not_applicable(reason):
    return {"status": NA, "reason": reason}


RUN = {"status": "run", "reason": None}


def not_run(reason):
    return {"status": "not run", "reason": reason}


# On the hosts of an inventory (--hosts): the parts that do not run there, and why.
TOS_ON_HOSTS = ("not on hosts yet: its decapsulation probes are crafted by this machine's "
                "tosprobe.py run in gwa's namespace; on a host it would take the package's "
                "copy run there, and an IPv4 inventory (run the datasheet in namespaces for it)")
FAILOVER_ON_HOSTS = ("not on hosts: the pair is a topology of namespaces of this machine "
                     "(ras-pair.topo: gwb1 and gwb2 announcing the service address to a core "
                     "router over FRR's BGP and BFD); on hosts it would take a third gateway "
                     "host and that router")


def applicability(gateways, frames, failover_why=None, hosts=False):
    """{gateway: {part: {status, reason}}}: which part runs for which gateway and why not.
    frames: {gateway: {size: the frame's reason (ndr_plan.frame's ValueError) or None}};
    failover_why: why no gateway can be paired on this machine (FRR missing), or None;
    hosts: on the hosts of an inventory, where the DSCP/ECN part and the failover do not
    run (a gateway they do not apply to anyway keeps its own reason)."""
    failover_why = FAILOVER_ON_HOSTS if hosts else failover_why
    out = {}
    for g in gateways:
        d = DRIVERS[g]
        sizes = frames.get(g) or {}
        ndr = {"status": "run", "reason": None,
               "sizes": {str(s): f"{NA}: {sizes[s]}" if sizes.get(s) else None for s in SIZES}}
        if all(sizes.get(s) for s in SIZES):
            ndr = not_applicable("; ".join(dict.fromkeys(sizes[s] for s in SIZES)))
        if not d.can_pair:
            fo = not_applicable(f"{g} cannot run as an active and passive pair: tunbed's pair "
                                "(docs/failover.md) starts gregw on gwa, gwb1 and gwb2 with its "
                                "health check; another gateway needs a driver that starts it "
                                "hot on both gwb and a health check of it")
        elif failover_why:
            fo = not_applicable(failover_why)
        else:
            fo = dict(RUN)
        tos = tos_applies(g, d)
        if hosts and tos["status"] == "run":
            tos = not_applicable(TOS_ON_HOSTS)
        out[g] = {"throughput": dict(RUN), "tos": tos, "ndr": ndr, "failover": fo,
                  "interop": ({"status": "not run", "reason": INTEROP_NOT_RUN} if g == "gregw"
                              else datasheet_interop.status(g, None, None))}
    return out


def tos_applies(g, d):
    """Whether the DSCP/ECN part runs for gateway g (its driver d), and why not: it reads the
    transit with tunbed-wire, which decodes GRE and GRE-in-UDP, or captures a tunnel's packets
    on its UDP port (the driver's tos_method)."""
    if not d.tunnel:
        return not_applicable(f"{g} has no tunnel: the packet crosses with its own header")
    if d.tos_method("-") or d.transit_format == "gre":
        return dict(RUN)
    if d.transit_format is None:
        return not_applicable(f"{g}'s transit is its own: tunbed-wire reads GRE and "
                              "GRE-in-UDP only, and the capture needs the tunnel's UDP port")
    return not_applicable(f"{g}'s transit is {d.transit_format}, which tunbed-wire does not "
                          "decode, on no UDP port tunbed knows to capture")


def skipped(parts, gateway, why):
    """Every part of a gateway this machine cannot run, not applicable with why."""
    for k in PARTS:
        if k != "interop":
            parts[gateway][k] = not_applicable(f"{gateway} skipped: {why}")


def gateways_of(text, lookup):
    """The gateways of --gateways, each once, in order; lookup(name) is the driver or None.
    ScenarioError for an unknown one, a repeated one, `direct`, or none."""
    gws = [g.strip() for g in (text or "").split(",") if g.strip()]
    if not gws:
        raise ScenarioError("--gateways: expected a list such as gregw,vxlan")
    for g in gws:
        if g == DIRECT or not lookup(g):
            known = ", ".join(n for n in DRIVERS if not n.startswith("cmd:"))
            raise ScenarioError(f"unknown gateway '{g}': expected some of {known}, or cmd:PATH")
    if len(set(gws)) != len(gws):
        raise ScenarioError(f"--gateways: '{text}' names a gateway twice")
    return gws
