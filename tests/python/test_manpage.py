"""tunbed's man page and bash completion (scripts/tunbedlib/manpage.py, completion.py), made from
the command line parser: the page renders without a groff warning and has every command and
option with its --help text, and the exit statuses (as --help ends with them); the completion
offers every command and each command's options, file names for values and arguments. And the
runner installed from the Debian package (common.INSTALLED): bootstrap builds nothing,
provision refuses in one line, what to install says apt and the package, not a checkout's
commands."""

import contextlib
import gzip
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import bed as beds, cli, common, completion, manpage, runloop  # noqa: E402


def every_command():
    """{command: its parser} for tunbed's commands."""
    return dict(cli.parser().commands)


def option_strings(p):
    return [o for a in p._actions for o in a.option_strings]


class ManPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.roff = manpage.page()
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww"], input=cls.roff,
                           capture_output=True, text=True, env=os.environ | {"LC_ALL": "C.UTF-8"})
        cls.warnings, cls.text = p.stderr, p.stdout
        cls.status = p.returncode

    def test_renders_without_a_warning(self):
        self.assertEqual((self.status, self.warnings), (0, ""))

    def test_names_every_command_with_its_usage(self):
        for name, p in every_command().items():
            self.assertIn(f"\n.SS {name}\n.B tunbed {name}\n", self.roff)
            self.assertIn(manpage.roff(manpage.usage(p)), self.roff, name)

    def test_every_option_with_its_help_and_default(self):
        for name, p in every_command().items():
            fmt = p._get_formatter()
            for a in p._actions:
                if a.help:
                    self.assertIn(manpage.roff(fmt._expand_help(a)), self.roff,
                                  f"{name} {a.option_strings or a.dest}")
        self.assertIn("sessions per point, e.g. 1,8,64 (default 1,8,64", self.text)

    def test_exit_statuses_in_the_page_and_in_help(self):
        # Each status main() returns, in --help's epilog and the page's EXIT STATUS, a
        # paragraph each; the statuses are those main() returns (bad input 2, a failure 1).
        self.assertEqual([n for n, _ in cli.EXIT_STATUSES], [0, 1, 2, 130])
        section = self.roff[self.roff.index("\n.SH EXIT STATUS\n"):
                            self.roff.index("\n.SH SEE") + 1]
        for n, text in cli.EXIT_STATUSES:
            self.assertIn(f"\n.TP\n\\fB{n}\\fR\n{manpage.roff(text)}\n", section)
        self.assertRegex(re.sub(".\x08", "", self.text), r"\nEXIT STATUS\n +0 +success")  # bold
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
            cli.main(["--help"])
        help_text = out.getvalue()
        self.assertIn("\nexit status:\n0    success (diff: no point slower)\n1    a failure: ",
                      help_text)
        self.assertIn("\n130  interrupted (Ctrl-C or SIGTERM)", help_text)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(cli.main(["report", "/nonexistent"]), 2)

    def test_a_line_that_would_be_a_request_is_text(self):
        self.assertEqual(manpage.roff(".topo and 'x' -- \\n"), "\\&.topo and 'x' \\-\\- \\en")

    def test_the_file_is_gzip_the_same_bytes_each_time(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.1.gz"), os.path.join(tmp, "b.1.gz")
            self.assertEqual(manpage.main([a]), 0)
            self.assertEqual(manpage.main([b]), 0)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read())
            with gzip.open(a, "rt") as f:
                self.assertEqual(f.read(), self.roff)


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.script = os.path.join(cls.tmp.name, "tunbed")
        completion.main([cls.script])
        for name in ("results", "ras.ini"):
            open(os.path.join(cls.tmp.name, name), "w").close()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def complete(self, *lines):
        """For each line of words, what completing its last word offers (a set), in one bash."""
        body = "".join("t " + " ".join(f"'{w}'" for w in words) + "\n" for words in lines)
        p = subprocess.run(
            ["bash", "-c", 'source "$1"\nt() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
             '_tunbed; echo "${COMPREPLY[*]}"; }\n' + body, "-", self.script],
            capture_output=True, text=True, cwd=self.tmp.name)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        return [set(line.split()) for line in p.stdout.splitlines()]

    def test_the_brief_s_two(self):
        r, ses = self.complete(["tunbed", "r"], ["tunbed", "ras", "--ses"])
        self.assertEqual(r, {"ras", "report", "run"})
        self.assertEqual(ses, {"--sessions"})

    def test_every_command_and_every_option(self):
        commands = every_command()
        lines = [["tunbed", ""], ["tunbed", "--"]]
        lines += [["tunbed", name, o] for name, p in commands.items() for o in option_strings(p)]
        got = self.complete(*lines)
        self.assertEqual(got[0], set(commands))
        self.assertEqual(got[1], {"--help", "--version"})
        for words, offered in zip(lines[2:], got[2:]):
            self.assertIn(words[-1], offered, words)

    def test_values_and_arguments_are_file_names(self):
        got = self.complete(["tunbed", "ras", "--results", "re"], ["tunbed", "run", "ra"],
                            ["tunbed", "ras", "--time", "8", "--wa"], ["tunbed", "ras", ""])
        self.assertEqual(got[:3], [{"results"}, {"ras.ini"}, {"--warmup"}])
        # A command without arguments offers its options.
        self.assertIn("--sessions", got[3])

    def test_shellcheck(self):
        p = subprocess.run(["shellcheck", "-s", "bash", self.script], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stdout)


class Installed(unittest.TestCase):
    """The runner of the Debian package (unit/package runs it unpacked)."""

    def test_bootstrap_installs_without_the_build_and_builds_nothing(self):
        for build in (True, False):
            with mock.patch.object(runloop, "INSTALLED", True), \
                    mock.patch.object(runloop.subprocess, "run") as run:
                run.return_value.returncode = 0
                runloop.bootstrap(["ras", "failover"], build=build)
            self.assertEqual(run.call_args[0][0][1:], ["--for", "ras,failover", "--installed"])

    def test_what_to_install_says_how_where_installed(self):
        # The plots' package: apt, not a checkout's bootstrap, for an installed runner.
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "runs"))
            with open(os.path.join(HERE, "data", "run-gregw-s1.json")) as f, \
                    open(os.path.join(d, "runs", "x-r1.json"), "w") as out:
                out.write(f.read())
            for installed, want in ((True, "apt install python3-matplotlib"),
                                    (False, "run scripts/bootstrap --no-build as root")):
                with mock.patch.object(common, "INSTALLED", installed), \
                        mock.patch.object(cli.importlib.util, "find_spec", return_value=None), \
                        mock.patch("os.geteuid", return_value=1000), \
                        contextlib.redirect_stderr(io.StringIO()) as err:
                    self.assertEqual(cli.main(["report", d]), 1)
                self.assertEqual(err.getvalue(), f"tunbed: the plots need python3-matplotlib: "
                                 f"{want} (or this command with sudo) to install it\n")
                self.assertEqual(os.listdir(d), ["runs"])
        # A host without this build: provision from a checkout, the package where installed.
        with mock.patch.object(common, "INSTALLED", False):
            self.assertEqual(beds.put_build("hosts.ini"),
                             "run scripts/tunbed provision --hosts hosts.ini")
        with mock.patch.object(common, "INSTALLED", True), \
                mock.patch.object(common, "version", return_value="0.1.0+b1"):
            self.assertEqual(beds.put_build("hosts.ini"), "install on it the package this "
                             "tunbed came from, tunbed 0.1.0+b1, with apt")

    def test_provision_refuses_before_it_installs_anything(self):
        with mock.patch.object(common, "INSTALLED", True), \
                mock.patch.object(runloop, "bootstrap") as bootstrap, \
                mock.patch("os.geteuid", return_value=0), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            status = cli.main(["provision", "--hosts", "hosts.ini"])
        self.assertEqual(status, 1)
        bootstrap.assert_not_called()
        self.assertEqual(len(err.getvalue().splitlines()), 1)
        self.assertIn("install it on each host", err.getvalue())


if __name__ == "__main__":
    unittest.main()
