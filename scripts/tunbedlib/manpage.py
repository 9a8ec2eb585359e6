"""tunbed(1), made from the command line parser (cli.parser) with argparse's own help texts,
defaults included, so that the page says what --help says: every command's usage,
description and options, and the exit statuses (the top-level parser's epilog). The Debian package makes it when it is installed
(packaging/CMakeLists.txt):

    python3 -m tunbedlib.manpage OUT.1.gz"""

import argparse
import gzip
import os
import re
import sys

from . import cli, common


def roff(text):
    """text as one roff line: backslashes and hyphens escaped (a hyphen in an option's name
    must stay a minus to be copied), a line that would start as a request guarded."""
    text = " ".join(text.split()).replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def commands(ap):
    """The subcommands' action of ap, or None."""
    return next((a for a in ap._actions if isinstance(a, argparse._SubParsersAction)), None)


def usage(p):
    """p's usage without "usage: " and the command's name: "[-h] [--time S]"."""
    text = " ".join(p.format_usage().split())
    return text.removeprefix("usage: ").removeprefix(p.prog).strip()


def options(p):
    """.TP paragraphs, one an argument of p but its subcommands: the argument as --help
    shows it (bold), then its help with the default."""
    out, fmt = [], p._get_formatter()
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction) or a.help == argparse.SUPPRESS:
            continue
        name = fmt._format_action_invocation(a)
        out += [".TP", f"\\fB{roff(name)}\\fR" if a.option_strings else f"\\fI{roff(name)}\\fR",
                roff(fmt._expand_help(a)) if a.help else ""]
    return out


def page(ap=None):
    """The page's roff text."""
    ap = ap or cli.parser()
    summary = re.sub(r"^tunbed: ", "", (ap.description or "").split(". ")[0]).rstrip(".")
    sub = commands(ap)
    helps = {a.dest: a.help for a in sub._choices_actions} if sub else {}
    # .nh .ad l: no word of a usage line hyphenated, no line stretched.
    lines = [f'.TH TUNBED 1 "" "tunbed {common.version() or ""}" "User Commands"', ".nh",
             ".ad l",
             ".SH NAME", f"tunbed \\- {roff(summary)}",
             ".SH SYNOPSIS", ".B tunbed", roff(usage(ap)),
             ".SH DESCRIPTION", roff(ap.description or ""),
             ".SH OPTIONS", *options(ap)]
    if sub:
        lines += [".SH COMMANDS"]
        for name, p in sub.choices.items():
            lines += [f".SS {name}", f".B tunbed {name}", roff(usage(p)), ".PP",
                      roff(p.description or helps.get(name) or ""), *options(p)]
    if ap.epilog:  # the exit statuses: a heading line, then a status a line
        head, *statuses = ap.epilog.splitlines()
        lines += [f".SH {roff(head.rstrip(':').upper())}"]
        for line in statuses:
            n, text = line.split(None, 1)
            lines += [".TP", f"\\fB{roff(n)}\\fR", roff(text)]
    programs = [os.path.basename(p) for p in (common.GREGW, common.TRAFFIC, common.WIRE,
                                                common.TOPO, common.SAMPLE)]
    lines += [".SH SEE ALSO", ",\n".join(f".BR {roff(p)} (1)" for p in programs)]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 1:
        print("usage: python3 -m tunbedlib.manpage OUT.1.gz", file=sys.stderr)
        return 2
    # No time stamp in the file: the same parser makes the same bytes.
    with open(argv[0], "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", filename="",
                                                  mtime=0) as z:
        z.write(page().encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
