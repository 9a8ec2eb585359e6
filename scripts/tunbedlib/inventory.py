"""An Ansible inventory as the hosts of a run (docs/hosts.md): ansible-inventory parses it, the
way Ansible itself reads it (INI or YAML, group and host variables merged), and this module
turns it into one HostSpec per host, each in one role: client, server, gwa, gwb. Every value
is checked here, before anything connects or starts; a bad one is one line naming the host and
the variable."""

import dataclasses
import ipaddress
import json
import os
import shlex
import subprocess

ROLES = ("client", "server", "gwa", "gwb")
GATEWAY_ROLES = ("gwa", "gwb")
BENCH_NETS = (ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:2::/48"))
TUNNEL_DEFAULT = {4: {"gwa": "198.19.0.1/24", "gwb": "198.19.0.2/24"},
                  6: {"gwa": "2001:2:0:ff::1/64", "gwb": "2001:2:0:ff::2/64"}}


class InventoryError(Exception):
    """A mistake in the inventory: one line, exit status 2."""


@dataclasses.dataclass
class HostSpec:
    name: str  # as the inventory names it
    role: str
    address: str  # what SSH connects to: ansible_host, else the name
    port: int = 22
    user: str = ""
    key: str = ""
    ssh_args: list = dataclasses.field(default_factory=list)
    become: bool = False
    root: str = "/"  # where the tunbed build is installed: ROOT/usr/bin/gregw
    any_address: bool = False
    sample: bool = True  # whether its CPU is sampled (a Linux host that SSH reaches)
    reach: bool = True  # whether tunbed connects to it at all (an external gateway may not)
    addr: str = ""  # client, server: the address its traffic uses
    gateway: str = ""  # client, server: its next hop to the far side (default: its gateway's
    #                    tunbed_lan_addr)
    iface: str = ""
    transit_addr: str = ""  # gateways: the tunnel's outer address
    transit_iface: str = ""
    lan_addr: str = ""  # gateways: their address towards their client or server
    lan_prefix: str = ""  # gateways: the inner prefix behind them
    tunnel_addr: str = ""  # gateways: the tunnel device's address

    def label(self):
        return f"host {self.name} ({self.role})"

    def bin(self, tool):
        return os.path.join(self.root, "usr", "bin", tool)


def truth(value, host, var):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0", ""):
        return False
    raise InventoryError(f"host {host}: bad value '{value}' for {var}: expected true or false")


def load(path):
    """{group: [host]} and {host: vars} from ansible-inventory --list."""
    if not os.path.exists(path):
        raise InventoryError(f"{path}: no such inventory file")
    env = os.environ | {"ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
                        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
                        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_DEPRECATION_WARNINGS": "False"}
    try:
        p = subprocess.run(["ansible-inventory", "-i", path, "--list"], capture_output=True,
                           text=True, env=env)
    except FileNotFoundError:
        raise InventoryError("ansible-inventory is not installed (Debian: ansible-core; "
                             "scripts/bootstrap installs it)") from None
    if p.returncode != 0:
        lines = [line.strip() for line in p.stderr.splitlines() if line.strip()]
        why = next((line for line in lines if "ERROR" in line), lines[-1] if lines else "")
        raise InventoryError(f"{path}: not an inventory Ansible can read: "
                             f"{why.replace('[WARNING]: ', '').replace('ERROR! ', '')}")
    doc = json.loads(p.stdout)
    hostvars = doc.get("_meta", {}).get("hostvars", {})
    groups = {g: v.get("hosts", []) for g, v in doc.items() if g != "_meta"}
    return groups, hostvars


def address(value, host, var, spec, prefix=False):
    """Checks an address (or prefix) variable; outside the benchmarking ranges only with
    tunbed_any_address. Returns its family."""
    try:
        net = ipaddress.ip_network(value, strict=False) if prefix or "/" in value else \
            ipaddress.ip_network(ipaddress.ip_address(value))
        if prefix and "/" not in value:
            raise ValueError
    except ValueError:
        want = "a prefix such as 198.18.3.0/24" if prefix else "an IPv4 or IPv6 address"
        raise InventoryError(f"host {host}: bad value '{value}' for {var}: expected "
                             f"{want}") from None
    if not spec.any_address and not any(net.subnet_of(b) for b in BENCH_NETS
                                         if b.version == net.version):
        raise InventoryError(f"host {host}: {var} {value} is outside the benchmarking ranges "
                             f"198.18.0.0/15 and 2001:2::/48: set tunbed_any_address=true for "
                             f"this host to use it (--any-address)")
    return net.version


def spec_of(name, role, v):
    s = HostSpec(name=name, role=role, address=str(v.get("ansible_host", name)))
    try:
        s.port = int(v.get("ansible_port", 22))
    except ValueError:
        raise InventoryError(f"host {name}: bad value '{v['ansible_port']}' for ansible_port: "
                             "expected a port number") from None
    s.user = str(v.get("ansible_user", ""))
    s.key = str(v.get("ansible_ssh_private_key_file", ""))
    s.ssh_args = shlex.split(str(v.get("ansible_ssh_common_args", ""))) + \
        shlex.split(str(v.get("ansible_ssh_extra_args", "")))
    s.become = truth(v.get("ansible_become", False), name, "ansible_become")
    method = str(v.get("ansible_become_method", "sudo"))
    if s.become and method != "sudo":
        raise InventoryError(f"host {name}: ansible_become_method '{method}': tunbed uses sudo "
                             "only (passwordless: sudo -n)")
    if s.become and str(v.get("ansible_become_user", "root")) != "root":
        raise InventoryError(f"host {name}: ansible_become_user must be root (tunbed starts "
                             "gateways and changes routes)")
    s.root = str(v.get("tunbed_root", "/"))
    if not s.root.startswith("/"):
        raise InventoryError(f"host {name}: bad value '{s.root}' for tunbed_root: expected an "
                             "absolute path")
    s.any_address = truth(v.get("tunbed_any_address", False), name, "tunbed_any_address")
    s.sample = truth(v.get("tunbed_sample", True), name, "tunbed_sample")
    s.reach = truth(v.get("tunbed_reach", True), name, "tunbed_reach")
    if not s.reach:
        s.sample = False

    def need(var):
        if var not in v or str(v[var]).strip() == "":
            raise InventoryError(f"host {name}: {role} needs {var} (docs/hosts.md)")
        return str(v[var]).strip()
    if role in ("client", "server"):
        s.addr = need("tunbed_addr")
        address(s.addr, name, "tunbed_addr", s)
        s.iface = str(v.get("tunbed_iface", ""))
        s.gateway = str(v.get("tunbed_gateway", ""))
        if s.gateway:
            address(s.gateway, name, "tunbed_gateway", s)
    else:
        s.transit_addr = need("tunbed_transit_addr")
        address(s.transit_addr, name, "tunbed_transit_addr", s)
        s.lan_addr = need("tunbed_lan_addr")
        address(s.lan_addr, name, "tunbed_lan_addr", s)
        s.lan_prefix = ",".join(x.strip() for x in need("tunbed_lan_prefix").split(",")
                                if x.strip())
        for net in s.lan_prefix.split(","):
            address(net, name, "tunbed_lan_prefix", s, prefix=True)
        s.transit_iface = str(v.get("tunbed_transit_iface", ""))
        s.iface = str(v.get("tunbed_iface", ""))
        family = ipaddress.ip_address(s.transit_addr).version
        s.tunnel_addr = str(v.get("tunbed_tunnel_addr", TUNNEL_DEFAULT[family][role]))
        address(s.tunnel_addr, name, "tunbed_tunnel_addr", s, prefix=True)
    return s


@dataclasses.dataclass
class Hosts:
    """The hosts of a run, by role (client and server may hold several)."""
    path: str
    roles: dict  # role: [HostSpec]

    def all(self):
        return [h for r in ROLES for h in self.roles.get(r, [])]

    def one(self, role):
        return self.roles[role][0]

    def family(self):
        h = self.roles["client"][0]
        return ipaddress.ip_address(h.addr).version


def parse(path, need_roles=ROLES):
    """The inventory at path, every host checked. need_roles: the roles the scenario uses
    (an external gateway needs none on the gateways' side)."""
    groups, hostvars = load(path)
    roles = {}
    seen = {}
    for role in ROLES:
        for name in groups.get(role, []):
            if name in seen:
                first, second = sorted((seen[name], role), key=ROLES.index)
                raise InventoryError(f"host {name}: in groups {first} and {second}: a host "
                                     "has one role")
            seen[name] = role
    for role in ROLES:
        for name in groups.get(role, []):
            roles.setdefault(role, []).append(spec_of(name, role, hostvars.get(name, {})))
    for role in need_roles:
        if not roles.get(role):
            raise InventoryError(f"{path}: no host in group '{role}' (the scenario needs "
                                 f"{', '.join(need_roles)})")
    for role in GATEWAY_ROLES:
        if len(roles.get(role, [])) > 1:
            raise InventoryError(f"{path}: group '{role}' has {len(roles[role])} hosts: one "
                                 "gateway a side")
    hosts = Hosts(path=path, roles=roles)
    families = {ipaddress.ip_address(h.addr or h.transit_addr).version for h in hosts.all()}
    if len(families) > 1:
        raise InventoryError(f"{path}: IPv4 and IPv6 data-plane addresses mixed: one family a "
                             "run")
    return hosts
