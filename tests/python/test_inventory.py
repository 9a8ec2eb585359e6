"""The trust boundary of inventories, hosts and state files (docs/security.md): hostile
inventories (names that are paths, options or templates, values of the wrong type, files that
Ansible would run, documents that expand without end) refused in one line before anything
connects; ssh's argument lists read by a stand-in ssh (fake_ssh.py, first in PATH) exactly as
ssh reads them, so that no inventory value is taken for an option or a destination; the state
`tunbed down` trusts kept where only root writes. Then a property test: thousands of generated
inventory documents, and a few written out as INI and YAML for ansible-inventory, each either
refused in one line or read into values that hold every rule of docs/hosts.md. Deterministic:
one fixed seed."""

import contextlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
sys.path.insert(0, HERE)

import fake_ssh  # noqa: E402
from tunbedlib import hosts, inventory, limits, pair, rundir  # noqa: E402
from tunbedlib.common import GREGW  # noqa: E402

SEED = 2815
GOOD = """[client]
c1 ansible_host=198.18.200.2 tunbed_addr=198.18.1.2
[server]
s1 ansible_host=198.18.200.14 tunbed_addr=198.18.3.2
[all:vars]
ansible_user=root
"""


def write(text, suffix=".ini", mode=0o644, dir=None):
    fd, path = tempfile.mkstemp(suffix=suffix, dir=dir)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


class Files(unittest.TestCase):
    """An inventory is read, never run."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tunbed-inv-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.marker = os.path.join(self.dir, "ran")

    def refused(self, path, want):
        with self.assertRaises(inventory.InventoryError) as e:
            inventory.parse(path, ())
        self.assertNotIn("\n", str(e.exception))
        self.assertRegex(str(e.exception), want)
        self.assertFalse(os.path.exists(self.marker), "the inventory ran a command")

    def test_an_executable_file_is_refused_and_never_run(self):
        # Named .ini: Ansible's script plugin runs it all the same, as root.
        path = write(f"#!/bin/sh\ntouch {self.marker}\necho '{{}}'\n", mode=0o755, dir=self.dir)
        self.refused(path, r": executable: Ansible would run it as a program .* chmod a-x it$")
        # Ansible is told so too: the file, made executable after tunbed looked, is not run.
        with mock.patch.object(inventory, "check_file"):
            self.refused(path, r"not an inventory Ansible can read")

    def test_a_plugin_configuration_is_refused_and_never_run(self):
        path = write("plugin: ansible.builtin.generator\nhosts:\n  name: \"{{ lookup('pipe', "
                     f"'touch {self.marker}; echo c1') }}}}\"\nlayers:\n  x: [a]\n",
                     suffix=".yml", dir=self.dir)
        self.refused(path, r": the configuration of an inventory plugin \(plugin:\), which runs "
                           r"code: tunbed reads INI and YAML inventories only$")

    def test_not_a_file(self):
        self.refused(self.dir, r": not a regular file \(an inventory is one INI or YAML file\)$")

    def test_bounded(self):
        big = write("#" * limits.INVENTORY_FILE_MAX + "\n", dir=self.dir)
        self.refused(big, rf": {limits.INVENTORY_FILE_MAX + 1} bytes: an inventory is at most "
                          rf"{limits.INVENTORY_FILE_MAX}$")
        many = write("[client]\nh[0:299] tunbed_addr=198.18.1.2\n", dir=self.dir)
        self.refused(many, r": 300 hosts: an inventory has at most 256$")

    def test_an_alias_bomb_is_stopped_in_time(self):
        # 808 bytes of YAML that nest aliases nine deep: ansible-inventory expands them
        # without end (a second of it is enough to know).
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + \
            [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
        path = write("all:\n  vars:\n" + "".join(f"    {x}\n" for x in lines) +
                     "client:\n  hosts:\n    c1:\n      tunbed_addr: 198.18.1.2\n",
                     suffix=".yml", dir=self.dir)
        with mock.patch.object(limits, "INVENTORY_TIMEOUT_S", 2):
            t = time.monotonic()
            self.refused(path, r": ansible-inventory did not finish within 2 s reading it")
        self.assertLess(time.monotonic() - t, 20, "the timeout did not stop it")

    def test_output_is_capped(self):
        path = write("[client]\nc1 tunbed_addr=198.18.1.2 x=" + "a" * 150_000 + "\n",
                     dir=self.dir)
        with mock.patch.object(limits, "INVENTORY_OUTPUT_MAX", 100_000):
            self.refused(path, r": ansible-inventory printed more than 100000 bytes reading it")


class Values(unittest.TestCase):
    """Every value checked before anything connects: one line naming host and variable."""

    def parse(self, text, suffix=".ini"):
        path = write(text, suffix)
        try:
            return inventory.parse(path, ())
        finally:
            os.unlink(path)

    def test_refusals(self):
        c1 = "c1 ansible_host=198.18.200.2 tunbed_addr=198.18.1.2"
        rows = [
            # Host names that are paths, options, ssh tokens, or too long for a file name.
            ("[client]\n../../../../etc tunbed_addr=198.18.1.2\n",
             "bad host name '../../../../etc': use letters, digits, '.', '-' and '_', not "
             "starting with '.' or '-', at most 239 characters"),
            ("client:\n  hosts:\n    '-oProxyCommand=touch y':\n      tunbed_addr: 198.18.1.2\n",
             "bad host name '-oProxyCommand=touch y'"),
            ("client:\n  hosts:\n    c%1:\n      tunbed_addr: 198.18.1.2\n", "bad host name 'c%1'"),
            ("[client]\n" + "a" * 240 + " tunbed_addr=198.18.1.2\n", "bad host name 'aaaa"),
            ("client:\n  hosts:\n    \"c1\\nc2\":\n      tunbed_addr: 198.18.1.2\n",
             "bad host name 'c1\\nc2'"),
            # ansible_host: an address or a host name, nothing ssh would read as an option.
            (c1.replace("ansible_host=198.18.200.2", "ansible_host=-oProxyCommand=touch%20y"),
             "host c1: bad value '-oProxyCommand=touch%20y' for ansible_host: expected an IPv4 "
             "or IPv6 address or a host name"),
            (c1.replace("ansible_host=198.18.200.2", "ansible_host='x; touch y'"),
             "host c1: bad value 'x; touch y' for ansible_host: expected an IPv4 or IPv6 "
             "address or a host name"),
            (c1.replace("ansible_host=198.18.200.2", "ansible_host=1.2.3"),
             "bad value '1.2.3' for ansible_host"),
            ("[client]\na..b tunbed_addr=198.18.1.2\n",
             "host a..b: the name is not one ssh can connect to (an address or a host name): "
             "give ansible_host"),
            # Ports.
            (c1 + " ansible_port=-1", "host c1: bad value '-1' for ansible_port: expected a port "
                                      "number"),
            (c1 + " ansible_port=0", "bad value '0' for ansible_port"),
            (c1 + " ansible_port=99999", "bad value '99999' for ansible_port"),
            (c1 + " ansible_port=22.7", "bad value '22.7' for ansible_port"),
            (c1 + " ansible_port=True", "bad value 'True' for ansible_port"),
            (c1 + " ansible_port=\"[1, 2]\"", "bad value '[1, 2]' for ansible_port"),
            ("client:\n  hosts:\n    c1:\n      tunbed_addr: 198.18.1.2\n      ansible_port: "
             "'²'\n", "bad value '²' for ansible_port"),
            # Addresses with a prefix where an address goes.
            (c1.replace("tunbed_addr=198.18.1.2", "tunbed_addr=198.18.1.2/24"),
             "host c1: bad value '198.18.1.2/24' for tunbed_addr: expected an IPv4 or IPv6 "
             "address"),
            ("[gwa]\ng1 tunbed_transit_addr=198.18.0.1/24 tunbed_lan_addr=198.18.1.1 "
             "tunbed_lan_prefix=198.18.1.0/24\n",
             "host g1: bad value '198.18.0.1/24' for tunbed_transit_addr"),
            (c1.replace("tunbed_addr=198.18.1.2", "tunbed_addr=fe80::1%eth0"),
             "bad value 'fe80::1%eth0' for tunbed_addr"),
            # ssh's options: they split, and every word is an option or its argument.
            (c1 + " ansible_ssh_common_args='-o \"x'",
             "host c1: bad value '-o \"x' for ansible_ssh_common_args: expected ssh options as a "
             "shell would split them (No closing quotation)"),
            (c1 + " ansible_ssh_common_args='-o X=y evil.example'",
             "expected ssh options only, not 'evil.example' (they go to ssh ahead of the host)"),
            (c1 + " ansible_ssh_extra_args='--'", "for ansible_ssh_extra_args: expected ssh "
                                                  "options only, not '--'"),
            (c1 + " ansible_ssh_common_args='-S /tmp/x'",
             "expected ssh options but -S (tunbed runs every command through its own "
             "connection)"),
            (c1 + " ansible_ssh_common_args='-o'", "expected an argument after -o"),
            (c1 + " ansible_ssh_common_args='-Z'", "expected ssh options, and ssh has no -Z"),
            # Interface names that cannot exist, or that a command would take for an option.
            (c1 + " tunbed_iface='a b'", "host c1: bad value 'a b' for tunbed_iface: expected an "
                                         "interface name (1 to 15 characters, no '/', ':' or "
                                         "space, not starting with '-')"),
            (c1 + " tunbed_iface=x/y", "bad value 'x/y' for tunbed_iface"),
            (c1 + " tunbed_iface=-x", "bad value '-x' for tunbed_iface"),
            (c1 + " tunbed_iface=abcdefghijklmnop", "bad value 'abcdefghijklmnop' for "
                                                    "tunbed_iface"),
            ("[gwa]\ng1 tunbed_transit_addr=198.18.0.1 tunbed_lan_addr=198.18.1.1 "
             "tunbed_lan_prefix=198.18.1.0/24 tunbed_transit_iface=..\n",
             "bad value '..' for tunbed_transit_iface"),
            # Other values of the wrong type or shape.
            (c1 + " ansible_user='root; id'", "bad value 'root; id' for ansible_user: expected a "
                                              "user name"),
            (c1 + " tunbed_root=/opt/../etc", "bad value '/opt/../etc' for tunbed_root"),
            (c1 + " tunbed_root='/opt/a\"b'", "bad value '/opt/a\"b' for tunbed_root"),
            (c1 + " tunbed_install=both", "bad value 'both' for tunbed_install: expected system "
                                          "or dir"),
            ("client:\n  hosts:\n    c1:\n      tunbed_addr: [198.18.1.2]\n",
             "host c1: bad value '['198.18.1.2']' for tunbed_addr: expected a string"),
            ("client:\n  hosts:\n    c1:\n      tunbed_addr: \"198.18.1.2\\n\"\n      "
             "ansible_user: \"a\\nb\"\n",
             "bad value 'a\\nb' for ansible_user: expected one line of at most 4096 characters"),
            # !unsafe values are read as the plain values they are: a bad one is quoted so.
            ("client:\n  hosts:\n    c1:\n      tunbed_addr: !unsafe 198.18.1.2x\n",
             "host c1: bad value '198.18.1.2x' for tunbed_addr: expected an IPv4 or IPv6 "
             "address"),
        ]
        for text, want in rows:
            with self.subTest(want=want):
                suffix = ".yml" if text.startswith("client:") else ".ini"
                if not text.startswith(("[", "client:")):
                    text = "[client]\n" + text + "\n"
                with self.assertRaises(inventory.InventoryError) as e:
                    self.parse(text, suffix)
                self.assertNotIn("\n", str(e.exception))
                self.assertIn(want, str(e.exception))
                self.assertNotIn("__ansible_unsafe", str(e.exception))

    def test_what_is_accepted(self):
        fqdn = "gateway-a-with-a-long-name.rack-17.datacentre-west.example.net"  # 62
        inv = self.parse(f"""client:
  hosts:
    ? !unsafe c1
    : tunbed_addr: !unsafe 198.18.1.2
      ansible_host: {fqdn}
      ansible_port: "2222"
      ansible_user: bench.user
      ansible_ssh_common_args: -o StrictHostKeyChecking=yes -4 -oConnectTimeout=5
      tunbed_iface: lan-a.100
""", ".yml")
        c1 = inv.one("client")
        self.assertEqual((c1.name, c1.addr, c1.address, c1.port, c1.user, c1.iface),
                         ("c1", "198.18.1.2", fqdn, 2222, "bench.user", "lan-a.100"))
        self.assertEqual(c1.ssh_args, ["-o", "StrictHostKeyChecking=yes", "-4",
                                       "-oConnectTimeout=5"])

    def test_prefix(self):
        for bad in ("../../x", "-x", "", "a" * 16, "tb-1", "tb/1"):
            with self.subTest(bad=bad):
                with self.assertRaises(inventory.InventoryError) as e:
                    inventory.check_prefix(bad)
                self.assertRegex(str(e.exception), r"^bad value '.*' for --prefix: use 1 to 15 "
                                                   r"letters, digits or '_'$")
        self.assertEqual(inventory.check_prefix("tb_1234567890ab"), "tb_1234567890ab")


def child(argv, env):
    """scripts/tunbed ARGV in a child, as root would run it (its own user is fine here: the
    stand-in ssh is all it reaches): (status, stderr)."""
    code = ("import os, sys\nsys.path.insert(0, sys.argv[1])\nos.geteuid = lambda: 0\n"
            "from tunbedlib import cli\nsys.argv = ['tunbed', *sys.argv[2:]]\n"
            "sys.exit(cli.main())\n")
    p = subprocess.run([sys.executable, "-B", "-c", code, SCRIPTS, *argv], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


class Ssh(unittest.TestCase):
    """What ssh is given, read by the stand-in as ssh reads it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tunbed-ssh-test-")
        self.addCleanup(shutil.rmtree, self.dir)
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "ssh"), "w") as f:
            f.write(f'#!/bin/sh\nexec {sys.executable} {os.path.join(HERE, "fake_ssh.py")} "$@"\n')
        os.chmod(os.path.join(bindir, "ssh"), 0o755)
        self.log = os.path.join(self.dir, "ssh.log")
        open(self.log, "w").close()
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        self.env = os.environ | {"PATH": f"{bindir}:{os.environ['PATH']}",
                                 "FAKE_SSH_LOG": self.log, "TMPDIR": tmp}

    def calls(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def down(self, text, prefix="tbt"):
        path = write(text, dir=self.dir)
        return child(["down", "--hosts", path, "--prefix", prefix], self.env)

    def test_down_refuses_a_name_that_is_a_path(self):
        # Today's: rm -rf /run/tunbed/tbt-../../../../etc, that is /etc, as root on the host.
        status, err = self.down("[client]\n../../../../etc ansible_host=198.18.200.2 "
                                "tunbed_addr=198.18.1.2\n")
        self.assertEqual(status, 2, err)
        self.assertRegex(err, r"^tunbed: .*: bad host name '../../../../etc': .*\n$")
        self.assertEqual(self.calls(), [], "ssh was run")

    def test_down_refuses_a_bad_prefix(self):
        status, err = self.down(GOOD, prefix="../../../etc")
        self.assertEqual((status, err), (2, "tunbed: bad value '../../../etc' for --prefix: use "
                                            "1 to 15 letters, digits or '_'\n"))
        self.assertEqual(self.calls(), [], "ssh was run")

    def test_down_reaches_each_host_as_itself(self):
        # A 68-character name (a control socket named after it was too long for its path),
        # ssh options of the inventory, a user with a dot.
        fqdn = "s1-with-a-long-name-for-the-rack.cloud-zone-west-2a.internal.example"
        self.assertEqual(len(fqdn), 68)
        text = GOOD.replace("s1 ansible_host=198.18.200.14", f"{fqdn} ansible_port=2222") \
            .replace("ansible_user=root", "ansible_user=b.ench\nansible_ssh_common_args="
                     "'-o StrictHostKeyChecking=yes -4'")
        status, err = self.down(text)
        self.assertEqual(status, 0, err)
        calls = self.calls()
        self.assertTrue(calls)
        want_hosts = {"198.18.200.2", fqdn}
        ctls = set()
        for c in calls:
            self.assertIn(c["host"], want_hosts, c["argv"])
            # -- before the destination: nothing after it is an option.
            i = c["argv"].index(c["host"])
            self.assertEqual(c["argv"][i - 1], "--", c["argv"])
            ctl = fake_ssh.option(c["opts"], "ControlPath")
            self.assertNotIn(c["host"], ctl)
            self.assertNotIn("s1-with", ctl)
            ctls.add((c["host"], ctl))
            opts = [tuple(o) for o in c["opts"]]
            self.assertIn(("-p", "2222" if c["host"] == fqdn else "22"), opts)
            self.assertIn(("-l", "b.ench"), opts)
        self.assertEqual(len({ctl for _, ctl in ctls}), 2, ctls)
        rm = [c["command"] for c in calls if c["command"] and c["command"][0].startswith("rm -rf")]
        self.assertEqual(sorted(rm), [["rm -rf /run/tunbed/tbt-c1"],
                                      [f"rm -rf /run/tunbed/tbt-{fqdn}"]])

    def test_argv_puts_the_destination_after_double_dash(self):
        spec = inventory.HostSpec(name="c1", role="client", address="198.18.200.2",
                                  ssh_args=["-o", "X=y"])
        h = hosts.Ssh(spec, "tb", self.dir)
        opts, host, command = fake_ssh.parse(h.argv(["echo", "-x"])[1:])
        self.assertEqual((host, command), ("198.18.200.2", ["echo -x"]))
        self.assertIn(("-o", "X=y"), opts)
        for bad in ("-oProxyCommand=touch y", "x; y", "a b"):
            with self.subTest(bad=bad):
                spec.address = bad
                with self.assertRaises(inventory.InventoryError):
                    hosts.Ssh(spec, "tb", self.dir)
        spec.address = "198.18.200.2"
        spec.name = "../x"
        with self.assertRaises(inventory.InventoryError):
            hosts.Ssh(spec, "tb", self.dir)
        spec.name = "c1"
        with self.assertRaises(inventory.InventoryError):
            hosts.Ssh(spec, "../x", self.dir)

    def test_pids_reported_by_a_host(self):
        for text, want in (("1234\n", 1234), ("0", None), ("1", None), ("-1", None),
                           ("²", None), ("", None), ("12 34", None), ("99999999", None)):
            self.assertEqual(rundir.pid_of(text), want, text)


@contextlib.contextmanager
def process(argv0=None):
    """A sleeping process of ours (its argv[0] argv0), ended after."""
    cmd = ["bash", "-c", f'exec -a "{argv0}" sleep 60'] if argv0 else ["sleep", "60"]
    p = subprocess.Popen(cmd)
    want = (argv0 or "sleep").encode() + b"\0"
    try:
        # Until the exec is over: a process in the middle of one has an empty command line
        # (not bash's any more, not yet the new program's).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(f"/proc/{p.pid}/cmdline", "rb") as f:
                if f.read().startswith(want):
                    break
            time.sleep(0.01)
        else:
            raise AssertionError(f"{cmd}: not started within 30 s")
        yield p
    finally:
        p.kill()
        p.wait()


class State(unittest.TestCase):
    """`tunbed down`'s state: root's, under /run/tunbed, never /tmp; its pids' processes ended
    only while they are what a run starts."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="tunbed-state-")
        self.addCleanup(shutil.rmtree, self.root)
        os.chmod(self.root, 0o755)
        self.run_root = os.path.join(self.root, "run-tunbed")
        patcher = mock.patch.object(rundir, "ROOT", self.run_root)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.prefix = f"tbst{os.getpid()}"

    def test_a_pids_file_in_tmp_is_not_trusted(self):
        # Any user can make /tmp/tunbed-failover-PREFIX-*/pids; the word after the PID was
        # what the command line had to contain.
        planted = tempfile.mkdtemp(prefix=f"tunbed-failover-{self.prefix}-")
        self.addCleanup(shutil.rmtree, planted)
        with process() as p:
            with open(os.path.join(planted, "pids"), "w") as f:
                f.write(f"{p.pid} sleep\n")
            pair.down(self.prefix)
            self.assertIsNone(p.poll(), "down signalled a process a file in /tmp named")
        self.assertTrue(os.path.exists(planted))

    def test_only_what_a_run_starts_in_its_namespaces_is_ended(self):
        d = rundir.make(pair.FAILOVER_STATE, self.prefix)
        self.assertEqual(stat.S_IMODE(os.lstat(d).st_mode), 0o700)
        self.assertTrue(d.startswith(os.path.join(self.run_root, "failover", self.prefix + "-")))
        own = os.stat("/proc/self/ns/net")
        with process() as other, process(GREGW) as gregw, process(GREGW) as elsewhere:
            with open(os.path.join(d, "pids"), "w") as f:
                f.write(f"{other.pid} sleep\n{gregw.pid} {GREGW}\n1 init\n0\n-1\n²\nx y\n")
            # The namespaces: gregw "in" one of the prefix's (this test's own, given as one);
            # elsewhere is not in the file, other is not a program of the run.
            with mock.patch.object(pair, "namespaces", return_value={(own.st_dev, own.st_ino)}):
                self.assertEqual(pair.down(self.prefix), 1)
            gregw.wait(10)
            self.assertIsNone(other.poll(), "a process that is not the run's was signalled")
            self.assertIsNone(elsewhere.poll())
        self.assertFalse(os.path.exists(d), "its directory is left")
        # Not in one of the prefix's namespaces: left alone.
        d = rundir.make(pair.FAILOVER_STATE, self.prefix)
        with process(GREGW) as gregw:
            with open(os.path.join(d, "pids"), "w") as f:
                f.write(f"{gregw.pid} gregw\n")
            with mock.patch.object(pair, "namespaces", return_value=set()):
                self.assertEqual(pair.down(self.prefix), 0)
            self.assertIsNone(gregw.poll())

    def test_a_directory_that_others_can_write_is_skipped(self):
        own = os.stat("/proc/self/ns/net")
        with process(GREGW) as gregw, \
                mock.patch.object(pair, "namespaces", return_value={(own.st_dev, own.st_ino)}):
            for how in ("mode", "link", "file", "owner", "root"):
                with self.subTest(how=how):
                    d = rundir.make(pair.FAILOVER_STATE, self.prefix)
                    pids = os.path.join(d, "pids")
                    with open(pids, "w") as f:
                        f.write(f"{gregw.pid} gregw\n")
                    undo = None
                    if how == "mode":
                        os.chmod(d, 0o777)
                    elif how == "link":
                        undo = os.path.join(self.root, "elsewhere")
                        os.rename(d, undo)
                        os.symlink(undo, d)
                    elif how == "file":
                        os.chmod(pids, 0o666)
                    elif how == "root":
                        os.chmod(self.run_root, 0o777)
                    uid = os.geteuid() + (1 if how == "owner" else 0)
                    with mock.patch.object(os, "geteuid", return_value=uid):
                        self.assertEqual(pair.down(self.prefix), 0)
                    self.assertIsNone(gregw.poll())
                    os.chmod(self.run_root, 0o711)
                    for p in (d, undo):
                        if p and os.path.islink(p):
                            os.unlink(p)
                        elif p:
                            shutil.rmtree(p, ignore_errors=True)

    def test_a_state_root_that_others_can_write_is_refused(self):
        os.makedirs(self.run_root)
        os.chmod(self.run_root, 0o777)
        with self.assertRaises(hosts.Failure) as e:
            rundir.make(pair.FAILOVER_STATE, self.prefix)
        self.assertRegex(str(e.exception), r"run-tunbed: mode 0777: not trusted with the state "
                                           r"of a run \(only root may write it\)$")


# The property test's values: each variable's good values and hostile ones.
NAMES = ["c1", "gw-a.example.net", "s_1", "198.18.200.2", "../../../../etc", "-oProxyCommand=x",
         "a b", "c%1", "a" * 240, "é", "", ".hidden", "a..b", "a-", "$(id)", "{{ x }}", "c1\nc2",
         "x" * 239, "2001:2::1", "-", "_", "1.2.3"]
ADDRS = ["198.18.1.2", "198.18.3.2", "198.18.1.2/24", "2001:2::5", "10.0.0.1", "fe80::1%eth0",
         "x; touch y", "-oProxyCommand=x", "", "1.2.3", "²", " 198.18.1.9 ", "198.18.1.0/24",
         "198.19.0.1/24", "::ffff:198.18.1.2", None, 7, [1], {"a": 1}, True, 1.5]
HOSTS = ["198.18.200.2", "host.example", "-oProxyCommand=x", "x; y", "a b", "%h", "1.2.3",
         "a" * 64 + ".example", "h_1", "-", "fe80::1%2", None, 3, "[::1]", "::1", "é.example"]
PORTS = [22, 2222, -1, 0, 65535, 65536, 99999, 22.7, "22", "²", " 22", True, [1, 2], {"a": 1},
         None, "0x16", "022", "65535", "1e3"]
SSH_ARGS = ["-o X=y", "-o \"x", "evil", "--", "-S /tmp/x", "-oProxyCommand=nc %h %p", "-p",
            "-46", "-E /x", "-o", "-4 -o A=b -i k", "", None, ["-o"], "-Z", "-vvv", "-l root x",
            "-W h:1", "-J jump.example", "- x"]
IFACES = ["eth0", "lan-a", "a b", "x/y", "-x", "a" * 16, ".", "..", "lan:1", "é", "", None,
          "tunnel0", 5, ["eth0"], "a\tb"]
BOOLS = [True, False, "yes", "no", "maybe", [], None, 1, 0, 2, "TRUE", "on", {"x": 1}]
TEXT = ["root", "bench.user", "root; id", "a\nb", "", None, 0, 1000, ["x"], "-x", "é",
        "/opt/tb", "/opt/../etc", "relative", "/opt/a\"b", "/", "x" * 5000, "sudo", "su",
        "system", "dir", "both"]
VARS = {"ansible_host": HOSTS, "ansible_port": PORTS, "ansible_user": TEXT,
        "ansible_ssh_private_key_file": TEXT, "ansible_ssh_common_args": SSH_ARGS,
        "ansible_ssh_extra_args": SSH_ARGS, "ansible_become": BOOLS,
        "ansible_become_method": TEXT, "ansible_become_user": TEXT, "tunbed_root": TEXT,
        "tunbed_install": TEXT, "tunbed_any_address": BOOLS, "tunbed_sample": BOOLS,
        "tunbed_reach": BOOLS, "tunbed_addr": ADDRS, "tunbed_gateway": ADDRS,
        "tunbed_iface": IFACES, "tunbed_transit_addr": ADDRS, "tunbed_transit_iface": IFACES,
        "tunbed_lan_addr": ADDRS, "tunbed_lan_prefix": ADDRS + ["198.18.1.0/24,198.18.2.0/24"],
        "tunbed_tunnel_addr": ADDRS}
GOOD_VARS = {"client": {"tunbed_addr": "198.18.1.2"}, "server": {"tunbed_addr": "198.18.3.2"},
             "gwa": {"tunbed_transit_addr": "198.18.0.1", "tunbed_lan_addr": "198.18.1.1",
                     "tunbed_lan_prefix": "198.18.1.0/24"},
             "gwb": {"tunbed_transit_addr": "198.18.0.2", "tunbed_lan_addr": "198.18.3.1",
                     "tunbed_lan_prefix": "198.18.3.0/24"}}


def generate(rng):
    """An inventory document as ansible-inventory gives it: mostly good values, each host with
    a few hostile ones, some wrapped as `!unsafe` values are."""
    groups, hostvars = {}, {}
    for role in inventory.ROLES:
        for _ in range(rng.choice((0, 1, 1, 1, 2))):
            name = rng.choice(NAMES) if rng.random() < 0.2 else f"{role}{rng.randrange(99)}"
            groups.setdefault(role, []).append(name)
            v = dict(GOOD_VARS[role])
            for var in rng.sample(sorted(VARS), rng.choice((0, 0, 0, 1, 1, 2, 3))):
                v[var] = rng.choice(VARS[var])
                if rng.random() < 0.1:
                    v[var] = {"__ansible_unsafe": v[var]}
            hostvars[name] = v
    return {"_meta": {"hostvars": hostvars}, **{g: {"hosts": h} for g, h in groups.items()}}


def holds(test, hosts_, path):
    """Every rule of docs/hosts.md in what the reader returned."""
    for h in hosts_.all():
        test.assertTrue(inventory.is_host_name(h.name), h.name)
        test.assertTrue(inventory.is_ssh_address(h.address) and not h.address.startswith("-"),
                        h.address)
        test.assertTrue(1 <= h.port <= 65535 and type(h.port) is int, h.port)
        for iface in (h.iface, h.transit_iface):
            test.assertTrue(iface == "" or inventory.is_ifname(iface), iface)
        test.assertTrue(h.root.startswith("/") and ".." not in h.root.split("/"), h.root)
        for a in (h.addr, h.gateway, h.transit_addr, h.lan_addr):
            if a:
                inventory.ipaddress.ip_address(a)
        for net in filter(None, h.lan_prefix.split(",") + [h.tunnel_addr]):
            inventory.ipaddress.ip_interface(net)
        # What ssh is given: the destination after --, the inventory's options before it.
        ssh = hosts.Ssh(h, "tb", "/nonexistent")
        opts, host, command = fake_ssh.parse(ssh.argv(["true"])[1:])
        test.assertEqual((host, command), (h.address, [ssh.remote(["true"])]))
        test.assertFalse([f for f, _ in opts if f[1] in inventory.SSH_TUNBEDS], opts)


def refused_well(test, e):
    msg = str(e)
    test.assertNotIn("\n", msg)
    test.assertLessEqual(len(msg), 400, msg)
    test.assertNotIn("__ansible_unsafe", msg)


class Property(unittest.TestCase):
    """Generated documents: refused in one line, or read into values that hold every rule."""

    def check(self, doc, path="gen.yml", parse=None):
        try:
            if parse:
                got = parse()
            else:
                groups, hostvars = inventory.shape(inventory.unwrap(doc), path)
                got = inventory.hosts_of(groups, hostvars, path, ())
        except inventory.InventoryError as e:
            refused_well(self, e)
            return False
        holds(self, got, path)
        return True

    def test_documents(self):
        rng = random.Random(SEED)
        read = 0
        for i in range(3000):
            doc = generate(rng)
            with self.subTest(i=i, doc=doc):
                read += self.check(doc)
        # The generator must reach both sides, or the property proves little.
        self.assertGreater(read, 300)
        self.assertLess(read, 2700)

    def test_documents_through_ansible(self):
        rng = random.Random(SEED + 1)
        d = tempfile.mkdtemp(prefix="tunbed-inv-prop-")
        self.addCleanup(shutil.rmtree, d)
        read = 0
        for i in range(16):
            doc = generate(rng)
            path = write(yaml_of(doc) if i % 2 else ini_of(doc), ".yml" if i % 2 else ".ini",
                         dir=d)
            with self.subTest(i=i, text=open(path).read()):
                read += self.check(doc, path, lambda: inventory.parse(path, ()))
        self.assertGreater(read, 0)


def yaml_of(doc):
    """The document as a YAML inventory (JSON's scalars are YAML's), `!unsafe` where the
    document wraps a value."""
    def scalar(v):
        if isinstance(v, dict) and "__ansible_unsafe" in v:
            inner = v["__ansible_unsafe"]
            return f"!unsafe {json.dumps(inner)}" if isinstance(inner, str) else json.dumps(inner)
        return json.dumps(v, ensure_ascii=False)
    out = []
    for g, v in doc.items():
        if g == "_meta":
            continue
        out.append(f"{g}:\n  hosts:\n")
        for h in v["hosts"]:
            out.append(f"    {json.dumps(h)}:\n")
            for k, x in doc["_meta"]["hostvars"][h].items():
                out.append(f"      {k}: {scalar(x)}\n")
    return "".join(out) or "{}\n"


def ini_of(doc):
    """The document as an INI inventory, each value as a shell would quote it (Ansible splits
    a host's line with shlex)."""
    out = []
    for g, v in doc.items():
        if g == "_meta":
            continue
        out.append(f"[{g}]\n")
        for h in v["hosts"]:
            words = [h.replace("\n", " ")]
            for k, x in doc["_meta"]["hostvars"][h].items():
                x = inventory.unwrap(x)
                text = x if isinstance(x, str) else json.dumps(x)
                if text != text.strip() or " " in text:
                    text = json.dumps(text)
                words.append(f"{k}={text}".replace("\n", "\\n"))
            out.append(" ".join(words) + "\n")
    return "".join(out)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    unittest.main()
