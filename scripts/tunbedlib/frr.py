"""FRR (zebra, bgpd, bfdd, staticd) in one namespace, with its own configuration, sockets and
pid files under a directory of the run: never the system's /etc/frr or its frr service.

One Frr per host. start() writes each daemon's configuration, starts zebra, waits for its
zserv socket, starts the others and waits for their vty sockets; stop() ends the daemons it
started by their PIDs, in reverse order. docs/failover.md has the configuration it is given.
"""

import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import time

from .common import Failure

FRR_LIB = "/usr/lib/frr"
VTYSH = "/usr/bin/vtysh"
ORDER = ("zebra", "staticd", "bfdd", "bgpd")


def available():
    """(True, "") when FRR's daemons and vtysh are installed, else (False, why)."""
    missing = [d for d in ("zebra", "bgpd", "bfdd", "staticd")
               if not os.access(os.path.join(FRR_LIB, d), os.X_OK)]
    if not os.access(VTYSH, os.X_OK):
        missing.append("vtysh")
    if missing:
        return False, (f"the failover needs FRR ({', '.join(missing)} missing): "
                       "run scripts/bootstrap --for failover as root to install Debian's frr")
    return True, ""


def owner():
    """The frr user and group Debian's package makes, to run the daemons as; else root."""
    try:
        return pwd.getpwnam("frr").pw_uid, grp.getgrnam("frr").gr_gid, ["-u", "frr", "-g", "frr"]
    except KeyError:
        return 0, 0, ["-u", "root", "-g", "root"]


class Frr:
    def __init__(self, netns, host, rundir):
        self.netns, self.host = netns, host
        self.dir = os.path.join(rundir, f"frr-{host}")
        self.procs = []  # (daemon, Popen), in start order

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, configs, timeout=10.0):
        """configs: {daemon: configuration text}; zebra's is required."""
        uid, gid, runas = owner()
        os.makedirs(self.dir, exist_ok=True)
        os.chown(self.dir, uid, gid)
        for daemon in ORDER:
            if daemon not in configs:
                continue
            conf = self.path(f"{daemon}.conf")
            with open(conf, "w") as f:
                f.write(configs[daemon])
            os.chown(conf, uid, gid)
            # BFD's timers are its purpose: on a busy machine it must get the CPU first.
            nice = ["nice", "-n", "-10"] if daemon == "bfdd" else []
            cmd = ["ip", "netns", "exec", self.netns, *nice, os.path.join(FRR_LIB, daemon),
                   "-f", conf, "-i", self.path(f"{daemon}.pid"), "-z", self.path("zserv.api"),
                   "--vty_socket", self.dir, "-P", "0", *runas,
                   "--log", f"file:{self.path(daemon + '.log')}"]
            if daemon == "bfdd":
                cmd += ["--bfdctl", self.path("bfdd.sock")]
            log = open(self.path(f"{daemon}.out"), "w")
            self.procs.append((daemon, subprocess.Popen(cmd, stdout=log, stderr=log,
                                                        stdin=subprocess.DEVNULL)))
            log.close()
            want = self.path("zserv.api") if daemon == "zebra" else self.path(f"{daemon}.vty")
            self._wait(daemon, lambda: os.path.exists(want), timeout)

    def _wait(self, daemon, ready, timeout):
        deadline = time.monotonic() + timeout
        proc = dict(self.procs)[daemon]
        while not ready():
            if proc.poll() is not None:
                raise Failure(f"{self.host}: FRR's {daemon} exited ({proc.returncode}): "
                              f"{self.last_line(daemon)}")
            if time.monotonic() > deadline:
                raise Failure(f"{self.host}: FRR's {daemon} did not start within {timeout:g} s")
            time.sleep(0.05)

    def last_line(self, daemon):
        for name in (f"{daemon}.out", f"{daemon}.log"):
            try:
                with open(self.path(name)) as f:
                    lines = [ln.strip() for ln in f if ln.strip()]
                if lines:
                    return lines[-1]
            except OSError:
                pass
        return "no output"

    def vtysh(self, *commands, check=True):
        cmd = [VTYSH, "--vty_socket", self.dir]
        for c in commands:
            cmd += ["-c", c]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        if check and p.returncode != 0:
            raise Failure(f"{self.host}: vtysh {' / '.join(commands)}: "
                          f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
        return p.stdout

    def vtysh_json(self, command):
        try:
            return json.loads(self.vtysh(command, check=False) or "{}")
        except (ValueError, subprocess.TimeoutExpired):
            return {}

    def established(self):
        """The addresses of the BGP neighbours in state Established."""
        peers = self.vtysh_json("show bgp ipv4 unicast summary json").get("peers", {})
        return {a for a, p in peers.items() if p.get("state") == "Established"}

    def bfd_up(self):
        """The addresses of the BFD peers whose session is up."""
        peers = self.vtysh_json("show bfd peers json")
        return {p.get("peer") for p in peers if p.get("status") == "up"} \
            if isinstance(peers, list) else set()

    def pids(self):
        return [(d, p.pid) for d, p in self.procs if p.poll() is None]

    def stop(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)
