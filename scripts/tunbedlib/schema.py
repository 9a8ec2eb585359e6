"""What a results file must hold before a report reads it: the fields each report reads, their
types and ranges, checked once when the file is read (records.py, ndr_report.py). A malformed
file is then one line naming the file and the field (`runs/x.json: traffic.tcp.bytes: expected
a number`), never a traceback half-way through a report; the analysis reads only what its
schema let through. A field a schema does not name is kept and never read.

A schema is made of the specs below. In an Obj, a field may be absent unless it is needed
(need=), and is null only where its spec is Opt."""

import json
import math
import re

# A number the analysis can compute with: finite (JSON's parser refuses NaN and infinities
# before this, records.py), and a whole number within 64 bits, so that no conversion to float
# overflows.
INT_RANGE = 2**64


class Bad(Exception):
    """A value a schema refuses: where it is, and what was expected."""

    def __init__(self, where, what):
        super().__init__(f"{where or 'the file'}: expected {what}")


def shown(key):
    """A key of the file as part of a field's name: as it is when it is plain, else quoted and
    cut short (a key is the file's, and the message one line)."""
    if isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_.+-]{1,40}", key):
        return key
    text = json.dumps(key)
    return text if len(text) <= 42 else text[:40] + '..."'


def field(where, name):
    return f"{where}.{shown(name)}" if where else shown(name)


class Spec:
    what = "?"

    def check(self, v, where):
        raise NotImplementedError


class Num(Spec):
    """A number from lo to hi (either may be None); whole numbers only with whole."""

    def __init__(self, lo=None, hi=None, whole=False):
        self.lo, self.hi, self.whole = lo, hi, whole
        self.what = "a whole number" if whole else "a number"
        if lo is not None and hi is not None:
            self.what += f" from {lo} to {hi}"
        elif lo is not None:
            self.what += f" of at least {lo}"

    def check(self, v, where):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (self.whole and not isinstance(v, int)):
            raise Bad(where, self.what)
        if isinstance(v, int) and not -INT_RANGE < v < INT_RANGE or \
                isinstance(v, float) and not math.isfinite(v):
            raise Bad(where, self.what)
        if self.lo is not None and v < self.lo or self.hi is not None and v > self.hi:
            raise Bad(where, self.what)


class Str(Spec):
    """A string; with pattern, one that matches it whole (what names it)."""

    def __init__(self, pattern=None, what="a string"):
        self.pattern, self.what = pattern and re.compile(pattern), what

    def check(self, v, where):
        if not isinstance(v, str) or self.pattern and not self.pattern.fullmatch(v):
            raise Bad(where, self.what)


class Bool(Spec):
    what = "true or false"

    def check(self, v, where):
        if not isinstance(v, bool):
            raise Bad(where, self.what)


class Any(Spec):
    def check(self, v, where):
        pass


class Opt(Spec):
    """spec, or null."""

    def __init__(self, spec):
        self.spec, self.what = spec, spec.what

    def check(self, v, where):
        if v is not None:
            self.spec.check(v, where)


class Either(Spec):
    """One of several specs: the first that a value passes."""

    def __init__(self, *specs):
        self.specs = specs
        self.what = " or ".join(x.what for x in specs)

    def check(self, v, where):
        for spec in self.specs:
            try:
                return spec.check(v, where)
            except Bad:
                pass
        raise Bad(where, self.what)


class Obj(Spec):
    """A JSON object with these fields (each checked when present; need: those that must be)."""
    what = "an object"

    def __init__(self, fields, need=()):
        self.fields, self.need = fields, tuple(need)

    def check(self, v, where):
        if not isinstance(v, dict):
            raise Bad(where, self.what)
        for name, spec in self.fields.items():
            if name in v:
                spec.check(v[name], field(where, name))
            if name in self.need and v.get(name) is None and \
                    not (name in v and isinstance(spec, Opt)):
                raise Bad(field(where, name), spec.what)


class List(Spec):
    """A JSON array of spec, of at least least and at most most items."""

    def __init__(self, spec, least=0, most=None):
        self.spec, self.least, self.most = spec, least, most
        self.what = "a list" + (" that is not empty" if least else "")

    def check(self, v, where):
        if not isinstance(v, list) or len(v) < self.least:
            raise Bad(where, self.what)
        if self.most is not None and len(v) > self.most:
            raise Bad(where, f"at most {self.most} items")
        for i, x in enumerate(v):
            self.spec.check(x, f"{where}[{i}]")


class Map(Spec):
    """A JSON object of any keys (those matching key, which keywhat names), each value spec;
    at most most of them."""
    what = "an object"

    def __init__(self, spec, key=None, keywhat="", most=None):
        self.spec, self.key, self.keywhat, self.most = spec, key and re.compile(key), keywhat, most

    def check(self, v, where):
        if not isinstance(v, dict):
            raise Bad(where, self.what)
        if self.most is not None and len(v) > self.most:
            raise Bad(where, f"at most {self.most} entries")
        for k, x in v.items():
            if self.key and not self.key.fullmatch(k):
                raise Bad(f"{where}: key {shown(k)}", self.keywhat)
            self.spec.check(x, field(where, k))


class Tup(Spec):
    """A JSON array of exactly these, in order."""

    def __init__(self, *specs):
        self.specs = specs
        self.what = f"a list of {len(specs)}"

    def check(self, v, where):
        if not isinstance(v, list) or len(v) != len(self.specs):
            raise Bad(where, self.what)
        for i, (x, spec) in enumerate(zip(v, self.specs)):
            spec.check(x, f"{where}[{i}]")


NUM = Num()
INT = Num(whole=True)
STR = Str()
BOOL = Bool()
ANY = Any()
