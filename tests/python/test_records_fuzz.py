"""A property test of the record reader (records.py, each kind's schemas, schema.py) and of
every report built on what it lets through: results directories made of recorded runs (a gateway
scenario's, tunbed intranet's, tunbed ndr's, tunbed failover's of both formats, tunbed smoke's)
with a few random changes each (a value of another
type or range, a field removed or added, a list emptied, a key renamed, the text cut short or
given NaN), read as `tunbed report` reads them. The property: each is either refused with one
line naming the file (records.FormatError, exit status 2), or its whole report is written,
never a traceback. Deterministic: a fixed seed (TUNBED_FUZZ_SEED and TUNBED_FUZZ_ITERATIONS
explore further); every 50th directory draws its plots too (matplotlib, slower)."""

import copy
import json
import os
import random
import shutil
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)

from tunbedlib import kinds, plots, records, render  # noqa: E402
from tunbedlib.kinds.matrix import KIND as MATRIX  # noqa: E402

import test_ndr  # noqa: E402  (its NDR searches)

SEED = int(os.environ.get("TUNBED_FUZZ_SEED", "28"))
ITERATIONS = int(os.environ.get("TUNBED_FUZZ_ITERATIONS", "450"))
DRAW_EVERY = 50

# What a changed value becomes: other types, edges of ranges, names that are paths or math.
VALUES = (None, True, False, 0, 1, -1, 2, 7.5, -0.0, 1e-320, 1e300, 2**63, 2**70, -2**65, "",
          "x", "0", "../../x", "a/b", ".hidden", "$\\bad{$", "$x^2$", "a\nb", "\x1b[31m", [], {},
          [1, 2], [0, "x", 1.5, 3], {"a": 1}, {"0": {"user": 1}}, "9" * 30)
TEXT_CHANGES = ("NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "[" * 50)


def data(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return json.load(f)


def gregw_cost(spc, calls, wake):
    way = {"segments_per_syscall": spc, "syscalls_per_gb": calls,
           "superpacket_segments": {"1": 3, "33-64": 1}}
    return {"total": {"cost": {"tun_to_wire": way, "wire_to_tun": way, "wakeups_per_gb": wake}}}


def run_dirs():
    """[(kind, {file: document})]: the directories every change starts from."""
    s1, s8 = data("run-gregw-s1.json"), data("run-gregw-s8.json")
    wire = data("wire-gregw-seq-2w-64s.json")
    today = []
    for r, rep in ((s1, 1), (s8, 1), (s8, 2)):
        r = records.read_record(MATRIX, copy.deepcopy(r))
        r["repeat"] = rep
        r["wire"], r["wire_error"] = wire, None
        r["gateway_info"] = {"version": "gregw 0.1.0", "cipher": "none", "dev": "gre0",
                             "mtu": 1476}
        r["gateway"]["gwa"].update(gregw_cost(30, 1000, 10))
        r["gateway"]["gwb"].update(gregw_cost(5, 9000, 20))
        r["traffic"]["tcp"]["verify"] = {"on": True, "mismatches": 0}
        twin = copy.deepcopy(r["hosts"][0])
        twin.update(name="gw-b", roles=["gwb"], clock={"offset_s": 0.5, "error_s": 0.001},
                    facts={"kernel": "6.1", "cpus": 2, "nic": {
                        "name": "eth0", "queues": {"rx": 2}, "offloads": {"tso": "on"}}})
        r["hosts"].append(twin)
        today.append(r)
    failed = {"point": dict(s1["point"], gateway="fastd", config="fastd",
                            key="fastd---w0-mtu0-push-s1"),
              "repeat": 1, "started": 1.0, "error": "fastd on tb-gwa: exited (1): x"}
    meta = {"format": 3, "scenario": "ras", "title": "t", "notes": ["a note"],
            "congestion": "cubic", "failed": [failed], "complete": True}
    gateway = {"meta.json": meta, "runs/a-r1.json": s1, "runs/b-r1.json": today[1],
               "runs/b-r2.json": today[2]}
    intra = data("intranet-runs.json")
    intranet = {"meta.json": intra["meta"]} | {
        f"runs/r{i}.json": r for i, r in enumerate(intra["records"][:8])}
    searches = [test_ndr.fake_record("direct", "direct", 64, 900000, 1, 0),
                test_ndr.fake_record("gregw gre 2w", "gregw", 64, 200000, 2),
                test_ndr.fake_record("gregw gre 2w", "gregw", 512, 180000, 3)]
    searches[1]["hosts"] = copy.deepcopy(today[0]["hosts"][:1])
    ndr = {"meta.json": {"format": 1, "kind": "ndr", "scenario": "ndr", "notes": [],
                         "ndr": {"pdr_loss": 0.5, "flows": 8}, "ceiling": {"64": 900000}}} | {
        f"searches/s{i}.json": s for i, s in enumerate(searches)}
    return [("gateway", gateway), ("intranet", intranet), ("ndr", ndr),
            ("failover", stored("failover-1") | {"runs/b-r1.json": stored("failover-2")[
                "runs/stop-r1.json"]}),
            ("smoke", stored("smoke-1"))]


def stored(name):
    """{file: document} of a results directory of data/formats/ (its summary.json left out)."""
    top = os.path.join(HERE, "data", "formats", name)
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            path = os.path.join(d, n)
            if n.endswith(".json") and n != "summary.json":
                with open(path) as f:
                    out[os.path.relpath(path, top)] = json.load(f)
    return out


def pick(rng, doc):
    """A random place in doc, (container, key), reached by descending at random: every depth
    is as likely as the samples' many leaves."""
    parent, key = None, None
    node = doc
    while isinstance(node, (dict, list)) and node:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        k = rng.choice(keys)
        parent, key, node = node, k, node[k]
        if rng.random() < 0.3:
            break
    return parent, key


def change(rng, doc):
    """One random change of doc, in place; returns what it did, in words."""
    parent, key = pick(rng, doc)
    if parent is None:
        return "nothing"
    how = rng.randrange(6)
    if how == 0 and isinstance(parent, dict):
        del parent[key]
        return f"removed {key!r}"
    if how == 1 and isinstance(parent, dict):
        parent[rng.choice(["k1", "x", "user", "0", "gwa"])] = copy.deepcopy(rng.choice(VALUES))
        return "added a field"
    if how == 2 and isinstance(parent, dict):
        parent[rng.choice(["0", "x", "../y", "99999", "user", "t"])] = parent.pop(key)
        return f"renamed {key!r}"
    if how == 3 and isinstance(parent[key], list):
        parent[key] = [] if rng.random() < 0.5 else parent[key] * 2
        return f"emptied or doubled the list {key!r}"
    if how == 4 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = rng.choice([-1, 0, 2, 1e-9, 1e12]) * parent[key]
        return f"scaled {key!r}"
    parent[key] = copy.deepcopy(rng.choice(VALUES))
    return f"set {key!r} to {parent[key]!r}"[:80]


def text_change(rng, text):
    """The file's text cut short, or a number in it made NaN, infinite or huge."""
    if rng.random() < 0.3:
        return text[:rng.randrange(len(text))], "cut short"
    digits = [i for i, c in enumerate(text) if c.isdigit() and not text[i - 1].isdigit()]
    i = rng.choice(digits)
    j = i
    while j < len(text) and (text[j].isdigit() or text[j] in ".e-"):
        j += 1
    new = rng.choice(TEXT_CHANGES)
    return text[:i] + new + text[j:], f"a number made {new[:10]}"


def cheap_save(fig, outdir, name):
    """plots.save without drawing: the figure, made of the records, closed."""
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "<svg/>"


def report_of(d, draw):
    """`tunbed report d` as cli.cmd_report does it, in this process."""
    kind = kinds.for_dir(d)
    meta, recs = records.load(kind, d)

    def write():
        render.write_all(d, kind.report(meta, recs, meta.get("complete", False)))
    if draw:
        write()
    else:
        with mock.patch.object(plots, "save", cheap_save):
            write()


class RecordReader(unittest.TestCase):
    def test_refused_in_one_line_or_reported(self):
        rng = random.Random(SEED)
        bases = run_dirs()
        top = tempfile.mkdtemp(prefix="tunbed-fuzz-")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        outcomes = {kind: {"refused": 0, "reported": 0} for kind, _ in bases}
        for i in range(ITERATIONS):
            kind, base = bases[i % len(bases)]
            docs = copy.deepcopy(base)
            target = rng.choice(sorted(docs))
            what = []
            texts = {}
            for _ in range(rng.randint(1, 3)):
                what.append(change(rng, docs[target]))
            for name, doc in docs.items():
                texts[name] = json.dumps(doc)
            if rng.random() < 0.15:
                texts[target], w = text_change(rng, texts[target])
                what.append(w)
            d = os.path.join(top, f"{i}")
            for name, text in texts.items():
                os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            draw = i % DRAW_EVERY == DRAW_EVERY - 1
            try:
                report_of(d, draw)
            except records.FormatError as e:
                msg = str(e)
                self.assertTrue(msg.startswith(d + "/"), f"#{i} ({kind}, {target}: {what}): "
                                                          f"the message names no file: {msg}")
                outcomes[kind]["refused"] += 1
            except Exception as e:  # the property: nothing else escapes
                self.fail(f"#{i} (seed {SEED}, {kind}, {target}: {'; '.join(what)}): "
                          f"{type(e).__name__}: {e}")
            else:
                outcomes[kind]["reported"] += 1
            shutil.rmtree(d)
        print(f"seed {SEED}, {ITERATIONS} directories: {outcomes}", file=sys.stderr)
        # The changes reach both sides of the reader, for every kind of run.
        for kind, n in outcomes.items():
            self.assertGreater(n["refused"], ITERATIONS // 30, (kind, outcomes))
            self.assertGreater(n["reported"], ITERATIONS // 30, (kind, outcomes))


if __name__ == "__main__":
    unittest.main()
