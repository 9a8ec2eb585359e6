#!/usr/bin/env python3
"""Verified bulk TCP transfer for the namespace tests.

  bulk.py server --bind ADDR --port P --flows N     prints one JSON line: per-flow bytes and sha256
  bulk.py client --connect ADDR --port P --flows N --bytes B
                                                    prints one JSON line: what each flow sent

Each flow sends B // N bytes of data derived from its index, so that the server's hashes can
be compared with the client's. Exits non-zero on any socket error.
"""
import argparse
import hashlib
import json
import random
import socket
import sys
import threading

CHUNK = 1 << 20


def block(index):
    return random.Random(index * 7919 + 1).randbytes(CHUNK)


def serve(args):
    family = socket.AF_INET6 if ":" in args.bind else socket.AF_INET
    ls = socket.socket(family, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.bind, args.port))
    ls.listen(args.flows)
    ls.settimeout(args.timeout)
    print(json.dumps({"listening": True}), flush=True)
    results, threads = [None] * args.flows, []

    def receive(i, conn):
        h, n = hashlib.sha256(), 0
        conn.settimeout(args.timeout)
        while True:
            data = conn.recv(CHUNK)
            if not data:
                break
            h.update(data)
            n += len(data)
        conn.close()
        results[i] = {"bytes": n, "sha256": h.hexdigest()}

    for i in range(args.flows):
        conn, _ = ls.accept()
        t = threading.Thread(target=receive, args=(i, conn))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    print(json.dumps({"flows": sorted(results, key=lambda r: r["sha256"])}), flush=True)


def send(args):
    family = socket.AF_INET6 if ":" in args.connect else socket.AF_INET
    per_flow = args.bytes // args.flows
    results, errors = [None] * args.flows, []

    def transmit(i):
        try:
            data, h, left = block(i), hashlib.sha256(), per_flow
            s = socket.create_connection((args.connect, args.port), timeout=args.timeout)
            while left:
                piece = data[: min(left, CHUNK)]
                s.sendall(piece)
                h.update(piece)
                left -= len(piece)
            s.shutdown(socket.SHUT_WR)
            s.recv(1)
            s.close()
            results[i] = {"bytes": per_flow, "sha256": h.hexdigest()}
        except OSError as e:
            errors.append(f"flow {i}: {e}")

    threads = [threading.Thread(target=transmit, args=(i,)) for i in range(args.flows)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("bulk.py: " + "; ".join(errors), file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"flows": sorted(results, key=lambda r: r["sha256"])}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["server", "client"])
    ap.add_argument("--bind")
    ap.add_argument("--connect")
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--flows", type=int, default=1)
    ap.add_argument("--bytes", type=int, default=200 << 20)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    serve(args) if args.mode == "server" else send(args)


if __name__ == "__main__":
    main()
