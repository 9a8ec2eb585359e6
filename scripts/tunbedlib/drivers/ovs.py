"""Open vSwitch's userspace datapath (netdev) as GRE endpoint, key 7: scripts/drivers/ovs-gre.sh,
a driver of the contract (contract.py) at a fixed path; and with a GRE port a tunnel for tunbed
tunnels (OvsGreTunnels). IPv4 outer only."""

import re
import time

from ..common import OVS_DRIVER, Failure, have
from .base import GRE_HEADER
from .contract import CALL_GRACE_S, TIMED_OUT, Cmd, one_line


class OvsGre(Cmd):
    """Open vSwitch's userspace datapath as GRE endpoint (key 7), scripts/drivers/ovs-gre.sh
    kept to the contract."""
    name = "ovs-gre"
    path = OVS_DRIVER
    packages = ("openvswitch-switch",)
    transit_format = "gre"

    @classmethod
    def gre_options(cls, mode):
        return {"key": 7, "csum": False}  # scripts/drivers/ovs-gre.sh's key

    @classmethod
    def available(cls, hosts_mode=False):
        if not hosts_mode and not have("ovs-vswitchd"):
            return False, f"Open vSwitch is not installed (Debian: {cls.packages[0]})"
        return super().available(hosts_mode)

    @classmethod
    def overhead(cls, mode, ip_header):
        return ip_header + GRE_HEADER + 4  # the key


def ovs_tunnel_lines(tunnels, remote):
    """The --tunnels file of scripts/drivers/ovs-gre.sh for tunnels [(name, key, [prefix, ...],
    peer or None)]: a line a tunnel, NAME KEY REMOTE PREFIX..., the tunnel's peer its remote,
    else remote. Tunnel i (from 0) is then OpenFlow port i + 1, its rules' cookies 2(i + 1)
    into the tunnel and 2(i + 1) + 1 out of it."""
    return "".join(f"{name} {key} {peer or remote} {' '.join(prefixes)}\n"
                   for name, key, prefixes, peer in tunnels)


# ovs-ofctl dump-flows' line of a rule: its cookie and counts.
FLOW = re.compile(r"cookie=0x([0-9a-f]+),.*?\bn_packets=([0-9]+), n_bytes=([0-9]+),")


def flow_counters(text, names):
    """{tunnel name: counters} of the tunnels' rules in ovs-ofctl dump-flows' text, in gregw's
    names (tx: the rules into the tunnel, from the tunnel device; rx: out of it), names the
    tunnels in their order (ovs_tunnel_lines'); the rules OVS counts no drops of. A line of no
    tunnel's cookie is left out."""
    out = {}
    for m in FLOW.finditer(text):
        cookie, packets, nbytes = int(m.group(1), 16), int(m.group(2)), int(m.group(3))
        i = (cookie >> 1) - 1
        if not 0 <= i < len(names):
            continue
        c = out.setdefault(names[i], {"tx_packets": 0, "tx_bytes": 0, "rx_packets": 0,
                                      "rx_bytes": 0, "drops": {}})
        way = "rx" if cookie & 1 else "tx"
        c[f"{way}_packets"] += packets
        c[f"{way}_bytes"] += nbytes
    return out


def port_drops(text):
    """The receive drops of the ports other than LOCAL in ovs-ofctl dump-ports' text."""
    total = 0
    for m in re.finditer(r"port +([^:]+): rx pkts=[0-9?]+, bytes=[0-9?]+, drop=([0-9]+)", text):
        if m.group(1).strip() != "LOCAL":
            total += int(m.group(2))
    return total


def up_error(stderr):
    """Why ovs-gre.sh's up failed, from its stderr: the line before its "up failed in ...;
    undoing" (what it died of), with the last of the ovs-vswitchd log's warnings it quotes
    after it; None when it did not say."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    at = next((i for i, ln in enumerate(lines) if " up failed in " in ln), None)
    if at is None:
        return None
    if at == 0:
        return one_line(lines[0])
    logged = [ln for ln in lines[at + 1:] if re.search(r"\|(WARN|ERR|EMER)\|", ln)]
    return one_line(lines[at - 1] + (f" (ovs-vswitchd: {logged[-1]})" if logged else ""))


def socket_drops(text):
    """The drops of the sockets in ss -m's text (skmem's d field), summed."""
    return sum(int(d) for d in re.findall(r"skmem:\([^)]*?\bd([0-9]+)\)", text))


class OvsGreTunnels(OvsGre):
    """Open vSwitch's userspace GRE with a port a tunnel, for tunbed tunnels (docs/tunnels.md):
    scripts/drivers/ovs-gre.sh up as for ovs-gre, with its --tunnels file (TUNBED_OVS_TUNNELS)
    in place of key 7: on each gateway one bridge with the tunnel device (its internal port,
    gre0) and a GRE port a tunnel (its key, its peer the remote), OpenFlow rules that send each
    tunnel's prefixes from the device to its port and what its port receives back, the prefixes
    routed into the device; ports added 300 to an OVSDB transaction, rules as one bundle,
    routes by one ip -batch. Setup time: the seconds of a side's up, the daemons' start
    included; memory: ovs-vswitchd's resident set. Counters: the packets and bytes of each
    tunnel's rules."""

    def __init__(self, bed, point, tunnels, timeout):
        """tunnels: {role: [(name, key, [prefix, ...], peer)]}; timeout: seconds a side's up
        may take."""
        super().__init__(bed, point)
        self.tunnels_of, self.timeout = tunnels, timeout
        self.ready_s = {}

    def environment(self, role, *side):
        env = super().environment(role, *side)
        env["TUNBED_OVS_TUNNELS"] = f"{self.workdir(role)}/tunnels"
        return env

    def setup(self):
        self.env = {side[0]: self.environment(*side) for side in self.sides()}
        for role, _, remote, *_ in self.sides():
            h, n = self.host(role), len(self.tunnels_of[role])
            self.write(role, self.env[role]["TUNBED_OVS_TUNNELS"],
                       ovs_tunnel_lines(self.tunnels_of[role], remote))
            self.up.append(role)  # a half-done up is undone by down, too
            started = time.monotonic()
            p = h.call(self.argv(role, "up", self.timeout), timeout=self.timeout + CALL_GRACE_S)
            self.ready_s[role] = time.monotonic() - started
            if p.returncode in TIMED_OUT and self.ready_s[role] >= self.timeout:
                raise Failure(f"ovs-gre on {h.label()}: the setup of {n} tunnels did not finish "
                              f"within --setup-limit {self.timeout:g} s (stopped; it said "
                              f"last: {up_error(p.stderr) or self.said_last(p)})")
            if p.returncode:
                raise Failure(f"ovs-gre on {h.label()}: the setup of {n} tunnels failed (exit "
                              f"{p.returncode}): {up_error(p.stderr) or self.said_last(p)}")
            self.said[role] = p.stdout.strip()
        self.collect_pids()
        self.wait_first()

    def wait_first(self):
        """Until a ping from the client's site of the first tunnel reaches the server's through
        it: each OVS has then resolved the other's MAC address (it drops what it sends before),
        so that no session's first packet is lost to it."""
        src = self.tunnels_of["gwb"][0][2][0].split("/")[0]
        dst = self.tunnels_of["gwa"][0][2][0].split("/")[0]
        c = self.host("client")
        self.wait("client", f"no ping from {src} to {dst} through tunnel "
                  f"{self.tunnels_of['gwa'][0][0]}",
                  lambda: c.call(["ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src,
                                  dst]).returncode == 0)

    def setup_record(self):
        mem = self.memory()
        return {role: {"ready_s": s} | mem.get(role, {}) for role, s in self.ready_s.items()}

    def memory(self):
        """{role: {rss_kib, rss_peak_kib}} of each side's ovs-vswitchd (VmRSS, VmHWM)."""
        out = {}
        for role, pid, label in self.procs:
            if not label.startswith("ovs-vswitchd"):
                continue
            text = self.host(role).run(["cat", f"/proc/{pid}/status"], check=False)
            fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            out[role] = {name: int(fields[k].split()[0]) for k, name in
                         (("VmRSS", "rss_kib"), ("VmHWM", "rss_peak_kib"))
                         if k in fields and fields[k].split()[0].isdigit()}
        return out

    def ctl(self, role, *args):
        """ovs-gre.sh ctl on the role's OVS: its output ('' when it fails)."""
        h = self.host(role)
        return h.run([self.path, "ctl", "--netns", h.ns, "--", *args], check=False)

    def tunnels(self, role):
        """Every tunnel's counters on the role's side: {name: counters}, from its rules, once
        the datapath's flows have given their counts to them (revalidator/purge)."""
        self.ctl(role, "appctl", "revalidator/purge")
        return flow_counters(self.ctl(role, "ofctl", "dump-flows", "gre0"),
                             [t[0] for t in self.tunnels_of[role]])

    def unattributed(self, role, link_drops):
        """The role's transit device's drops, those of the OVS port that reads it, and those of
        the packet sockets of the role's namespace (ovs-vswitchd's on the transit device: what
        arrived while its receive buffer was full, which OVS counts nowhere)."""
        return (link_drops + port_drops(self.ctl(role, "ofctl", "dump-ports", "br-underlay"))
                + socket_drops(self.host(role).run(["ss", "-0", "-a", "-n", "-m"], check=False)))
