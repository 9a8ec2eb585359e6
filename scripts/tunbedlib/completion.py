"""Bash completion for tunbed, made from the command line parser (cli.parser): its commands,
each command's options, an option's choices where it has any and file names for the other
values and for the arguments. No list of its own: a new option completes once the package is
made again (packaging/CMakeLists.txt runs this when it installs):

    python3 -m tunbedlib.completion OUT"""

import argparse
import shlex
import sys

from . import cli
from .manpage import commands

HEAD = """\
# bash completion for tunbed: its commands and their options, made from its command line parser
# (tunbedlib/completion.py).
_tunbed() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev='' cmd='' i opts='' values='' words='' args=''
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	# The command is the first word that is not an option (tunbed's own take no value).
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	# opts: the command's options; values: those that take a value; args: whether it takes
	# arguments (file names); words: the choices after an option that has some.
	case $cmd in
"""

TAIL = """\
	*) return 0 ;;
	esac
	if [ -n "$words" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
	elif [[ " $values " == *" $prev "* ]] || { [[ $cur != -* ]] && [ -n "$args" ]; }; then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	else
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	fi
}
complete -F _tunbed tunbed
"""


def case(pattern, p, names=()):
    """The case branch of one parser: its options, those that take a value, its arguments,
    and the choices of each option that has them (names: the subcommands, which are the
    choices of tunbed's first word)."""
    opts = [o for a in p._actions for o in a.option_strings if a.help != argparse.SUPPRESS]
    values = [o for a in p._actions if a.option_strings and a.nargs != 0
              for o in a.option_strings]
    args = [a for a in p._actions if not a.option_strings
            and not isinstance(a, argparse._SubParsersAction)]
    lines = [f"\t{pattern})",
             f"\t\topts={shlex.quote(' '.join(opts))} values={shlex.quote(' '.join(values))}"
             f"{' args=1' if args else ''}"]
    choices = [(a.option_strings, a.choices) for a in p._actions
               if a.option_strings and a.choices]
    if choices:
        lines.append("\t\tcase $prev in")
        for strings, words in choices:
            lines.append(f"\t\t{'|'.join(strings)}) "
                         f"words={shlex.quote(' '.join(map(str, words)))} ;;")
        lines.append("\t\tesac")
    if names:
        # tunbed's first word: a command, unless an option is being typed.
        lines.append(f"\t\t[[ $cur == -* ]] || words={shlex.quote(' '.join(names))}")
    return lines + ["\t\t;;"]


def script(ap=None):
    ap = ap or cli.parser()
    sub = commands(ap)
    names = list(sub.choices) if sub else []
    lines = case('""', ap, names)
    for name, p in (sub.choices.items() if sub else ()):
        lines += case(shlex.quote(name), p)
    return HEAD + "\n".join(lines) + "\n" + TAIL


def main(argv):
    if len(argv) != 1:
        print("usage: python3 -m tunbedlib.completion OUT", file=sys.stderr)
        return 2
    with open(argv[0], "w") as f:
        f.write(script())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
