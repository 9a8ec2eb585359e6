#!/bin/bash
# tunbed intranet end to end with one profile from a scenario file, 200 Mbit/s capped (jumbo
# frames, 1 vCPU per endpoint): one stream above half the cap and below it; UDP at half the cap
# loses nothing, at 1.5 times the cap about a third, all of it the cap's drops; ICMP echo and TCP
# probe round trips idle and loaded in the records, the tables and the plots; the headline in
# words; `tunbed report` rebuilds the same; every bad value gets its one line and exit status 2
# before anything starts; nothing is left behind.
#
#  P-client 198.18.4.1 --lan-- [P-zone: tbf 200mbit towards the server] --cap-- 198.18.5.2 P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbintra
TUNBED="$TUNBED_SRC/scripts/tunbed"
R="$TMP/results"

cat >"$TMP/one.ini" <<'EOF'
[intranet]
name = one
profiles = c1-1g

[profile c1-1g]
label = 1 vCPU, 200 Mbit/s cap
vcpus = 1
rate = 200mbit
; a cap and 9000-byte frames that keep UDP at 1.5 times the cap within what a loaded
; machine's one CPU sends (at a 1 Gbit/s cap a busy CI machine offered 508 of 1500 Mbit/s)
mtu = 9000
EOF
out=$("$TUNBED" intranet --scenario "$TMP/one.ini" --streams 1 --time 2 --warmup 1 --repeats 1 --udp-rate 50%,150% --ping-count 20 --ping-interval 0.05 --prefix "$P" --results "$R" 2>"$TMP/run.err") || die "tunbed intranet failed: $(tail -3 "$TMP/run.err")"
dir=$(find "$R" -maxdepth 1 -name '*-one' | head -1)
[ -n "$dir" ] || die "no results directory"
expect_match "headline: the profile in words" "$out" "^1 vCPU, 200 Mbit/s cap: 1 stream 0\.(1[0-9]|20) Gbit/s \(([5-9][0-9]|100)% of cap\), ping [0-9.e-]+ ms idle / [0-9.e-]+ ms loaded, UDP 100 Mbit/s 0\.00% loss, UDP 300 Mbit/s [1-4][0-9]\.[0-9]{2}% loss"
expect_match "the command names both reports, last" "$out" "report: $dir/report\.md"$'\n'"report: $dir/report\.html$"
for f in report.md report.html summary.csv summary.json meta.json runs/c1-1g-idle-r1.json runs/c1-1g-tcp-s1-r1.json runs/c1-1g-udp-100000000bps-r1.json runs/c1-1g-udp-300000000bps-r1.json; do
	[ -s "$dir/$f" ] || fail "missing $f"
done
for s in "## Latency" "## Throughput" "## UDP" "## Instances" "## Throughput against streams" "## Round trip idle and loaded" "## Per-stream throughput"; do
	grep -q "^$s\$" "$dir/report.md" || fail "report.md has no section '$s'"
done
python3 - "$dir" "$out" <<'PY' || fail "results are not what the profile makes them"
import glob, html, json, os, re, sys
d, out = sys.argv[1], sys.argv[2]
run = lambda n: json.load(open(os.path.join(d, "runs", n + "-r1.json")))
cap = 2e8
meta = json.load(open(os.path.join(d, "meta.json")))
assert meta["format"] == 4 and meta["kind"] == "intranet" and meta["complete"], meta
for f in glob.glob(os.path.join(d, "runs", "*.json")):
    assert (json.load(open(f))["format"], json.load(open(f))["kind"]) == (4, "intranet"), f
p = meta["profiles"][0]
assert (p["rate"], p["burst"], p["limit"], p["mtu"]) == (cap, 25000, 275000, 9000), p
assert p["cpus"]["client"] and p["cpus"]["server"], p["cpus"]
# One stream: the cap shapes it, the machine does not hold it below half of it.
t = run("c1-1g-tcp-s1")["traffic"]
assert 0.5 * cap < t["tcp"]["bits_per_second"] <= cap, t["tcp"]["bits_per_second"]
assert t["config"]["sessions"] == 1 and t["complete"], t["config"]
# UDP at half the cap: nothing lost, nothing dropped by the cap.
r = run("c1-1g-udp-100000000bps")
u = r["traffic"]["udp"]
assert u["sent"] > 0 and u["lost"] == 0 and u["received"] == u["sent"], u
assert r["qdisc"]["forward"]["kind"] == "tbf" and r["qdisc"]["forward"]["drops"] == 0, r["qdisc"]
# At 1.5 times the cap about a third is lost (a wide margin: on a busy machine the client offers
# less than it is asked), and the cap dropped it: what the server missed is tbf's drops, give or
# take 1% of the datagrams (a busy receiver's own).
r = run("c1-1g-udp-300000000bps")
u, drops = r["traffic"]["udp"], r["qdisc"]["forward"]["drops"]
assert 0.1 < u["lost"] / u["sent"] < 0.5, (u["lost"], u["sent"])
assert drops <= u["lost"] <= drops + 0.01 * u["sent"], (u["lost"], drops)
assert u["size"] == 9000 - 28 and u["received"] * u["size"] * 8 / r["traffic"]["measured_s"] <= 1.01 * cap
# Ping idle and loaded: every probe answered, the figures ordered; the TCP probe beside them.
for name, want in (("c1-1g-idle", 20), ("c1-1g-tcp-s1", 20)):
    i = run(name)["traffic"]["icmp"]
    assert i["probes"] >= want - 1 and i["received"] == i["probes"], (name, i)
    assert 0 < i["min_ms"] <= i["avg_ms"] <= i["max_ms"], (name, i)
    assert run(name)["traffic"]["rr"]["p50_ms"] > 0, name
facts = run("c1-1g-idle")["facts"]["client"]
assert facts["nic"]["name"] == "lan" and facts["nic"]["mtu"] == 9000, facts["nic"]
# The summary and the tables carry the same figures.
s = json.load(open(os.path.join(d, "summary.json")))
assert s["complete"] and s["summary"]["c1-1g-tcp-s1"]["bits_per_second"]["median"] == t["tcp"]["bits_per_second"]
md = open(os.path.join(d, "report.md")).read()
assert "| 1 vCPU, 200 Mbit/s cap | 1 | " in md and "| 1 vCPU, 200 Mbit/s cap | 300 Mbit/s | " in md, md
assert "| 1 vCPU, 200 Mbit/s cap | 200 Mbit/s, 25000 B, 275000 B | " in md
# The latency row, by its shape (idle ICMP avg / min / max / mdev), not by the figures: an idle
# ping of 0.1 ms or more on a busy machine missed a match on "| 0.0".
num = r"[0-9.e+-]+"
rows = [line for line in md.splitlines()
        if re.match(rf"\| 1 vCPU, 200 Mbit/s cap \| {num} / {num} / {num} / {num} \|", line)]
assert len(rows) == 1 and "(1 streams)" in rows[0], rows  # idle and loaded
assert len(open(os.path.join(d, "summary.csv")).read().splitlines()) == 1 + 4
page = open(os.path.join(d, "report.html"), encoding="utf-8").read()
lines = [x for x in out.splitlines() if not x.startswith("report: ")]
want = '<ul class="headline" id="headline">\n' + "".join(f"<li>{html.escape(x)}</li>\n" for x in lines)
assert want in page and page.index(want) < page.index("<table"), "report.html: no headline first"
assert page.count("<svg") == 3 and "<img" not in page and "<script" not in page, "report.html: plots"
for p in ("throughput", "rtt", "streams"):
    png = open(os.path.join(d, "plots", p + ".png"), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR" and png[-8:-4] == b"IEND", p
    assert b"<svg" in open(os.path.join(d, "plots", p + ".svg"), "rb").read(400), p
print("consistent")
PY
out2=$("$TUNBED" report "$dir" 2>"$TMP/report.err") || die "tunbed report failed: $(tail -3 "$TMP/report.err")"
expect_eq "tunbed report: the same headline and both reports" "$out2" "$out"
expect_nothing_left "$P" "after tunbed intranet"

# Bad values: one line, exit status 2, before anything starts (no results directory, no
# namespace).
cpus=$(nproc)
printf '%s\n' "[profile big]" "vcpus = $((cpus + 1))" >"$TMP/big.ini"
printf '%s\n' "[intranet]" "profiles = c1" "" "[profile c1]" "rate = 1gbitt" >"$TMP/rate.ini"
bad() { # what regex args...
	local what=$1 re=$2
	shift 2
	expect_refusal "$what" 2 "^tunbed: $re\$" "$TUNBED" intranet --prefix "$P" --results "$TMP/bad" "$@"
}
bad "a rate that does not parse" "bad value 'fast' for --udp-rate: expected a bit rate such as 1gbit, 2\.5g or 100mbit" --udp-rate fast
bad "a cap that does not parse" "$TMP/rate.ini:5: bad value '1gbitt' for rate: expected a bit rate such as 1gbit, 2\.5g or 100mbit" --scenario "$TMP/rate.ini"
bad "more streams than the generator has" "bad value '10001' for --streams: expected 1 to 10000" --streams 1,10001
bad "more CPUs than the machine has" "profile 'big': $((cpus + 1)) vCPUs per endpoint, but this machine has $cpus CPUs \([0-9,]+\)" --scenario "$TMP/big.ini"
bad "a profile nobody defined" "unknown profile 'c9': expected one of c1-1\.5g, c2-2g, c2-nocap" --profiles c9
bad "a share of no cap" "--udp-rate 50%: profile 'c2-nocap' has no cap to take a share of: give a bit rate such as 1gbit" --profiles c2-nocap --udp-rate 50%
bad "a ping interval of 0" "bad value '0' for --ping-interval: expected 0\.001 to 60" --ping-interval 0
[ ! -e "$TMP/bad" ] || fail "a refused run made $TMP/bad"
expect_nothing_left "$P" "after the refusals"
