"""The gateways tunbed measures, one driver class each (base.Driver: everything the runner asks
of a gateway), a module per family: gregw (tunbed's own), kernel (route, vxlan, vxlan-frames,
vxlan-inherit, gre, external), ovs (Open vSwitch), vpn (wireguard-go, openvpn, openvpn-none,
fastd, fastd-null) and contract (cmd:PATH, a gateway of a user's own). DRIVERS is the
registry: every built-in driver in the order the docs and messages list them, and each
cmd:PATH named so far (lookup). The runner asks a driver and never tests its class."""

from . import contract, gregw, kernel, ovs, vpn

BUILT_IN = (gregw.Gregw, kernel.Route, kernel.Vxlan, kernel.VxlanFrames, kernel.VxlanInherit,
            kernel.KernelGre, ovs.OvsGre, kernel.External, vpn.WireguardGo, vpn.OpenVpn,
            vpn.OpenVpnNone, vpn.Fastd, vpn.FastdNull)
DRIVERS = {d.name: d for d in BUILT_IN}
# The names a scenario file or --gateways may give besides cmd:PATH.
GATEWAYS = tuple(DRIVERS)


def lookup(name, base=""):
    """The driver class of a gateway name, or None: a built-in one, or for cmd:PATH (PATH
    relative to base, else the current directory) the contract's driver of PATH, from then on
    in DRIVERS under that name."""
    if name not in DRIVERS and name.startswith("cmd:") and len(name) > len("cmd:"):
        DRIVERS[name] = contract.command(name, base)
    return DRIVERS.get(name)
