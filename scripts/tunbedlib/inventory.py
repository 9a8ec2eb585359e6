"""An Ansible inventory as the hosts of a run (docs/hosts.md): ansible-inventory parses it, the
way Ansible itself reads it (INI or YAML, group and host variables merged), and this module
turns it into one HostSpec per host, each in one role: client, server, gwa, gwb. Every value
is checked here, before anything builds, connects or starts; a bad one is one line naming the
host and the variable. An inventory is code to Ansible (docs/security.md): only its INI and
YAML plugins read it here, bounded in time, output and memory, and a file that Ansible would
run as a program is refused."""

import dataclasses
import ipaddress
import json
import os
import re
import resource
import selectors
import shlex
import signal
import stat
import subprocess
import time

from . import limits

ROLES = ("client", "server", "gwa", "gwb")
GATEWAY_ROLES = ("gwa", "gwb")
BENCH_NETS = (ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:2::/48"))
TUNNEL_DEFAULT = {4: {"gwa": "198.19.0.1/24", "gwb": "198.19.0.2/24"},
                  6: {"gwa": "2001:2:0:ff::1/64", "gwb": "2001:2:0:ff::2/64"}}
# The plugins that read a file and run nothing: not `script` (an executable file is run),
# not `auto` (a YAML file names a plugin, such as generator, whose templates run commands).
PLUGINS = "ansible.builtin.ini,ansible.builtin.yaml"
# And of the vars plugins only the one that reads group_vars/ and host_vars/ beside it.
VARS_PLUGINS = "ansible.builtin.host_group_vars"

# A host name is a file name on its host (the state directory PREFIX-NAME) and a word in
# reports and commands: never a path, an option, a template or a shell word.
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
PREFIX = re.compile(r"[A-Za-z0-9_]+")  # tunbed-topo's rule (topo_prefix_valid)
DNS_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")
USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
PORT = re.compile(r"[0-9]{1,5}")
ROOT_PATH = re.compile(r"/[A-Za-z0-9._+/-]*")
# ssh(1)'s options: those without an argument, and those with one (its getopt string).
SSH_FLAGS = "1246AaCfGgKkMNnqsTtVvXxYy"
SSH_WITH_ARG = "BbcDEeFIiJLlmOoPpQRSWw"
# The options that would take tunbed's connection from it: it runs every command through its
# own control socket, and each ssh it runs must run the command it gives.
SSH_TUNBEDS = "fGMNOSVW"


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
    direct_addr: str = ""  # server: where `ndr --hosts` sends the generator alone (docs/ndr.md)
    transit_addr: str = ""  # gateways: the tunnel's outer address
    transit_iface: str = ""
    lan_addr: str = ""  # gateways: their address towards their client or server
    lan_prefix: str = ""  # gateways: the inner prefix behind them
    tunnel_addr: str = ""  # gateways: the tunnel device's address

    def label(self):
        return f"host {self.name} ({self.role})"

    def bin(self, tool):
        return os.path.join(self.root, "usr", "bin", tool)


def shown(value, width=60):
    """value for a message: one line (control characters escaped), at most width characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))
    return text if len(text) <= width else text[:width - 3] + "..."


def check_prefix(prefix):
    """A run's --prefix: it names namespaces here and state directories on hosts."""
    if not (PREFIX.fullmatch(prefix) and len(prefix) <= limits.PREFIX_MAX):
        raise InventoryError(f"bad value '{shown(prefix)}' for --prefix: use 1 to "
                             f"{limits.PREFIX_MAX} letters, digits or '_'")
    return prefix


def is_host_name(name):
    return isinstance(name, str) and len(name) <= limits.HOST_NAME_MAX and \
        HOST_NAME.fullmatch(name) is not None


def is_dns_name(name):
    """A name ssh may resolve: RFC 1123's labels (and '_', which resolvers take), the last
    not all digits (inet_aton would read '1.2.3' as an address)."""
    labels = name[:-1].split(".") if name.endswith(".") else name.split(".")
    return 0 < len(name) <= limits.DNS_NAME_MAX and \
        all(len(x) <= limits.DNS_LABEL_MAX and DNS_LABEL.fullmatch(x) for x in labels) and \
        not labels[-1].isdigit()


def is_ssh_address(value):
    """What ssh may connect to: an IP address (no zone) or a host name."""
    if "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return is_dns_name(value)


def is_ifname(name):
    """A Linux interface name (the kernel's dev_valid_name), and not an option to ethtool."""
    return 0 < len(name) <= limits.IFNAME_MAX and name not in (".", "..") and \
        name.isascii() and name.isprintable() and not name.startswith("-") and \
        not any(c in name for c in "/: ")


def unwrap(value):
    """ansible-inventory's JSON with `!unsafe` values as the plain values they are (it writes
    them as {"__ansible_unsafe": value}); tunbed never evaluates a template."""
    if isinstance(value, dict):
        if len(value) == 1 and "__ansible_unsafe" in value:
            return unwrap(value["__ansible_unsafe"])
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def run_bounded(argv, env):
    """argv's (status, stdout, stderr), or a line saying which bound it crossed: it runs at most
    INVENTORY_TIMEOUT_S, prints at most INVENTORY_OUTPUT_MAX on each stream, and has at most
    INVENTORY_MEMORY_MAX of address space."""
    def confine():
        resource.setrlimit(resource.RLIMIT_AS, (limits.INVENTORY_MEMORY_MAX,) * 2)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, preexec_fn=confine,
                         start_new_session=True)
    bufs = {p.stdout: bytearray(), p.stderr: bytearray()}
    deadline = time.monotonic() + limits.INVENTORY_TIMEOUT_S
    over = None
    with selectors.DefaultSelector() as sel:
        for f in bufs:
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map() and not over:
            left = deadline - time.monotonic()
            if left <= 0:
                over = f"did not finish within {limits.INVENTORY_TIMEOUT_S} s"
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                bufs[key.fileobj].extend(chunk)
                if len(bufs[key.fileobj]) > limits.INVENTORY_OUTPUT_MAX:
                    over = f"printed more than {limits.INVENTORY_OUTPUT_MAX} bytes"
                    break
    try:
        p.wait(max(deadline - time.monotonic(), 0) if not over else 0)
    except subprocess.TimeoutExpired:
        over = over or f"did not finish within {limits.INVENTORY_TIMEOUT_S} s"
    if p.returncode is None or over:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    for f in bufs:
        f.close()
    out, err = (bufs[f].decode(errors="replace") for f in (p.stdout, p.stderr))
    return over, p.returncode, out, err


def check_file(path):
    """The inventory file before Ansible reads it: a regular file, not executable (Ansible
    runs such a file as a dynamic inventory, whatever its name), of a bounded size."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InventoryError(f"{path}: no such inventory file") from None
    except OSError as e:
        raise InventoryError(f"{path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InventoryError(f"{path}: not a regular file (an inventory is one INI or YAML "
                             "file)")
    if st.st_mode & 0o111:
        raise InventoryError(f"{path}: executable: Ansible would run it as a program (a "
                             "dynamic inventory); tunbed reads INI and YAML only: chmod a-x "
                             "it")
    if st.st_size > limits.INVENTORY_FILE_MAX:
        raise InventoryError(f"{path}: {st.st_size} bytes: an inventory is at most "
                             f"{limits.INVENTORY_FILE_MAX}")


def load(path):
    """{group: [host]} and {host: vars} from ansible-inventory --list, `!unsafe` values
    unwrapped; the document's shape checked, not yet its values."""
    check_file(path)
    env = os.environ | {"ANSIBLE_INVENTORY_ENABLED": PLUGINS,
                        "ANSIBLE_VARS_ENABLED": VARS_PLUGINS,
                        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
                        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
                        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_DEPRECATION_WARNINGS": "False"}
    try:
        over, status, out, err = run_bounded(["ansible-inventory", "-i", path, "--list"], env)
    except FileNotFoundError:
        raise InventoryError("ansible-inventory is not installed (Debian: ansible-core; "
                             "scripts/bootstrap --for hosts installs it)") from None
    if over:
        raise InventoryError(f"{path}: ansible-inventory {over} reading it (nested YAML "
                             "aliases or a host range that expands without end?)")
    if "MemoryError" in err:
        raise InventoryError(f"{path}: ansible-inventory ran out of its "
                             f"{limits.INVENTORY_MEMORY_MAX >> 20} MiB reading it (nested YAML "
                             "aliases or a host range that expands without end?)")
    # (Ansible wraps its warnings to the terminal's width.)
    if status != 0 and "Plugin configuration YAML file" in " ".join(err.split()):
        raise InventoryError(f"{path}: the configuration of an inventory plugin (plugin:), "
                             "which runs code: tunbed reads INI and YAML inventories only")
    if status != 0:
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        why = next((line for line in lines if "ERROR" in line), lines[-1] if lines else "")
        raise InventoryError(f"{path}: not an inventory Ansible can read: "
                             f"{shown(why.replace('[WARNING]: ', '').replace('ERROR! ', ''), 200)}")
    try:
        doc = unwrap(json.loads(out))
    except ValueError:
        doc = None
    return shape(doc, path)


def shape(doc, path):
    """(groups, hostvars) of ansible-inventory's document, or InventoryError."""
    def bad(what):
        return InventoryError(f"{path}: {what}")
    if not isinstance(doc, dict):
        raise bad("ansible-inventory gave no inventory document")
    meta = doc.get("_meta", {})
    hostvars = meta.get("hostvars", {}) if isinstance(meta, dict) else None
    if not isinstance(hostvars, dict) or not all(isinstance(v, dict) for v in hostvars.values()):
        raise bad("ansible-inventory gave host variables that are not a table")
    if len(hostvars) > limits.INVENTORY_HOSTS_MAX:
        raise bad(f"{len(hostvars)} hosts: an inventory has at most "
                  f"{limits.INVENTORY_HOSTS_MAX}")
    groups = {}
    for g, v in doc.items():
        if g == "_meta":
            continue
        hosts = v.get("hosts", []) if isinstance(v, dict) else None
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise bad(f"group {shown(g)}: its hosts are not a list of names")
        groups[g] = hosts
    return groups, hostvars


def address(value, host, var, spec, prefix=False):
    """Checks an address (or, prefix, a prefix or an interface address such as
    198.19.0.1/24); outside the benchmarking ranges only with tunbed_any_address. Returns its
    family."""
    try:
        if "%" in value:
            raise ValueError
        if prefix:
            if "/" not in value:
                raise ValueError
            net = ipaddress.ip_network(value, strict=False)
        else:
            net = ipaddress.ip_network(ipaddress.ip_address(value))
    except ValueError:
        want = "a prefix such as 198.18.3.0/24" if prefix else "an IPv4 or IPv6 address"
        raise InventoryError(f"host {host}: bad value '{shown(value)}' for {var}: expected "
                             f"{want}") from None
    if not spec.any_address and not any(net.subnet_of(b) for b in BENCH_NETS
                                         if b.version == net.version):
        raise InventoryError(f"host {host}: {var} {value} is outside the benchmarking ranges "
                             f"198.18.0.0/15 and 2001:2::/48: set tunbed_any_address=true for "
                             f"this host to use it (--any-address)")
    return net.version


class Vars:
    """One host's variables, each read as the type tunbed needs or refused in one line."""

    def __init__(self, name, v):
        self.name, self.v = name, v

    def bad(self, var, want):
        return InventoryError(f"host {self.name}: bad value '{shown(self.v[var])}' for {var}: "
                              f"expected {want}")

    def text(self, var, default=""):
        """A string (INI reads 1000 as a number: taken as written); None is not given."""
        value = self.v.get(var)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.bad(var, "a string")
        value = str(value).strip()
        if len(value) > limits.INVENTORY_VALUE_MAX or not value.isprintable():
            raise self.bad(var, f"one line of at most {limits.INVENTORY_VALUE_MAX} characters")
        return value

    def need(self, var, role):
        value = self.text(var)
        if not value:
            raise InventoryError(f"host {self.name}: {role} needs {var} (docs/hosts.md)")
        return value

    def truth(self, var, default):
        value = self.v.get(var)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if isinstance(value, (str, int)) else None
        if text in ("true", "yes", "on", "1"):
            return True
        if text in ("false", "no", "off", "0", ""):
            return False
        raise self.bad(var, "true or false")

    def port(self, var, default):
        value = self.v.get(var)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        elif isinstance(value, str) and PORT.fullmatch(value.strip()):
            n = int(value)
        else:
            n = 0
        if not 1 <= n <= 65535:
            raise self.bad(var, "a port number")
        return n

    def ifname(self, var):
        value = self.text(var)
        if value and not is_ifname(value):
            raise self.bad(var, f"an interface name (1 to {limits.IFNAME_MAX} characters, no "
                                "'/', ':' or space, not starting with '-')")
        return value

    def ssh_args(self, var):
        """ssh's options, each word an option or an option's argument: a word ssh would take
        for the host (and the rest for the command) is refused, and so are the options that
        would take tunbed's connection from it."""
        try:
            words = shlex.split(self.text(var))
        except ValueError as e:
            raise self.bad(var, f"ssh options as a shell would split them ({e})") from None
        i = 0
        while i < len(words):
            w = words[i]
            if not w.startswith("-") or w in ("-", "--"):
                raise self.bad(var, f"ssh options only, not '{shown(w)}' (they go to ssh "
                                    "ahead of the host)")
            for j, c in enumerate(w[1:], 1):
                if c in SSH_TUNBEDS:
                    raise self.bad(var, f"ssh options but -{c} (tunbed runs every command "
                                        "through its own connection)")
                if c in SSH_WITH_ARG:
                    if j == len(w) - 1:
                        i += 1
                        if i == len(words):
                            raise self.bad(var, f"an argument after -{c}")
                    break
                if c not in SSH_FLAGS:
                    raise self.bad(var, f"ssh options, and ssh has no -{shown(c)}")
            i += 1
        return words


def host_name(name, path):
    if not is_host_name(name):
        raise InventoryError(f"{path}: bad host name '{shown(name)}': use letters, digits, '.', "
                             f"'-' and '_', not starting with '.' or '-', at most "
                             f"{limits.HOST_NAME_MAX} characters")
    return name


def spec_of(name, role, hostvars):
    v = Vars(name, hostvars)
    s = HostSpec(name=name, role=role, address=v.text("ansible_host", name))
    if not is_ssh_address(s.address):
        if "ansible_host" in hostvars:
            raise v.bad("ansible_host", "an IPv4 or IPv6 address or a host name")
        raise InventoryError(f"host {name}: the name is not one ssh can connect to (an "
                             "address or a host name): give ansible_host")
    s.port = v.port("ansible_port", 22)
    s.user = v.text("ansible_user")
    if s.user and not (USER.fullmatch(s.user) and len(s.user) <= limits.USER_NAME_MAX):
        raise v.bad("ansible_user", "a user name")
    s.key = v.text("ansible_ssh_private_key_file")
    s.ssh_args = v.ssh_args("ansible_ssh_common_args") + v.ssh_args("ansible_ssh_extra_args")
    s.become = v.truth("ansible_become", False)
    method = v.text("ansible_become_method", "sudo")
    if s.become and method != "sudo":
        raise InventoryError(f"host {name}: ansible_become_method '{shown(method)}': tunbed "
                             "uses sudo only (passwordless: sudo -n)")
    if s.become and v.text("ansible_become_user", "root") != "root":
        raise InventoryError(f"host {name}: ansible_become_user must be root (tunbed starts "
                             "gateways and changes routes)")
    s.root = v.text("tunbed_root", "/")
    if not ROOT_PATH.fullmatch(s.root) or ".." in s.root.split("/"):
        raise v.bad("tunbed_root", "an absolute path of letters, digits, '.', '_', '-', '+' "
                                   "and '/'")
    if v.text("tunbed_install", "system") not in ("system", "dir"):
        raise v.bad("tunbed_install", "system or dir")
    s.any_address = v.truth("tunbed_any_address", False)
    s.sample = v.truth("tunbed_sample", True)
    s.reach = v.truth("tunbed_reach", True)
    if not s.reach:
        s.sample = False
    s.iface = v.ifname("tunbed_iface")
    if role in ("client", "server"):
        s.addr = v.need("tunbed_addr", role)
        address(s.addr, name, "tunbed_addr", s)
        s.gateway = v.text("tunbed_gateway")
        if s.gateway:
            address(s.gateway, name, "tunbed_gateway", s)
        s.direct_addr = v.text("tunbed_direct_addr") if role == "server" else ""
        if s.direct_addr and address(s.direct_addr, name, "tunbed_direct_addr", s) != \
                ipaddress.ip_address(s.addr).version:
            raise v.bad("tunbed_direct_addr", "an address of tunbed_addr's family")
    else:
        s.transit_addr = v.need("tunbed_transit_addr", role)
        family = address(s.transit_addr, name, "tunbed_transit_addr", s)
        s.lan_addr = v.need("tunbed_lan_addr", role)
        address(s.lan_addr, name, "tunbed_lan_addr", s)
        s.lan_prefix = ",".join(x.strip() for x in v.need("tunbed_lan_prefix", role).split(",")
                                if x.strip())
        for net in s.lan_prefix.split(","):
            address(net, name, "tunbed_lan_prefix", s, prefix=True)
        s.transit_iface = v.ifname("tunbed_transit_iface")
        s.tunnel_addr = v.text("tunbed_tunnel_addr", TUNNEL_DEFAULT[family][role])
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


def hosts_of(groups, hostvars, path, need_roles=ROLES):
    """The Hosts of an inventory's groups and variables (load's), every value checked."""
    roles = {}
    seen = {}
    for role in ROLES:
        for name in groups.get(role, []):
            host_name(name, path)
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


def parse(path, need_roles=ROLES):
    """The inventory at path, every host checked. need_roles: the roles the scenario uses
    (an external gateway needs none on the gateways' side)."""
    groups, hostvars = load(path)
    return hosts_of(groups, hostvars, path, need_roles)
