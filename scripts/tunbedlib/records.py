"""The files a run leaves that `tunbed report` reads again: the raw records (runs/*.json) and
meta.json. Each carries `format`, the version of its layout (FORMAT, raised whenever a field is
renamed, moved or given another meaning); a file without it is format 1, as every file written
before the field was. Reading converts an older file to today's layout here, and only here, so
the analysis and the report see one layout. A file newer than this runner is refused in one
line (exit status 2, a file this runner cannot read)."""

import contextlib
import glob
import json
import os

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


def read_object(path):
    """The JSON object in path; a FormatError that names the file when it cannot be read, is
    not JSON or not an object."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise FormatError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise FormatError(f"{path}: not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: not a tunbed results file (expected a JSON object)")
    return doc


def write_object(path, doc, indent=None):
    """Writes doc to path as JSON, whole or not at all: into a file beside it, then renamed
    over it, so that an interrupt (Ctrl-C, SIGTERM) in the middle of a write leaves no file
    cut short for the partial report, or `tunbed report`, to refuse."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=indent)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def upgrade_record(record, path="record"):
    """A raw record (runs/*.json) of any format this runner reads, in today's layout."""
    if not isinstance(record.get("point"), dict) or "repeat" not in record:
        raise FormatError(f"{path}: not a run record (no point or repeat)")
    return _upgrade(record, path)


def upgrade_meta(meta, path="meta.json"):
    """meta.json of any format this runner reads, in today's layout."""
    return _upgrade(meta, path)


def load_runs(outdir):
    """The raw records of outdir/runs/, by file name, in today's layout."""
    return [upgrade_record(read_object(path), path)
            for path in sorted(glob.glob(os.path.join(outdir, "runs", "*.json")))]


def load_meta(outdir):
    """outdir/meta.json in today's layout; {} (in today's format) when there is none."""
    path = os.path.join(outdir, "meta.json")
    if not os.path.exists(path):
        return {"format": FORMAT}
    return upgrade_meta(read_object(path), path)
