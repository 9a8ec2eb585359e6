#!/usr/bin/env python3
"""The datasheet's DSCP/ECN part of one gateway (datasheet_tos.measure) on ras.topo in the
namespaces PREFIX-*, as `tunbed datasheet` runs it, for netns/datasheet_tos:

  datasheet_tos.py GATEWAY PREFIX

Prints one JSON line: {"record": the part's record, "analysis": datasheet_tos.analyse's,
"left": {role: the PIDs still in its namespace once the part is done}}; or {"error": "..."}
and exits 1."""

import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tunbedlib import bed as beds  # noqa: E402
from tunbedlib import drivers, records, scenario  # noqa: E402
from tunbedlib.common import Failure  # noqa: E402
from tunbedlib.kinds import datasheet_tos  # noqa: E402
from tunbedlib.kinds.base import Item  # noqa: E402


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    gateway, prefix = sys.argv[1], sys.argv[2]
    if not drivers.lookup(gateway):
        print(json.dumps({"error": f"unknown gateway '{gateway}'"}), flush=True)
        return 2
    sc = scenario.Scenario(topology="ras", gateways=[gateway], sessions=[1])
    p = scenario.points(sc)[0]
    bed = beds.NamespaceBed(sc, prefix, {})
    with bed.point(Item(p.key(), p.config(), p)):
        try:
            rec = datasheet_tos.measure(sc, p, bed)
            records.check(rec, datasheet_tos.RECORD_SCHEMA, "the record")
        except (Failure, records.FormatError) as e:
            print(json.dumps({"error": str(e)}), flush=True)
            return 1
        left = {r: subprocess.run(["ip", "netns", "pids", f"{prefix}-{r}"], text=True,
                                  capture_output=True).stdout.split()
                for r in ("client", "gwa", "gwb", "server")}
    print(json.dumps({"record": rec, "analysis": datasheet_tos.analyse(rec), "left": left}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
