#!/usr/bin/env python3
"""One of the runner's gateway drivers up on a built-in topology in namespaces, for the driver
tests, as the runner sets it up (point.gateway_up):

  driver_up.py GATEWAY PREFIX [TOPOLOGY]

Once the gateway is up it prints one JSON line: {"pids": [[role, pid, label], ...], "info":
{...}, "state": {role: the host's state directory}}; or {"error": "..."} and exits 1. At the
line "down" on stdin it takes the gateway down as the runner does after a point (the driver's
teardown, then what the bed undoes on each host) and prints {"down": true}, the namespaces
still there to be looked at; at the end of stdin the topology goes too."""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tunbedlib import bed as beds  # noqa: E402
from tunbedlib import drivers, scenario  # noqa: E402
from tunbedlib.common import Failure  # noqa: E402
from tunbedlib.kinds import matrix_point as point  # noqa: E402
from tunbedlib.kinds.base import Item  # noqa: E402


def main():
    # A test that ends early sends SIGTERM: the gateway and the topology go down all the same.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    gateway, prefix = sys.argv[1], sys.argv[2]
    topology = sys.argv[3] if len(sys.argv) > 3 else "ras"
    if not drivers.lookup(gateway):
        print(json.dumps({"error": f"unknown gateway '{gateway}'"}), flush=True)
        return 2
    sc = scenario.Scenario(topology=topology, gateways=[gateway], sessions=[1])
    p = scenario.points(sc)[0]
    bed = beds.NamespaceBed(sc, prefix, {})
    status = 0
    with bed.point(Item(p.key(), p.config(), p)):
        d = drivers.DRIVERS[gateway](bed, p)
        try:
            pids, info = point.gateway_up(d, bed)
            print(json.dumps({"pids": pids, "info": info,
                              "state": {r: bed.host(r).state for r in ("gwa", "gwb")}}),
                  flush=True)
            sys.stdin.readline()
        except Failure as e:
            print(json.dumps({"error": str(e)}), flush=True)
            status = 1
        finally:
            d.teardown()
            for role in ("gwa", "gwb"):
                bed.host(role).run_undo()
        if not status:
            print(json.dumps({"down": True}), flush=True)
            sys.stdin.read()
    return status


if __name__ == "__main__":
    sys.exit(main())
