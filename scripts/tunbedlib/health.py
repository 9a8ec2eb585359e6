"""The pair's health check: withdraws a gateway's BGP announcement of the service address
while its gregw does not answer, and announces it again once it does (docs/failover.md).

Runs on the gateway's host (in its namespace) beside FRR, as an operator runs a health-check
daemon beside a routing daemon: every --interval it asks gregw's control socket for its stats
with a deadline of --timeout; --fall failures in a row withdraw the service address
(`no network`, through vtysh), --rise successes in a row announce it. A crashed gregw (its
socket refuses) and a hung one (it accepts and never answers) both fail. Each change of state
is one JSON line on stdout with its CLOCK_MONOTONIC time, which the runner reads:

  {"t": 1234.5, "state": "down", "why": "connection refused"}

Python's standard library only; `python3 health.py --help`.
"""

import argparse
import json
import socket
import subprocess
import sys
import time


def ask(path, timeout):
    """None when gregw answered its stats in time, else why not."""
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(b"stats\n")
            got = b""
            while True:
                s.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        json.loads(got)
        return None
    except socket.timeout:
        return f"no answer within {timeout:g} s"
    except FileNotFoundError:
        return "no control socket"
    except ConnectionRefusedError:
        return "connection refused"
    except (OSError, ValueError) as e:
        return str(e) or type(e).__name__


def announce(args, on):
    cmd = ["vtysh", "--vty_socket", args.vty_socket, "-c", "configure terminal",
           "-c", f"router bgp {args.asn}", "-c", "address-family ipv4 unicast",
           "-c", f"{'' if on else 'no '}network {args.service}"]
    return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0


def emit(state, why):
    print(json.dumps({"t": round(time.monotonic(), 6), "state": state, "why": why}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctl", required=True, help="gregw's control socket")
    ap.add_argument("--vty-socket", required=True, help="FRR's vty socket directory")
    ap.add_argument("--asn", required=True, type=int, help="the gateway's BGP AS number")
    ap.add_argument("--service", required=True, help="the service prefix, e.g. 198.18.6.1/32")
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between checks")
    ap.add_argument("--timeout", type=float, default=0.1, help="seconds an answer may take")
    ap.add_argument("--fall", type=int, default=3, help="failures that withdraw")
    ap.add_argument("--rise", type=int, default=3, help="successes that announce")
    ap.add_argument("--up", action="store_true",
                    help="the announcement is in FRR's configuration already")
    args = ap.parse_args()
    up, run = args.up, 0
    emit("up" if up else "down", "start")
    try:
        while True:
            t = time.monotonic()
            why = ask(args.ctl, args.timeout)
            # A run counts checks that disagree with the state; one that agrees ends it.
            run = run + 1 if (why is None) != up else 0
            if up and run >= args.fall:
                up, run = False, 0
                announce(args, False)
                emit("down", why)
            elif not up and run >= args.rise:
                up, run = True, 0
                announce(args, True)
                emit("up", "answers")
            time.sleep(max(args.interval - (time.monotonic() - t), 0))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
