#!/bin/bash
# ovs-gre.sh: Open vSwitch's userspace datapath (datapath_type=netdev) as a GRE tunnel endpoint
# inside one network namespace, or on the host it runs on: the runner's "ovs-gre" gateway
# (docs/runner.md), to be run side by side with (or against) gregw. One ovsdb-server and one
# ovs-vswitchd per namespace, started inside it with `ip netns exec`, with their own database,
# sockets, pidfiles and logs in the run directory; a system-wide OVS (/run/openvswitch,
# /etc/openvswitch) is never used.
#
# It keeps the runner's driver contract (CONTRIBUTING.md, "Adding a gateway"): called as
# `ovs-gre.sh up`, `down`, `pids` or `version` with no options and TUNBED_ROLE in its
# environment, it takes everything from the contract's variables: the namespace TUNBED_NETNS
# (empty: the namespace it runs in, on a host of the hosts mode), --local TUNBED_LOCAL,
# --remote TUNBED_REMOTE, --addr TUNBED_ADDR, a --route for each of TUNBED_ROUTES, --underlay
# TUNBED_TRANSIT_IFACE, --cpus TUNBED_CPUS, and --key 7; its run directory is the default in a
# namespace (so that `tunbed down` finds what a killed run left), TUNBED_STATE/ovs on a host.
# `pids` then labels each PID with its daemon, and `version` prints ovs-vswitchd's version.
# Beyond the contract, TUNBED_OVS_TUNNELS (a file, as --tunnels FILE) makes it the runner's
# ovs-gre of `tunbed tunnels` (docs/tunnels.md): many tunnels in place of key 7 and the routes
# of TUNBED_ROUTES. By hand:
#
#   ovs-gre.sh up   --netns NS --local A --remote B --addr PREFIX [--addr PREFIX]...
#                   [--key K] [--csum] [--seq] [--l2] [--no-df] [--mtu N] [--dev NAME]
#                   [--underlay IFNAME] [--route PREFIX]... [--via ADDR] [--rundir DIR]
#                   [--cpus LIST] [--tunnels FILE]
#   ovs-gre.sh down --netns NS [--rundir DIR]     stop both daemons, restore the namespace
#   ovs-gre.sh pids --netns NS [--rundir DIR]     PIDs of ovsdb-server then ovs-vswitchd
#   ovs-gre.sh show --netns NS [--rundir DIR]     bridges, flows, OVS routes and neighbours
#   ovs-gre.sh ctl  --netns NS [--rundir DIR] -- vsctl|appctl|ofctl ARGS...
#
#   --local A        outer (underlay) IPv4 address of this end; it must be on an interface of NS
#   --remote B       outer IPv4 address of the peer
#   --addr PREFIX    tunnel address(es) of the tunnel device, e.g. 198.19.0.1/24 (IPv4 or IPv6)
#   --key K          GRE key (RFC 2890), 0 to 4294967295; both ends must agree
#   --csum, --seq    GRE checksum / sequence numbers on sent packets (received ones are
#                    accepted either way: OVS checks a present checksum, ignores sequence
#                    numbers). Not both: OVS (3.1, and master still) sums the header before it
#                    writes the sequence number, so all but the packet with number 0 go out
#                    with a bad checksum (an OVS peer drops them). Allowed, with a warning.
#   --l2             Ethernet over GRE (protocol 0x6558, "gretap") instead of the default
#                    IP over GRE (protocol 0x0800/0x86dd, like ip_gre and gregw)
#   --no-df          clear DF on the outer header (OVS sets it by default)
#   --mtu N          MTU of the tunnel device (default: underlay MTU - 20 - GRE header
#                    (4, +4 key, +4 csum, +4 seq), - 14 more with --l2: 1472 for a
#                    1500-byte underlay with a key). OVS neither fragments nor sends
#                    "frag needed" for tunnel packets too big for the underlay: it drops them
#   --dev NAME       the tunnel device, an OVS internal port (default gre0, like gregw's TUN);
#                    the GRE port is NAME-gre
#   --underlay IF    the interface that carries --local (default: found from --local)
#   --route PREFIX   replaced to go into the tunnel (`ip route replace PREFIX dev gre0`);
#                    repeatable; down puts back what was there before
#   --via ADDR       next hop for the --route prefixes (the peer's tunnel address); needed
#                    with --l2, where the kernel resolves next hops with ARP over the tunnel
#   --rundir DIR     default /run/tunbed-ovs/NS: conf.db, db.sock, *.ctl, *.mgmt, *.pid, *.log
#   --cpus LIST      CPU list for both daemons (taskset -c LIST; their threads inherit it)
#   --tunnels FILE   many tunnels in place of the one of --remote and --key: a line a tunnel,
#                    NAME KEY REMOTE PREFIX [PREFIX...] (NAME 1-11 of [A-Za-z0-9_-], KEY 0 to
#                    4294967295, REMOTE IPv4; blank lines and lines from # on are skipped).
#                    Tunnel n (its line among the tunnels, from 1) is the GRE port gre-NAME
#                    with OpenFlow port number n, its key and remote; its prefixes are routed
#                    into the tunnel device and OpenFlow rules (cookie 2n into the tunnel,
#                    2n+1 out of it) send each prefix from the device to the port and what the
#                    port receives to the device. --remote and --route are then not needed
#                    (--key and --route are ignored); two tunnels of one name, or of one
#                    remote and key, are refused (exit 2) before anything is started
#
# `pids` prints one PID a line (for CPU accounting: the netdev datapath without DPDK has no
# PMD threads; ovs-vswitchd's main thread polls the AF_PACKET and tap ports, all its threads
# count). `ctl -- ofctl COMMAND BRIDGE ARGS` runs ovs-ofctl on the bridge's socket.
# Exit status: 0 done; 1 failed (up undoes what it did); 2 bad command line.
#
# How it is wired (OVS native tunnelling in userspace, see "Connecting VMs Using Tunnels
# (Userspace)" in the OVS documentation):
#
#   kernel:  routes -> gre0 (tunnel address, NOARP)          br-underlay (underlay address)
#                        |                                         |
#   OVS:     bridge gre0: LOCAL <-> gre0-gre (type=gre)  bridge br-underlay: LOCAL <-> transit
#                                      | tnl_push / tnl_pop        ^                  |
#                                      +---------------------------+               (veth)
#
# The userspace datapath builds the outer header itself. It looks the remote up in its own
# route table, which ovs-vswitchd fills from the kernel's main table of the namespace it runs
# in (rtnetlink; only routes whose destination or gateway lies in a subnet of an address of
# the output device are taken), and the output device must be an OVS bridge's internal port
# holding the local address; the next hop's MAC comes from OVS's own neighbour cache (it sends
# ARP requests itself and learns from replies to them, gratuitous ARP and received tunnel
# packets). A kernel interface outside OVS cannot be used. So the underlay interface becomes
# a port (type system: an AF_PACKET socket) of the bridge br-underlay, and its IPv4 addresses
# and routes move to br-underlay's internal port; down moves them back. Received GRE that
# matches the tunnel port (remote_ip, local_ip, key) is popped where the bridge would deliver
# it to br-underlay. The kernel must not take the GRE packets too (without ip_gre it would
# count them in InUnknownProtos and answer "protocol unreachable"), so br-underlay gets a MAC
# of its own and the underlay interface stops answering ARP (arp_ignore=1); br-underlay
# announces its MAC with a gratuitous ARP (arp_notify) for a peer OVS that cached the
# interface's MAC (OVS does not learn from ARP requests).
#
# The tunnel device gre0 is the internal port of a bridge with fail-mode=secure and four
# OpenFlow rules: IPv4/IPv6 from gre0 to the GRE port, and back with gre0's MAC as the
# destination. With IP over GRE (packet_type=legacy_l3) OVS strips the Ethernet header on the
# way into the tunnel and adds a zero one on the way out; gre0 has ARP off, no IPv6 link-local
# address (no IPv6 at all unless an --addr or --route is IPv6), so no neighbour is needed and
# nothing but routed traffic enters the tunnel. With --tunnels the bridge has a GRE port a
# tunnel, each with its remote and key (OVS picks a received packet's port by its outer
# source, destination and key), and rules that pick the port by the inner destination: one
# tunnel device for all of them, routed into by one `ip -batch`, rather than an internal port
# a tunnel (each a tap device and a file descriptor that ovs-vswitchd polls). The ports are
# added TUNNEL_CHUNK to an OVSDB transaction (ovsdb-client transact; an argument holds no
# more), then one ovs-vsctl waits until ovs-vswitchd has configured them all; the rules
# go in from one file as one bundle (ovs-ofctl add-flows --bundle); GRE ports of the
# userspace datapath are no kernel devices, and go with the daemons. OVS's internal ports are
# persistent tap devices that outlive ovs-vswitchd: down deletes them (gre0, br-underlay,
# ovs-netdev).
set -eu
set -o pipefail

RUNBASE=/run/tunbed-ovs
SCHEMA=${OVS_SCHEMA:-/usr/share/openvswitch/vswitch.ovsschema}
UL_BRIDGE="br-underlay"
PROG=ovs-gre.sh
# --tunnels: GRE ports an OVSDB transaction (about 330 bytes of JSON each, in one argument of
# at most 128 KiB).
TUNNEL_CHUNK=300

die() {
	echo "$PROG: $*" >&2
	exit 1
}
usage_error() {
	echo "$PROG: $* (see --help)" >&2
	exit 2
}
usage() { sed -n '2,/^set -eu$/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

# --- command line ------------------------------------------------------------------------

cmd=${1:-}
[ -n "$cmd" ] || usage_error "no command"
shift
case "$cmd" in
-h | --help)
	usage
	exit 0
	;;
up | down | pids | show | ctl | version) ;;
*) usage_error "unknown command '$cmd'" ;;
esac
CONTRACT=false
if [ "$#" -eq 0 ] && [ -n "${TUNBED_ROLE:-}" ]; then
	CONTRACT=true
elif [ "$cmd" = version ]; then
	usage_error "version is the driver contract's (TUNBED_ROLE in the environment)"
fi

NS="" LOCAL="" REMOTE="" KEY="" MTU="" DEV=gre0 UNDERLAY="" RUNDIR="" CPUS=""
CSUM=false SEQ=false L2=false DF=true
ADDRS=() ROUTES=() CTL_ARGS=() VIA="" TUNNELS=""
need_arg() { if [ "$#" -lt 2 ] || [ -z "$2" ]; then usage_error "$1 needs a value"; fi; }
while [ "$#" -gt 0 ]; do
	case "$1" in
	--netns) need_arg "$@"; NS=$2; shift ;;
	--local) need_arg "$@"; LOCAL=$2; shift ;;
	--remote) need_arg "$@"; REMOTE=$2; shift ;;
	--addr) need_arg "$@"; ADDRS+=("$2"); shift ;;
	--key) need_arg "$@"; KEY=$2; shift ;;
	--mtu) need_arg "$@"; MTU=$2; shift ;;
	--dev) need_arg "$@"; DEV=$2; shift ;;
	--underlay) need_arg "$@"; UNDERLAY=$2; shift ;;
	--route) need_arg "$@"; ROUTES+=("$2"); shift ;;
	--via) need_arg "$@"; VIA=$2; shift ;;
	--rundir) need_arg "$@"; RUNDIR=$2; shift ;;
	--cpus) need_arg "$@"; CPUS=$2; shift ;;
	--tunnels) need_arg "$@"; TUNNELS=$2; shift ;;
	--csum) CSUM=true ;;
	--seq) SEQ=true ;;
	--l2) L2=true ;;
	--no-df) DF=false ;;
	-h | --help) usage; exit 0 ;;
	--)
		shift
		CTL_ARGS=("$@")
		break
		;;
	*) usage_error "unknown option '$1'" ;;
	esac
	shift
done

if "$CONTRACT"; then
	NS=${TUNBED_NETNS:-}
	LOCAL=${TUNBED_LOCAL:-}
	REMOTE=${TUNBED_REMOTE:-}
	ADDRS=("${TUNBED_ADDR:-}")
	read -ra ROUTES <<<"${TUNBED_ROUTES:-}"
	UNDERLAY=${TUNBED_TRANSIT_IFACE:-}
	CPUS=${TUNBED_CPUS:-}
	KEY=7
	TUNNELS=${TUNBED_OVS_TUNNELS:-}
	if [ -n "$TUNNELS" ]; then
		KEY="" ROUTES=()
	fi
	if [ -z "$NS" ]; then
		[ -n "${TUNBED_STATE:-}" ] || usage_error "TUNBED_STATE is not set"
		RUNDIR=$TUNBED_STATE/ovs
	fi
else
	[ -n "$NS" ] || usage_error "--netns is required"
fi
if [ -n "$NS" ] && ! [[ "$NS" =~ ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$ ]]; then
	usage_error "bad namespace name '$NS'"
fi
RUNDIR=${RUNDIR:-$RUNBASE/$NS}
WHERE=${NS:-"this host's namespace"}
case "$RUNDIR" in
/*) ;;
*) usage_error "--rundir must be an absolute path" ;;
esac
RUNDIR=${RUNDIR%/}
[ -n "$RUNDIR" ] || usage_error "--rundir must not be /"

DB_SOCK=$RUNDIR/db.sock
MARK=$RUNDIR/.tunbed-ovs-gre # only a directory with this file is ever removed
STATE=$RUNDIR/state

vsctl() { ovs-vsctl --db="unix:$DB_SOCK" --timeout=10 "$@"; }
appctl() { ovs-appctl -t "$RUNDIR/ovs-vswitchd.ctl" "$@"; }
ofctl() { # command bridge args...
	local c=$1 br=$2
	shift 2
	ovs-ofctl "$c" "unix:$RUNDIR/$br.mgmt" "$@"
}
# A command in the namespace: NS, or (empty) the one this runs in.
nsip() { if [ -n "$NS" ]; then ip -n "$NS" "$@"; else ip "$@"; fi; }
in_ns() { if [ -n "$NS" ]; then ip netns exec "$NS" "$@"; else "$@"; fi; }

# --- daemons -----------------------------------------------------------------------------

# PID from a pidfile if that process is alive and is the named OVS daemon, else nothing.
daemon_pid() { # name
	local f=$RUNDIR/$1.pid pid comm
	[ -r "$f" ] || return 0
	pid=$(tr -dc '0-9' <"$f")
	[ -n "$pid" ] || return 0
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 0
	# comm is cut at 15 characters: "ovs-vswitchd", "ovsdb-server"
	[ "$comm" = "$1" ] && echo "$pid"
	return 0
}

stop_daemon() { # name
	local pid i
	pid=$(daemon_pid "$1")
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 200; i++)); do # 10 s
		[ -d "/proc/$pid" ] || return 0
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 0
		sleep 0.05
	done
	echo "$PROG: $1 (pid $pid) did not exit on SIGTERM; sending SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.05
	done
	echo "$PROG: $1 (pid $pid) is still there" >&2
	return 1
}

# Runs an OVS daemon inside the namespace, pinned if --cpus was given. The daemons detach
# (--detach returns once they are ready) and write their pidfiles.
ns_daemon() { # args...
	local pin=()
	[ -z "$CPUS" ] || pin=(taskset -c "$CPUS")
	in_ns env OVS_RUNDIR="$RUNDIR" OVS_LOGDIR="$RUNDIR" OVS_DBDIR="$RUNDIR" \
		"${pin[@]}" "$@"
}

# --- down --------------------------------------------------------------------------------

# The state file: one fact a line, tab-separated, for down to undo what up did:
#   dev NAME | underlay IF | arp_ignore IF N | promisc IF on|off | addr IF ADDR/LEN
#   ulroute ROUTE-LINE-WITH-DEV | route PREFIX PREVIOUS-ROUTE-LINE|none
state() { (IFS=$'\t' && echo "$*") >>"$STATE"; }

# Puts back what up changed in the namespace, from the state file; every step best effort
# (the namespace may be gone, or this may be a second down).
restore_net() {
	[ -r "$STATE" ] || return 0
	[ -z "$NS" ] || [ -e "/run/netns/$NS" ] || return 0
	local kind a b
	# OVS's internal ports are persistent tap devices (TUNSETPERSIST), left behind by an
	# ovs-vswitchd that exits: the datapath's ovs-netdev and one per bridge.
	for a in ovs-netdev "$UL_BRIDGE" "$DEV"; do
		if nsip -d -o link show dev "$a" 2>/dev/null | grep -q ' tun type tap '; then
			nsip link del "$a" 2>/dev/null || true
		fi
	done
	while IFS=$'\t' read -r kind a b; do
		case "$kind" in
		addr) nsip addr replace "$b" dev "$a" 2>/dev/null || true ;;
		promisc) nsip link set "$a" promisc "$b" 2>/dev/null || true ;;
		arp_ignore) in_ns sysctl -qw "net.ipv4.conf.$a.arp_ignore=$b" 2>/dev/null || true ;;
		esac
	done <"$STATE"
	# Routes: first the underlay's own, then the previous form of each replaced one.
	while IFS=$'\t' read -r kind a b; do
		# shellcheck disable=SC2086 # a saved `ip route` line, split into its words
		[ "$kind" != ulroute ] || nsip route replace $a 2>/dev/null || true
	done <"$STATE"
	while IFS=$'\t' read -r kind a b; do
		[ "$kind" = route ] || continue
		nsip route del "$a" dev "$DEV" 2>/dev/null || true # if the device outlived OVS
		# shellcheck disable=SC2086
		[ "$b" = none ] || nsip route replace $b 2>/dev/null || true
	done <"$STATE"
}

do_down() {
	if [ ! -d "$RUNDIR" ]; then
		return 0
	fi
	[ -e "$MARK" ] || die "$RUNDIR was not made by $PROG (no $(basename "$MARK")); not touching it"
	local rc=0 saved
	stop_daemon ovs-vswitchd || rc=1
	stop_daemon ovsdb-server || rc=1
	[ "$rc" -eq 0 ] || die "could not stop the daemons of $WHERE; left $RUNDIR in place"
	if [ -r "$STATE" ]; then
		saved=$(awk -F '\t' '$1=="dev"{print $2}' "$STATE")
		DEV=${saved:-$DEV}
	fi
	restore_net
	rm -rf -- "$RUNDIR"
	if [ "$(dirname "$RUNDIR")" = "$RUNBASE" ]; then
		rmdir -- "$RUNBASE" 2>/dev/null || true # when it was the last one
	fi
}

# --- up ----------------------------------------------------------------------------------

is_ipv4() { [[ "$1" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]]; }

# `ip route` lines made fit to be fed back to `ip route replace`.
route_words() { sed -E 's/ (linkdown|dead|offload|trap|rt_offload|rt_trap)( |$)/\2/g; s/ +$//'; }

# A random locally administered unicast MAC.
random_mac() { od -An -tx1 -N5 /dev/urandom | awk '{printf "02:%s:%s:%s:%s:%s\n", $1, $2, $3, $4, $5}'; }

# --tunnels: the tunnels of FILE, checked, into T_NAME, T_KEY, T_REMOTE and T_PREFIXES (a
# tunnel an element), the set of remotes T_REMOTES; T_HAVE6 when a prefix is IPv6.
T_NAME=() T_KEY=() T_REMOTE=() T_PREFIXES=() T_HAVE6=false
declare -A T_REMOTES=()
read_tunnels() {
	[ -r "$TUNNELS" ] || usage_error "--tunnels: cannot read '$TUNNELS'"
	local line name key remote prefixes p at=0
	local -A names=() pairs=()
	while IFS= read -r line || [ -n "$line" ]; do
		at=$((at + 1))
		line=${line%%#*}
		read -r name key remote prefixes <<<"$line" || true
		[ -n "$name" ] || continue
		local where="$TUNNELS:$at"
		[[ "$name" =~ ^[A-Za-z0-9_-]{1,11}$ ]] || usage_error "$where: bad tunnel name '$name'"
		if ! [[ "$key" =~ ^[0-9]{1,10}$ ]] || [ "$key" -gt 4294967295 ]; then
			usage_error "$where: bad key '$key'"
		fi
		is_ipv4 "$remote" || usage_error "$where: remote '$remote' is not an IPv4 address"
		[ -n "$prefixes" ] || usage_error "$where: tunnel $name has no prefix"
		for p in $prefixes; do
			[[ "$p" =~ ^[0-9a-fA-F.:]+/[0-9]{1,3}$ ]] || usage_error "$where: bad prefix '$p'"
			[[ "$p" != *:* ]] || T_HAVE6=true
		done
		[ -z "${names[$name]:-}" ] || usage_error "$where: tunnel $name twice"
		[ -z "${pairs[$remote/$key]:-}" ] ||
			usage_error "$where: tunnel $name has the remote and key of ${pairs[$remote/$key]}"
		names[$name]=1 pairs[$remote/$key]=$name T_REMOTES[$remote]=1
		T_NAME+=("$name") T_KEY+=("$key") T_REMOTE+=("$remote") T_PREFIXES+=("$prefixes")
	done <"$TUNNELS"
	[ "${#T_NAME[@]}" -gt 0 ] || usage_error "--tunnels: no tunnel in '$TUNNELS'"
	[ "${#T_NAME[@]}" -le 65000 ] || usage_error "--tunnels: more than 65000 tunnels"
}

# The tunnels' GRE ports on the bridge DEV (options: the ports' own beyond remote, local
# and key, as options:NAME=VALUE), TUNNEL_CHUNK an OVSDB transaction, then one ovs-vsctl
# that waits until ovs-vswitchd has configured them all; their rules from one file; the
# routes of their prefixes written for ip -batch. The transactions are ovsdb-client's (JSON,
# an Interface and a Port row a tunnel and the bridge's ports mutated): ovs-vsctl, 500 ports
# a transaction, took 34 s for 3,000 (each one slower than the one before), ovsdb-client
# transact 2.7 s (busy 2-CPU VM). Every value in the JSON was checked by read_tunnels.
up_tunnels() { # mac option...
	local mac=$1 n i p m port txn="" ports="" extra="" o bad n_prefixes=0 said
	shift
	for o in "$@"; do
		o=${o#options:}
		extra+=",[\"${o%%=*}\",\"${o#*=}\"]"
	done
	local flows=$RUNDIR/tunnels.flows
	exec 3>"$flows" 4>"$RUNDIR/tunnels.routes"
	for ((i = 0; i < ${#T_NAME[@]}; i++)); do
		n=$((i + 1)) port=gre-${T_NAME[i]}
		txn+=",{\"op\":\"insert\",\"table\":\"Interface\",\"uuid-name\":\"i$n\",\"row\":{"
		txn+="\"name\":\"$port\",\"type\":\"gre\",\"ofport_request\":$n,\"options\":[\"map\",["
		txn+="[\"remote_ip\",\"${T_REMOTE[i]}\"],[\"local_ip\",\"$LOCAL\"],"
		txn+="[\"key\",\"${T_KEY[i]}\"]$extra]]}}"
		txn+=",{\"op\":\"insert\",\"table\":\"Port\",\"uuid-name\":\"p$n\",\"row\":{"
		txn+="\"name\":\"$port\",\"interfaces\":[\"named-uuid\",\"i$n\"]}}"
		ports+="${ports:+,}[\"named-uuid\",\"p$n\"]"
		for p in ${T_PREFIXES[i]}; do
			n_prefixes=$((n_prefixes + 1))
			case $p in *:*) m="ipv6,ipv6_dst=$p" ;; *) m="ip,nw_dst=$p" ;; esac
			echo "cookie=$((2 * n)),priority=100,in_port=LOCAL,$m,actions=output:$n" >&3
			echo "route add $p dev $DEV" >&4
		done
		echo "cookie=$((2 * n + 1)),priority=100,in_port=$n,ip,actions=mod_dl_dst:$mac,output:LOCAL" >&3
		echo "cookie=$((2 * n + 1)),priority=100,in_port=$n,ipv6,actions=mod_dl_dst:$mac,output:LOCAL" >&3
		if [ "$n" -eq "${#T_NAME[@]}" ] || [ $((n % TUNNEL_CHUNK)) -eq 0 ]; then
			txn="[\"Open_vSwitch\"$txn,{\"op\":\"mutate\",\"table\":\"Bridge\",\"where\":"
			txn+="[[\"name\",\"==\",\"$DEV\"]],\"mutations\":[[\"ports\",\"insert\",[\"set\",[$ports]]]]}]"
			# A refused operation is an "error" object in the reply, with exit status 0.
			if ! said=$(ovsdb-client transact "unix:$DB_SOCK" "$txn" 2>&1) ||
				[[ "$said" == *'"error"'* ]]; then
				die "ovsdb-client transact of tunnels $((n - (n - 1) % TUNNEL_CHUNK)) to $n:" \
					"$(head -c 300 <<<"$said")"
			fi
			txn="" ports=""
			# How far it got, for a caller that stops it.
			elapsed
			echo "$PROG: $n of ${#T_NAME[@]} GRE ports in the database after $ELAPSED s" >&2
		fi
	done
	echo "cookie=0,priority=0,actions=drop" >&3
	exec 3>&- 4>&-
	# Until ovs-vswitchd has configured them all (a change of the database that it waits for;
	# no time limit: the caller's is the setup's).
	said=$(ovs-vsctl --db="unix:$DB_SOCK" set bridge "$DEV" \
		external_ids:tunbed-tunnels="${#T_NAME[@]}" 2>&1) ||
		die "ovs-vsctl, waiting for ovs-vswitchd: $(tail -n 1 <<<"$said")"
	# Every port with the OpenFlow number its rules name: a port OVS did not make, or made
	# with another number, would take another tunnel's packets or none.
	bad=$(vsctl --format=csv --data=bare --no-headings --columns=name,ofport,ofport_request,error \
		find interface type=gre | awk -F, '$2 != $3 || $2 !~ /^[1-9][0-9]*$/' | head -n 3)
	[ -z "$bad" ] || die "GRE ports not made as asked (name,ofport,ofport_request,error):" \
		"$(tr '\n' ';' <<<"$bad")"
	elapsed
	echo "$PROG: ${#T_NAME[@]} GRE ports made by ovs-vswitchd after $ELAPSED s" >&2
	# One bundle: one commit of all of them (each rule alone: 15 s for 9,000, 0.3 s so).
	ofctl add-flows "$DEV" "$flows" --bundle || die "ovs-ofctl add-flows --bundle $flows failed"
	elapsed
	echo "$PROG: their $((${#T_NAME[@]} * 2 + n_prefixes + 1)) OpenFlow rules in after $ELAPSED s" >&2
	nsip link set "$DEV" arp off
}

# Seconds since up started, to the millisecond, into ELAPSED: no process of its own, which a
# caller's SIGTERM to the process group would kill before it says anything.
UP_START=${EPOCHREALTIME/[.,]/}
ELAPSED=0
elapsed() {
	local us=$((${EPOCHREALTIME/[.,]/} - UP_START))
	printf -v ELAPSED '%d.%03d' $((us / 1000000)) $((us / 1000 % 1000))
}

UP_DONE=false
up_exit() {
	local status=$?
	if ! "$UP_DONE"; then
		echo "$PROG: up failed in $WHERE; undoing" >&2
		if [ -r "$RUNDIR/ovs-vswitchd.log" ]; then
			grep -E '\|(WARN|ERR|EMER)\|' "$RUNDIR/ovs-vswitchd.log" | tail -n 5 >&2 || true
		fi
		do_down || true
		[ "$status" -ne 0 ] || status=1
	fi
	exit "$status"
}

do_up() {
	[ "$(id -u)" -eq 0 ] || die "needs root"
	local t
	for t in ovsdb-server ovs-vswitchd ovs-vsctl ovs-appctl ovs-ofctl ovsdb-tool ovsdb-client; do
		command -v "$t" >/dev/null ||
			die "$t not found: install Debian's openvswitch-switch (apt-get install openvswitch-switch)"
	done
	[ -r "$SCHEMA" ] || die "no OVS schema at $SCHEMA"
	is_ipv4 "$LOCAL" || usage_error "--local must be an IPv4 address"
	if [ -n "$TUNNELS" ]; then
		! "$L2" || usage_error "--l2 and --tunnels: the tunnels are IP over GRE"
		read_tunnels
		KEY="" ROUTES=()
	else
		is_ipv4 "$REMOTE" || usage_error "--remote must be an IPv4 address"
	fi
	[ "${#ADDRS[@]}" -gt 0 ] || usage_error "--addr is required"
	if "$L2" && [ "${#ROUTES[@]}" -gt 0 ] && [ -z "$VIA" ]; then
		usage_error "--l2 with --route needs --via (the peer's tunnel address)"
	fi
	local a r
	for a in "${ADDRS[@]}"; do [[ "$a" == */* ]] || usage_error "--addr '$a' needs /LEN"; done
	if [ -n "$KEY" ]; then
		if ! [[ "$KEY" =~ ^[0-9]{1,10}$ ]] || [ "$KEY" -gt 4294967295 ]; then
			usage_error "bad --key '$KEY'"
		fi
	fi
	[ -z "$MTU" ] || [[ "$MTU" =~ ^[0-9]{2,5}$ ]] || usage_error "bad --mtu '$MTU'"
	[[ "$DEV" =~ ^[A-Za-z0-9_-]{1,11}$ ]] || usage_error "bad --dev '$DEV' (1-11 of [A-Za-z0-9_-])"
	[ "$DEV" != "$UL_BRIDGE" ] || usage_error "--dev may not be $UL_BRIDGE"
	[ -z "$NS" ] || [ -e "/run/netns/$NS" ] || die "no namespace '$NS'"
	[ "${#RUNDIR}" -le 80 ] || usage_error "--rundir too long for its unix sockets (80 at most)"
	if "$CSUM" && "$SEQ"; then
		echo "$PROG: warning: OVS sends bad GRE checksums with --csum and --seq together" >&2
	fi

	if [ -d "$RUNDIR" ]; then
		if [ -n "$(daemon_pid ovsdb-server)$(daemon_pid ovs-vswitchd)" ]; then
			die "already up in $WHERE ($RUNDIR); run down first"
		fi
		do_down # a stale run directory, of a run that died
	fi
	if nsip link show "$DEV" >/dev/null 2>&1; then
		die "$WHERE already has a device $DEV (use --dev)"
	fi

	# The underlay: the interface with --local, its MTU, flags, IPv4 addresses and routes.
	local line mtu flags promisc=off arp_ignore
	line=$(nsip -o -4 addr show to "$LOCAL/32" | head -n1)
	[ -n "$line" ] || die "$LOCAL is not an address in $WHERE"
	a=$(awk '{print $2}' <<<"$line")
	[ -z "$UNDERLAY" ] || [ "$UNDERLAY" = "$a" ] || die "$LOCAL is on $a, not on --underlay $UNDERLAY"
	UNDERLAY=$a
	flags=$(nsip -o link show dev "$UNDERLAY")
	mtu=$(sed -E 's/.* mtu ([0-9]+) .*/\1/' <<<"$flags")
	[[ "$flags" =~ [\<,]PROMISC[,\>] ]] && promisc=on
	arp_ignore=$(in_ns sysctl -n "net.ipv4.conf.$UNDERLAY.arp_ignore")
	local hlen=4 # GRE base header; the outer IPv4 header adds 20
	[ -z "$KEY$TUNNELS" ] || hlen=$((hlen + 4)) # every tunnel of --tunnels has a key
	! "$CSUM" || hlen=$((hlen + 4))
	! "$SEQ" || hlen=$((hlen + 4))
	! "$L2" || hlen=$((hlen + 14))
	MTU=${MTU:-$((mtu - 20 - hlen))}
	[ "$MTU" -ge 68 ] || die "tunnel MTU $MTU is too small (underlay MTU $mtu)"

	mkdir -p -- "$RUNDIR"
	chmod 700 "$RUNDIR"
	: >"$MARK"
	trap up_exit EXIT
	trap 'exit 1' INT TERM HUP

	: >"$STATE"
	state dev "$DEV"
	state underlay "$UNDERLAY"
	state promisc "$UNDERLAY" "$promisc"
	state arp_ignore "$UNDERLAY" "$arp_ignore"
	while read -r a; do state addr "$UNDERLAY" "$a"; done < <(
		nsip -o -4 addr show dev "$UNDERLAY" | awk '{print $4}')
	while read -r line; do state ulroute "$line dev $UNDERLAY"; done < <(
		nsip -4 route show dev "$UNDERLAY" | grep -v ' proto kernel ' | route_words)
	for r in "${ROUTES[@]}"; do
		line=$(nsip route show exact "$r" | head -n1 | route_words)
		state route "$r" "${line:-none}"
	done

	# Database and daemons.
	ovsdb-tool create "$RUNDIR/conf.db" "$SCHEMA"
	ns_daemon ovsdb-server "$RUNDIR/conf.db" -vconsole:off --remote="punix:$DB_SOCK" \
		--unixctl="$RUNDIR/ovsdb-server.ctl" --pidfile="$RUNDIR/ovsdb-server.pid" \
		--log-file="$RUNDIR/ovsdb-server.log" --detach --no-chdir
	vsctl --no-wait init
	# --disable-system: no kernel datapath (the netdev datapath lives in this process).
	ns_daemon ovs-vswitchd "unix:$DB_SOCK" -vconsole:off --disable-system \
		--unixctl="$RUNDIR/ovs-vswitchd.ctl" --pidfile="$RUNDIR/ovs-vswitchd.pid" \
		--log-file="$RUNDIR/ovs-vswitchd.log" --detach --no-chdir

	# Underlay bridge: the interface becomes its port (AF_PACKET), its addresses and routes
	# move to the bridge's internal port, whose MAC must differ from the interface's (else
	# the kernel would take the GRE packets as its own). The interface stops answering ARP
	# for the address that is no longer its own (arp_ignore=1; IPv6 on it is left alone).
	vsctl add-br "$UL_BRIDGE" -- set bridge "$UL_BRIDGE" datapath_type=netdev \
		fail-mode=standalone other_config:hwaddr="$(random_mac)" \
		-- set interface "$UL_BRIDGE" mtu_request="$mtu" \
		-- add-port "$UL_BRIDGE" "$UNDERLAY"
	in_ns sysctl -qw "net.ipv4.conf.$UNDERLAY.arp_ignore=1"
	local kind b
	while IFS=$'\t' read -r kind a b; do
		[ "$kind" = addr ] || continue
		nsip addr del "$b" dev "$a"
		nsip addr add "$b" dev "$UL_BRIDGE"
	done <"$STATE"
	# A peer's OVS may have cached this end's old MAC (the interface's, from its kernel's ARP
	# reply) and OVS updates its neighbour cache only from replies to itself, gratuitous ARP
	# and tunnel packets: announce the new MAC with a gratuitous ARP as the port comes up.
	in_ns sysctl -qw "net.ipv4.conf.$UL_BRIDGE.arp_notify=1"
	nsip link set "$UL_BRIDGE" up
	while IFS=$'\t' read -r kind a b; do
		[ "$kind" = ulroute ] || continue
		# shellcheck disable=SC2046 # a saved route line, its device replaced
		nsip route replace $(sed -E "s/ dev [^ ]+\$/ dev $UL_BRIDGE/" <<<"$a")
	done <"$STATE"

	# Tunnel bridge: internal port DEV with the tunnel addresses, GRE port DEV-gre.
	local tnl=$DEV-gre mac ofport opts=()
	mac=$(random_mac)
	opts=(options:remote_ip="$REMOTE" options:local_ip="$LOCAL")
	[ -z "$KEY" ] || opts+=(options:key="$KEY")
	! "$CSUM" || opts+=(options:csum=true)
	! "$SEQ" || opts+=(options:seq=true)
	"$DF" || opts+=(options:df_default=false)
	"$L2" || opts+=(options:packet_type=legacy_l3)
	if [ -n "$TUNNELS" ]; then
		vsctl add-br "$DEV" -- set bridge "$DEV" datapath_type=netdev fail-mode=secure \
			other_config:hwaddr="$mac" -- set interface "$DEV" mtu_request="$MTU"
		up_tunnels "$mac" "${opts[@]:2}"
	else
		vsctl add-br "$DEV" -- set bridge "$DEV" datapath_type=netdev fail-mode=secure \
			other_config:hwaddr="$mac" \
			-- set interface "$DEV" mtu_request="$MTU" \
			-- add-port "$DEV" "$tnl" -- set interface "$tnl" type=gre "${opts[@]}"
		ofport=$(vsctl get interface "$tnl" ofport)
		[ "$ofport" -gt 0 ] 2>/dev/null ||
			die "GRE port $tnl not created (ofport $ofport): $(vsctl get interface "$tnl" error)"
	fi
	if [ -n "$TUNNELS" ]; then
		: # its rules are in
	elif "$L2"; then
		# Ethernet over GRE: a plain two-port switch; the kernel resolves the peer with ARP.
		ofctl add-flow "$DEV" "priority=0,actions=NORMAL"
	else
		# IP over GRE: OVS strips the Ethernet header towards the GRE port and adds a zero
		# one from it; the kernel needs its own MAC as destination.
		ofctl add-flows "$DEV" - <<-FLOWS
			priority=100,in_port=LOCAL,ip,actions=output:$ofport
			priority=100,in_port=LOCAL,ipv6,actions=output:$ofport
			priority=100,in_port=$ofport,ip,actions=mod_dl_dst:$mac,output:LOCAL
			priority=100,in_port=$ofport,ipv6,actions=mod_dl_dst:$mac,output:LOCAL
			priority=0,actions=drop
		FLOWS
		nsip link set "$DEV" arp off
	fi
	# No IPv6 link-local address on the tunnel device (gregw's TUN has none either); no IPv6
	# at all unless an address or route asks for it, so that no MLD report enters the tunnel.
	nsip link set "$DEV" addrgenmode none
	if ! [[ "${ADDRS[*]} ${ROUTES[*]}" == *:* ]] && ! "$T_HAVE6"; then
		in_ns sysctl -qw "net.ipv6.conf.$DEV.disable_ipv6=1"
	fi
	for a in "${ADDRS[@]}"; do nsip addr add "$a" dev "$DEV"; done
	nsip link set "$DEV" up
	for r in "${ROUTES[@]}"; do nsip route replace "$r" ${VIA:+via "$VIA"} dev "$DEV"; done
	# The tunnels' prefixes: routes of the device, which go with it.
	[ -z "$TUNNELS" ] || nsip -batch "$RUNDIR/tunnels.routes" ||
		die "the routes of the tunnels' prefixes ($RUNDIR/tunnels.routes) failed"

	# OVS must now have the route to each remote through the underlay bridge (it learns the
	# kernel's routes over netlink, asynchronously).
	local i remote remotes=("$REMOTE")
	[ -z "$TUNNELS" ] || remotes=("${!T_REMOTES[@]}")
	for remote in "${remotes[@]}"; do
		for ((i = 0; i < 100; i++)); do
			appctl ovs/route/lookup "$remote" 2>/dev/null | grep -q "dev $UL_BRIDGE" && break
			sleep 0.05
		done
		appctl ovs/route/lookup "$remote" | grep -q "dev $UL_BRIDGE" ||
			die "OVS has no route to $remote through $UL_BRIDGE: $(appctl ovs/route/show)"
	done
	UP_DONE=true
	trap - EXIT INT TERM HUP
	local what="GRE $LOCAL -> $REMOTE${KEY:+ key $KEY}"
	[ -z "$TUNNELS" ] || what="${#T_NAME[@]} GRE tunnels from $LOCAL"
	echo "$PROG: up in $WHERE: $DEV ${ADDRS[*]} mtu $MTU, $what" \
		"over $UNDERLAY (via $UL_BRIDGE); pids $(daemon_pid ovsdb-server) $(daemon_pid ovs-vswitchd)"
}

# --- the others --------------------------------------------------------------------------

do_pids() {
	local p any=false
	for d in ovsdb-server ovs-vswitchd; do
		p=$(daemon_pid "$d")
		if [ -n "$p" ]; then
			if "$CONTRACT"; then echo "$p $d"; else echo "$p"; fi
			any=true
		fi
	done
	"$any" || die "nothing running for $WHERE ($RUNDIR)"
}

do_show() {
	[ -n "$(daemon_pid ovs-vswitchd)" ] || die "ovs-vswitchd is not running for $WHERE"
	echo "== ovs-vsctl show"
	vsctl show
	local br
	for br in $(vsctl list-br); do
		echo "== ovs-ofctl dump-flows $br"
		ofctl dump-flows "$br"
	done
	echo "== ovs-appctl ovs/route/show"
	appctl ovs/route/show
	echo "== ovs-appctl tnl/neigh/show"
	appctl tnl/neigh/show
	echo "== ovs-appctl tnl/ports/show"
	appctl tnl/ports/show
	echo "== ovs-appctl dpctl/dump-flows"
	appctl dpctl/dump-flows
}

do_ctl() {
	[ "${#CTL_ARGS[@]}" -gt 0 ] || usage_error "ctl needs -- vsctl|appctl|ofctl ARGS..."
	local t=${CTL_ARGS[0]}
	local rest=("${CTL_ARGS[@]:1}")
	case "$t" in
	vsctl) vsctl "${rest[@]}" ;;
	appctl) appctl "${rest[@]}" ;;
	ofctl)
		[ "${#rest[@]}" -ge 2 ] || usage_error "ctl -- ofctl COMMAND BRIDGE [ARGS...]"
		ofctl "${rest[@]}"
		;;
	*) usage_error "ctl: unknown tool '$t'" ;;
	esac
}

case "$cmd" in
up) do_up ;;
down) do_down ;;
pids) do_pids ;;
show) do_show ;;
ctl) do_ctl ;;
version) ovs-vswitchd --version | head -n 1 ;;
esac
