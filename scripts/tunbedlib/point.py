"""One run of one point: topology up, gateway up, the traffic server, idle latency, the wire
audit if asked for, the load with latency probes while CPU is sampled, the gateway's own
telemetry; then everything down again, also when anything fails or the user interrupts."""

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time

from . import cpu, records
from .common import TOPO, TOPOLOGIES, TRAFFIC, WIRE, Failure, ns, run
from .drivers import DRIVERS, PAIRS

PORT = 9400


def topology_file(topology, mtu, tmpdir):
    """The topology to build: a built-in name or a path, with the transit MTU replaced."""
    path = topology if "/" in topology or topology.endswith(".topo") else \
        os.path.join(TOPOLOGIES, f"{topology}.topo")
    if not os.path.exists(path):
        raise Failure(f"topology '{topology}': no such file {path}")
    if not mtu:
        return path
    with open(path) as f:
        text = f.read()
    if "[link transit]" not in text:
        raise Failure(f"{path}: no [link transit] to set an MTU on")
    text = text.replace("[link transit]", f"[link transit]\nmtu = {mtu}", 1)
    out = os.path.join(tmpdir, f"mtu{mtu}-{os.path.basename(path)}")
    with open(out, "w") as f:
        f.write(text)
    return out


def describe(topo_json):
    """Outer family and per-host CPU pins of a RAS-shaped topology, from tunbed-topo show."""
    hosts = {h["name"]: h for h in topo_json["hosts"]}
    for need in ("client", "gwa", "gwb", "server"):
        if need not in hosts:
            raise Failure(f"the runner needs hosts client, gwa, gwb and server; "
                          f"this topology has no '{need}'")
    transit = [i for i in hosts["gwa"].get("interfaces", []) if i.get("link") == "transit"]
    if not transit or not transit[0].get("addresses"):
        raise Failure("the runner needs a link 'transit' between gwa and gwb, with addresses")
    family = 6 if ":" in transit[0]["addresses"][0] else 4
    pins = {h: hosts[h]["cpus"] for h in hosts if hosts[h].get("cpus")}
    return family, pins, transit[0].get("name", "transit")


def pinned(pins, host, cmd):
    return ["taskset", "-c", pins[host], *cmd] if pins.get(host) else cmd


def traffic_client(prefix, pins, args):
    p = subprocess.run(ns(prefix, "client", *pinned(pins, "client", [TRAFFIC, "client", *args,
                                                                      "--json"])),
                       capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise Failure(f"tunbed-traffic client: {err}") from None
    return doc, p.returncode, p.stderr.strip()


def wire_args(driver, pair, iface, ready):
    """tunbed-wire on gwa's end of transit, expecting what the gateway under test should send:
    GRE between the pair's ends, and whatever the driver expects of its frames."""
    return ["--iface", iface, "--json", "--ready-file", ready, "--local", pair["a"],
            "--remote", pair["b"], *driver.wire_expectations()]


def wire_start(prefix, args, ready):
    proc = subprocess.Popen(ns(prefix, "gwa", WIRE, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if os.path.exists(ready):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    _, err = proc.communicate()
    raise Failure("tunbed-wire: " + ((err or "").strip().splitlines() or ["did not start"])[-1])


WIRE_OK = (0, 3)  # done; done and a frame broke an expectation (docs/wire.md, exit status)


def wire_stop(proc):
    """SIGTERM ends the capture; tunbed-wire then prints its report. Returns (document, error):
    the error, what tunbed-wire said last, when it gave no document or exited other than 0 or
    3 (the capture failed; its document, if any, is of the frames read until then)."""
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, "tunbed-wire did not stop within 30 s of SIGTERM"
    last = ((err or "").strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    try:
        doc = json.loads(out)
    except ValueError:
        return None, last
    return doc, None if proc.returncode in WIRE_OK else last


def wait_listening(prefix):
    for _ in range(100):
        if run(ns(prefix, "server", "ss", "-Hltn", f"sport = :{PORT}"), check=False).strip():
            return
        time.sleep(0.05)
    raise Failure("tunbed-traffic server did not start listening")


@contextlib.contextmanager
def deferred_signals():
    """SIGINT and SIGTERM wait (blocked, then delivered) until the block is done."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def measure(sc, point, repeat, prefix, pin_override):
    """Runs point once; returns the raw record (JSON-ready)."""
    record = {"format": records.FORMAT,
              "point": point.__dict__ | {"key": point.key(), "config": point.config()},
              "repeat": repeat, "started": time.time()}
    driver = server = proc = wire = None
    with tempfile.TemporaryDirectory(prefix="tunbed-run-") as tmp:
        topo = topology_file(sc.topology, point.mtu, tmp)
        try:
            # Ctrl-C waits until the topology is up: an interrupted `up` would leave
            # namespaces. The waiting signal is delivered as the block ends, so the block
            # sits inside the try whose finally takes the topology down again.
            with deferred_signals():
                run([TOPO, "up", topo, "--prefix", prefix])
            shown = json.loads(run([TOPO, "show", topo, "--prefix", prefix, "--json"]))
            family, pins, transit = describe(shown)
            pins.update(pin_override)
            pair = PAIRS[family]
            record["pins"] = pins
            driver = DRIVERS[point.gateway](prefix, pair, point, pins)
            driver.setup()
            server = subprocess.Popen(ns(prefix, "server", *pinned(pins, "server",
                                                                  [TRAFFIC, "server"])),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_listening(prefix)
            cc = ["--congestion", sc.congestion] if sc.congestion else []
            if sc.rr:
                idle, _, _ = traffic_client(prefix, pins, [pair["server"], "--rr", "--time", "1",
                                                           "--rr-rate", "200", *cc])
                record["rr_idle"] = idle.get("rr")
            sampler = cpu.Sampler(hz=4)
            for pid, _ in driver.pids():
                sampler.watch(pid)
            sampler.watch(server.pid)
            if sc.wire_audit:
                ready = os.path.join(tmp, "wire.ready")
                wire = wire_start(prefix, wire_args(driver, pair, transit, ready), ready)
                sampler.watch(wire.pid)
            args = [pair["server"], "--sessions", str(point.sessions), "--time", str(sc.time),
                    "--warmup", str(sc.warmup), "--pattern", point.pattern, *cc]
            if sc.rr:
                args.append("--rr")
            sampler.start()
            try:
                proc = subprocess.Popen(
                    ns(prefix, "client", *pinned(pins, "client", [TRAFFIC, "client", *args,
                                                                   "--json"])),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                sampler.watch(proc.pid)
                out, err = proc.communicate()
            finally:
                sampler.stop()
            try:
                record["traffic"] = json.loads(out)
            except ValueError:
                raise Failure("tunbed-traffic client: " + ((err or "").strip().splitlines()
                                                           or ["no output"])[-1]) from None
            record["traffic_status"] = proc.returncode
            record["traffic_error"] = (err or "").strip() or None
            if wire:
                record["wire"], record["wire_error"] = wire_stop(wire)
            record["gateway"] = driver.telemetry()
            labels = {str(k): v for k, v in driver.thread_labels().items()}
            procs = {str(pid): label for pid, label in driver.pids()}
            procs[str(server.pid)] = "tunbed-traffic server"
            procs[str(proc.pid)] = "tunbed-traffic client"
            if wire:
                procs[str(wire.pid)] = "tunbed-wire"
            record["processes"] = procs
            record["thread_labels"] = labels
            record["cpu"] = sampler.export()
        finally:
            # Started here, so ended here, by PID, before their namespaces go; a second
            # Ctrl-C waits until all of it is done.
            with deferred_signals():
                for p in (proc, server, wire):
                    if p and p.poll() is None:
                        p.terminate()
                        p.wait(timeout=10)
                if driver:
                    driver.teardown()
                run([TOPO, "down", topo, "--prefix", prefix], check=False)
    record["finished"] = time.time()
    return record
