"""Open vSwitch's userspace datapath (netdev) as GRE endpoint, key 7: scripts/drivers/ovs-gre.sh,
a driver of the contract (contract.py) at a fixed path. IPv4 outer only."""

from ..common import OVS_DRIVER, have
from .base import GRE_HEADER
from .contract import Cmd


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
