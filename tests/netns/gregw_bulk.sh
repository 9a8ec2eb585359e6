#!/bin/bash
# gregw carries bulk TCP intact: 200 MB with 1 flow and with 8 flows through 2 workers on
# each gateway, every byte checked (SHA-256 on both sides); each flow is handled by a single
# worker on each gateway, in both directions, and the receiver counts no reordering.
#
#  P-client [bulk.py client] --lan-a-- P-gwa [gregw, 2 workers] ==transit (GRE, seq)== [gregw, 2 workers] P-gwb --lan-b-- [bulk.py server] P-server
# shellcheck source=gregw_lib.sh
source "$(dirname "$0")/gregw_lib.sh"
gregw_test_init
new_prefix P tbbulk
MB=$((1 << 20))

"$TOPO" up ras --prefix "$P" >/dev/null
gw_pair4 "$P" --seq --workers 2

# One worker per flow on each gateway: both directions of every TCP flow in one table. (Over
# GRE-in-UDP the TUN device and the receiving sockets both pick the worker by the inner flow:
# docs/gregw.md.)
one_worker_per_flow() { # gateway-name
	python3 - "$(gw_stats "$1" flows)" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
workers = {}
for f in d["flows"]:
    if f["proto"] == 6 and 9000 in (f["a_port"], f["b_port"]):
        workers.setdefault((f["a"], f["a_port"], f["b"], f["b_port"]), set()).add(f["worker"])
print(bool(workers) and all(len(w) == 1 for w in workers.values()))
PY
}

bulk_transfer "$P" 198.18.3.2 1 $((200 * MB))
expect_eq "1 flow: one worker per gateway (gwa)" "$(one_worker_per_flow gwa)" "True"
expect_eq "1 flow: one worker per gateway (gwb)" "$(one_worker_per_flow gwb)" "True"

bulk_transfer "$P" 198.18.3.2 8 $((200 * MB))
expect_eq "8 flows: one worker per flow (gwa)" "$(one_worker_per_flow gwa)" "True"
expect_eq "8 flows: one worker per flow (gwb)" "$(one_worker_per_flow gwb)" "True"
b=$(gw_stats gwb)
a=$(gw_stats gwa)
expect_eq "gwb: no reordering" "$(json_get "$b" 'd["seq"]["reordered"]')" "0"
expect_eq "gwa: no reordering (the ACKs)" "$(json_get "$a" 'd["seq"]["reordered"]')" "0"
expect_eq "gwb carried at least 400 MB into TUN" "$(json_get "$b" 'd["total"]["tun_tx_bytes"] >= 400 * 2**20')" "True"
expect_eq "both workers of gwb worked" "$(json_get "$b" 'all(w["tun_tx_packets"] > 0 for w in d["workers"])')" "True"
expect_eq "gwb: nothing dropped" "$(json_get "$b" 'd["total"]["dropped"]')" "0"
log "gwb totals: $(json_get "$b" '{k: d["total"][k] for k in ("wire_rx_packets", "tun_tx_packets", "ring_drops")} | d["seq"]')"

gw_stop gwa
gw_stop gwb
"$TOPO" down ras --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
