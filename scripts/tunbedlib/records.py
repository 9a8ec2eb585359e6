"""The files a run leaves that `tunbed report` reads again: the raw records (runs/*.json) and
meta.json. Each carries `format`, the version of its layout (FORMAT, raised whenever a field is
renamed, moved or given another meaning); a file without it is format 1, as every file written
before the field was. Reading converts an older file to today's layout here, and only here, so
the analysis and the report see one layout. A file newer than this runner is refused in one
line (exit status 2, a file this runner cannot read)."""

import glob
import json
import math
import os

from . import files, limits, schema
from .schema import ANY, BOOL, INT, NUM, STR, List, Map, Num, Obj, Opt, Str, Tup

FORMAT = 3
ONE_MACHINE = "this machine"  # the host of a run in namespaces
ROLES = ["client", "server", "gwa", "gwb"]  # as inventory.ROLES
OLDEST = 1


class FormatError(Exception):
    """A record or meta.json this runner cannot read: one line, FILE: what."""


def format_of(doc, path, newest=FORMAT, oldest=OLDEST, default=1, what="results"):
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


def _upgrade(doc, path):
    """doc in today's layout. Format 2 is format 1 with `format` added. Format 3 keeps each
    sampled machine's CPU, processes and named threads in `hosts` (one entry per machine,
    with its roles, clock offset and facts); before, a run had one machine, and they were
    `cpu`, `processes` and `thread_labels` of the record. A later format that changes a field
    converts it here, one step per format, oldest first."""
    fmt = format_of(doc, path)
    if fmt < 2:
        doc = dict(doc, format=2)
    if fmt < 3:
        doc = dict(doc, format=3)
        if "point" in doc:  # a run record, not meta.json
            doc["hosts"] = [{"name": ONE_MACHINE, "roles": ROLES, "cpu": doc.pop("cpu", None),
                             "processes": doc.pop("processes", {}),
                             "thread_labels": doc.pop("thread_labels", {}),
                             "clock": {"offset_s": 0.0, "error_s": 0.0}, "facts": None}]
    return doc


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


# The fields the reports read (schema.py), by kind of run. A key names files (plots/cores-KEY,
# runs/KEY-rN.json): a plain name, never a path.
KEY = Str(rf"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{{0,{limits.KEY_CHARS - 1}}}", "a point's key")
POINT = Obj({"key": KEY, "config": STR, "gateway": STR, "sessions": Num(1, whole=True),
             "mode": STR, "workers": Num(0, whole=True), "mtu": Num(0, whole=True),
             "pattern": STR}, need=("key", "config", "gateway", "sessions"))
RR = Obj({"p50_ms": Opt(NUM), "p99_ms": Opt(NUM)})
TRAFFIC = Obj({
    "tcp": Opt(Obj({"bits_per_second": Opt(NUM), "bytes": Opt(NUM), "retransmits": Opt(NUM),
                    "jain": Opt(NUM),
                    "verify": Opt(Obj({"on": Opt(BOOL), "mismatches": Opt(NUM)}))})),
    "measure_start_mono_s": Opt(NUM), "measure_end_mono_s": Opt(NUM), "measured_s": Opt(NUM),
    "complete": Opt(BOOL), "rr": Opt(RR), "config": Opt(Obj({"congestion": Opt(STR)}))})
# A CPU sample of tunbed-sample (docs/runner.md): per-CPU ticks by field, per-thread [pid, comm,
# ticks, CPU]. The per-core plot draws a row per CPU: limits.RECORD_CPUS.
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
WAY = {"segments_per_syscall": Opt(NUM), "syscalls_per_gb": Opt(NUM)}
COST = Obj({"tun_to_wire": Obj(WAY, need=WAY),
            "wire_to_tun": Obj(WAY | {"superpacket_segments": Map(NUM)},
                               need=("superpacket_segments", *WAY)),
            "wakeups_per_gb": Opt(NUM)}, need=("tun_to_wire", "wire_to_tun", "wakeups_per_gb"))
DIRECTION = Obj({
    "name": STR, "inner_bytes": NUM, "overhead_pct": Opt(NUM),
    "tcp": Obj({k: NUM for k in ("payload_bytes", "late_bytes", "late_resent_bytes",
                                 "retransmitted_bytes")} | {"late_unresolved_bytes": Opt(NUM)},
               need=("payload_bytes", "late_bytes", "late_resent_bytes", "retransmitted_bytes")),
    "seq": Obj({k: NUM for k in ("frames", "missing", "reordered")},
               need=("frames", "missing", "reordered"))},
    need=("name", "inner_bytes", "tcp", "seq"))
WIRE = Obj({"directions": List(DIRECTION, least=1), "tunnel_frames": NUM,
            "violation_frames": NUM, "violations": Map(Obj({"count": NUM}, need=("count",))),
            "source": Obj({"capture_dropped": Opt(NUM)})},
           need=("directions", "tunnel_frames", "violation_frames", "violations", "source"))
RUN = {"point": POINT, "repeat": Num(1, whole=True), "started": NUM, "finished": Opt(NUM),
       "traffic": Opt(TRAFFIC), "rr_idle": Opt(RR), "gateway_info": Opt(Obj({
           "version": Opt(STR), "cipher": Opt(STR), "dev": Opt(STR),
           "mtu": Opt(Num(whole=True))})),
       "gateway": Opt(Map(Opt(Obj({"total": Obj({"cost": COST})})))),
       "wire": Opt(WIRE), "wire_error": Opt(STR)}
# Today's record keeps each machine's CPU under hosts; formats 1 and 2, the one machine's in
# the record itself.
RUN_SCHEMA = Obj(RUN | {"hosts": List(HOST, most=limits.RECORD_HOSTS)},
                 need=("point", "repeat"))
RUN_SCHEMA_2 = Obj(RUN | MACHINE, need=("point", "repeat"))
META_SCHEMA = Obj({"kind": Opt(Str("intranet|ndr", "intranet, ndr or none")), "notes": List(STR), "congestion": Opt(STR),
                   "failed": List(Obj({"point": POINT, "repeat": Num(1, whole=True),
                                       "started": NUM, "error": STR},
                                      need=("point", "repeat", "error")))})

# tunbed intranet's (intranet.py): a point per profile and kind, its profile in meta.json.
PROFILE = Obj({"name": STR, "title": Opt(STR), "rate": Opt(NUM), "nominal": Opt(NUM),
               "congestion": Opt(STR), "cpus": Opt(Obj({"shared": Opt(BOOL)}))}, need=("name",))
INTRANET_POINT = Obj({"key": KEY, "profile": STR, "kind": Str("idle|tcp|udp", "idle, tcp or udp"),
                      "streams": Num(0, whole=True), "udp_rate_bps": Num(0)},
                     need=("key", "profile", "kind"))
ICMP = Obj({k: Opt(NUM) for k in ("probes", "loss_percent", "avg_ms", "min_ms", "max_ms",
                                  "mdev_ms", "jitter_ms")})
UDP = Obj({k: Opt(NUM) for k in ("received", "lost", "loss_percent", "jitter_ms_max",
                                 "reordered", "duplicates", "not_sent", "bits_per_second")}
          | {"sent": NUM, "size": NUM})
INTRANET_RUN = Obj({
    "point": INTRANET_POINT, "repeat": Num(1, whole=True), "started": NUM,
    "traffic": Opt(Obj({
        "icmp": Opt(ICMP), "rr": Opt(RR), "complete": Opt(BOOL), "measured_s": Opt(NUM),
        "tcp": Opt(Obj({"bits_per_second": Opt(NUM), "session_bps_min": Opt(NUM),
                        "session_bps_max": Opt(NUM), "jain": Opt(NUM), "retransmits": Opt(NUM),
                        "per_session": List(Obj({"bits_per_second": Opt(NUM)}))})),
        "config": Opt(Obj({"congestion": Opt(STR)})), "udp": Opt(UDP)})),
    "traffic_error": Opt(STR),
    "qdisc": Opt(Obj({"forward": Opt(Obj({"drops": Opt(NUM)})),
                      "client": Opt(Obj({"drops": Opt(NUM)}))})),
    "facts": Opt(Obj({"client": Opt(FACTS), "server": Opt(FACTS)})), "profile": Opt(PROFILE)},
    need=("point", "repeat"))
INTRANET_META = Obj({"profiles": List(PROFILE)})

SCHEMAS = {None: (RUN_SCHEMA, META_SCHEMA), "intranet": (INTRANET_RUN, INTRANET_META)}


def upgrade_record(record, path="record", kind=None):
    """A raw record (runs/*.json) of any format this runner reads, checked (schema.py) and in
    today's layout; kind is meta.json's (None: a gateway scenario's, "intranet")."""
    if "point" not in record or "repeat" not in record:
        raise FormatError(f"{path}: not a run record (no point or repeat)")
    fmt = format_of(record, path)
    check(record, RUN_SCHEMA_2 if kind is None and fmt < 3 else SCHEMAS[kind][0], path)
    return _upgrade(record, path)


def upgrade_meta(meta, path="meta.json"):
    """meta.json of any format this runner reads, checked and in today's layout."""
    format_of(meta, path)
    kind = meta.get("kind")
    check(meta, SCHEMAS["intranet" if kind == "intranet" else None][1], path)
    return _upgrade(meta, path)


def record_paths(outdir, sub):
    """outdir/SUB/*.json, by name; a FormatError past limits.RECORD_FILES."""
    paths = sorted(glob.glob(os.path.join(glob.escape(outdir), sub, "*.json")))
    if len(paths) > limits.RECORD_FILES:
        raise FormatError(f"{os.path.join(outdir, sub)}: {len(paths)} records: a results "
                          f"directory has at most {limits.RECORD_FILES}")
    return paths


def one_key_each(recs, paths):
    """Refuses two records of one key but not of one point, and two of one repeat: the report
    would merge them (FormatError naming both files)."""
    seen, repeats = {}, {}
    for r, path in zip(recs, paths):
        p = r["point"]
        first = seen.setdefault(p["key"], (p, path))
        if first[0] != p:
            raise FormatError(f"{path}: point {p['key']} is also {first[1]}'s, another point "
                              "(two points of one key)")
        other = repeats.setdefault((p["key"], r["repeat"]), path)
        if other != path:
            raise FormatError(f"{path}: repeat {r['repeat']} of point {p['key']} is also "
                              f"{other}")


def load_runs(outdir, kind=None):
    """The raw records of outdir/runs/, by file name, checked and in today's layout; kind is
    meta.json's."""
    paths = record_paths(outdir, "runs")
    recs = [upgrade_record(read_object(path), path, kind) for path in paths]
    one_key_each(recs, paths)
    return recs


def load_meta(outdir):
    """outdir/meta.json, checked and in today's layout; {} (in today's format) when there is
    none."""
    path = os.path.join(outdir, "meta.json")
    if not os.path.lexists(path):
        return {"format": FORMAT}
    return upgrade_meta(read_object(path), path)
