"""The kernel's own gateways: plain forwarding (route, the upper bound), VXLAN (also with
frames of the MTU on the wire: vxlan-frames) and GRE; and
external, a gateway tunbed does not start. None has processes of its own: their CPU is the
kernel's, and none can be given a CPU budget."""

import json
import subprocess

from .base import GRE_HEADER, UDP_HEADER, Driver


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
              "dstport", str(self.port), "dev", self.bed.transit_iface(role))
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
