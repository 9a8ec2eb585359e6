"""report.html as a browser shows it: `tunbed report` on the recorded runs of data/ (two real
runs of gregw on ras.topo, each given the recorded tunbed-wire document, and a meta.json whose
title needs escaping, and a run of each other scenario kind) writes report.html, which headless Chromium opens from file://. What the
page shows is measured from outside, through the DevTools protocol on a pipe
(--remote-debugging-pipe), so the file under test is exactly the one the runner wrote: the
headline lines first, the tables of report.md, every plot an inline SVG drawn at a nonzero size
(a screenshot of it is not blank), no broken image or reference, no request but the page's own,
no error. A second page, broken on purpose, shows that each of these checks can fail.

Chromium loads only local files; every wait is for an event or a reply, bounded, and its
failure names what it waited for."""

import base64
import fcntl
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
TIMEOUT = 30  # seconds for any one step: starting, a reply, loading a page, stopping

# As root, in no desktop session: no sandbox, no GPU, nothing fetched or synchronised, a
# profile of its own. No name resolves, so nothing could reach a network even by mistake.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-pipe"]

TITLE = "tunbed ras: RAS <b>test</b> & co"
PLOTS = ["throughput", "scaling", "cost", "latency", "cores-gregw-gre-w2-mtu0-push-s1",
         "cores-gregw-gre-w2-mtu0-push-s8"]


class BrowserError(Exception):
    pass


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe: Chromium reads commands
    on its fd 3 and writes replies and events on its fd 4, each a JSON text ended by NUL."""

    def __init__(self):
        exe = shutil.which("chromium")
        if not exe:
            raise BrowserError("chromium is not installed (Debian's package chromium; "
                               "scripts/bootstrap installs it)")
        self.profile = tempfile.mkdtemp(prefix="tunbed-chromium-")
        self.err = open(os.path.join(self.profile, "stderr"), "w+")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        # Above 4, so that putting them at 3 and 4 in the child overwrites neither.
        cmd_fd = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        out_fd = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)

        # Not pass_fds=(3, 4): the child makes those inheritable before preexec_fn runs, which
        # fails (EBADF) where this process has no fds 3 and 4. Without close_fds the child keeps
        # what dup2 makes (not close-on-exec); every other fd is (PEP 446, F_DUPFD_CLOEXEC).
        def fds():
            os.dup2(cmd_fd, 3)
            os.dup2(out_fd, 4)
        try:
            self.proc = subprocess.Popen(
                [exe, *FLAGS, f"--user-data-dir={os.path.join(self.profile, 'data')}",
                 "about:blank"], stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err,
                close_fds=False, preexec_fn=fds, start_new_session=True)
        except OSError:
            for fd in (cmd_fd, out_fd, self.to_w, self.from_r):
                os.close(fd)
            self.err.close()
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        os.close(cmd_fd)
        os.close(out_fd)
        self.buf, self.next_id, self.events = b"", 0, []

    def stderr_tail(self):
        self.err.flush()
        self.err.seek(0)
        return " | ".join(self.err.read().strip().splitlines()[-3:])

    def receive(self, deadline, what):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            ready = select.select([self.from_r], [], [], max(0, left))[0] if left > 0 else []
            if not ready:
                raise BrowserError(f"no {what} from chromium within {TIMEOUT} s "
                                   f"(stderr: {self.stderr_tail()})")
            data = os.read(self.from_r, 1 << 20)
            if not data:
                raise BrowserError(f"chromium closed its pipe while we waited for {what} "
                                   f"(exit status {self.proc.poll()}; stderr: "
                                   f"{self.stderr_tail()})")
            self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        """Sends a command, returns its result; events that arrive meanwhile are kept."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self.receive(deadline, f"reply to {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, method, session):
        deadline = time.monotonic() + TIMEOUT
        while True:
            for e in self.events:
                if e.get("method") == method and e.get("sessionId") == session:
                    return e
            self.events.append(self.receive(deadline, f"event {method}"))

    def session(self):
        """The live processes of the session Chromium was started in: it and its helpers."""
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            state, _, _, sid = stat[stat.rindex(")") + 2:].split()[:4]
            if int(sid) == self.proc.pid and state != "Z":
                out.append(int(pid))
        return out

    def gone(self):
        deadline = time.monotonic() + TIMEOUT
        while self.session() or self.proc.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self):
        """Asks Chromium to quit and waits until it and every helper it started are gone;
        ends them (the session started for them) if they are not within TIMEOUT."""
        try:
            if self.proc.poll() is None:
                self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            if not self.gone():
                os.killpg(self.proc.pid, signal.SIGKILL)
                if not self.gone():
                    raise BrowserError(f"chromium's processes {self.session()} did not end")
        finally:
            os.close(self.to_w)
            os.close(self.from_r)
            self.err.close()
            shutil.rmtree(self.profile, ignore_errors=True)


# What the page shows, measured in it once it has loaded. It reads and changes nothing.
MEASURE = r"""
(async () => {
  await document.fonts.ready;
  const box = e => { const r = e.getBoundingClientRect();
                     return {x: r.left + scrollX, y: r.top + scrollY, width: r.width,
                             height: r.height}; };
  const text = e => e ? e.innerText.trim() : null;
  const cells = t => t ? [...t.tBodies[0].rows].map(r => [...r.cells].map(c => text(c)))
                       : null;
  const ids = [...document.querySelectorAll("[id]")].map(e => e.id);
  const refs = [];
  for (const svg of document.querySelectorAll("svg")) {
    for (const e of svg.querySelectorAll("*")) {
      for (const a of e.attributes) {
        const m = /^#(.+)$/.exec(a.value) || /url\(#([^)]+)\)/.exec(a.value);
        if (!m || !/href$|clip-path|mask|filter|fill|stroke|marker/.test(a.name)) continue;
        const t = document.getElementById(m[1]);
        if (!t || !svg.contains(t)) refs.push(`${a.name}=${a.value}`);
      }
    }
  }
  const headline = document.getElementById("headline");
  return {
    title: document.title,
    h1: text(document.querySelector("h1")),
    bold: document.querySelectorAll("b").length,
    afterH1: document.querySelector("h1") ?
             (document.querySelector("h1").nextElementSibling || {}).id || null : null,
    headline: headline ? [...headline.querySelectorAll("li")].map(text) : [],
    headlineBox: headline ? box(headline) : null,
    points: cells(document.getElementById("points")),
    wire: cells(document.getElementById("wire")),
    sections: [...document.querySelectorAll("h2")].map(text),
    figures: [...document.querySelectorAll("figure")].map(f => ({
      id: f.id, svgs: [...f.querySelectorAll(":scope > svg")].map(box)})),
    svgs: document.querySelectorAll("svg").length,
    brokenImages: [...document.images].filter(i => !i.complete || !i.naturalWidth)
                                      .map(i => i.getAttribute("src")),
    duplicateIds: [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))],
    danglingRefs: refs,
  };
})()
"""


def png_pixels(data):
    """(width, height, rows of pixel tuples) of an 8-bit RGB or RGBA PNG, not interlaced (what
    Chromium's screenshots are)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"PNG depth {depth}, colour type {colour}, interlace "
                                 f"{interlace}: not read here")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 3 if colour == 2 else 4
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def inked(png):
    """The share of a screenshot's pixels that are not the page's white."""
    w, h, rows = png_pixels(png)
    return sum(px != (255, 255, 255) for row in rows for px in row) / (w * h) if w * h else 0


class Page:
    """One page opened in its own tab: what it showed (MEASURE), how much of each plot is
    drawn, and everything it requested or complained of."""

    def __init__(self, browser, path):
        self.url = "file://" + os.path.abspath(path)
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = browser.call("Target.attachToTarget", {"targetId": target,
                                                   "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            browser.call(f"{domain}.enable", session=s)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                     session=s)
        browser.events = [e for e in browser.events if e.get("sessionId") != s]
        nav = browser.call("Page.navigate", {"url": self.url}, session=s)
        if nav.get("errorText"):
            raise BrowserError(f"{self.url}: {nav['errorText']}")
        browser.wait_event("Page.loadEventFired", s)
        got = browser.call("Runtime.evaluate", {"expression": MEASURE, "awaitPromise": True,
                                                "returnByValue": True}, session=s)
        if "exceptionDetails" in got:
            raise BrowserError(f"measuring the page failed: {got['exceptionDetails']}")
        self.shown = got["result"]["value"]
        # A screenshot of each plot at half size: enough pixels to tell drawn from blank.
        for fig in self.shown["figures"]:
            fig["inked"] = []
            for r in fig["svgs"]:
                if r["width"] < 1 or r["height"] < 1:
                    fig["inked"].append(0.0)
                    continue
                shot = browser.call("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {**r, "scale": 0.5}}, session=s)
                fig["inked"].append(inked(base64.b64decode(shot["data"])))
        ev = [e for e in browser.events if e.get("sessionId") == s]
        self.requests = [e["params"]["request"]["url"] for e in ev
                         if e.get("method") == "Network.requestWillBeSent"]
        self.failed = [e["params"].get("errorText") for e in ev
                       if e.get("method") == "Network.loadingFailed"]
        self.errors = [e["params"]["entry"]["text"] for e in ev
                       if e.get("method") == "Log.entryAdded"
                       and e["params"]["entry"]["level"] == "error"]
        self.errors += [e["params"]["exceptionDetails"].get("text", "exception") for e in ev
                        if e.get("method") == "Runtime.exceptionThrown"]
        self.errors += [str(e["params"].get("args")) for e in ev
                        if e.get("method") == "Runtime.consoleAPICalled"
                        and e["params"]["type"] in ("error", "assert")]
        browser.call("Target.closeTarget", {"targetId": target})

    def problems(self, headline, plots):
        """What is wrong with the page, given the headline lines and the plots it must show."""
        s, out = self.shown, []
        if s["headline"] != headline:
            out.append(f"headline {s['headline']}, expected {headline}")
        if not s["headlineBox"] or not s["headlineBox"]["height"]:
            out.append("the headline is not shown")
        if s["afterH1"] != "headline":
            out.append(f"the headline does not follow the title (after it: {s['afterH1']})")
        want = [f"plot-{p}" for p in plots]
        if [f["id"] for f in s["figures"]] != want:
            out.append(f"figures {[f['id'] for f in s['figures']]}, expected {want}")
        for f in s["figures"]:
            if len(f["svgs"]) != 1:
                out.append(f"{f['id']}: {len(f['svgs'])} inline SVGs, expected 1")
            for r, ink in zip(f["svgs"], f["inked"]):
                if r["width"] < 1 or r["height"] < 1:
                    out.append(f"{f['id']}: drawn {r['width']} x {r['height']}")
                elif ink < 0.01:
                    out.append(f"{f['id']}: blank ({100 * ink:.2f}% of its pixels drawn)")
        if s["svgs"] != sum(len(f["svgs"]) for f in s["figures"]):
            out.append(f"{s['svgs']} SVGs in the page, not all in a plot's figure")
        for key, what in (("brokenImages", "broken images"), ("duplicateIds", "duplicate ids"),
                          ("danglingRefs", "references to nothing in their plot")):
            if s[key]:
                out.append(f"{what}: {s[key]}")
        if self.requests != [self.url]:
            out.append(f"requests {self.requests}, expected only {self.url}")
        if self.failed:
            out.append(f"failed loads: {self.failed}")
        if self.errors:
            out.append(f"errors: {self.errors}")
        return out


def md_rows(md, section):
    """The rows of the first table after `section` in report.md, as lists of cells."""
    text = md[md.index(section):] if section else md
    table = re.search(r"^\|.*\|\n\|( --- \|)+\n((?:\|.*\|\n)+)", text, re.M)
    return [[c.strip() for c in line.strip("|").split(" | ")]
            for line in table.group(2).splitlines()]


class ReportHtml(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tunbed-report-html-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        os.makedirs(os.path.join(cls.dir, "runs"))
        with open(os.path.join(HERE, "data", "wire-gregw-seq-2w-64s.json")) as f:
            wire = json.load(f)
        # Format 1 records, as every run before the format field wrote them.
        for n in (1, 8):
            with open(os.path.join(HERE, "data", f"run-gregw-s{n}.json")) as f:
                rec = json.load(f)
            rec["wire"], rec["wire_error"] = wire, None
            with open(os.path.join(cls.dir, "runs", f"{rec['point']['key']}-r1.json"), "w") as f:
                json.dump(rec, f)
        with open(os.path.join(cls.dir, "meta.json"), "w") as f:
            json.dump({"scenario": "ras", "title": "RAS <b>test</b> & co", "topology": "ras",
                       "time": 3, "warmup": 1, "repeats": 1, "wire_audit": True,
                       "notes": ["gre skipped: <i>no</i> module"], "complete": True}, f)
        if importlib.util.find_spec("matplotlib") is None:
            raise BrowserError("the report's plots need python3-matplotlib: run "
                               "scripts/bootstrap")
        env = dict(os.environ, PYTHONPATH=SCRIPTS)
        p = subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "report", cls.dir],
                           capture_output=True, text=True, env=env, timeout=120)
        if p.returncode:
            raise BrowserError(f"tunbed report failed ({p.returncode}): {p.stderr[-800:]}")
        cls.out = p.stdout.splitlines()
        cls.browser = Browser()
        cls.addClassCleanup(cls.browser.close)

    def test_command_names_both_reports(self):
        self.assertEqual(self.out[-2:], [f"report: {os.path.join(self.dir, 'report.md')}",
                                         f"report: {os.path.join(self.dir, 'report.html')}"])

    def test_what_the_page_shows(self):
        page = Page(self.browser, os.path.join(self.dir, "report.html"))
        headline = self.out[:-2]
        self.assertEqual(len(headline), 3, self.out)
        self.assertRegex(headline[0], r"^gregw gre 2w, 1 session: [0-9.]+ Gbit/s, cpu1 "
                         r"saturated by gregw gw")
        self.assertRegex(headline[1], r"^gregw gre 2w, 8 sessions: [0-9.]+ Gbit/s, cpu0 ")
        self.assertEqual(headline[2], "wire audit: every tunnel frame of 2 points as expected")
        self.assertEqual(page.problems(headline, PLOTS), [])
        s = page.shown
        # Text is text: the title's and the note's markup is shown, not obeyed.
        self.assertEqual((s["title"], s["h1"], s["bold"]), (TITLE, TITLE, 0))
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        self.assertEqual(s["points"], md_rows(md, "| gateway | sessions | Gbit/s"))
        self.assertEqual(s["wire"], md_rows(md, "## Wire audit"))
        self.assertEqual(len(s["points"]), 2)
        # The saturated cores by name, and the per-core plots say who used them (matplotlib's
        # SVG keeps each text in a comment) and where the 95% line is.
        self.assertEqual([row[-1] for row in s["points"]], ["cpu1", "cpu0, cpu1"])
        for n in (1, 8):
            with open(os.path.join(self.dir, "plots",
                                   f"cores-gregw-gre-w2-mtu0-push-s{n}.svg")) as f:
                svg = f.read()
            for text in ("CPU used by", "gregw gwa worker 1", "gregw gwb worker 1",
                         "saturated, 95%", "cpu0 %", "cpu1 %"):
                self.assertIn(f"<!-- {text} -->", svg)
        self.assertEqual(re.findall(r"!\[[^]]*\]\(plots/([^)]+)\.svg\)", md), PLOTS)

    def test_every_kind(self):
        """report.html of a run of every other kind (the stored runs of today's formats,
        data/formats/, rebuilt by tunbed report): the headline the command printed first,
        every plot of the kind drawn, the points' table where the kind has one, the
        datasheet's every section, nothing broken or loaded."""
        cores = [f"cores-{k}-mtu0-push-s64" for k in ("route---w0", "gregw-gre-w2")]
        for name, plots, table in (
                ("intranet-4", ["throughput", "rtt", "streams"], None),
                ("ndr-2", ["rates", "loss-f64", "latency-f64"], "points"),
                ("failover-2", ["stop-throughput", "stop-cpu"], None),
                ("smoke-1", [], "points"),
                ("datasheet-1", cores, None)):
            with self.subTest(name=name):
                d = os.path.join(self.dir, name)
                shutil.copytree(os.path.join(HERE, "data", "formats", name), d)
                p = subprocess.run([sys.executable, "-B", "-m", "tunbedlib", "report", d],
                                   capture_output=True, text=True, timeout=120,
                                   env=dict(os.environ, PYTHONPATH=SCRIPTS))
                self.assertEqual(p.returncode, 0, p.stderr)
                headline = p.stdout.splitlines()[:-2]
                self.assertTrue(headline, p.stdout)
                page = Page(self.browser, os.path.join(d, "report.html"))
                self.assertEqual(page.problems(headline, plots), [])
                if table:
                    with open(os.path.join(d, "report.md")) as f:
                        self.assertEqual(page.shown["points"], md_rows(f.read(), None))
                if name.startswith("datasheet"):
                    # Every section of the datasheet: a page per gateway, the side-by-side
                    # page, the legend, each gateway's per-core plot.
                    self.assertEqual(page.shown["sections"], [
                        "route", "gregw", "Side by side", "Legend",
                        "route, 64 sessions: per-core CPU",
                        "gregw gre 2w, 64 sessions: per-core CPU"])

    def test_the_file_needs_nothing_else(self):
        with open(os.path.join(self.dir, "report.html")) as f:
            text = f.read()
        for pattern in (r"<script", r"<link", r"<img", r"<iframe", r"<object", r"\bsrc=",
                        r"@import", r"url\((?!#)", r"href=\"(?!#)"):
            self.assertIsNone(re.search(pattern, text, re.I), pattern)

    def test_the_checks_can_fail(self):
        # A page with each fault the checks look for: no headline, a plot missing, one of
        # size zero, one blank, a broken image, an SVG outside a plot, an id twice and a
        # reference to nothing.
        path = os.path.join(self.dir, "broken.html")
        with open(path, "w") as f:
            f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head>'
                    '<body><h1>t</h1><p id="x">no headline</p>'
                    '<figure id="plot-throughput"><svg width="0" height="0"></svg></figure>'
                    '<figure id="plot-cost"><svg width="200" height="100"><rect id="x" '
                    'width="200" height="100" fill="white"/><use href="#none"/></svg></figure>'
                    '<img src="missing.png" width="10" height="10"><svg width="5" height="5">'
                    '</svg></body></html>')
        page = Page(self.browser, path)
        got = page.problems(["a line"], ["throughput", "cost", "latency"])
        url = "file://" + os.path.abspath(os.path.join(self.dir, "missing.png"))
        want = ["headline [], expected ['a line']",
                "the headline is not shown",
                "the headline does not follow the title (after it: x)",
                "figures ['plot-throughput', 'plot-cost'], expected ['plot-throughput', "
                "'plot-cost', 'plot-latency']",
                "plot-throughput: drawn 0 x 0",
                "plot-cost: blank (0.00% of its pixels drawn)",
                "3 SVGs in the page, not all in a plot's figure",
                "broken images: ['missing.png']",
                "duplicate ids: ['x']",
                "references to nothing in their plot: ['href=#none']",
                f"requests ['file://{os.path.abspath(path)}', '{url}'], expected only "
                f"file://{os.path.abspath(path)}"]
        for w in want:
            self.assertIn(w, got)
        self.assertTrue(any(g.startswith("failed loads: ") for g in got), got)
        self.assertTrue(any(g.startswith("errors: ") for g in got), got)


if __name__ == "__main__":
    unittest.main()
