"""What every runner module uses: paths, one-line failures, subprocess helpers."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A checkout has the programs in build/bin and its version in CMakeLists.txt. The Debian
# package (packaging/CMakeLists.txt) has the runner's files in /usr/share/tunbed, laid out as in
# a checkout, with the version in VERSION, and the programs in /usr/bin: nothing to build.
VERSION_FILE = os.path.join(ROOT, "VERSION")
INSTALLED = os.path.isfile(VERSION_FILE)
BIN = os.path.normpath(os.path.join(ROOT, "..", "..", "bin")) if INSTALLED else \
    os.path.join(ROOT, "build", "bin")
TOPO = os.path.join(BIN, "tunbed-topo")
GREGW = os.path.join(BIN, "gregw")
TRAFFIC = os.path.join(BIN, "tunbed-traffic")
WIRE = os.path.join(BIN, "tunbed-wire")
SAMPLE = os.path.join(BIN, "tunbed-sample")
OVS_DRIVER = os.path.join(ROOT, "scripts", "drivers", "ovs-gre.sh")
TOPOLOGIES = os.path.join(ROOT, "topo", "topologies")
# The port tunbed-traffic's servers listen on, in every scenario.
TRAFFIC_PORT = 9400


class Failure(Exception):
    """A failure the user gets as one line."""


class ScenarioError(Exception):
    """A mistake in what the user gave (a command line, a scenario or topology file): one
    line, FILE:LINE: what for a file, and exit status 2, before anything starts."""


class Refused(ScenarioError):
    """What the command line asked turned out impossible only once the run had measured
    something (tunbed ndr's --max-rate above the generator's ceiling): the run stops, its
    partial report is written, then this one line and exit status 2."""


class GatewayFailure(Failure):
    """The gateway under test did not come up: its point fails, and the run goes on."""


def log(msg):
    print(f"tunbed: {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True, **kw):
    """Runs cmd; on failure raises Failure with the command's last line of stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise Failure(f"{os.path.basename(cmd[0])}: {err}")
    return p.stdout


def ns(prefix, host, *cmd):
    """cmd inside the namespace of host."""
    return ["ip", "netns", "exec", f"{prefix}-{host}", *cmd]


def ethtool_features(text):
    """{feature: its state, 'on', 'off' or either with ' [fixed]' (a device's own, not to be
    changed)} from `ethtool -k DEV`'s output, sub-features (indented) included."""
    out = {}
    for line in text.splitlines()[1:]:  # the first: "Features for DEV:"
        name, sep, state = line.strip().partition(": ")
        if sep and state.split() and state.split()[0] in ("on", "off"):
            out[name] = state.strip()
    return out


def version():
    """The project's version (CMakeLists.txt's, which the programs and the Debian package
    carry; the package's VERSION), or None where it cannot be read."""
    with contextlib.suppress(OSError):
        if INSTALLED:
            with open(VERSION_FILE) as f:
                return f.read().strip() or None
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            return next((m[1] for m in map(re.compile(r"project\(tunbed VERSION ([0-9.]+)").match,
                                           f) if m), None)
    return None


def have(program):
    return shutil.which(program) is not None


@contextlib.contextmanager
def deferred_signals():
    """SIGINT and SIGTERM wait (blocked, then delivered) until the block is done."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
