"""The datasheet's interoperability part (docs/datasheet.md): gregw against the kernel's GRE,
ip6gre and fou, as the guest tests (netns/guest_gre, guest_gre6, guest_gregw) found it for the
build the datasheet measures. A datasheet never runs them (a qemu guest under emulation takes
minutes); each run of one records its result for the build it ran (tests/netns/guest_lib.sh,
guest_record: interop/TEST.json beside the programs), and a result counts only for the same
build id (scripts/build-id). Anything else is "not run", with how to run them."""

import json
import os

from .. import files
from ..common import INSTALLED
from ..records import FormatError, check
from ..schema import Obj, Str

GUEST_TESTS = ("guest_gre", "guest_gre6", "guest_gregw")
RECORD_BYTES = 4096
RECORD = Obj({"test": Str("|".join(GUEST_TESTS), ", ".join(GUEST_TESTS)),
              "result": Str("pass|fail", "pass or fail"),
              "build_id": Str("[0-9a-f]{12}", "a build id"),
              "finished_utc": Str("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z",
                                  "a UTC time")},
             need=("test", "result", "build_id", "finished_utc"))


def how(bin_dir):
    """The command that records the guest tests' result for the programs of bin_dir."""
    tests = " && ".join(f"tests/netns/{t}.sh" for t in GUEST_TESTS)
    return (f"sudo env TUNBED_BIN={bin_dir} sh -c '{tests}' in the checkout "
            "(docs/testing.md)")


def read(path):
    """A guest test's record, checked; None when there is none; a FormatError in one line
    for one that cannot be read."""
    if not os.path.lexists(path):
        return None
    doc = json.loads(files.read_text(path, RECORD_BYTES, FormatError, "guest test's record",
                                     follow=False))
    check(doc, RECORD, path)
    return doc


def status(gateway, bin_dir, build_id):
    """The part's status for gateway: for gregw, each guest test's recorded result for
    build_id ({test: {result, finished_utc} or None}) with "run" when any is recorded, else
    "not run" with how to run them; "not applicable" for any other gateway."""
    if gateway != "gregw":
        return {"status": "not applicable",
                "reason": f"the guest tests are gregw's (against the kernel's GRE, ip6gre and "
                          f"fou), not {gateway}'s"}
    if INSTALLED:
        return {"status": "not run", "reason": "the guest tests are a checkout's "
                                               "(tests/netns/guest_*.sh, docs/testing.md)"}
    tests, bad = {}, []
    for t in GUEST_TESTS:
        try:
            r = read(os.path.join(os.path.dirname(bin_dir), "interop", f"{t}.json"))
        except (FormatError, ValueError) as e:
            bad.append(str(e).splitlines()[0])
            r = None
        tests[t] = ({"result": r["result"], "finished_utc": r["finished_utc"]}
                    if r and r["test"] == t and r["build_id"] == build_id else None)
    if not any(tests.values()):
        return {"status": "not run", "build_id": build_id, "tests": tests,
                "reason": f"no result of the guest tests ({', '.join(GUEST_TESTS)}) is "
                          f"recorded for this build ({build_id})"
                          + (f" ({'; '.join(bad)})" if bad else "")
                          + f": {how(bin_dir)}"}
    return {"status": "run", "reason": None, "build_id": build_id, "tests": tests}


def words(st):
    """The page's row of a status with recorded results."""
    out = []
    for t in GUEST_TESTS:
        r = (st.get("tests") or {}).get(t)
        out.append(f"{t} {'passed' if r['result'] == 'pass' else 'FAILED'} "
                   f"({r['finished_utc']})" if r else f"{t} not run for this build")
    return "; ".join(out) + f" (build {st.get('build_id')})"
