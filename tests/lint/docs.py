#!/usr/bin/python3
"""Docs lint: the statements of the Markdown files that the code can contradict, checked
against the code (docs/testing.md, "lint"). Usage: docs.py SOURCE_DIR BIN_DIR (BIN_DIR holds
the built gregw and the other programs, whose --help it reads). Fails, one line per finding
(FILE:LINE: what), when:

- a folder's module table does not list exactly its source files: every folder with C files
  (its README.md, common's in docs/common.md), and any README.md with a table whose first
  column is "module" (.c, .h and .py files, a module's .c and .h by either name, a subfolder
  by `name/`) or "file" (every file but README.md);
- the gregw modes differ: gregw --help's --encap values against the runner's ENCAPS,
  each option's gregw flags in the runner's table OPTIONS (drivers/gregw.py) against --help, and the
  docs' mode lists (a sentence or table cell naming four or more of the options must name
  them all; fewer is a subset, such as failover's), mode names (gre+seq) and "`+option`
  (`--flag value`)" remarks against both;
  docs/gregw.md must name every option of --help, give an option with listed values only
  those values, and name no option that no tunbed program has;
- a relative link in any .md does not resolve: its file, and its #anchor by GitHub's rules
  (headings, <a id>);
- a docs/*.md is not linked from README.md;
- a record format stated in the docs differs from the code's (each kind's FORMAT in
  scripts/tunbedlib/kinds/: "FORMAT in kinds/K.py (today N)", "`kind` K, format N", and the
  matrix's and intranet's formats in RECORD_DOCS);
- a doc but benchmarks.md says "this kernel" or "this VM": one machine's facts go to
  benchmarks.md, which names the machine."""

import collections
import os
import re
import subprocess
import sys
import urllib.parse

# The docs that state a kind's record format, and the kind.
RECORD_DOCS = {"docs/testing.md": "matrix", "docs/runner.md": "matrix",
               "docs/intranet.md": "intranet"}
# Where a C folder's module table lives when not in its README.md: docs/common.md is common's
# module table with each module's contract.
TABLE_HOME = {"common": "docs/common.md"}
MODULE_EXT = (".c", ".h", ".py")
SKIP_DIRS = ("__pycache__",)

findings = []


def report(path, line, what):
    findings.append((path, line, what))


def read(top, rel):
    with open(os.path.join(top, rel), encoding="utf-8") as f:
        return f.read()


def markdown_files(top):
    """Every .md of the tree that git would track (.gitignore'd build trees left out)."""
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "--cached", "--others",
                              "--exclude-standard", "--", "*.md"], check=True,
                             capture_output=True, text=True).stdout.split()
        return sorted(p for p in out if os.path.isfile(os.path.join(top, p)))
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, names in os.walk(top):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build", "results"))
                       and x not in SKIP_DIRS]
            out += [os.path.relpath(os.path.join(d, n), top) for n in names if n.endswith(".md")]
        return sorted(out)


# Markdown: code blocks, headings, links


FENCE = re.compile(r"^\s*(```|~~~)")


def blank_code(text):
    """text with fenced blocks and inline code spans turned into blanks, newlines and offsets
    kept, so that what looks like a link or a heading inside code is neither."""
    lines, out, fence = text.split("\n"), [], None
    for line in lines:
        m = FENCE.match(line)
        if fence:
            out.append(" " * len(line))
            if m and m.group(1) == fence:
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(" " * len(line))
            continue
        out.append(line)
    text = "\n".join(out)
    return re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def slug(heading):
    """GitHub's anchor of a heading (github-slugger): the text as rendered, lower case,
    punctuation but '-' and '_' dropped, each blank a '-'."""
    t = re.sub(r"<[^>]+>", "", heading)
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = t.replace("`", "").replace("**", "").replace("*", "")
    t = re.sub(r"(?<!\w)_+|_+(?!\w)", "", t)  # emphasis, not snake_case
    return re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-")


_anchor_cache = {}


def anchors(top, rel):
    if rel not in _anchor_cache:
        raw = read(top, rel)
        text, seen, out = blank_code(raw), collections.Counter(), set()
        for m in re.finditer(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", text, re.M):
            # The heading's own text, code spans included, from the raw file.
            s = slug(raw[m.start(2):m.end(2)])
            out.add(s if not seen[s] else f"{s}-{seen[s]}")
            seen[s] += 1
        out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
        _anchor_cache[rel] = out
    return _anchor_cache[rel]


LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)


def links(top, rel):
    """(line, target) of every link of a Markdown file, outside code."""
    text = blank_code(read(top, rel))
    out = [(line_of(text, m.start()), m.group(2)) for m in LINK.finditer(text)]
    out += [(line_of(text, m.start()), m.group(1)) for m in REF_DEF.finditer(text)]
    return out


def resolve(top, rel, target):
    """(path relative to top or None for another file's URL, anchor) of a link target."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return None, None
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path)
    if not path:
        return rel, anchor
    base = top if path.startswith("/") else os.path.join(top, os.path.dirname(rel))
    full = os.path.normpath(os.path.join(base, path.lstrip("/")))
    return os.path.relpath(full, top), anchor


def check_links(top, mds):
    for rel in mds:
        for line, target in links(top, rel):
            path, anchor = resolve(top, rel, target)
            if path is None:
                continue
            if path.startswith("..") or not os.path.exists(os.path.join(top, path)):
                report(rel, line, f"link to {target}: no such file")
            elif anchor and path.endswith(".md") and anchor not in anchors(top, path):
                report(rel, line, f"link to {target}: no heading or <a id> '{anchor}' in "
                       f"{path}")


def check_docs_linked(top):
    linked = {resolve(top, "README.md", t)[0] for _, t in links(top, "README.md")}
    docs = sorted(f for f in os.listdir(os.path.join(top, "docs")) if f.endswith(".md"))
    for f in docs:
        if f"docs/{f}" not in linked:
            report("README.md", 1, f"docs/{f} is not linked from the README")


# Module tables


def split_row(line):
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]] if len(cells) > 2 else []


def module_tables(text):
    """(kind, [(line, entry)]) of every table whose first column is module(s) or file(s)."""
    lines, out, i = blank_fences(text).split("\n"), [], 0
    while i < len(lines):
        head = split_row(lines[i]) if lines[i].lstrip().startswith("|") else []
        if head and head[0].lower() in ("module", "modules", "file", "files") and \
                i + 1 < len(lines) and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            kind, entries, i = head[0].lower().rstrip("s"), [], i + 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                row = split_row(lines[i])
                for span in re.findall(r"`([^`]+)`", row[0] if row else ""):
                    entries.append((i + 1, span.split()[0]))
                i += 1
            out.append((kind, entries))
        else:
            i += 1
    return out


def blank_fences(text):
    lines, out, fence = text.split("\n"), [], None
    for line in lines:
        m = FENCE.match(line)
        if fence or m:
            out.append("")
            if fence and m and m.group(1) == fence:
                fence = None
            elif not fence:
                fence = m.group(1)
            continue
        out.append(line)
    return "\n".join(out)


def folder_files(top, folder, kind):
    out = set()
    for d, dirs, names in os.walk(os.path.join(top, folder)):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in SKIP_DIRS]
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), os.path.join(top, folder))
            if (kind == "module" and n.endswith(MODULE_EXT)) or \
                    (kind == "file" and rel != "README.md"):
                out.add(rel)
    return out


def covers(entry, name):
    if entry.endswith("/"):
        return name.startswith(entry)
    stem, ext = os.path.splitext(entry)
    if ext in (".c", ".h"):
        return name in (stem + ".c", stem + ".h")
    return name == entry


def check_table(top, folder, doc, tables):
    for kind, entries in tables:
        files = folder_files(top, folder, kind)
        for line, e in entries:
            if not any(covers(e, f) for f in files):
                report(doc, line, f"the {kind} table names {e}, which is not in {folder}/")
        for f in sorted(files):
            if not any(covers(e, f) for _, e in entries):
                report(doc, 1, f"the {kind} table misses {folder}/{f}")


def check_module_tables(top, mds):
    c_folders = sorted(d for d in os.listdir(top)
                       if os.path.isdir(os.path.join(top, d)) and d != "tests"
                       and not d.startswith((".", "build"))
                       and any(n.endswith(".c") for n in os.listdir(os.path.join(top, d))))
    done = set()
    for folder in c_folders:
        doc = TABLE_HOME.get(folder, f"{folder}/README.md")
        if not os.path.isfile(os.path.join(top, doc)):
            report(doc, 1, f"{folder}/ has C files and no {doc} with a module table")
            continue
        tables = [t for t in module_tables(read(top, doc)) if t[0] == "module"]
        if not tables:
            report(doc, 1, f"no module table (a table whose first column is 'module') of "
                   f"{folder}/")
        check_table(top, folder, doc, tables)
        done.add(doc)
    for rel in mds:
        if os.path.basename(rel) != "README.md" or rel in done or rel == "README.md":
            continue
        tables = module_tables(read(top, rel))
        if tables:
            check_table(top, os.path.dirname(rel), rel, tables)


# gregw's modes


def help_options(text):
    """{--option: its argument as --help writes it ('' for a flag)} from a program's help."""
    out = {}
    for m in re.finditer(r"^\s{1,4}(?:-\w, )?(--[a-z][a-z0-9-]*)(?:[ =]([^\s]+))?", text, re.M):
        out.setdefault(m.group(1), m.group(2) or "")
    return out


def listed_values(arg):
    """(the literal values, whether a number may stand instead) of an argument written a|b or
    a|N (N, a placeholder for a number); None for any other argument."""
    alts = arg.split("|")
    if len(alts) < 2 or not all(a.islower() or a.isupper() for a in alts):
        return None
    return {a for a in alts if not a.isupper()}, any(a.isupper() for a in alts)


def allows(values_of, opt, value):
    if opt not in values_of:
        return True
    literals, number = values_of[opt]
    return value in literals or (number and re.fullmatch(r"\d+", value) is not None)


def run_help(path):
    try:
        return subprocess.run([path, "--help"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def runner_modes(top):
    """ENCAPS, the option names and {option: [(file, line, gregw arguments)]} of the runner's
    gregw modes: the table OPTIONS of scripts/tunbedlib/drivers/gregw.py, imported."""
    rel = os.path.join("scripts", "tunbedlib", "drivers", "gregw.py")
    sys.path.insert(0, os.path.join(top, "scripts"))
    try:
        from tunbedlib.drivers import gregw as driver  # noqa: E402 (the tree being linted)
    except ImportError as e:
        report(rel, 1, f"cannot import the runner's gregw driver: {e}")
        return None, None, {}
    finally:
        sys.path.pop(0)
    line = next((i for i, t in enumerate(read(top, rel).splitlines(), 1)
                 if t.startswith("OPTIONS = ")), 1)
    mapping = {name: [(rel, line, list(o.flags))] for name, o in driver.OPTIONS.items()}
    return list(driver.ENCAPS), list(driver.OPTIONS), mapping


OPT_TOKEN = re.compile(r"(?<![\w+-])\+([a-z][a-z0-9]*)\b")
MODE_TOKEN = re.compile(r"(?<![\w@/-])(gre(?:-udp)?)((?:\+[a-z][a-z0-9]*)+)(?![\w-])")
REMARK = re.compile(r"`\+([a-z][a-z0-9]*)` \(`(--[^`]+)`")


def check_modes(top, bindir, mds):
    gregw = os.path.join(bindir, "gregw")
    text = run_help(gregw)
    opts = help_options(text)
    if "--encap" not in opts:
        report(gregw, 1, "gregw --help names no --encap (is gregw built?)")
        return
    values = {o: listed_values(a) for o, a in opts.items() if listed_values(a) is not None}
    encaps, options, mapping = runner_modes(top)
    if encaps is None or options is None:
        report("scripts/tunbedlib", 1, "no ENCAPS or OPTIONS in drivers/gregw.py")
        return
    if "--encap" not in values or set(encaps) != values["--encap"][0]:
        report("scripts/tunbedlib", 1, f"ENCAPS {sorted(encaps)} differ from gregw --help's "
               f"--encap {opts['--encap']}")
    flags_of = {}
    for o in options:
        if mapping.get(o) and not mapping[o][0][2]:
            flags_of[o] = ""  # an option of the bed's (+frames), no gregw flag
            continue
        if not mapping.get(o):
            report("scripts/tunbedlib", 1, f"mode option +{o}: no gregw flags found for it")
            continue
        for rel, line, args in mapping[o]:
            if args != mapping[o][0][2]:
                report(rel, line, f"+{o} gives gregw {' '.join(args)}, "
                       f"{mapping[o][0][0]}:{mapping[o][0][1]} {' '.join(mapping[o][0][2])}")
            if args[0] not in opts:
                report(rel, line, f"+{o} gives gregw {args[0]}, which gregw --help lacks")
            elif len(args) > 1 and not allows(values, args[0], args[1]):
                report(rel, line, f"+{o} gives gregw {args[0]} {args[1]}; --help allows "
                       f"{opts[args[0]]}")
        flags_of[o] = " ".join(mapping[o][0][2])
    for rel in mds:
        check_mode_text(top, rel, encaps, options, flags_of)
    check_gregw_md(top, bindir, opts, values)


def sentences(text):
    """(line, sentence) of a text's sentences and table cells, joined across line breaks."""
    out, start = [], 0
    for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z`(\[])|\n\s*\n|\||\n(?=\s*[-*] |\s*\d+\. )",
                         text):
        out.append((line_of(text, start), text[start:m.start()]))
        start = m.end()
    out.append((line_of(text, start), text[start:]))
    return out


def check_mode_text(top, rel, encaps, options, flags_of):
    raw = read(top, rel)
    text = re.sub(r"\]\([^)]*\)", "]", raw)  # link targets hold anchors such as #...+...
    if rel == "docs/benchmarks.md":
        return  # history: modes as they were when measured
    for m in MODE_TOKEN.finditer(text):
        bad = [o for o in m.group(2).split("+")[1:] if o not in options]
        if bad:
            report(rel, line_of(text, m.start()), f"mode {m.group(0)}: no option "
                   f"{', '.join('+' + b for b in bad)} in the runner's OPTIONS (drivers/gregw.py)")
    for line, s in sentences(blank_fences(text)):
        named = [o for o in OPT_TOKEN.findall(s) if o in options or re.search(
            r"`\+" + re.escape(o) + "`", s)]
        if len(set(named)) >= 4 and set(named) != set(options):
            missing = [o for o in options if o not in named]
            extra = sorted(set(named) - set(options))
            report(rel, line, "a list of gregw's mode options"
                   + (f" misses {', '.join('+' + o for o in missing)}" if missing else "")
                   + (f" names {', '.join('+' + o for o in extra)}, not in OPTIONS (drivers/gregw.py)"
                      if extra else "")
                   + f" (the runner's: {' '.join('+' + o for o in options)})")
    for m in REMARK.finditer(text):
        o, flag = m.group(1), m.group(2)
        if o in flags_of and flag != flags_of[o]:
            report(rel, line_of(text, m.start()), f"+{o} is said to be {flag}; the runner "
                   f"gives gregw {flags_of[o]}")


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])(?:[ =]([a-z0-9][\w.-]*))?")


def check_gregw_md(top, bindir, opts, values):
    rel = "docs/gregw.md"
    text = read(top, rel)
    for o in opts:
        if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text):
            report(rel, 1, f"gregw --help has {o}, which {rel} never names")
    known = set(opts)
    for n in sorted(os.listdir(bindir)):
        if n.startswith("tunbed-") and os.access(os.path.join(bindir, n), os.X_OK):
            known |= set(help_options(run_help(os.path.join(bindir, n))))
    for d, _, names in os.walk(os.path.join(top, "scripts", "tunbedlib")):
        for n in names:
            if n.endswith(".py"):
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    known |= set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", f.read()))
    spans = blank_fences(text)  # a fence's backticks would pair with the prose's
    code = [(m.start(), m.group(0)) for m in re.finditer(r"`[^`]+`", spans)]
    for start, span in code:
        for m in OPTION.finditer(span):
            o, v = m.group(1), m.group(2)
            line = line_of(spans, start)
            if o not in known:
                report(rel, line, f"{o}: no such option in gregw --help or another tunbed "
                       "program's")
            elif o in values and v is not None and span.lstrip("`").startswith(("gregw", o)) \
                    and not allows(values, o, v):
                report(rel, line, f"{o} {v}: gregw --help allows {opts[o]}")


# Record formats


def kind_formats(top):
    """{kind module: FORMAT} of scripts/tunbedlib/kinds/*.py (each kind's record layout)."""
    out, d = {}, os.path.join(top, "scripts", "tunbedlib", "kinds")
    for n in sorted(os.listdir(d)):
        if n.endswith(".py"):
            with open(os.path.join(d, n), encoding="utf-8") as f:
                m = re.search(r"^    FORMAT = (\d+)", f.read(), re.M)
            if m:
                out[n[:-3]] = int(m.group(1))
    return out


def check_formats(top, mds):
    formats = kind_formats(top)
    if "matrix" not in formats:
        report("scripts/tunbedlib/kinds/matrix.py", 1, "no FORMAT = N")
        return
    for rel in mds:
        text = read(top, rel)
        for m in re.finditer(r"`?FORMAT`?(?: in|,) `?scripts/tunbedlib/kinds/(\w+)\.py`?,? "
                             r"\(?today (\d+)", text):
            kind, n = m.group(1), int(m.group(2))
            if kind not in formats:
                report(rel, line_of(text, m.start()), f"scripts/tunbedlib/kinds/{kind}.py: "
                       "no such kind, or it has no FORMAT")
            elif formats[kind] != n:
                report(rel, line_of(text, m.start()), f"{kind}'s FORMAT is said to be {n}; "
                       f"the code has {formats[kind]}")
        for m in re.finditer(r"`kind` (\w+)(?:,| and) format (\d+)", text):
            kind, n = m.group(1), int(m.group(2))
            if kind in formats and formats[kind] != n:
                report(rel, line_of(text, m.start()), f"'{m.group(0)}': the {kind} kind's "
                       f"record format is {formats[kind]}")
    stated = {r: 0 for r in RECORD_DOCS}
    for rel, kind in RECORD_DOCS.items():
        text, fmt = read(top, rel), formats.get(kind)
        for pat in (r"\"format\": (\d+)", r"today's layout with `?format`? (\d+)",
                    r"\b(?:reads|formats) (?:formats )?1 ?(?:to|-) ?(\d+)",
                    r"meta\.json`? \(format (\d+)", r"today's layout, format (\d+)"):
            for m in re.finditer(pat, text):
                stated[rel] += 1
                if int(m.group(1)) != fmt:
                    report(rel, line_of(text, m.start()), f"'{m.group(0)}': the {kind} kind's "
                           f"record format is {fmt} (FORMAT in scripts/tunbedlib/kinds/"
                           f"{kind}.py)")
    if not stated["docs/runner.md"]:
        report("docs/runner.md", 1, f"states no record format (the matrix's is "
               f"{formats['matrix']})")


# One machine's facts said as everyone's


ONE_MACHINE = re.compile(r"\bthis (?:kernel|VM)\b", re.I)


def check_one_machine(top, mds):
    """docs/benchmarks.md says which machine; the other docs say what the code does."""
    for rel in mds:
        if rel == "docs/benchmarks.md":
            continue
        text = blank_code(read(top, rel))
        for m in ONE_MACHINE.finditer(text):
            report(rel, line_of(text, m.start()), f"'{m.group(0)}': say whose (benchmarks.md "
                   "names the machine), or what the code does on any")


def main(argv):
    if len(argv) != 3 or not os.path.isdir(argv[1]) or not os.path.isdir(argv[2]):
        print("usage: docs.py SOURCE_DIR BIN_DIR", file=sys.stderr)
        return 2
    top, bindir = argv[1], argv[2]
    mds = markdown_files(top)
    check_module_tables(top, mds)
    check_modes(top, bindir, mds)
    check_links(top, mds)
    check_docs_linked(top)
    check_formats(top, mds)
    check_one_machine(top, mds)
    for path, line, what in sorted(set(findings)):
        print(f"{path}:{line}: {what}")
    print(f"docs lint: {len(mds)} Markdown files, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
