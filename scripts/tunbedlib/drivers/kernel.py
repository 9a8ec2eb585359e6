"""The kernel's own gateways: plain forwarding (route, the upper bound), VXLAN (also with
frames of the MTU on the wire: vxlan-frames, with the inner DSCP copied outside:
vxlan-inherit, and with a device a tunnel for tunbed tunnels: VxlanTunnels) and GRE; and
external, a gateway tunbed does not start. None has processes of its own: their CPU is the
kernel's, and none can be given a CPU budget."""

import ipaddress
import json
import subprocess
import time

from ..common import Failure
from .base import GRE_HEADER, UDP_HEADER, Driver

# VxlanTunnels: the device group of the tunnels' devices, which one request brings up (`ip
# link set group`) and one deletes (`ip link del group`, the kernel's batched unregister);
# 34 after issue 34, and no other device of the bed has it.
TUNNELS_GROUP = 34
# The next hops of the tunnels' routes: the far side's tunnel address (the bed's 198.19.0.x),
# fe80::1 and fe80::2 for IPv6, each a permanent neighbour entry on every device with the far
# device's MAC address, so that no ARP or neighbour discovery crosses a tunnel.
NEXTHOP6 = {"gwa": "fe80::1", "gwb": "fe80::2"}
# What a probe of the setup time creates, in a namespace of its own (VxlanTunnels.probe_s):
# enough devices that the fixed cost of the namespace and of ip is small beside them.
PROBE_TUNNELS = 200
# A device made while IPv6 forwarding is the namespace's default joins the all-routers groups
# and reports them (MLD) as it comes up: a packet on a tunnel whose far device may not exist
# yet, lost uncounted. IPv6 forwards by the namespace's `all` setting, not the device's, so the
# tunnels' devices are made with the default off (and it is put back at once).
IPV6_DEFAULT_FORWARDING = "net.ipv6.conf.default.forwarding"
# /proc/meminfo's lines of the kernel's memory that a device, its neighbours and routes take:
# slab caches (net_device, kernfs nodes, fib entries) and per-CPU counters.
KERNEL_MEMORY = ("Slab", "Percpu")


class Kernel(Driver):
    """A gateway of the kernel's own: its version is the gateways' kernel's."""

    def info(self):
        return {"version": "Linux " + self.host("gwa").run(["uname", "-r"]).strip(),
                "cipher": "none"}


class Route(Kernel):
    """Plain kernel forwarding: the upper bound, no tunnel. In namespaces over the topology's
    routes; on hosts each gateway routes the far LAN via the other's transit address."""
    name = "route"
    tunnel = False

    @classmethod
    def overhead(cls, mode, ip_header):
        return 0

    def setup(self):
        for role, local, remote, addr, _, nets in self.sides():
            h = self.host(role)
            for net in nets:
                have_routes = json.loads(h.run(["ip", "-j", "route", "show", "to", "exact",
                                                net]) or "[]")
                if any(r.get("gateway") == remote for r in have_routes):
                    continue
                h.run(["ip", "route", "add", net, "via", remote])
                h.undo(["ip", "route", "del", net, "via", remote])


class External(Driver):
    """A gateway tunbed does not start (a Windows RAS gateway, an appliance, one set up by
    hand): nothing is done on the gateways; traffic goes between client and server over the
    hosts' own routes, and the gateways' CPU is sampled where they are reachable Linux
    hosts."""
    name = "external"
    tunnel = False
    needs_gateways = False


class Vxlan(Kernel):
    """The kernel's VXLAN (RFC 7348) between gwa and gwb: the kernel tunnel to beat."""
    name = "vxlan"
    transit_format = "VXLAN"
    port = 4789  # IANA's
    # What `ip link add ... type vxlan` takes beyond the tunnel's ends: none, the kernel's
    # defaults (tos 0: an outer DSCP of its own, 0).
    options = ()

    @classmethod
    def transit_port(cls):
        return cls.port

    @classmethod
    def overhead(cls, mode, ip_header):
        return ip_header + UDP_HEADER + 8 + 14  # VXLAN's header, the inner Ethernet header

    def setup(self):
        for role, local, remote, addr, peer, nets in self.sides():
            h = self.host(role)
            x = lambda *c: h.run(["ip", *c])
            x("link", "add", "vx0", "type", "vxlan", "id", "42", "local", local, "remote", remote,
              "dstport", str(self.port), "dev", self.bed.transit_iface(role), *self.options)
            h.undo(["ip", "link", "del", "vx0"])
            x("addr", "add", addr, "dev", "vx0")
            x("link", "set", "vx0", "up")
            for net in nets:
                x("route", "replace", net, "via", peer.split("/")[0], "dev", "vx0")


class VxlanFrames(Vxlan):
    """The kernel's VXLAN with frames of the MTU on the wire: both transit devices without
    tunnel segmentation, as a NIC without tunnel offloads (the kernel cuts each superpacket
    before the device). The baseline to compare gregw's +frames with, like with like."""
    name = "vxlan-frames"

    def setup(self):
        self.transit_frames()
        super().setup()


class VxlanInherit(Vxlan):
    """The kernel's VXLAN as vxlan, with `tos inherit`: the outer DSCP copies the inner one
    (RFC 2983's uniform model, as gregw's default --tos inherit does), the ECN field as the
    kernel encapsulates it whatever its tos. The fair peer of gregw where the DS field
    matters (the datasheet's DSCP/ECN part); vxlan, the reference, stays at the defaults."""
    name = "vxlan-inherit"
    options = ("tos", "inherit")


class KernelGre(Kernel):
    """The kernel's own GRE (ip_gre), where the kernel has it."""
    name = "gre"
    transit_format = "gre"

    @classmethod
    def gre_options(cls, mode):
        return {"key": None, "csum": False}

    @classmethod
    def overhead(cls, mode, ip_header):
        return ip_header + GRE_HEADER

    @classmethod
    def available(cls, hosts_mode=False):
        if hosts_mode:
            return True, ""  # the hosts' kernels are checked when the tunnel goes up
        p = subprocess.run(["unshare", "-n", "ip", "link", "add", "g", "type", "gre", "local",
                            "198.18.0.1", "remote", "198.18.0.2"], capture_output=True, text=True)
        if p.returncode:
            return False, ("this kernel has no GRE module (ip_gre): "
                           + (p.stderr.strip().splitlines() or ["?"])[-1])
        return True, ""

    def setup(self):
        for role, local, remote, addr, peer, nets in self.sides():
            h = self.host(role)
            x = lambda *c: h.run(["ip", *c])
            kind = "gre" if ":" not in local else "ip6gre"
            x("link", "add", "gre1", "type", kind, "local", local, "remote", remote)
            h.undo(["ip", "link", "del", "gre1"])
            x("addr", "add", addr, "dev", "gre1")
            x("link", "set", "gre1", "up")
            for net in nets:
                x("route", "replace", net, "dev", "gre1")


def tunnel_device(name):
    """The VXLAN device of the tunnel NAME (t00042 -> vxt00042; at most IFNAMSIZ - 1)."""
    return f"vx{name}"


def tunnel_mac(role, vni):
    """The MAC address of the role's device of the tunnel with VNI vni: locally administered
    (02:), the side (1 gwa, 2 gwb) and 16 bits of the VNI (tunnels.sh's keys are 1 to
    16,384)."""
    return f"02:34:00:{1 if role == 'gwa' else 2:02x}:{vni >> 8 & 0xff:02x}:{vni & 0xff:02x}"


def vxlan_batch(tunnels, role, local, remote, transit, nexthop4, port):
    """The `ip -batch` text that sets up tunnels on the role's gateway: a VXLAN device a tunnel
    (VNI its key, to remote from local over the transit device, no learning, no IPv6 address
    of its own), all of them up in one request, then on each a permanent neighbour for the far
    side's next hops (nexthop4, the far side's NEXTHOP6) with the far device's MAC address, and
    the tunnel's prefixes routed via them. tunnels: [(name, vni, [prefix, ...])]."""
    far = "gwb" if role == "gwa" else "gwa"
    lines = []
    for name, vni, _ in tunnels:
        # No IPv6 link-local address: its duplicate detection and router solicitations would
        # be packets on tunnels without sessions (the kernel takes no addrgenmode at creation).
        lines += [f"link add {tunnel_device(name)} group {TUNNELS_GROUP} address "
                  f"{tunnel_mac(role, vni)} type vxlan id {vni} local {local} remote {remote} "
                  f"dstport {port} dev {transit} nolearning",
                  f"link set dev {tunnel_device(name)} addrgenmode none"]
    lines.append(f"link set group {TUNNELS_GROUP} up")
    for name, vni, prefixes in tunnels:
        dev, mac = tunnel_device(name), tunnel_mac(far, vni)
        lines += [f"neigh add {nexthop4} lladdr {mac} dev {dev} nud permanent",
                  f"neigh add {NEXTHOP6[far]} lladdr {mac} dev {dev} nud permanent"]
        for p in prefixes:
            if ipaddress.ip_network(p, strict=False).version == 4:
                lines.append(f"route add {p} via {nexthop4} dev {dev} onlink")
            else:
                lines.append(f"route add {p} via {NEXTHOP6[far]} dev {dev}")
    return "\n".join(lines) + "\n"


def whole(v):
    """A counter of ip's JSON: a whole number at least 0, else 0 (what ip prints crosses a
    boundary too)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def tunnel_counters(links):
    """{tunnel name: counters} of `ip -s -j link show`'s list of the tunnels' devices, in
    gregw's names (tx: into the tunnel, rx: out of it) with the device's drops and errors."""
    out = {}
    for link in links if isinstance(links, list) else []:
        name = link.get("ifname") if isinstance(link, dict) else None
        if not isinstance(name, str) or not name.startswith("vx"):
            continue
        st = link.get("stats64") if isinstance(link.get("stats64"), dict) else {}
        rx = st.get("rx") if isinstance(st.get("rx"), dict) else {}
        tx = st.get("tx") if isinstance(st.get("tx"), dict) else {}
        out[name[len("vx"):]] = {
            "tx_packets": whole(tx.get("packets")), "tx_bytes": whole(tx.get("bytes")),
            "rx_packets": whole(rx.get("packets")), "rx_bytes": whole(rx.get("bytes")),
            "drops": {"rx_dropped": whole(rx.get("dropped")),
                      "tx_dropped": whole(tx.get("dropped")),
                      "rx_errors": whole(rx.get("errors")),
                      "tx_errors": whole(tx.get("errors"))}}
    return out


def kernel_kib(meminfo):
    """The kernel memory KERNEL_MEMORY names in /proc/meminfo's text, in KiB, or None."""
    fields = dict(line.split(":", 1) for line in meminfo.splitlines() if ":" in line)
    try:
        return sum(int(fields[k].split()[0]) for k in KERNEL_MEMORY)
    except (KeyError, ValueError, IndexError):
        return None


class VxlanTunnels(Vxlan):
    """The kernel's VXLAN with a device a tunnel, for tunbed tunnels (docs/tunnels.md): on gwa
    and gwb, tunnel NAME with key K of topo/tunnels.sh's files is the device vxNAME with VNI K,
    its prefixes routed into it (vxlan_batch), all of a side in one `ip -batch`. Setup time:
    the seconds that batch took on each side (its devices up, neighbours and routes in: ready,
    nothing to learn); memory: the growth of the machine's Slab and Percpu over it (the whole
    kernel's, other work included). Per-tunnel counters: each device's statistics."""

    def __init__(self, bed, point, tunnels, timeout):
        """tunnels: {role: [(name, vni, [prefix, ...])]}; timeout: seconds a side's batch may
        take."""
        super().__init__(bed, point)
        self.tunnels_of, self.timeout = tunnels, timeout
        self.ready_s, self.kernel = {}, {}

    def setup(self):
        for role, local, remote, _, peer, _ in self.sides():
            h = self.host(role)
            text = vxlan_batch(self.tunnels_of[role], role, local, remote,
                               self.bed.transit_iface(role), peer.split("/")[0], self.port)
            h.undo(["ip", "link", "del", "group", str(TUNNELS_GROUP)])
            was = h.run(["sysctl", "-n", IPV6_DEFAULT_FORWARDING]).strip()
            h.undo(["sysctl", "-qw", f"{IPV6_DEFAULT_FORWARDING}={was}"])
            h.run(["sysctl", "-qw", f"{IPV6_DEFAULT_FORWARDING}=0"])
            before = kernel_kib(h.run(["cat", "/proc/meminfo"]))
            started = time.monotonic()
            p = h.call(["ip", "-batch", "-"], timeout=self.timeout, input=text)
            self.ready_s[role] = time.monotonic() - started
            h.run(["sysctl", "-qw", f"{IPV6_DEFAULT_FORWARDING}={was}"])
            if p.returncode:
                err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])
                raise Failure(f"vxlan on {h.label()}: ip -batch of {len(self.tunnels_of[role])} "
                              f"tunnels: {err[0]}")
            after = kernel_kib(h.run(["cat", "/proc/meminfo"]))
            self.kernel[role] = after - before if None not in (before, after) else None

    def setup_record(self):
        """{role: {ready_s, kernel_kib}} of the setup."""
        return {role: {"ready_s": s, "kernel_kib": self.kernel.get(role)}
                for role, s in self.ready_s.items()}

    def memory(self):
        """No process of its own: nothing beside the kernel's, measured at setup."""
        return {}

    def tunnels(self, role):
        """Every tunnel's counters on the role's side: {name: counters}."""
        h = self.host(role)
        return tunnel_counters(json.loads(h.run(["ip", "-s", "-j", "link", "show", "group",
                                                 str(TUNNELS_GROUP)]) or "[]"))

    def unattributed(self, role, link_drops):
        """What the role's side lost before a packet had its tunnel: its transit device's
        drops (a VXLAN packet of no VNI here is dropped uncounted)."""
        return link_drops

    @classmethod
    def probe_s(cls, transit_mtu=1500):
        """Seconds a tunnel took to set up on one side here: PROBE_TUNNELS tunnels made as
        setup() makes them, in a namespace of its own (unshare) over a veth transit device,
        which goes with it; None when the probe fails."""
        tunnels = [(f"t{i:05d}", i + 1, [f"198.18.{128 + i // 256}.{i % 256}/32",
                                         f"2001:2:0:{0x8000 + i:x}::/64"])
                   for i in range(PROBE_TUNNELS)]
        text = vxlan_batch(tunnels, "gwa", "198.18.0.1", "198.18.0.2", "tr0", "198.19.0.2",
                           cls.port)
        script = ('ip link add tr0 mtu "$0" type veth peer name tr1 && ip link set tr0 up && '
                  'ip addr add 198.18.0.1/24 dev tr0 && exec ip -batch -')
        started = time.monotonic()
        p = subprocess.run(["unshare", "-n", "sh", "-c", script, str(transit_mtu)], input=text,
                           capture_output=True, text=True)
        took = time.monotonic() - started
        return took / PROBE_TUNNELS if p.returncode == 0 else None
