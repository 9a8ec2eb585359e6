"""The gateway pair's routing (docs/failover.md): the service address on gwb1 and gwb2, FRR
(zebra, staticd, bfdd, bgpd) on core, gwb1 and gwb2 with the configuration below, and the
wait until core routes the service address to gwb1. Used by `tunbed failover` and by the
namespace bed of `tunbed ras` on a pair topology; stop() removes what start() made.
"""

import contextlib
import glob
import os
import shutil
import signal
import time

from . import frr, rundir
from .common import GREGW, ROOT, TRAFFIC, Failure, run

HOSTS = ("client", "gwa", "core", "gwb1", "gwb2", "server")
SERVICE = "198.18.6.1"
ASN_CORE, ASN_PAIR = 65000, 65010
# The addresses of ras-pair.topo: each gateway's own and its neighbour's on its link to core.
GWB = {"gwb1": ("198.18.4.2", "198.18.4.1", "t1"), "gwb2": ("198.18.5.2", "198.18.5.1", "t2")}
GWA, CLIENT_LAN, SERVER_LAN, SERVER = "198.18.0.1", "198.18.1.0/24", "198.18.3.0/24", "198.18.3.2"
READY_S = 20.0
# 100 ms with 5 missed: 3 (FRR's default multiplier) flapped on a shared 2-core box at load 7.
BFD = ("bfd\n profile fast\n  detect-multiplier 5\n  receive-interval 100\n"
       "  transmit-interval 100\n !\n!\n")


def frr_configs(host):
    """FRR's configuration of core, gwb1 or gwb2 (docs/failover.md explains each line)."""
    head = f"frr defaults datacenter\nhostname {host}\n"
    if host == "core":
        nbrs = "".join(f" neighbor {me} remote-as {ASN_PAIR}\n neighbor {me} bfd profile fast\n"
                       f" neighbor {me} timers connect 1\n" for me, _, _ in GWB.values())
        return {"zebra": head, "bfdd": head + BFD,
                "staticd": head + f"ip route {CLIENT_LAN} {SERVICE}\n",
                "bgpd": head + f"router bgp {ASN_CORE}\n bgp router-id 198.18.0.2\n{nbrs}!\n"}
    me, peer, _ = GWB[host]
    passive = host == "gwb2"
    bgp = (f"router bgp {ASN_PAIR}\n bgp router-id {me}\n"
           f" neighbor {peer} remote-as {ASN_CORE}\n neighbor {peer} bfd profile fast\n"
           f" neighbor {peer} timers connect 1\n address-family ipv4 unicast\n"
           f"  network {SERVICE}/32\n"
           + (f"  neighbor {peer} route-map passive out\n" if passive else "")
           + " exit-address-family\n!\n")
    if passive:
        bgp += f"route-map passive permit 10\n set as-path prepend {ASN_PAIR} {ASN_PAIR}\n!\n"
    # The gateway's routes are FRR's (staticd), as on a routed host: the kernel forgets a
    # route whose link went down, zebra puts it back when the link returns.
    static = "".join(f"ip route {net} {peer}\n" for net in ("198.18.0.0/24", SERVER_LAN))
    return {"zebra": head, "staticd": head + static, "bfdd": head + BFD, "bgpd": head + bgp}


READY_S = 20.0


FAILOVER_STATE = "failover"  # rundir's kinds: a failover run's pids, FRR's directories
FRR_STATE = "frr"
HEALTH = os.path.join(ROOT, "scripts", "tunbedlib", "health.py")


def failover_program(argv):
    """Whether a command line is one that a failover run starts (failover.Bed.spawn)."""
    return bool(argv) and (argv[0] in (GREGW, TRAFFIC) or argv[1:2] == [HEALTH])


def frr_program(argv):
    return bool(argv) and argv[0].startswith(frr.FRR_LIB + "/")


def namespaces(prefix):
    """(device, inode) of each network namespace of prefix, as /run/netns names them."""
    out = set()
    for path in glob.glob(os.path.join("/run/netns", f"{glob.escape(prefix)}-*")):
        with contextlib.suppress(OSError):
            st = os.stat(path)
            out.add((st.st_dev, st.st_ino))
    return out


def started_by(pid, program, nets):
    """Whether process pid is still what a run of the prefix started: its command line one
    of program's, in one of the prefix's namespaces. What a state file says the process was
    is not asked: the file is only where the PIDs were kept."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return False
    return program(argv) and (st.st_dev, st.st_ino) in nets


def pids_in(text):
    """The PIDs of a state file's lines (PID and a word for the reader), bad lines skipped."""
    pids = (rundir.pid_of(line.split()[0]) for line in (text or "").splitlines() if line.split())
    return [pid for pid in pids if pid is not None]


def down(prefix):
    """What a run killed before its cleanup left of prefix: the processes it recorded
    (`pids` in its failover directories: gregw, the health checks, the traffic) and the FRR
    daemons of its FRR directories (their pid files), then the directories. The directories
    are root's under /run/tunbed (rundir.py; one that is not is skipped), and a process is
    ended only while it is one of the programs such a run starts, in one of prefix's
    namespaces: a stale pid never ends another process. Returns how many it ended."""
    frr_uid = frr.owner()[0]
    failover_dirs = rundir.found(FAILOVER_STATE, prefix)
    frr_dirs = rundir.found(FRR_STATE, prefix, 0o711)
    pids = [(pid, failover_program) for d in failover_dirs
            for pid in pids_in(rundir.read(os.path.join(d, "pids")))]
    for d in frr_dirs:
        for sub in glob.glob(os.path.join(d, "frr-*")):
            if rundir.untrusted(sub, 0o022, (os.geteuid(), frr_uid)):
                continue
            for pidfile in glob.glob(os.path.join(sub, "*.pid")):
                pids += [(pid, frr_program) for pid in
                         pids_in(rundir.read(pidfile, (os.geteuid(), frr_uid)))[:1]]
    nets = namespaces(prefix)
    ended = []
    for pid, program in pids:
        if not started_by(pid, program, nets):
            continue
        try:
            os.kill(pid, signal.SIGCONT)  # a stopped gregw ends only once continued
            os.kill(pid, signal.SIGTERM)
            ended.append((pid, program))
        except OSError:
            pass
    deadline = time.monotonic() + 5
    for pid, program in ended:
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        if started_by(pid, program, nets):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    for d in failover_dirs + frr_dirs:
        shutil.rmtree(d, ignore_errors=True)
    return len(ended)


def is_pair(hosts):
    """Whether a topology with these host names is a gateway pair."""
    return all(h in hosts for h in HOSTS)


def wait(ready, what, timeout=READY_S):
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise Failure(f"not ready within {timeout:g} s: {what}")
        time.sleep(0.05)


class Routing:
    def __init__(self, prefix):
        self.prefix = prefix
        self.frr = {}
        # FRR's daemons run as frr: their directories sit in one they may pass through.
        self.rundir = rundir.make(FRR_STATE, prefix, 0o711)

    def ns(self, host):
        return f"{self.prefix}-{host}"

    def ip(self, host, *args, check=True):
        return run(["ip", "-n", self.ns(host), *args], check=check)

    def start(self):
        """The service addresses and FRR, up to BGP and BFD established with both gateways
        (gregw need not run yet: the announcement is FRR's)."""
        for h in GWB:
            self.ip(h, "addr", "add", f"{SERVICE}/32", "dev", "lo")
        for h in ("core", *GWB):
            self.frr[h] = frr.Frr(self.ns(h), h, self.rundir)
            self.frr[h].start(frr_configs(h))
        for h in GWB:
            wait(lambda: "via" in self.ip(h, "-4", "route", "show", "match", GWA),
                 f"{h}'s static route to gwa")
        peers = {a for a, _, _ in GWB.values()}
        wait(lambda: self.frr["core"].bfd_up() == peers,
             "BFD sessions of core with gwb1 and gwb2 up")
        wait(lambda: self.frr["core"].established() == peers,
             "BGP sessions of core with gwb1 and gwb2 established")

    def wait_active(self):
        wait(lambda: len(self.bgp_paths()) == 2,
             "both announcements of the service address at core")
        wait(lambda: self.active() == "gwb1", "core's route to the service address via gwb1")
        wait(lambda: "via" in self.ip("core", "-4", "route", "show", CLIENT_LAN),
             "core's route to the client's LAN via the service address")

    def bgp_paths(self):
        d = self.frr["core"].vtysh_json(f"show bgp ipv4 unicast {SERVICE}/32 json")
        return d.get("paths", [])

    def active(self):
        """The gateway core's kernel routes the service address to, or None."""
        out = self.ip("core", "-4", "route", "show", f"{SERVICE}/32", check=False)
        for h, (me, _, _) in GWB.items():
            if f"via {me} " in out:
                return h
        return None

    def stop(self):
        for f in reversed(list(self.frr.values())):
            f.stop()
        self.frr = {}
        shutil.rmtree(self.rundir, ignore_errors=True)
