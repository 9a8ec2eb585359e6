#!/usr/bin/env python3
"""The datasheet's DSCP/ECN part of one gateway (datasheet_tos.measure) on ras.topo in the
namespaces PREFIX-*, as `tunbed datasheet` runs it, for netns/datasheet_tos:

  datasheet_tos.py GATEWAY PREFIX [MODE [AQM_TARGET_US AQM_INTERVAL_US]]

MODE: the gateway's mode (gregw's, e.g. gre+aqm); with +aqm and a target and interval, CoDel's
(netns/datasheet_tos: 10 us over 1 ms, as netns/gregw_bulk sets it, so that any queue under the
load is a standing one and CoDel signals), without them gregw's defaults, as `--aqm codel`
alone.

Prints one JSON line: {"record": the part's record, "analysis": datasheet_tos.analyse's,
"rows": the gateway's DSCP/ECN rows of the page (datasheet_report.tos_rows), "left": {role:
the PIDs still in its namespace once the part is done}}; or {"error": "..."} and exits 1."""

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
from tunbedlib.drivers import gregw  # noqa: E402
from tunbedlib.kinds import datasheet_plan, datasheet_report, datasheet_tos  # noqa: E402
from tunbedlib.kinds.base import Item  # noqa: E402


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    gateway, prefix = sys.argv[1], sys.argv[2]
    if not drivers.lookup(gateway):
        print(json.dumps({"error": f"unknown gateway '{gateway}'"}), flush=True)
        return 2
    mode = sys.argv[3] if len(sys.argv) > 3 else None
    if len(sys.argv) > 5:
        aqm = gregw.OPTIONS["aqm"]
        gregw.OPTIONS["aqm"] = aqm._replace(flags=(*aqm.flags, "--aqm-target", sys.argv[4],
                                                   "--aqm-interval", sys.argv[5]))
    sc = scenario.Scenario(topology="ras", gateways=[gateway], sessions=[1],
                           **({"modes": [mode]} if mode else {}))
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
    a = datasheet_tos.analyse(rec)
    rows = datasheet_report.tos_rows({"parts": {gateway: {"tos": datasheet_plan.RUN}}},
                                     gateway, a)
    print(json.dumps({"record": rec, "analysis": a, "rows": dict(rows), "left": left}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
