"""One run of one point of a gateway scenario (matrix.py) on a bed that is up for it (bed.py):
the gateway up, the traffic servers, idle latency, the wire audit if asked for, the load with
latency probes while every machine's CPU is sampled, the gateway's own telemetry; then
everything it started stopped again, also when anything fails or the user interrupts. With several client hosts the sessions are spread over them, each
against a server host in turn; their counts are summed, each host's share kept."""

import json
import signal
import time

from .. import analysis, cpu
from . import matrix_budget
from ..common import Failure, GatewayFailure, deferred_signals
from ..common import TRAFFIC_PORT as PORT
from ..drivers import DRIVERS
from ..hosts import HostLost

WIRE_OK = (0, 3)  # done; done and a frame broke an expectation (docs/wire.md, exit status)
READY_TIMEOUT_S = 30


def pinned(pins, role, cmd):
    return ["taskset", "-c", pins[role], *cmd] if pins.get(role) else cmd


def traffic_client(bed, args):
    h = bed.clients[0]
    p = h.call(pinned(bed.pins, "client", [h.bin("tunbed-traffic"), "client", *args, "--json",
                                           *bed.any_address("client")]))
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        err = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise Failure(f"tunbed-traffic client: {err}") from None
    return doc, p.returncode, p.stderr.strip()


def wire_args(driver, addrs, iface, ready):
    """tunbed-wire on gwa's end of transit, expecting what the gateway under test should send:
    GRE between the tunnel's ends (addrs: the bed's), and whatever the driver expects of its
    frames."""
    return ["--iface", iface, "--json", "--ready-file", ready, "--local", addrs["a"],
            "--remote", addrs["b"], *driver.wire_expectations()]


def wire_start(bed, driver):
    h = bed.host("gwa")
    ready = f"{h.state}/wire.ready"
    args = wire_args(driver, bed.addrs, bed.transit_iface("gwa"), ready)
    proc = h.spawn("wire", [h.bin("tunbed-wire"), *args, *bed.any_address("gwa")],
                   stdout=-1)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if h.call(["test", "-e", ready]).returncode == 0:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    _, err = proc.stop(signal.SIGKILL)
    raise Failure("tunbed-wire: " + ((err or "").strip().splitlines() or ["did not start"])[-1])


def wire_stop(proc):
    """SIGTERM ends the capture; tunbed-wire then prints its report. Returns (document, error):
    the error, what tunbed-wire said last, when it gave no document or exited other than 0 or
    3 (the capture failed; its document, if any, is of the frames read until then)."""
    out, err = proc.stop(signal.SIGTERM)
    status = proc.local.returncode
    last = ((err or "").strip().splitlines() or [f"exit status {status}"])[-1]
    try:
        doc = json.loads(out)
    except ValueError:
        return None, last
    return doc, None if status in WIRE_OK else last


def wait_listening(h, port=PORT, udp=False, what="tunbed-traffic server"):
    """Waits until a socket of host h listens on port (TCP, or UDP with udp)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if h.run(["ss", "-Hlun" if udp else "-Hltn", f"sport = :{port}"], check=False).strip():
            return
        time.sleep(0.05)
    raise Failure(f"{what} on {h.label()} did not start listening")


def shares(sessions, nclients):
    """Sessions per client host: as even as can be, the first ones one more."""
    return [sessions // nclients + (i < sessions % nclients) for i in range(nclients)]


def merge_traffic(parts):
    """One tunbed-traffic document of several clients' (the first's window and settings):
    counts summed, per-session rows together, Jain's index over all of them."""
    if len(parts) == 1:
        return parts[0]["doc"]
    first = parts[0]["doc"]
    docs = [p["doc"] for p in parts]
    tcps = [d.get("tcp") or {} for d in docs]
    rows = [dict(r, host=p["host"]) for p, t in zip(parts, tcps) for r in t.get("per_session", [])]
    bps = [r["bits_per_second"] for r in rows if r.get("bits_per_second") is not None]
    tcp = {
        "sessions": sum(t.get("sessions", 0) for t in tcps),
        "bytes": sum(t.get("bytes", 0) for t in tcps),
        "bits_per_second": sum(t.get("bits_per_second") or 0 for t in tcps),
        "session_bps_min": min(bps) if bps else None,
        "session_bps_max": max(bps) if bps else None,
        "jain": analysis.jain(bps),
        "retransmits": sum(t.get("retransmits") or 0 for t in tcps),
        "connections": sum(t.get("connections") or 0 for t in tcps),
        "errors": [e for t in tcps for e in t.get("errors", [])],
        "failed": sum(t.get("failed") or 0 for t in tcps),
        "verify": {"on": all((t.get("verify") or {}).get("on") for t in tcps),
                   "mismatches": sum((t.get("verify") or {}).get("mismatches", 0) for t in tcps)},
        "per_session": rows,
    }
    merged = dict(first, tcp=tcp, complete=all(d.get("complete") for d in docs),
                  interrupted=any(d.get("interrupted") for d in docs))
    merged["config"] = dict(first.get("config", {}), sessions=tcp["sessions"])
    return merged


def inner_path(bed, dest=None):
    """The device gwa sends the server's traffic (to dest: the server's address by default)
    into and its MTU: the tunnel's inner MTU."""
    h = bed.host("gwa")
    try:
        route = json.loads(h.run(["ip", "-j", "route", "get", dest or bed.addrs["server"]])
                           or "[{}]")[0]
        dev = route.get("dev")
        link = json.loads(h.run(["ip", "-j", "link", "show", "dev", dev]))[0]
    except (Failure, ValueError, IndexError, TypeError):
        return {"dev": None, "mtu": None}
    return {"dev": dev, "mtu": link.get("mtu")}


def gateway_up(driver, bed, dest=None):
    """The driver's setup(), pids() and info(); what it says of itself with the inner MTU (of
    the path to dest, inner_path's). Any failure of the gateway's own is a GatewayFailure (its
    point fails, the run goes on); a lost host stays what it is."""
    try:
        driver.setup()
        pids = driver.pids()
        info = dict(driver.info())
    except HostLost:
        raise
    except Failure as e:
        raise GatewayFailure(str(e)) from None
    if driver.needs_gateways:
        info.update(inner_path(bed, dest))
    return pids, info


class Run:
    """What one run starts on its bed, each step a method, and stop(), which ends all of it."""

    def __init__(self, sc, point, bed, hz=4):
        self.sc, self.point, self.bed, self.hz = sc, point, bed, hz  # hz: CPU samples a second
        self.driver, self.servers, self.clients, self.wire = None, [], [], None
        self.samplers, self.by_name, self.processes = [], {}, {}
        self.cc = ["--congestion", sc.congestion] if sc.congestion else []
        self.client_args = []  # more of tunbed-traffic's client options (tunnels: --pairs)

    def gateway_up(self):
        """The driver's gateway up (the gateways' routes kept to be put back first, where the
        bed keeps them); its processes and what it says of itself."""
        bed = self.bed
        self.driver = DRIVERS[self.point.gateway](bed, self.point)
        if self.driver.tunnel and getattr(bed, "keep_routes", None):
            bed.keep_routes(("gwa", "gwb"), lambda r: bed.addrs["net_b" if r == "gwa"
                                                               else "net_a"])
        return gateway_up(self.driver, bed)

    def servers_up(self):
        """A traffic server on every server host, listening."""
        bed = self.bed
        for i, h in enumerate(bed.servers):
            self.servers.append(h.spawn(f"traffic-server-{i}", pinned(
                bed.pins, "server", [h.bin("tunbed-traffic"), "server", "--port", str(PORT),
                                     *bed.any_address("server")])))
        for h in bed.servers:
            wait_listening(h)

    def idle_latency(self):
        idle, _, _ = traffic_client(self.bed, [self.bed.addrs["server"], "--rr", "--time", "1",
                                               "--rr-rate", "200", *self.cc])
        return idle.get("rr")

    def watch(self, role, pid, label, host=None):
        """pid's CPU sampled where role runs (on host, of several of the role), under label."""
        name = self.bed.sampler_of(role, host)
        if name in self.by_name:
            self.by_name[name].watch(pid)
            self.processes[name][str(pid)] = label

    def sample(self, driver_pids):
        """A sampler on every machine, watching the gateway's processes, the servers and the
        wire audit's (started here, when asked for); returns the machines' clocks."""
        bed = self.bed
        for name, h, roles in bed.samplers():
            s = cpu.Sampler(hz=self.hz, argv=h.argv if h else None,
                            binary=h.bin("tunbed-sample") if h else None)
            self.samplers.append((name, roles, s))
            self.by_name[name] = s
            self.processes[name] = {}
        for role, pid, label in driver_pids:
            self.watch(role, pid, label)
        for i, p in enumerate(self.servers):
            self.watch("server", p.pid, "tunbed-traffic server" +
                       (f" {bed.servers[i].name}" if len(self.servers) > 1 else ""),
                       bed.servers[i])
        if self.sc.wire_audit:
            self.wire = wire_start(bed, self.driver)
            self.watch("gwa", self.wire.pid, "tunbed-wire")
        for _, _, s in self.samplers:
            s.start()
        return bed.align(self.samplers)

    def load(self):
        """The sessions, spread over the client hosts, until they end; then the samplers'
        last samples. Returns [(host, server, sessions, stdout, stderr)] per client."""
        sc, bed = self.sc, self.bed
        try:
            n = shares(self.point.sessions, len(bed.clients))
            for i, h in enumerate(bed.clients):
                if not n[i]:
                    continue
                srv = bed.servers[i % len(bed.servers)]
                args = [srv.spec.addr if hasattr(srv, "spec") else bed.addrs["server"],
                        "--port", str(PORT), "--sessions", str(n[i]), "--time", str(sc.time),
                        "--warmup", str(sc.warmup), "--pattern", self.point.pattern, *self.cc,
                        *self.client_args, "--json", *bed.any_address("client")]
                if sc.rr and i == 0:
                    args.append("--rr")
                if sc.verify:
                    args.append("--verify")
                p = h.spawn(f"traffic-client-{i}", pinned(
                    bed.pins, "client", [h.bin("tunbed-traffic"), "client", *args]), stdout=-1)
                self.clients.append((h, srv, n[i], p))
                matrix_budget.give_client(bed, p.pid)
                self.watch("client", p.pid, "tunbed-traffic client" +
                           (f" {h.name}" if len(bed.clients) > 1 else ""), h)
            # While the load runs, a host whose connection ends ends the run at once.
            for *_, p in self.clients:
                p.reading()
            while any(p.poll() is None for *_, p in self.clients):
                bed.check()
                time.sleep(0.2)
            return [(h, srv, k, *p.communicate()) for h, srv, k, p in self.clients]
        finally:
            for _, _, s in self.samplers:
                try:
                    s.stop()
                except Failure:
                    bed.check()  # a sampler that failed with its host: the host's loss
                    raise

    def traffic(self, outputs):
        """The record's traffic: the clients' documents merged, their exit statuses and
        errors, each one's share with several."""
        parts = []
        for (h, srv, k, out, err), (_, _, _, p) in zip(outputs, self.clients):
            try:
                doc = json.loads(out)
            except ValueError:
                raise Failure(f"tunbed-traffic client on {h.label()}: " + (
                    (err or "").strip().splitlines() or ["no output"])[-1]) from None
            parts.append({"host": h.name, "server": srv.name, "sessions": k, "doc": doc,
                          "status": p.local.returncode, "error": (err or "").strip() or None})
        out = {"traffic": merge_traffic(parts),
               "traffic_status": max(p["status"] for p in parts),
               "traffic_error": "; ".join(p["error"] for p in parts if p["error"]) or None}
        if len(parts) > 1:
            out["traffic_parts"] = [dict(p) for p in parts]
        return out

    def hosts(self, clocks):
        """Each sampled machine's roles, samples, processes, named threads, clock and facts."""
        bed, labels = self.bed, self.driver.thread_labels() if self.driver else {}
        return [{"name": name, "roles": roles, "cpu": s.export(),
                 "processes": self.processes[name],
                 "thread_labels": {str(tid): label for (role, tid), label in labels.items()
                                   if bed.sampler_of(role) == name},
                 "clock": clocks.get(name, {"offset_s": 0.0, "error_s": 0.0}),
                 "facts": bed.facts().get(name)} for name, roles, s in self.samplers]

    def stop(self):
        """Started here, so ended here, by PID, before the bed is taken down; a second Ctrl-C
        waits until all of it is done."""
        with deferred_signals():
            for *_, p in self.clients:
                if p.poll() is None:
                    p.stop()
            for p in [self.wire, *self.servers]:
                if p and p.poll() is None:
                    p.stop()
            for _, _, s in self.samplers:
                s.abort()
            if self.driver:
                self.driver.teardown()


def measure(sc, point, repeat, bed):
    """Runs point once on bed, which is up for it (bed.point); returns the raw record
    (JSON-ready). What it starts it stops, whatever happens."""
    record = {"point": point.__dict__ | {"key": point.key(), "config": point.config()},
              "repeat": repeat, "started": time.time(), "pins": bed.pins,
              "rate_cap_bps": getattr(bed, "rate_cap_bps", None)}
    run = Run(sc, point, bed)
    try:
        driver_pids, record["gateway_info"] = run.gateway_up()
        budgeted = getattr(bed, "budgets", None) is not None
        if budgeted:
            record["budget_note"] = matrix_budget.give(bed, run.driver, driver_pids)
        run.servers_up()
        if sc.rr:
            record["rr_idle"] = run.idle_latency()
        clocks = run.sample(driver_pids)
        record.update(run.traffic(run.load()))
        if run.wire:
            record["wire"], record["wire_error"] = wire_stop(run.wire)
            run.wire = None
        record["gateway"] = run.driver.telemetry()
        record["hosts"] = run.hosts(clocks)
        if budgeted:
            threads, processes = matrix_budget.export(bed)
            record["hosts"][0]["budgets"] = threads
            if processes:
                record["hosts"][0]["process_budgets"] = processes
    finally:
        run.stop()
    record["finished"] = time.time()
    return record
