#!/bin/bash
# What tunbed-traffic keeps of its privileges, started as root: nothing. Every thread of a
# running server (listening on port 999, which takes privilege to bind: it binds first, then
# drops) and of a running client (sessions and latency probes) has no capability (CapEff,
# CapPrm, CapInh, CapAmb and the bounding set all zero) and NoNewPrivs 1; the test then runs
# to its end as usual, and the server stops cleanly. A client asked for a congestion control
# the kernel restricts (available, not in tcp_allowed_congestion_control: cubic here) keeps
# CAP_NET_ADMIN, which choosing it takes, and nothing else, and its sessions get it.
#
#  P-client 198.18.1.1 ---wire--- 198.18.1.2 P-server [tunbed-traffic server --port 999]
# shellcheck source=traffic_lib.sh
source "$(dirname "$0")/traffic_lib.sh"
netns_test_init
new_prefix P tbpriv
S=198.18.1.2

# One line per thread: "CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs".
threads_privs() { # pid
	for st in /proc/"$1"/task/*/status; do
		awk '/^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):/ {printf "%s ", $2} END {print ""}' "$st"
	done
}
Z=0000000000000000
NONE="$Z $Z $Z $Z $Z 1 "

"$TOPO" up direct --prefix "$P" >/dev/null
tr_server "$P-server" 999 --threads 2
ip netns exec "$P-client" "$TRAFFIC" client $S --port 999 --sessions 2 --threads 2 --time 4 \
	--rr --congestion reno --json >"$TMP/client.json" 2>"$TMP/client.err" &
cpid=$!
poll 30 sessions_flowing "$P-server" 999 2 || die "the 2 sessions did not bring data to the server"

privs=$(threads_privs "$TR_SERVER")
log "server threads: $(echo "$privs" | tr '\n' '|')"
expect_eq "server: threads (main and 2 workers)" "$(echo "$privs" | wc -l)" "3"
expect_eq "server: every thread without capabilities, NoNewPrivs" "$(echo "$privs" | sort -u)" "$NONE"
privs=$(threads_privs "$cpid")
log "client threads: $(echo "$privs" | tr '\n' '|')"
expect_eq "client: threads (main, 2 workers, the probes)" "$(echo "$privs" | wc -l)" "4"
expect_eq "client: every thread without capabilities, NoNewPrivs" "$(echo "$privs" | sort -u)" "$NONE"

wait_bg "$cpid" 30 "the client"
expect_eq "without privileges: the test completes" "$BG_STATUS $(json_get "$(cat "$TMP/client.json")" '(d["complete"], d["config"]["congestion"], d["rr"]["probes"] > 0, "server_s" in d["cpu"])')" "0 (True, 'reno', True, True)"
allowed=" $(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control) "
restricted=""
read -ra available </proc/sys/net/ipv4/tcp_available_congestion_control
for cc in "${available[@]}"; do
	[[ "$allowed" == *" $cc "* ]] || { restricted=$cc; break; }
done
if [ -n "$restricted" ]; then
	ip netns exec "$P-client" "$TRAFFIC" client $S --port 999 --sessions 2 --time 4 \
		--congestion "$restricted" --json >"$TMP/cc.json" 2>"$TMP/cc.err" &
	cpid=$!
	poll 30 sessions_flowing "$P-server" 999 2 || die "--congestion $restricted: no data: $(cat "$TMP/cc.err")"
	NETADMIN=0000000000001000
	expect_eq "--congestion $restricted (restricted): every thread keeps CAP_NET_ADMIN only" "$(threads_privs "$cpid" | sort -u)" "$Z $NETADMIN $NETADMIN $NETADMIN $Z 1 "
	wait_bg "$cpid" 30 "the client with --congestion $restricted"
	expect_eq "--congestion $restricted: the sessions got it" "$BG_STATUS $(json_get "$(cat "$TMP/cc.json")" '(d["complete"], d["config"]["congestion"])')" "0 (True, '$restricted')"
else
	log "no restricted congestion control on this kernel: the CAP_NET_ADMIN case has nothing to choose"
fi
tr_stop
"$TOPO" down direct --prefix "$P" >/dev/null
expect_nothing_left "$P" "after down"
