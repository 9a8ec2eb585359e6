#!/bin/bash
# The datasheet's DSCP/ECN part by the capture method on the kernel's VXLAN (datasheet_tos.py,
# docs/datasheet.md): the part as `tunbed datasheet` runs it, then what its record says.
# Encapsulation: a packet socket on gwa's transit reads the outer TOS byte of each VXLAN packet
# of three UDP sessions (DSCP 46; ECT(0), ECT(1), CE); decapsulation: a tc program (tcx) on
# gwb's transit re-marks the outer ECN field of the probe's VXLAN packets CE, and the server
# counts what arrives by DS field. Linux's VXLAN (tos 0) writes an outer DSCP of its own (0),
# copies ECT(0) and ECT(1), resets CE to ECT(0) (RFC 6040, 4.1's full functionality), carries
# an outer CE in on ECT packets and drops the Not-ECT ones under CE (RFC 6040, 4.2).
# Under load: 64 TCP sessions that negotiate ECN (CUBIC) through it, the client's nstat before
# and after, on the page's row. Then the same on the kernel's VXLAN with tos inherit
# (vxlan-inherit): the outer DSCP the inner one on every packet, ECN as before. Then the same
# part on gregw with CoDel (gre+aqm, its target 10 us over 1 ms: any queue under the load is a
# standing one), by the wire method: its marks (in gwa's flow queue) reach the senders as CE
# echoes, and the record has gregw's own count of them.
#
#  P-client --lan-a-- P-gwa [vx0] ==transit: VXLAN, UDP 4789 (capture)==> (re-mark CE) [vx0] P-gwb --lan-b-- P-server (recv: IP_RECVTOS)
#  (the same for vxlan-inherit, its vx0 with tos inherit)
#  P-client --lan-a-- P-gwa [gregw] ==transit: GRE (tunbed-wire; crafted CE)==> [gregw, CoDel] P-gwb --lan-b-- P-server
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
netns_test_init
new_prefix P tbtos
HERE=$(cd "$(dirname "$0")" && pwd)

out=$(python3 "$HERE/datasheet_tos.py" vxlan "$P" 2>"$TMP/helper.err") ||
	die "the DSCP/ECN part on vxlan: ${out:-no output} $(tail -3 "$TMP/helper.err")"
rec() { json_get "$out" "$1"; }

expect_eq "the record's method" "$(rec 'd["record"]["method"]')" "capture"
expect_eq "the analysis's method" "$(rec 'd["analysis"]["method"]["name"]')" "capture"
expect_eq "no tunbed-wire ran" "$(rec 'd["record"]["wire"]')" "None"
expect_eq "each session's client exited 0" "$(rec '[d["record"]["sessions"][c]["status"] for c in ("ect0", "ect1", "ce")]')" "[0, 0, 0]"
expect_eq "each capture saw packets of its session" "$(rec 'all(d["record"]["capture"]["sessions"][c]["packets"] > 0 for c in ("ect0", "ect1", "ce"))')" "True"

# DSCP: VXLAN's tos 0 is an outer DSCP of its own.
expect_eq "DSCP carried" "$(rec 'd["analysis"]["dscp"]["verdict"]')" "no"
expect_eq "no outer packet carried DSCP 46" "$(rec '(d["analysis"]["dscp"]["marked"] > 0, d["analysis"]["dscp"]["copied"])')" "(True, 0)"

# ECN at encapsulation: ECT(0) and ECT(1) copied, CE reset to ECT(0), nothing else.
expect_eq "ECT(0), ECT(1), CE outside" "$(rec 'sorted((c, sorted(o)) for c, o in d["analysis"]["encap"]["outer"].items())')" \
	"[('ce', ['ect0']), ('ect0', ['ect0']), ('ect1', ['ect1'])]"
expect_match "the encapsulation's words" "$(rec 'd["analysis"]["encap"]["words"]')" \
	"^not copied \(CE reset to ECT\(0\): RFC 3168's full functionality"

# CE at decapsulation: the re-marked ECT packets arrive CE, the Not-ECT ones are dropped.
expect_eq "CE carried in" "$(rec 'd["analysis"]["decap"]["verdict"]')" "yes"
expect_eq "the ECT probes arrived, all CE" "$(rec '[(r["inner"], r["arrived"] > 0, r["ce"] == r["arrived"]) for r in d["analysis"]["decap"]["probes"] if r["inner"] != "not-ect"]')" \
	"[('ect0', True, True), ('ect1', True, True)]"
expect_eq "the Not-ECT probes under CE dropped" "$(rec '[r["arrived"] for r in d["analysis"]["decap"]["probes"] if r["inner"] == "not-ect"]')" "[0]"
expect_eq "the re-mark set at least the arrived ECT ones CE" "$(rec 'd["record"]["decap"]["remarked"] >= sum(r["arrived"] for r in d["analysis"]["decap"]["probes"])')" "True"
expect_eq "the receiver saw the end datagram" "$(rec 'd["record"]["decap"]["ended"]')" "True"

# Under load: every session negotiated ECN and ended well, the client's counters moved, and the
# page's row has the figures (the kernel's VXLAN has no counters of its own: none recorded).
# (The client's exit status is not asserted: on a busy machine a session's close can miss the
# client's grace after the load, which the row then says beside the counts.)
expect_eq "load: 64 sessions, all negotiated ECN" "$(rec '(d["record"]["load"]["sessions"], d["record"]["load"]["ecn_negotiated"], d["record"]["load"]["congestion"])')" "(64, 64, 'cubic')"
expect_eq "load: segments sent and bytes received" "$(rec '(d["record"]["load"]["nstat"]["TcpOutSegs"] > 0, d["record"]["load"]["bytes"] > 0)')" "(True, True)"
expect_eq "load: measured, no gateway counters" "$(rec '(d["analysis"]["load"]["verdict"] in ("marks", "drops", "neither"), d["record"]["load"]["gateway"])')" "(True, None)"
expect_match "load: the page's row" "$(rec 'd["rows"]["marks / drops under load (ECN, CUBIC)"]')" \
	"^(marks|drops|neither): [0-9,]+ segments delivered under a CE echo, [0-9,]+ retransmits/GB \([0-9,]+ of [0-9,]+ segments; 64 ECN sessions, CUBIC, 4 s, [0-9.]+ Gbit/s\)(; the client exited 1: .*)?$"

# What the part started, it stopped: no process left in the gateways' namespaces (the tc
# program went with the re-mark's process), the server's or the client's.
expect_eq "no process left in the namespaces" "$(rec 'sorted(r for r, p in d["left"].items() if p)')" "[]"
"$TOPO" down --prefix "$P" >/dev/null 2>&1 || true
expect_nothing_left "$P" "the topology"

# The kernel's VXLAN with tos inherit (vxlan-inherit): the same part, by the same method. The
# outer DSCP is now the inner one on every packet; ECN as vxlan's, whatever the tos (the
# kernel's INET_ECN_encapsulate: CE becomes ECT(0) outside).
new_prefix V tbtosv
out=$(python3 "$HERE/datasheet_tos.py" vxlan-inherit "$V" 2>"$TMP/helper-inherit.err") ||
	die "the DSCP/ECN part on vxlan-inherit: ${out:-no output} $(tail -3 "$TMP/helper-inherit.err")"
expect_eq "vxlan-inherit: the record's gateway and method" "$(rec '(d["record"]["point"]["gateway"], d["record"]["method"])')" "('vxlan-inherit', 'capture')"
expect_eq "vxlan-inherit: each session's client exited 0, each capture saw its packets" \
	"$(rec '[(d["record"]["sessions"][c]["status"], d["record"]["capture"]["sessions"][c]["packets"] > 0) for c in ("ect0", "ect1", "ce")]')" "[(0, True), (0, True), (0, True)]"
expect_eq "vxlan-inherit: DSCP carried, on every outer packet" "$(rec '(d["analysis"]["dscp"]["verdict"], d["analysis"]["dscp"]["marked"] > 0, d["analysis"]["dscp"]["copied"] == d["analysis"]["dscp"]["marked"])')" "('yes', True, True)"
expect_eq "vxlan-inherit: every outer packet DSCP 46, each capture's codepoints" \
	"$(rec 'sorted((c, sorted(s["tos"])) for c, s in d["record"]["capture"]["sessions"].items())')" \
	"[('ce', ['186']), ('ect0', ['186']), ('ect1', ['185'])]"
expect_match "vxlan-inherit: ECT(0) and ECT(1) copied, CE reset to ECT(0)" "$(rec 'd["analysis"]["encap"]["words"]')" \
	"^not copied \(CE reset to ECT\(0\): RFC 3168's full functionality, not RFC 6040's copy\): ECT\(0\) -> ECT\(0\); ECT\(1\) -> ECT\(1\); CE -> ECT\(0\)$"
expect_eq "vxlan-inherit: CE carried in, the ECT probes all CE" "$(rec '(d["analysis"]["decap"]["verdict"], [(r["inner"], r["arrived"] > 0, r["ce"] == r["arrived"]) for r in d["analysis"]["decap"]["probes"] if r["inner"] != "not-ect"])')" \
	"('yes', [('ect0', True, True), ('ect1', True, True)])"
expect_eq "vxlan-inherit: the Not-ECT probes under CE dropped, the end datagram seen" "$(rec '([r["arrived"] for r in d["analysis"]["decap"]["probes"] if r["inner"] == "not-ect"], d["record"]["decap"]["ended"])')" "([0], True)"
expect_eq "vxlan-inherit: load: 64 sessions, all negotiated ECN, measured" "$(rec '(d["record"]["load"]["ecn_negotiated"], d["record"]["load"]["nstat"]["TcpOutSegs"] > 0, d["analysis"]["load"]["verdict"] in ("marks", "drops", "neither"), d["record"]["load"]["gateway"])')" "(64, True, True, None)"
expect_eq "vxlan-inherit: the page's DSCP row" "$(rec 'd["rows"]["DSCP carried (outer)"].split(":")[0]')" "yes"
log "vxlan-inherit: $(rec '"; ".join(f"{k}: {v}" for k, v in d["rows"].items())')"
expect_eq "vxlan-inherit: no process left in the namespaces" "$(rec 'sorted(r for r, p in d["left"].items() if p)')" "[]"
"$TOPO" down --prefix "$V" >/dev/null 2>&1 || true
expect_nothing_left "$V" "vxlan-inherit's topology"

# gregw with CoDel (in gwa's flow queue, where the sessions' backlog waits, and on gwb's
# receive queue): it marks the ECN sessions' packets CE in gwa's flow queue (tx_aqm_marked),
# the senders get the marks back (TcpExtTCPDeliveredCE), and the record and the row say both.
new_prefix Q tbtosq
out=$(python3 "$HERE/datasheet_tos.py" gregw "$Q" gre+aqm 10 1000 2>"$TMP/helper-gregw.err") ||
	die "the DSCP/ECN part on gregw gre+aqm: ${out:-no output} $(tail -3 "$TMP/helper-gregw.err")"
expect_eq "gregw: the record's method and mode" "$(rec '(d["record"]["method"], d["record"]["point"]["mode"])')" "('wire', 'gre+aqm')"
expect_eq "gregw: 64 sessions, all negotiated ECN" "$(rec 'd["record"]["load"]["ecn_negotiated"]')" "64"
expect_eq "gregw: CoDel in gwa's flow queue marked CE" "$(rec 'd["record"]["load"]["gateway"]["gwa"]["tx_aqm_marked"] > 0')" "True"
expect_eq "gregw: the marks reached the senders" "$(rec '(d["record"]["load"]["nstat"]["TcpExtTCPDeliveredCE"] > 0, d["analysis"]["load"]["verdict"], d["analysis"]["load"]["ce_echoed"] == d["record"]["load"]["nstat"]["TcpExtTCPDeliveredCE"])')" "(True, 'marks', True)"
expect_eq "gregw: the analysis carries gregw's counts" "$(rec 'd["analysis"]["load"]["gateway"] == d["record"]["load"]["gateway"]')" "True"
expect_match "gregw: the page's row" "$(rec 'd["rows"]["marks / drops under load (ECN, CUBIC)"]')" \
	"^marks: [0-9,]+ segments delivered under a CE echo, [0-9,]+ retransmits/GB \([0-9,]+ of [0-9,]+ segments; 64 ECN sessions, CUBIC, 4 s, [0-9.]+ Gbit/s\); the gateway: gwa [1-9][0-9,]* marked CE in its flow queue \(tx_aqm_marked\) and [0-9,]+ on receive \(aqm_marked\), [0-9,]+ dropped.*; gwb [0-9,]+ marked CE in its flow queue \(tx_aqm_marked\) and [0-9,]+ on receive \(aqm_marked\)"
expect_eq "gregw: its DSCP/ECN verdicts as before" "$(rec '[d["analysis"][k]["verdict"] for k in ("dscp", "encap", "decap")]')" "['yes', 'copied', 'yes']"
expect_eq "gregw: no process left in the namespaces" "$(rec 'sorted(r for r, p in d["left"].items() if p)')" "[]"
"$TOPO" down --prefix "$Q" >/dev/null 2>&1 || true
expect_nothing_left "$Q" "gregw's topology"
