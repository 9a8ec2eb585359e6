#!/usr/bin/python3
"""A stand-in for OpenSSH's ssh, first in PATH in the inventory tests: it reads its arguments
as ssh reads them (ssh.c's getopt loop: options, the destination, options again unless `--`
came first, then the command), logs what it understood as one JSON line to $FAKE_SSH_LOG, and
acts a host that accepts everything: a master (ControlMaster=yes) makes its control socket
(as a file) and holds it until its standard input ends, `-O check` answers for a socket that
exists, `id -u` prints 0, any other command succeeds and prints nothing. ControlPath is
expanded and bounded as ssh does: an unknown `%` token, or a path too long for a socket
(ssh adds 17 characters to it while it binds), fails as ssh fails (exit 255)."""

import getopt
import json
import os
import sys

FLAGS = "1246AaCfGgKkMNnqsTtVvXxYy"
WITH_ARG = "BbcDEeFIiJLlmOoPpQRSWw"
OPTSTRING = FLAGS + "".join(c + ":" for c in WITH_ARG)
SUN_PATH = 108  # sizeof(struct sockaddr_un.sun_path)
TOKENS = "%CdhikLlnprTu"


def parse(argv):
    """(options [(flag, argument)], destination, command words) as ssh reads argv (without
    argv[0]); ValueError where ssh would print its usage."""
    opts, host, args, terminated = [], None, list(argv), False
    while True:
        try:
            got, rest = getopt.getopt(args, OPTSTRING)
        except getopt.GetoptError as e:
            raise ValueError(str(e)) from None
        opts += got
        used = len(args) - len(rest)
        if used and args[used - 1] == "--":
            terminated = True
        if host is not None:
            return opts, host, rest
        if not rest:
            raise ValueError("no destination")
        host, args = rest[0], rest[1:]
        if not args or terminated:
            return opts, host, args


def option(opts, name):
    """An -o option's value as ssh takes it: the first one given."""
    for flag, arg in opts:
        if flag == "-o":
            key, _, value = arg.partition("=")
            if key.strip().lower() == name.lower():
                return value.strip()
    return None


def expand(path, host):
    out, i = "", 0
    while i < len(path):
        c = path[i]
        if c == "%":
            if i + 1 == len(path) or path[i + 1] not in TOKENS:
                raise ValueError(f"percent_expand: unknown key %{path[i + 1:i + 2]}")
            out += "%" if path[i + 1] == "%" else f"[{path[i + 1]}:{host}]"
            i += 2
            continue
        out += c
        i += 1
    return out


def main():
    try:
        opts, host, command = parse(sys.argv[1:])
    except ValueError as e:
        print(f"usage: ssh: {e}", file=sys.stderr)
        return 255
    with open(os.environ["FAKE_SSH_LOG"], "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "opts": opts, "host": host,
                            "command": command}) + "\n")
    ctl = option(opts, "ControlPath")
    if ctl:
        try:
            ctl = expand(ctl, host)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 255
        if len(ctl) + 17 >= SUN_PATH:
            print(f'ControlPath "{ctl}.XXXXXXXXXXXXXXXX" too long for Unix domain socket',
                  file=sys.stderr)
            return 255
    if option(opts, "ControlMaster") == "yes":
        open(ctl, "w").close()
        sys.stdin.read()
        os.unlink(ctl)
        return 0
    if ("-O", "check") in opts:
        return 0 if ctl and os.path.exists(ctl) else 255
    if command == ["id -u"]:
        print(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
