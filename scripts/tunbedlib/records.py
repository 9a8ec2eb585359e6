"""The files a run leaves that `tunbed report` reads again: the raw records (runs/*.json, or a
kind's own directory) and meta.json, of any scenario kind. Each carries the run's `kind` and
`format`, the version of its kind's layout (a kind's FORMAT, raised whenever a field is renamed,
moved or given another meaning; kinds/base.py). Reading checks a file against its kind's schema
of its format (schema.py) and converts it to today's layout here, one step a format, oldest
first, so that a report sees one layout. A file newer than this runner, malformed, or not a
regular file is refused in one line (FormatError: exit status 2, a file this runner cannot
read). The parts of records that several kinds share (a point's key, CPU samples, machines)
are specified here."""

import glob
import json
import math
import os

from . import files, limits, schema
from .schema import ANY, INT, NUM, STR, List, Map, Num, Obj, Opt, Str, Tup

ONE_MACHINE = "this machine"  # the host of a run in namespaces


class FormatError(Exception):
    """A record or meta.json this runner cannot read: one line, FILE: what."""


def format_of(doc, path, newest, oldest=1, default=1, what="results"):
    """doc's format: a whole number from oldest to newest (absent: default); else a FormatError
    that names the file, and for a newer one what the file holds."""
    fmt = doc.get("format", default)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < oldest:
        raise FormatError(f"{path}: bad format {json.dumps(fmt)}: expected a whole number from "
                          f"{oldest}")
    if fmt > newest:
        raise FormatError(f"{path}: {what} written by a newer tunbed (format {fmt}); this one "
                          f"reads {oldest}-{newest}")
    return fmt


def _number(text):
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text[:20]} is not a finite number")
    return x


def _whole(text):
    if len(text) > 24:  # beyond 64 bits: refused by the schemas anyway
        raise ValueError(f"{text[:20]}... is too long a number")
    return int(text)


def _not_a_number(text):
    raise ValueError(f"{text} is not a number")


def parse(text, path):
    """The JSON object of text (path's); NaN, infinities and numbers past 64 bits are refused:
    a FormatError that names the file."""
    try:
        doc = json.loads(text, parse_float=_number, parse_int=_whole,
                         parse_constant=_not_a_number)
    except ValueError as e:
        raise FormatError(f"{path}: not JSON: {e}") from None
    except RecursionError:
        raise FormatError(f"{path}: not JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: not a tunbed results file (expected a JSON object)")
    return doc


def read_object(path):
    """The JSON object in path, a regular file (not a link) of at most limits.RECORD_BYTES; a
    FormatError that names the file when it cannot be read, is not JSON or not an object."""
    return parse(files.read_text(path, limits.RECORD_BYTES, FormatError, "results file",
                                 follow=False), path)


def check(doc, spec, path):
    """doc as spec (schema.py) says, else a FormatError naming the file and the field."""
    try:
        spec.check(doc, "")
    except schema.Bad as e:
        raise FormatError(f"{path}: {e}") from None


def write_object(path, doc, indent=None):
    """Writes doc to path as JSON, whole or not at all: into a file beside it, then renamed
    over it (files.write), so that an interrupt (Ctrl-C, SIGTERM) in the middle of a write
    leaves no file cut short for the partial report, or `tunbed report`, to refuse, and a link
    planted under its name is replaced, never followed."""
    files.write(os.path.dirname(path) or ".", os.path.basename(path),
                json.dumps(doc, indent=indent))


# The fields of records that several kinds read (schema.py). A key names files (plots/cores-KEY,
# runs/KEY-rN.json): a plain name, never a path.
KEY = Str(rf"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{{0,{limits.KEY_CHARS - 1}}}", "a point's key")
RR = Obj({"p50_ms": Opt(NUM), "p99_ms": Opt(NUM)})
# A CPU sample of tunbed-sample (docs/runner.md): per-CPU ticks by field, per-thread [pid, comm,
# ticks (a fraction kept: tunbed-sample reads a thread's time in ns where it can), CPU]. The per-core plot draws a row per CPU: limits.RECORD_CPUS.
SAMPLE = Obj({"t": NUM,
              "cpus": Map(Map(NUM), key=r"[0-9]{1,5}", keywhat="a CPU's number",
                          most=limits.RECORD_CPUS),
              "threads": Map(Tup(INT, STR, NUM, INT))}, need=("t", "cpus", "threads"))
CPU = Obj({"samples": List(SAMPLE), "ticks_per_second": Opt(Num(1, 1e9))}, need=("samples",))
FACTS = Obj({"nic": Opt(Obj({"queues": Opt(Map(ANY)), "offloads": Opt(Map(ANY))}))})
MACHINE = {"cpu": Opt(CPU), "processes": Map(STR), "thread_labels": Map(STR)}
HOST = Obj(MACHINE | {"name": STR, "roles": List(STR),
                      "clock": Opt(Obj({"offset_s": NUM, "error_s": NUM})), "facts": Opt(FACTS)},
           need=("name",))


def record_paths(outdir, sub):
    """outdir/SUB/*.json, by name; a FormatError past limits.RECORD_FILES."""
    paths = sorted(glob.glob(os.path.join(glob.escape(outdir), sub, "*.json")))
    if len(paths) > limits.RECORD_FILES:
        raise FormatError(f"{os.path.join(outdir, sub)}: {len(paths)} records: a results "
                          f"directory has at most {limits.RECORD_FILES}")
    return paths


def one_each(recs, paths, key_of, words):
    """Refuses two records of one key_of(record), which the report would merge (FormatError
    naming both files; words(record) says what the two are)."""
    seen = {}
    for r, path in zip(recs, paths):
        other = seen.setdefault(key_of(r), path)
        if other != path:
            raise FormatError(f"{path}: {words(r)} is also {other}")


def one_key_each(recs, paths):
    """Refuses two records of one key but not of one point, and two of one repeat: the report
    would merge them (FormatError naming both files)."""
    seen = {}
    for r, path in zip(recs, paths):
        p = r["point"]
        first = seen.setdefault(p["key"], (p, path))
        if first[0] != p:
            raise FormatError(f"{path}: point {p['key']} is also {first[1]}'s, another point "
                              "(two points of one key)")
    one_each(recs, paths, lambda r: (r["point"]["key"], r["repeat"]),
             lambda r: f"repeat {r['repeat']} of point {r['point']['key']}")


def read_record(kind, doc, path="record"):
    """A record of kind as today's layout: checked against the schema of its format, then
    upgraded a format at a time; a FormatError naming path otherwise."""
    kind.is_record(doc, path)
    fmt = format_of(doc, path, kind.FORMAT, kind.OLDEST, kind.UNNUMBERED, kind.WHAT)
    check(doc, kind.record_schema(fmt), path)
    for f in range(fmt, kind.FORMAT):
        doc = dict(kind.upgrade_record(doc, f), format=f + 1)
    return doc


def read_meta(kind, doc, path="meta.json"):
    """meta.json of kind as today's layout, checked and upgraded as read_record does."""
    fmt = format_of(doc, path, kind.FORMAT, kind.OLDEST, kind.UNNUMBERED, kind.WHAT)
    check(doc, kind.meta_schema(fmt), path)
    for f in range(fmt, kind.FORMAT):
        doc = dict(kind.upgrade_meta(doc, f), format=f + 1)
    return doc


def load(kind, outdir):
    """(meta, records) of a results directory of kind, every file read and checked before
    any is used: meta.json ({format, kind} when there is none) and the records, by file
    name."""
    path = os.path.join(outdir, "meta.json")
    meta = read_meta(kind, read_object(path), path) if os.path.lexists(path) else \
        {"format": kind.FORMAT, "kind": kind.name}
    paths = record_paths(outdir, kind.RECORD_DIR)
    recs = [read_record(kind, read_object(p), p) for p in paths]
    kind.check_records(recs, paths)
    return meta, recs
