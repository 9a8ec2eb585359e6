#!/bin/bash
# Helpers for the hosts mode's tests, on top of lib.sh: the hosts of ras-hosts.topo made into
# machines that are reachable only over SSH. Each host namespace runs its own sshd, listening
# on its management address alone, with a host key and an authorized key made for the test;
# the runner runs in P-mgmt and knows the hosts only from an inventory. Namespaces share one
# filesystem (each sshd has a mount namespace of its own, for root's ~/.bashrc: sshd_start),
# so each host gets its own install directory (tunbed_root). Every sshd is stopped by PID in
# the cleanup.
#
#  P-mgmt [runner, ssh] --mgmt-X (198.18.200.0/30 each)-- P-X [sshd 198.18.200.*]   X = client, gwa, gwb, server, client2
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HOST_ROLES=(client gwa gwb server client2)
declare -A HOST_MGMT=([client]=198.18.200.2 [gwa]=198.18.200.6 [gwb]=198.18.200.10 [server]=198.18.200.14 [client2]=198.18.200.18)
declare -A SSHD_PID
TUNBED="$TUNBED_SRC/scripts/tunbed"

# hosts_up PREFIX: the topology, keys and one sshd per host; SSH_DIR holds the keys.
hosts_up() {
	local p=$1 role
	"$TOPO" up "$TOPOLOGIES/ras-hosts.topo" --prefix "$p" >/dev/null
	SSH_DIR="$TMP/ssh"
	mkdir -p "$SSH_DIR" /run/sshd
	# sshd reads a user's authorized keys as that user (the fault test logs in as one that is
	# not root): the directory and that file readable, the private keys 0600 as ssh-keygen
	# makes them.
	chmod 755 "$SSH_DIR" "$TMP"
	ssh-keygen -q -t ed25519 -N "" -C "tunbed test" -f "$SSH_DIR/id"
	ssh-keygen -q -t ed25519 -N "" -C "tunbed test, other" -f "$SSH_DIR/other"
	ssh-keygen -q -t ed25519 -N "" -C "tunbed test host" -f "$SSH_DIR/host_key"
	cp "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys"
	chmod 644 "$SSH_DIR/authorized_keys"
	: >"$SSH_DIR/known_hosts"
	for role in "${HOST_ROLES[@]}"; do
		echo "${HOST_MGMT[$role]} $(cat "$SSH_DIR/host_key.pub")" >>"$SSH_DIR/known_hosts"
		cat >"$SSH_DIR/sshd-$role.conf" <<-CONF
			ListenAddress ${HOST_MGMT[$role]}
			HostKey $SSH_DIR/host_key
			PidFile none
			AuthorizedKeysFile $SSH_DIR/authorized_keys
			PermitRootLogin prohibit-password
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			UsePAM no
			StrictModes no
			Subsystem sftp internal-sftp
			PrintMotd no
			MaxSessions 64
			MaxStartups 64
		CONF
		sshd_start "$p" "$role"
	done
	for role in "${HOST_ROLES[@]}"; do
		poll 30 host_ssh "$p" "$role" true ||
			die "sshd of $role did not answer on ${HOST_MGMT[$role]}: $(tail -3 "$TMP/sshd-$role.log")"
	done
}

# The start-up file root's bash reads for every command sshd runs (~/.bashrc: bash reads it
# when sshd starts it) is this machine's, no host's: what it does (a version manager's set-up
# took 0.1 s a command here) would slow every command of the runner and could print into its
# output. Each sshd runs where it is empty (sshd_start).
ROOT_BASHRC="$(getent passwd root | cut -d: -f6)/.bashrc"

# sshd_start PREFIX ROLE [HIDE [PORT]]: the host's sshd, in a mount namespace of its own where
# root's ~/.bashrc (if this machine has one) and HIDE (a path: a host without that program) are
# empty (/dev/null over them). With PORT, a second sshd of the host beside the first, on that
# port (its known_hosts line added), known as ROLE:PORT to sshd_stop.
sshd_start() {
	local p=$1 role=$2 hide=${3:-} port=${4:-} conf name hides=()
	conf="$SSH_DIR/sshd-$role.conf" name=$role
	if [ -n "$port" ]; then
		name="$role:$port"
		conf="$SSH_DIR/sshd-$role-$port.conf"
		{ echo "Port $port"; cat "$SSH_DIR/sshd-$role.conf"; } >"$conf"
		echo "[${HOST_MGMT[$role]}]:$port $(cat "$SSH_DIR/host_key.pub")" >>"$SSH_DIR/known_hosts"
	fi
	[ -z "$hide" ] || hides+=("$hide")
	[ ! -f "$ROOT_BASHRC" ] || hides+=("$ROOT_BASHRC")
	# shellcheck disable=SC2016 # expanded by the inner shell
	ip netns exec "$p-$role" unshare --mount --propagation private sh -c \
		'conf=$1; shift; for f in "$@"; do mount --bind /dev/null "$f" || exit 1; done
		exec /usr/sbin/sshd -D -e -f "$conf"' sh "$conf" "${hides[@]}" \
		2>>"$TMP/sshd-$name.log" &
	SSHD_PID[$name]=$!
}

# sshd_stop ROLE (or ROLE:PORT): the host's sshd and every session it has, by PID.
sshd_stop() {
	local role=$1 pid
	for pid in $(pid_tree "${SSHD_PID[$role]}"); do kill -KILL "$pid" 2>/dev/null || true; done
	wait "${SSHD_PID[$role]}" 2>/dev/null || true
	unset "SSHD_PID[$role]"
}

# pid_tree PID: it and its descendants.
pid_tree() {
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1"); do pid_tree "$c"; done
}

# host_ssh PREFIX ROLE[:PORT] CMD...: runs CMD on a host the way the runner reaches it.
host_ssh() {
	local p=$1 role=${2%:*} port=22
	[[ "$2" != *:* ]] || port=${2#*:}
	shift 2
	ip netns exec "$p-mgmt" ssh -o BatchMode=yes -o ConnectTimeout=5 -i "$SSH_DIR/id" \
		-o IdentitiesOnly=yes -o UserKnownHostsFile="$SSH_DIR/known_hosts" \
		-o StrictHostKeyChecking=yes -p "$port" -l root "${HOST_MGMT[$role]}" -- "$@"
}

# hosts_inventory FILE [extra all:vars lines...]: the inventory of the four hosts, each
# with its own tunbed_root under $TMP.
hosts_inventory() {
	local file=$1
	shift
	cat >"$file" <<-INV
		[client]
		c1 ansible_host=${HOST_MGMT[client]} tunbed_addr=198.18.1.2 tunbed_root=$TMP/root-c1

		[gwa]
		gw1 ansible_host=${HOST_MGMT[gwa]} tunbed_transit_addr=198.18.0.1 tunbed_lan_addr=198.18.1.1 tunbed_lan_prefix=198.18.1.0/24 tunbed_root=$TMP/root-gw1

		[gwb]
		gw2 ansible_host=${HOST_MGMT[gwb]} tunbed_transit_addr=198.18.0.2 tunbed_lan_addr=198.18.3.1 tunbed_lan_prefix=198.18.3.0/24 tunbed_root=$TMP/root-gw2

		[server]
		s1 ansible_host=${HOST_MGMT[server]} tunbed_addr=198.18.3.2 tunbed_root=$TMP/root-s1

		[all:vars]
		ansible_user=root
		ansible_ssh_private_key_file=$SSH_DIR/id
		ansible_ssh_common_args='-o UserKnownHostsFile=$SSH_DIR/known_hosts -o StrictHostKeyChecking=yes'
		ansible_python_interpreter=/usr/bin/python3
		tunbed_install=dir
	INV
	printf '%s\n' "$@" >>"$file"
}

# in_mgmt CMD...: a command where the runner runs (P-mgmt): it reaches the hosts over SSH only.
in_mgmt() {
	ip netns exec "$MGMT_NS" "$@"
}

# part WHAT: a part of a test begins; the part before it, if any, gets a line saying how long
# it took ("time: 1. provisioning: 41.2 s"), so that a test's log shows where its time goes.
# Printed only: no time decides whether a test passes. `part ""` ends the last part.
PART="" PART_START=0
part() {
	local now=${EPOCHREALTIME//[.,]/} us
	if [ -n "$PART" ]; then
		us=$((now - PART_START))
		log "time: $PART: $((us / 1000000)).$((us / 100000 % 10)) s"
	fi
	PART=$1 PART_START=$now
}

hosts_cleanup() {
	local role
	for role in "${!SSHD_PID[@]}"; do
		sshd_stop "$role"
	done
}

hosts_test_init() {
	netns_test_init
	# The runner's temporary files (its SSH control directory) in the test's own, which
	# cleanup removes: a runner the test kills with SIGKILL cannot remove its own.
	export TMPDIR="$TMP"
	# shellcheck disable=SC2154 # rc is assigned inside the trap string
	trap 'rc=$?; hosts_cleanup; cleanup "$rc"' EXIT
}
