"""The userspace VPN daemons tunbed measures beside gregw, one daemon per gateway on a TUN
device, over UDP between the transit addresses, with keys made for each point: wireguard-go
(WireGuard, configured with wireguard-tools' wg), OpenVPN 2.6 point-to-point (TLS with
self-signed certificates checked by fingerprint and the AEAD cipher the two negotiate, or no
TLS, no cipher and no authentication: the forwarding alone) and fastd (method
salsa2012+umac, or null). Each device's MTU is the transit MTU less the outer IP and UDP
headers and what the daemon adds, measured on the wire (docs/runner.md)."""


import json
import time

from ..common import Failure, have
from .base import START_TIMEOUT_S, UDP_HEADER, Driver, endpoint, peer_host

# WireguardGoTunnels (tunbed tunnels): gwb's device of tunnel i listens on WG_TUNNEL_PORT + i
# (tunnels.sh's 16,384 at most end below 56,384); gwa's one device on WireguardGo.port.
WG_TUNNEL_PORT = 40000


class Daemon(Driver):
    """What the three share: a daemon per side, its device addressed and routed into, the
    first ping through. A subclass says what it needs and how its daemon starts."""
    program = "?"  # the daemon: its process label, log and pid file are named after it
    needs = ()  # other commands it needs on the gateways
    dev = "?"  # the tunnel device, on each gateway
    port = 0  # UDP, both ends
    daemon_bytes = 0  # what the daemon adds to an inner packet besides the outer IP and UDP
    cipher = "none"
    can_budget = True

    def __init__(self, *a):
        super().__init__(*a)
        self.procs, self.keys = {}, {}

    @classmethod
    def transit_port(cls):
        return cls.port

    @classmethod
    def available(cls, hosts_mode=False):
        if hosts_mode:
            return True, ""  # the hosts' packages show when the daemon starts there
        missing = [c for c in (cls.program, *cls.needs) if not have(c)]
        if missing:
            return False, (f"{', '.join(missing)} not installed (Debian: "
                           f"{', '.join(cls.packages)})")
        return True, ""

    @classmethod
    def overhead(cls, mode, ip_header):
        return ip_header + UDP_HEADER + cls.daemon_bytes

    def mtu(self, role, local):
        return self.transit_mtu(role) - self.overhead("-", self.outer_ip(local))

    def setup(self):
        sides = self.sides()
        for role, *_ in sides:
            self.keys[role] = self.make_keys(role)
        for role, local, remote, addr, peer, nets in sides:
            mtu = self.mtu(role, local)
            self.procs[role] = self.start(role, local, remote, addr, peer, nets, mtu)
            self.wait(role, f"{self.program} did not make {self.dev}",
                      lambda r=role: self.has_device(r, self.dev), self.procs[role], self.program)
            self.ready(role, local, remote, addr, peer, nets)
            self.address_device(role, self.dev, addr, nets, mtu)
        try:
            self.wait_path()
        except Failure as e:
            # What the daemons said last tells why no packet went through.
            for role, p in self.procs.items():
                if p.poll() is not None:
                    raise Failure(f"{self.name} on {self.host(role).label()}: {self.program} "
                                  f"exited ({p.local.returncode}): "
                                  f"{self.last_line(role, self.program)}") from None
            raise Failure(f"{e}; {self.program} on gwa said last: "
                          f"{self.last_line('gwa', self.program)}") from None

    def make_keys(self, role):
        return None

    def start(self, role, local, remote, addr, peer, nets, mtu):
        raise NotImplementedError

    def ready(self, role, local, remote, addr, peer, nets):
        """After the device exists: what else the daemon needs before it forwards."""

    def pids(self):
        return [(r, p.pid, f"{self.program} {r}") for r, p in self.procs.items()]

    def version(self, cmd):
        out = self.host("gwa").run(cmd, check=False)
        return (out.strip().splitlines() or [None])[0]

    def teardown(self):
        self.stop_all(self.procs)
        self.procs = {}


def wg_in(proc, *args):
    """wg with args, run in the mount namespace of the wireguard-go daemon proc (its private
    /run holds the control socket)."""
    return ["nsenter", "-t", str(proc.pid), "-m", "wg", *args]


class WireguardGo(Daemon):
    """wireguard-go: WireGuard in userspace. Each daemon runs in a mount namespace of its own
    with a private /run, where it keeps its control socket (/run/wireguard/DEV.sock): two
    daemons of one machine, in two network namespaces, would otherwise share one path, and a
    killed one leaves nothing behind. wg reaches it there through nsenter."""
    name = "wireguard-go"
    transit_format = "encrypted"
    program = "wireguard-go"
    needs = ("wg", "unshare", "nsenter")
    packages = ("wireguard-go", "wireguard-tools")
    dev = "tbwg0"
    port = 51820
    # The data message's header (type, receiver index, counter: 16 bytes) and its
    # Poly1305 tag (16).
    daemon_bytes = 32
    cipher = "ChaCha20-Poly1305"

    def make_keys(self, role):
        h = self.host(role)
        key = h.run(["wg", "genkey"]).strip()
        return key, h.run(["wg", "pubkey"], input=key + "\n").strip()

    def wg(self, role, *args):
        return wg_in(self.procs[role], *args)

    def spawn(self, role, tag, dev, log_level):
        """A wireguard-go daemon of device dev in the foreground (without the banner it prints
        on Linux), in a mount namespace of its own with a private /run."""
        return self.daemon(role, tag, ["env", "WG_PROCESS_FOREGROUND=1",
                                       f"LOG_LEVEL={log_level}", self.program, "-f", dev],
                           script='mount -t tmpfs tunbed-wg /run && exec "$@"',
                           wrap=["unshare", "--mount", "--propagation", "private"])

    def start(self, role, local, remote, addr, peer, nets, mtu):
        # With its handshakes logged (verbose logs no data packet), for the line a failure
        # quotes.
        return self.spawn(role, self.program, self.dev, "verbose")

    def ready(self, role, local, remote, addr, peer, nets):
        h = self.host(role)
        self.wait(role, "wireguard-go's control socket did not answer",
                  lambda: h.call(self.wg(role, "show", self.dev)).returncode == 0,
                  self.procs[role], self.program)
        other = "gwb" if role == "gwa" else "gwa"
        h.run(self.wg(role, "set", self.dev, "private-key", "/dev/stdin", "listen-port",
                      str(self.port), "peer", self.keys[other][1], "endpoint",
                      endpoint(remote, self.port), "allowed-ips",
                      ",".join([*nets, peer_host(peer)])), input=self.keys[role][0] + "\n")

    def info(self):
        go = self.version([self.program, "--version"])
        tools = self.version(["wg", "--version"])
        return {"version": f"{go} ({tools.split(' - ')[0]})" if go and tools else go,
                "cipher": self.cipher}

    def telemetry(self):
        """Per gateway, what wg says of the peer: bytes received and sent, last handshake."""
        out = {}
        for role in self.procs:
            text = self.host(role).run(self.wg(role, "show", self.dev, "dump"), check=False)
            lines = [ln.split("\t") for ln in text.splitlines()]
            if len(lines) > 1 and len(lines[1]) >= 7:
                peer = lines[1]
                out[role] = {"latest_handshake": int(peer[4]), "rx_bytes": int(peer[5]),
                             "tx_bytes": int(peer[6])}
        return out or None


def wg_device(name):
    """gwb's wireguard-go device of the tunnel NAME (t00042 -> wgt00042)."""
    return f"wg{name}"


def wg_peers(private, port, peers):
    """The `wg setconf` text of a device with the private key private listening on port, and
    peers: [(public key, endpoint or None, [allowed prefix, ...])]."""
    out = [f"[Interface]\nPrivateKey = {private}\nListenPort = {port}\n"]
    for pub, end, allowed in peers:
        out.append(f"[Peer]\nPublicKey = {pub}\n" + (f"Endpoint = {end}\n" if end else "")
                   + f"AllowedIPs = {', '.join(allowed)}\n")
    return "\n".join(out)


def wg_transfer(dump):
    """{public key: (rx bytes, tx bytes)} of `wg show DEV dump`'s peer lines (the first line
    is the device's own); a line that is not 8 fields with whole numbers is left out."""
    out = {}
    for line in dump.splitlines()[1:]:
        f = line.split("\t")
        if len(f) == 8 and f[5].isdigit() and f[6].isdigit():
            out[f[0]] = (int(f[5]), int(f[6]))
    return out


def wg_counters(rx_tx):
    """A tunnel's counters in gregw's names from WireGuard's bytes (rx, tx): its data messages
    and handshakes on the wire (the outer UDP payload); WireGuard counts no packets (0)."""
    rx, tx = rx_tx
    return {"tx_packets": 0, "tx_bytes": tx, "rx_packets": 0, "rx_bytes": rx, "drops": {}}


class WireguardGoTunnels(WireguardGo):
    """wireguard-go with a peer a tunnel, for tunbed tunnels (docs/tunnels.md): WireGuard picks
    a peer by its public key, so the far end of each peer is a device with a key pair of its
    own. On gwa, one device (tbwg0) with a peer a tunnel, each peer's allowed IPs the tunnel's
    prefixes (the server's site), and those prefixes routed into the device; on gwb, a
    wireguard-go process and device a tunnel (wgNAME, listening on WG_TUNNEL_PORT + i), its one
    peer gwa's device, allowed the tunnel's client site, which is routed into it. Setup time:
    from the first daemon's start on a side until its last device is configured and routed;
    memory: the sum of the side's wireguard-go resident sets. Counters: wg's bytes a peer."""

    def __init__(self, bed, point, tunnels, timeout):
        super().__init__(bed, point)
        self.tunnels_of, self.timeout = tunnels, timeout
        self.ready_s, self.pubs, self.far = {}, {}, {}

    def gwb_keys(self, n):
        """n key pairs made on gwb by one shell: [(private, public)]."""
        h = self.host("gwb")
        text = h.run(["sh", "-c", 'i=0; while [ "$i" -lt "$0" ]; do k=$(wg genkey) && '
                      'printf "%s %s\\n" "$k" "$(printf "%s\\n" "$k" | wg pubkey)" || exit 1; '
                      'i=$((i + 1)); done', str(n)], timeout=self.timeout)
        pairs = [tuple(line.split()) for line in text.splitlines() if len(line.split()) == 2]
        if len(pairs) != n:
            raise Failure(f"wireguard-go: wg made {len(pairs)} key pairs on gwb, not {n}")
        return pairs

    def setup(self):
        a, b = self.addrs["a"], self.addrs["b"]
        tun_a, tun_b = self.tunnels_of["gwa"], self.tunnels_of["gwb"]
        port = {name: WG_TUNNEL_PORT + i for i, (name, _, _) in enumerate(tun_b)}
        self.keys["gwa"] = self.make_keys("gwa")
        pairs = self.gwb_keys(len(tun_b))
        self.pubs = {name: pub for (name, _, _), (_, pub) in zip(tun_b, pairs)}
        mtu = self.mtu("gwa", a)
        # gwa: one device, a peer a tunnel.
        h = self.host("gwa")
        started = time.monotonic()
        self.procs["gwa"] = self.start("gwa", a, b, None, None, None, mtu)
        self.wait("gwa", f"{self.program} did not make {self.dev}",
                  lambda: self.has_device("gwa", self.dev), self.procs["gwa"], self.program)
        self.wait("gwa", "wireguard-go's control socket did not answer",
                  lambda: h.call(self.wg("gwa", "show", self.dev)).returncode == 0,
                  self.procs["gwa"], self.program)
        h.run(self.wg("gwa", "setconf", self.dev, "/dev/stdin"), timeout=self.timeout,
              input=wg_peers(self.keys["gwa"][0], self.port, [
                  (self.pubs[name], endpoint(b, port[name]), prefixes)
                  for name, _, prefixes in tun_a]))
        h.run(["ip", "link", "set", "dev", self.dev, "mtu", str(mtu), "up"])
        h.run(["ip", "-batch", "-"], timeout=self.timeout, input="".join(
            f"route replace {p} dev {self.dev}\n" for _, _, prefixes in tun_a for p in prefixes))
        self.ready_s["gwa"] = time.monotonic() - started
        # gwb: a daemon and device a tunnel.
        h = self.host("gwb")
        started = time.monotonic()
        for name, _, _ in tun_b:
            self.far[name] = self.spawn("gwb", f"{self.program}-{name}", wg_device(name),
                                        "error")
        deadline = time.monotonic() + max(START_TIMEOUT_S, self.timeout)
        want = {wg_device(name) for name, _, _ in tun_b}
        while True:
            have_devs = {x.get("ifname") for x in json.loads(h.run(["ip", "-j", "link", "show"])
                                                              or "[]")}
            if want <= have_devs:
                break
            gone = [n for n, p in self.far.items() if p.poll() is not None]
            if gone or time.monotonic() > deadline:
                why = (f"exited: {self.last_line('gwb', f'{self.program}-{gone[0]}')}" if gone
                       else f"not within {deadline - started:.0f} s")
                raise Failure(f"wireguard-go on {h.label()}: {len(want - have_devs)} of "
                              f"{len(want)} devices missing: {why}")
            time.sleep(0.05)
        routes = []
        for (name, _, prefixes), (private, _) in zip(tun_b, pairs):
            dev = wg_device(name)
            cmd = wg_in(self.far[name], "setconf", dev, "/dev/stdin")
            text = wg_peers(private, port[name], [
                (self.keys["gwa"][1], endpoint(a, self.port), prefixes)])
            deadline = time.monotonic() + START_TIMEOUT_S
            while h.call(cmd, input=text).returncode:
                if self.far[name].poll() is not None or time.monotonic() > deadline:
                    why = (f"exited: {self.last_line('gwb', f'{self.program}-{name}')}"
                           if self.far[name].poll() is not None
                           else f"not within {START_TIMEOUT_S} s")
                    raise Failure(f"wireguard-go on {h.label()}: {dev} did not take its "
                                  f"configuration ({why})")
                time.sleep(0.05)
            routes.append(f"link set dev {dev} mtu {mtu} up\n")
            routes += [f"route replace {p} dev {dev}\n" for p in prefixes]
        h.run(["ip", "-batch", "-"], timeout=self.timeout, input="".join(routes))
        self.ready_s["gwb"] = time.monotonic() - started

    def setup_record(self):
        mem = self.memory()
        return {role: {"ready_s": s} | mem.get(role, {}) for role, s in self.ready_s.items()}

    def all_procs(self):
        return [("gwa", p) for p in self.procs.values()] + [("gwb", p) for p in self.far.values()]

    def memory(self):
        """{role: {rss_kib}}: the sum of the side's wireguard-go resident sets."""
        out = {}
        for role, p in self.all_procs():
            text = self.host(role).run(["cat", f"/proc/{p.pid}/status"], check=False)
            for line in text.splitlines():
                if line.startswith("VmRSS:") and line.split()[1].isdigit():
                    out.setdefault(role, {"rss_kib": 0})["rss_kib"] += int(line.split()[1])
        return out

    def pids(self):
        return [(role, p.pid, f"{self.program} {role}") for role, p in self.all_procs()]

    def telemetry(self):
        return None

    def tunnels(self, role):
        """Every tunnel's counters on the role's side: {name: counters}."""
        h = self.host(role)
        if role == "gwa":
            by_pub = {pub: name for name, pub in self.pubs.items()}
            got = wg_transfer(h.run(self.wg("gwa", "show", self.dev, "dump"), check=False))
            return {by_pub[k]: wg_counters(v) for k, v in got.items() if k in by_pub}
        out = {}
        for name, p in self.far.items():
            got = wg_transfer(h.run(wg_in(p, "show", wg_device(name), "dump"), check=False))
            if got:
                out[name] = wg_counters(next(iter(got.values())))
        return out

    def unattributed(self, role, link_drops):
        return link_drops

    def teardown(self):
        self.stop_all(self.far)
        self.far = {}
        super().teardown()


class OpenVpn(Daemon):
    """OpenVPN 2.6 point-to-point over UDP with TLS: gwa the TLS server, gwb the client,
    each with a self-signed certificate the other checks by its SHA-256 fingerprint (no CA),
    and the data channel's cipher negotiated by the two (AES-256-GCM between 2.6 peers).
    Without data channel offload (ovpn-dco would be a kernel data path), without MSS clamping
    (the device's MTU sizes the sessions, as for every gateway)."""
    name = "openvpn"
    transit_format = "encrypted"
    program = "openvpn"
    needs = ("openssl",)
    packages = ("openvpn", "openssl")
    dev = "tbovpn0"
    port = 1194
    # P_DATA_V2's opcode and peer id (4 bytes), the packet id (4) and the GCM tag (16).
    daemon_bytes = 24
    tls = True

    def make_keys(self, role):
        if not self.tls:
            return None
        h, d = self.host(role), self.workdir(role)
        h.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
               "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
               f"/CN=tunbed-{role}", "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem"])
        fp = h.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in",
                    f"{d}/cert.pem"])
        return fp.strip().partition("=")[2]

    def start(self, role, local, remote, addr, peer, nets, mtu):
        cmd = [self.program, "--dev", self.dev, "--dev-type", "tun", "--proto",
               "udp6" if ":" in local else "udp", "--local", local, "--lport", str(self.port),
               "--remote", remote, "--rport", str(self.port), "--tun-mtu", str(mtu),
               "--mssfix", "0", "--disable-dco", "--verb", "3"]
        if self.tls:
            d, other = self.workdir(role), "gwb" if role == "gwa" else "gwa"
            cmd += [*(["--tls-server", "--dh", "none"] if role == "gwa" else ["--tls-client"]),
                    "--cert", f"{d}/cert.pem", "--key", f"{d}/key.pem",
                    "--peer-fingerprint", self.keys[other]]
        return self.daemon(role, self.program, cmd)

    def info(self):
        version = self.version([self.program, "--version"])
        cipher = "none"
        if self.tls:
            # What the two negotiated, as gwa's log says it: Data Channel: cipher 'AES-256-GCM'.
            log = self.host("gwa").run(["cat", f"{self.workdir('gwa')}/{self.program}.log"],
                                       check=False)
            said = [ln.split("cipher '", 1)[1].split("'")[0] for ln in log.splitlines()
                    if "Data Channel: cipher '" in ln]
            cipher = said[-1] if said else None
        return {"version": " ".join(version.split()[:2]) if version else None, "cipher": cipher}


class OpenVpnNone(OpenVpn):
    """OpenVPN with no TLS, no key, no cipher and no authentication: packets go over UDP as
    they came from the device, the cost of OpenVPN's forwarding alone. OpenVPN 2.6 allows it
    with a warning; 2.7 is to remove it."""
    name = "openvpn-none"
    transit_format = "OpenVPN's UDP"
    needs = ()
    packages = ("openvpn",)
    daemon_bytes = 0
    tls = False


class Fastd(Daemon):
    """fastd in tun mode with one peer each, keys made by fastd itself, method salsa2012+umac
    (fastd's recommended one)."""
    name = "fastd"
    transit_format = "encrypted"
    program = "fastd"
    packages = ("fastd",)
    dev = "tbfastd0"
    port = 10000
    method = "salsa2012+umac"
    # fastd's packet type (1 byte); the method's nonce (8) and UMAC tag (16).
    daemon_bytes = 1 + 24

    def make_keys(self, role):
        h = self.host(role)
        secret = h.run([self.program, "--generate-key", "--machine-readable"]).strip()
        public = h.run([self.program, "--machine-readable", "--show-key", "--config", "-"],
                       input=f'secret "{secret}";\n').strip()
        return secret, public

    def start(self, role, local, remote, addr, peer, nets, mtu):
        other = "gwb" if role == "gwa" else "gwa"
        conf = f"{self.workdir(role)}/fastd.conf"
        self.write(role, conf, "\n".join([
            "log level info;", "mode tun;", f'interface "{self.dev}";',
            f'method "{self.method}";', f'secret "{self.keys[role][0]}";',
            f"bind {endpoint(local, self.port)};", f"mtu {mtu};",
            f'peer "{other}" {{', f'\tkey "{self.keys[other][1]}";',
            f"\tremote {endpoint(remote, self.port)};", "}", ""]))
        return self.daemon(role, self.program, [self.program, "--config", conf])

    def info(self):
        return {"version": self.version([self.program, "--version"]), "cipher": self.method}


class FastdNull(Fastd):
    """fastd with method null: no cipher, no authentication of the data (the handshake is
    still authenticated); the cost of fastd's forwarding alone."""
    name = "fastd-null"
    transit_format = "fastd's UDP"
    method = "null"
    daemon_bytes = 1
