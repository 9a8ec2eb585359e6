/*
 * gregw options and config file (see config.h and docs/gregw.md).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inet.h"
#include "log.h"
#include "opt.h"
#include "parse.h"
#include "thread.h"

enum opt_id {
	OPT_TUN = 256,
	OPT_LOCAL,
	OPT_REMOTE,
	OPT_ADDR,
	OPT_ADDR6,
	OPT_KEY,
	OPT_SEQ,
	OPT_CSUM,
	OPT_TOS,
	OPT_TTL,
	OPT_WORKERS,
	OPT_CPUS,
	OPT_MTU,
	OPT_MSS_CLAMP,
	OPT_STATS_INTERVAL,
	OPT_STATS_JSON,
	OPT_CTL,
	OPT_ROUTE,
	OPT_ALLOW_FROM,
	OPT_NETNS,
	OPT_RX_RING,
	OPT_SCHED,
	OPT_OFFLOAD,
	OPT_COALESCE_HOLD,
	OPT_INGRESS_DROP,
	OPT_WIRE_TX,
	OPT_WIRE_RX,
	OPT_FAIR_QUEUE,
	OPT_TUN_IO,
	OPT_TX_MERGE,
	OPT_FQ_FULL,
	OPT_FQ_LIMIT,
	OPT_AQM,
	OPT_AQM_TARGET,
	OPT_AQM_INTERVAL,
	OPT_ENCAP,
	OPT_USER,
	OPT_ANY_ADDRESS,
	OPT_CONFIG,
	OPT_TUNNELS,
};

static const struct option options[] = {
	{ "tun", required_argument, NULL, OPT_TUN },
	{ "local", required_argument, NULL, OPT_LOCAL },
	{ "remote", required_argument, NULL, OPT_REMOTE },
	{ "addr", required_argument, NULL, OPT_ADDR },
	{ "addr6", required_argument, NULL, OPT_ADDR6 },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "seq", no_argument, NULL, OPT_SEQ },
	{ "csum", no_argument, NULL, OPT_CSUM },
	{ "tos", required_argument, NULL, OPT_TOS },
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "mss-clamp", no_argument, NULL, OPT_MSS_CLAMP },
	{ "stats-interval", required_argument, NULL, OPT_STATS_INTERVAL },
	{ "stats-json", required_argument, NULL, OPT_STATS_JSON },
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "route", required_argument, NULL, OPT_ROUTE },
	{ "allow-from", required_argument, NULL, OPT_ALLOW_FROM },
	{ "netns", required_argument, NULL, OPT_NETNS },
	{ "user", required_argument, NULL, OPT_USER },
	{ "rx-ring", required_argument, NULL, OPT_RX_RING },
	{ "sched", required_argument, NULL, OPT_SCHED },
	{ "offload", required_argument, NULL, OPT_OFFLOAD },
	{ "coalesce-hold", required_argument, NULL, OPT_COALESCE_HOLD },
	{ "ingress-drop", required_argument, NULL, OPT_INGRESS_DROP },
	{ "wire-tx", required_argument, NULL, OPT_WIRE_TX },
	{ "wire-rx", required_argument, NULL, OPT_WIRE_RX },
	{ "fair-queue", required_argument, NULL, OPT_FAIR_QUEUE },
	{ "tun-io", required_argument, NULL, OPT_TUN_IO },
	{ "tx-merge", required_argument, NULL, OPT_TX_MERGE },
	{ "fq-full", required_argument, NULL, OPT_FQ_FULL },
	{ "fq-limit", required_argument, NULL, OPT_FQ_LIMIT },
	{ "aqm", required_argument, NULL, OPT_AQM },
	{ "aqm-target", required_argument, NULL, OPT_AQM_TARGET },
	{ "aqm-interval", required_argument, NULL, OPT_AQM_INTERVAL },
	{ "encap", required_argument, NULL, OPT_ENCAP },
	{ "any-address", no_argument, NULL, OPT_ANY_ADDRESS },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "tunnels", required_argument, NULL, OPT_TUNNELS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

void config_usage(void)
{
	printf("usage: gregw --remote ADDR [options]\n"
	       "       gregw --tunnels FILE [options]\n"
	       "       gregw ctl PATH [stats|flows|tunnels [FROM [COUNT]]]\n"
	       "       gregw ctl PATH add|replace NAME 'KEY = VALUE; ...' | remove NAME\n"
	       "\n"
	       "A userspace GRE gateway (RFC 2784, RFC 2890): inner IPv4 and IPv6 packets from a\n"
	       "TUN device go to the peer in GRE over IPv4 or IPv6, and GRE from the peer comes\n"
	       "out of the TUN device, on several pinned worker threads.\n"
	       "\n"
	       "tunnel:\n"
	       "  --remote ADDR        the peer's outer address (required without --tunnels);\n"
	       "                       its family is the outer family\n"
	       "  --local ADDR         our outer address (default: the source the kernel picks\n"
	       "                       for the peer)\n"
	       "  --key K              GRE key, 0 to 4294967295: sent, and required on receipt\n"
	       "  --seq                send sequence numbers, and require them on receipt\n"
	       "  --csum               send checksums, and require them on receipt\n"
	       "  --tos inherit|N      the outer DSCP: inherit (default) copies the inner\n"
	       "                       packet's (RFC 2983), N (0 to 63) sets it; the outer ECN\n"
	       "                       field copies the inner one either way (RFC 6040)\n"
	       "  --ttl inherit|N      the outer TTL or hop limit: N, 1 to 255 (default 64), or\n"
	       "                       inherit (or 0, as ip tunnel takes it): the inner one's\n"
	       "  --mtu M              inner MTU (default: the path MTU to the peer minus the\n"
	       "                       encapsulation); larger is refused\n"
	       "  --encap gre|gre-udp  GRE over IP (protocol 47, default), or GRE-in-UDP (RFC\n"
	       "                       8086, port 4754; the source port follows the inner flow;\n"
	       "                       sent with UDP_SEGMENT, received with UDP_GRO where\n"
	       "                       the kernel has them)\n"
	       "  --tunnels FILE       many tunnels (a tenant each) from FILE, INI: a\n"
	       "                       [tunnel NAME] section a tunnel, with peer, key, prefixes\n"
	       "                       (routed into it, and its peer's allowed sources), encap,\n"
	       "                       seq, csum (docs/gregw.md); of one encap and family\n"
	       "                       for now; the first one's peer is --remote's;\n"
	       "                       instead of --remote, --key, --seq and\n"
	       "                       --csum (--route adds routes into TUN: a pool for tunnels\n"
	       "                       added later); changed at run time on the control socket\n"
	       "device:\n"
	       "  --tun NAME           TUN device to create (default gre0)\n"
	       "  --addr PREFIX        IPv4 address of the TUN device, e.g. 198.19.0.1/24\n"
	       "  --addr6 PREFIX       IPv6 address of the TUN device, e.g. 2001:2:0:ff::1/64\n"
	       "  --route PREFIX       route PREFIX into the tunnel, replacing any route to it\n"
	       "                       (repeatable)\n"
	       "  --allow-from PREFIX  inner sources accepted from the peer (repeatable; default:\n"
	       "                       the --route prefixes and the tunnel subnets; with\n"
	       "                       --tunnels, each tunnel's prefixes from it, and the\n"
	       "                       tunnel subnets); never our own addresses or the\n"
	       "                       namespace's other prefixes\n"
	       "  --mss-clamp          lower the MSS of TCP SYNs to fit the tunnel MTU\n"
	       "  --netns NAME         enter namespace NAME (as ip netns exec does) first\n"
	       "workers:\n"
	       "  --workers N          worker threads, 1 to %d (default: one per CPU of --cpus);\n"
	       "                       a new flow goes to the next one in turn, and stays\n"
	       "  --cpus LIST          CPUs to pin workers to, in order (default: all online)\n"
	       "  --sched batch|normal workers under SCHED_BATCH (default): a waking worker\n"
	       "                       does not preempt what runs on its CPU (half the idle\n"
	       "                       RTT on a small box), or under SCHED_OTHER\n"
	       "  --rx-ring v2|v3      receive ring: TPACKET_V2 frames (default: lowest latency) "
	       "or\n"
	       "                       V3 blocks (fewer wake-ups, up to 1 ms more latency)\n"
	       "  --offload on|off     on (default): TUN hands over TCP (and with USO UDP)\n"
	       "                       superpackets of up to 64 KB, which gregw segments for\n"
	       "                       the wire, and writes TCP superpackets into TUN: those\n"
	       "                       it coalesces, and over plain GRE those the interface's\n"
	       "                       GRO merged; what the kernel lacks is reported once and\n"
	       "                       done without\n"
	       "  --ingress-drop tcx|off  the rings (plain GRE; GRE-in-UDP with --wire-rx ring):\n"
	       "                       tcx (default) drops the peer's packets at tc ingress\n"
	       "                       once the rings have their copy, so the IP stack never\n"
	       "                       takes them; off leaves them to the stack\n"
	       "  --wire-tx tap|packet|ip  tap (default): TCP superpackets go whole into a TAP\n"
	       "                       whose tcx program sends them to the interface towards\n"
	       "                       the peer, which segments them (where the kernel has it:\n"
	       "                       tcx, Linux 6.6; GRE-in-UDP, Linux 6.17; not with --seq,\n"
	       "                       --csum or --offload off; with --tunnels, those of the\n"
	       "                       tunnels to the first peer without seq or csum), the\n"
	       "                       rest as with packet; GRE-in-UDP to an interface that\n"
	       "                       does not segment it goes per segment unless tap is\n"
	       "                       given (then the kernel cuts in software);\n"
	       "                       packet: plain GRE as whole frames on a packet socket to\n"
	       "                       the route's next hop, followed through rtnetlink, inner\n"
	       "                       checksums left to the device (GRE-in-UDP: its UDP\n"
	       "                       sockets); without a resolved next hop, and with ip, the\n"
	       "                       kernel's IP output sends plain GRE (its routing,\n"
	       "                       netfilter and neighbour)\n"
	       "  --wire-rx socket|ring  GRE-in-UDP: socket (default) takes it on a UDP socket\n"
	       "                       with UDP_GRO; ring on plain GRE's packet ring, which also\n"
	       "                       tells the segment size of a superpacket a sender on this\n"
	       "                       host left whole (the socket cannot: it takes the tunnel\n"
	       "                       MTU's)\n"
	       "  --coalesce-hold US   with offloads, a superpacket merged from the wire waits\n"
	       "                       up to US microseconds (0 to 1000) for the rest of its\n"
	       "                       burst when the receive queue runs dry (default 0: it\n"
	       "                       goes into TUN at the end of each pass)\n"
	       "  --fair-queue on|off  on (default): what a worker reads from TUN waits in\n"
	       "                       per-flow queues and leaves by deficit round robin\n"
	       "                       (FQ-CoDel's scheduler, RFC 8290): equal shares for\n"
	       "                       backlogged flows, no wait behind them for a sparse one.\n"
	       "                       off: first in, first out, the backlog left in the TUN\n"
	       "                       device's queue\n"
	       "  --tx-merge on|off    on: with --fair-queue on and superpackets going\n"
	       "                       whole through the TAP, a flow's TCP reads that leave one\n"
	       "                       after the other in a pass go as one superpacket, merged\n"
	       "                       as the kernel's GRO would merge them; off (default): one\n"
	       "                       write a read\n"
	       "  --fq-full pause|drop when a worker's flow queue is full: pause (default) reads\n"
	       "                       no more until it has room, the rest waiting in the TUN\n"
	       "                       device's queue; drop reads on, its longest flow giving up\n"
	       "                       its oldest packet for each read\n"
	       "  --fq-limit N         packets (reads) a worker's flow queue holds, 1 to %d\n"
	       "                       (default %d), and %d MB at most\n"
	       "  --tun-io read|uring  how a worker reads TUN with --fair-queue on: read\n"
	       "                       (default), a read(2) call each; uring, a chain of reads\n"
	       "                       into its free slots lent to io_uring with one call,\n"
	       "                       taken as packets come (the read that finds the queue\n"
	       "                       empty waits there); where the kernel refuses io_uring\n"
	       "                       (Linux 5.19), read, said once\n"
	       "  --aqm off|codel      codel: CoDel on each flow of the flow queue (with\n"
	       "                       --fair-queue on), from the time each read waited, and on\n"
	       "                       the receive queue (ring or socket), from the kernel's\n"
	       "                       arrival stamps: a standing queue is told to shrink by a\n"
	       "                       drop, or a CE mark when ECN-capable (default off)\n"
	       "  --aqm-target US      its target sojourn in microseconds (default 2000)\n"
	       "  --aqm-interval US    its interval in microseconds (default 40000)\n"
	       "telemetry:\n"
	       "  --stats-interval S   a JSON line of counters every S seconds (0.1 to 3600)\n"
	       "  --stats-json FILE    append those lines and the final summary to FILE, not\n"
	       "                       stdout\n"
	       "  --ctl PATH           control socket (default /run/gregw/NETNS.TUN.sock, or\n"
	       "                       /run/gregw/TUN.sock outside a named namespace); query it\n"
	       "                       with: gregw ctl PATH stats\n"
	       "other:\n"
	       "  --user USER          once set up, run as USER (no capability either way); the\n"
	       "                       control socket is then USER's, by default in\n"
	       "                       /run/gregw/USER/\n"
	       "  --any-address        allow --remote, --local, --addr, --addr6, --route and\n"
	       "                       the tunnel file's peers and prefixes\n"
	       "                       outside 198.18.0.0/15 and 2001:2::/48: a real network,\n"
	       "                       chosen on purpose (shown as any_address in the stats)\n"
	       "  --config FILE        read these keys from FILE first: 'remote = 198.18.0.2'\n"
	       "                       (flags take yes/no; route may repeat)\n"
	       "  -v, --verbose        say more on stderr\n"
	       "  -h, --help           print this help\n"
	       "  -V, --version        print the version\n"
	       "\n"
	       "Outer and inner addresses must lie in 198.18.0.0/15 or 2001:2::/48 unless\n"
	       "--any-address is given.\n"
	       "SIGINT or SIGTERM stops it within a second; a final JSON summary goes to stdout\n"
	       "(or --stats-json). Exit status: 0 stopped by a signal, 1 failed, 2 bad usage.\n",
	       CONFIG_MAX_WORKERS, TUN_FQ_READS, TUN_FQ_READS, TUN_FQ_BYTES >> 20);
}

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->tun, sizeof(c->tun), "gre0");
	c->rx_ring = PKTRING_V2;
	c->sched_batch = true;
	c->offload = true;
	c->fair_queue = true;
	c->tx_merge = false;
	c->fq_limit = TUN_FQ_READS;
	c->aqm_target_us = 2000; /* measured: docs/benchmarks.md, 2026-12-04 */
	c->aqm_interval_us = 40000;
	c->ingress_drop = true;
	c->wire_tx_packet = true;
	tos_cfg_init(&c->tos);
	c->wire_tx_tap = true;
}

/* Where a value came from, for the one line that names a bad one. */
struct origin {
	const char *file; /* NULL: the command line */
	int line;
};

/*
 * An address or prefix as given, kept for the range check once every option is read: an
 * any-address in the file or on the command line may come after it.
 */
struct seen {
	const char *key; /* NULL: not given */
	struct origin o;
	char value[128]; /* as given; an address or prefix is shorter */
	struct netprefix p;
};

/* What a parse fills: the configuration, and the addresses it holds as they were given. */
struct parse {
	struct config *c;
	bool encap; /* --encap given */
	struct seen remote, local, addr, addr6, routes[CONFIG_MAX_ROUTES];
};

static void see(struct seen *s, const struct origin *o, const char *key, const char *v,
		const struct netprefix *p)
{
	s->key = key;
	s->o = *o;
	snprintf(s->value, sizeof(s->value), "%s", v);
	s->p = *p;
}

static int bad(const struct origin *o, const char *key, const char *value, const char *expect)
{
	if (o->file)
		log_warnx("%s:%d: bad value '%s' for %s: %s", o->file, o->line, value, key, expect);
	else
		log_warnx("bad value '%s' for --%s: %s", value, key, expect);
	return -EINVAL;
}

static int set_addr(const struct origin *o, const char *key, const char *v, struct netaddr *a,
		    struct seen *s)
{
	struct netprefix p;

	if (netaddr_parse(v, a))
		return bad(o, key, v, "expected an IPv4 or IPv6 address");
	p.addr = *a;
	p.len = netaddr_len(a->family) * 8;
	see(s, o, key, v, &p);
	return 0;
}

static int set_prefix(const struct origin *o, const char *key, const char *v, int family, bool host,
		      struct netprefix *p, struct seen *s)
{
	if (netaddr_parse_prefix(v, p) || !strchr(v, '/'))
		return bad(o, key, v, "expected ADDR/LEN");
	if (family && p->addr.family != family)
		return bad(o, key, v,
			   family == AF_INET ? "expected an IPv4 prefix"
					     : "expected an IPv6 prefix");
	if (host && !netaddr_prefix_has_host_bits(p) && p->len < netaddr_len(p->addr.family) * 8)
		return bad(o, key, v, "is a network, not a host address");
	if (!host && netaddr_prefix_has_host_bits(p))
		return bad(o, key, v, "has host bits set");
	see(s, o, key, v, p);
	return 0;
}

static int set_bool(const struct origin *o, const char *key, const char *v, bool *b)
{
	/* On the command line a flag is just present. */
	if (!o->file) {
		*b = true;
		return 0;
	}
	if (parse_bool(v, b))
		return bad(o, key, v, "expected yes or no");
	return 0;
}

static int set_string(const struct origin *o, const char *key, const char *v, char *buf,
		      size_t size)
{
	if (!*v || strlen(v) >= size)
		return bad(o, key, v, "empty or too long");
	snprintf(buf, size, "%s", v);
	return 0;
}

static int apply(struct parse *ps, int id, const char *v, const struct origin *o)
{
	struct config *c = ps->c;
	const char *key = "?";
	uint64_t n;
	int rc;

	for (const struct option *opt = options; opt->name; opt++) {
		if (opt->val == id)
			key = opt->name;
	}
	switch (id) {
	case OPT_TUN:
		/* The kernel takes '%' in a TUNSETIFF name as a template ("x%d" becomes x0), and
		 * refuses '/', ':', blanks, "." and "..": a name is used as given or refused. */
		if (!*v || strlen(v) >= sizeof(c->tun) || strpbrk(v, "/:% \t\n\r\v\f") ||
		    strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
			return bad(o, key, v,
				   "expected an interface name of 1 to 15 characters, without '/', "
				   "':', '%' or blanks");
		snprintf(c->tun, sizeof(c->tun), "%s", v);
		return 0;
	case OPT_LOCAL:
		c->has_local = true;
		return set_addr(o, key, v, &c->local, &ps->local);
	case OPT_REMOTE:
		c->has_remote = true;
		return set_addr(o, key, v, &c->remote, &ps->remote);
	case OPT_ADDR:
		c->has_addr = true;
		return set_prefix(o, key, v, AF_INET, true, &c->addr, &ps->addr);
	case OPT_ADDR6:
		c->has_addr6 = true;
		return set_prefix(o, key, v, AF_INET6, true, &c->addr6, &ps->addr6);
	case OPT_KEY:
		if (parse_u64(v, 0, UINT32_MAX, &n))
			return bad(o, key, v, "expected 0 to 4294967295");
		c->has_key = true;
		c->key = (uint32_t)n;
		return 0;
	case OPT_SEQ:
		return set_bool(o, key, v, &c->seq);
	case OPT_CSUM:
		return set_bool(o, key, v, &c->csum);
	case OPT_TOS:
		if (strcmp(v, "inherit") == 0) {
			c->tos.dscp_inherit = true;
		} else if (parse_u64(v, 0, IP_DSCP_MAX, &n) == 0) {
			c->tos.dscp_inherit = false;
			c->tos.dscp = (uint8_t)n;
		} else {
			return bad(o, key, v, "expected inherit or a DSCP from 0 to 63");
		}
		return 0;
	case OPT_TTL:
		/* As iproute2's ip tunnel: 0 is inherit, there being no outer TTL of 0. */
		if (strcmp(v, "inherit") == 0)
			n = 0;
		else if (parse_u64(v, 0, 255, &n))
			return bad(o, key, v, "expected inherit or 0 to 255 (0: inherit)");
		c->tos.ttl_inherit = n == 0;
		c->tos.ttl = (uint8_t)n;
		return 0;
	case OPT_MSS_CLAMP:
		return set_bool(o, key, v, &c->mss_clamp);
	case OPT_ANY_ADDRESS:
		return set_bool(o, key, v, &c->any_address);
	case OPT_WORKERS:
		if (parse_u64(v, 1, CONFIG_MAX_WORKERS, &n))
			return bad(o, key, v, "expected 1 to 64");
		c->workers = (unsigned)n;
		return 0;
	case OPT_CPUS:
		if (parse_cpulist_ordered(v, &c->cpus, c->cpu_order, CONFIG_MAX_WORKERS,
					  &c->ncpu_order) <= 0)
			return bad(o, key, v, "expected a CPU list such as 0-3,6");
		{
			/* Here, not when worker 0 fails to start after the device is up. */
			char what[CONFIG_PATH_MAX + 32];

			if (o->file)
				snprintf(what, sizeof(what), "%s:%d: cpus", o->file, o->line);
			else
				snprintf(what, sizeof(what), "--cpus");
			if (thread_cpus_check(what, v, &c->cpus))
				return -EINVAL;
		}
		c->has_cpus = true;
		return 0;
	case OPT_MTU:
		if (parse_u64(v, 68, 65535, &n))
			return bad(o, key, v, "expected 68 to 65535");
		c->mtu = (unsigned)n;
		return 0;
	case OPT_STATS_INTERVAL: {
		char *end;
		double s = strtod(v, &end);

		if (end == v || *end || !(s >= 0.1 && s <= 3600))
			return bad(o, key, v, "expected seconds from 0.1 to 3600");
		c->stats_interval_ms = (unsigned)(s * 1000 + 0.5);
		return 0;
	}
	case OPT_STATS_JSON:
		return set_string(o, key, v, c->stats_json, sizeof(c->stats_json));
	case OPT_CTL:
		return set_string(o, key, v, c->ctl, sizeof(c->ctl));
	case OPT_NETNS:
		return set_string(o, key, v, c->netns, sizeof(c->netns));
	case OPT_USER:
		rc = privs_user_lookup(v, &c->user);
		if (rc)
			return bad(o, key, v, rc == -ENOENT ? "no such user" : strerror(-rc));
		return 0;
	case OPT_ALLOW_FROM: {
		struct seen unchecked; /* a filter: nothing is sent to it or routed with it */

		if (c->nallow >= CONFIG_MAX_ALLOW)
			return bad(o, key, v, "too many prefixes (at most 32)");
		rc = set_prefix(o, key, v, 0, false, &c->allow[c->nallow], &unchecked);
		if (!rc)
			c->nallow++;
		return rc;
	}
	case OPT_ROUTE:
		if (c->nroutes >= CONFIG_MAX_ROUTES)
			return bad(o, key, v, "too many routes (at most 32)");
		rc = set_prefix(o, key, v, 0, false, &c->routes[c->nroutes],
				&ps->routes[c->nroutes]);
		if (!rc)
			c->nroutes++;
		return rc;
	case OPT_RX_RING:
		if (strcmp(v, "v3") == 0)
			c->rx_ring = PKTRING_V3;
		else if (strcmp(v, "v2") == 0)
			c->rx_ring = PKTRING_V2;
		else
			return bad(o, key, v, "expected v3 or v2");
		return 0;
	case OPT_SCHED:
		if (strcmp(v, "batch") == 0)
			c->sched_batch = true;
		else if (strcmp(v, "normal") == 0)
			c->sched_batch = false;
		else
			return bad(o, key, v, "expected batch or normal");
		return 0;
	case OPT_TUNNELS:
		return set_string(o, key, v, c->tunnels, sizeof(c->tunnels));
	case OPT_ENCAP:
		ps->encap = true;
		if (strcmp(v, "gre") == 0)
			c->gre_udp = false;
		else if (strcmp(v, "gre-udp") == 0)
			c->gre_udp = true;
		else
			return bad(o, key, v, "expected gre or gre-udp");
		return 0;
	case OPT_OFFLOAD:
		if (strcmp(v, "on") == 0)
			c->offload = true;
		else if (strcmp(v, "off") == 0)
			c->offload = false;
		else
			return bad(o, key, v, "expected on or off");
		return 0;
	case OPT_FAIR_QUEUE:
		if (strcmp(v, "on") == 0)
			c->fair_queue = true;
		else if (strcmp(v, "off") == 0)
			c->fair_queue = false;
		else
			return bad(o, key, v, "expected on or off");
		return 0;
	case OPT_TUN_IO:
		if (strcmp(v, "read") == 0)
			c->tun_io_uring = false;
		else if (strcmp(v, "uring") == 0)
			c->tun_io_uring = true;
		else
			return bad(o, key, v, "expected read or uring");
		return 0;
	case OPT_TX_MERGE:
		if (strcmp(v, "on") == 0)
			c->tx_merge = true;
		else if (strcmp(v, "off") == 0)
			c->tx_merge = false;
		else
			return bad(o, key, v, "expected on or off");
		return 0;
	case OPT_FQ_FULL:
		if (strcmp(v, "pause") == 0)
			c->fq_drop = false;
		else if (strcmp(v, "drop") == 0)
			c->fq_drop = true;
		else
			return bad(o, key, v, "expected pause or drop");
		return 0;
	case OPT_FQ_LIMIT:
		_Static_assert(TUN_FQ_READS == 4096, "the range this refusal names");
		if (parse_u64(v, 1, TUN_FQ_READS, &n))
			return bad(o, key, v, "expected 1 to 4096 packets");
		c->fq_limit = (unsigned)n;
		return 0;
	case OPT_AQM:
		if (strcmp(v, "codel") == 0)
			c->aqm = true;
		else if (strcmp(v, "off") == 0)
			c->aqm = false;
		else
			return bad(o, key, v, "expected off or codel");
		return 0;
	case OPT_INGRESS_DROP:
		if (strcmp(v, "tcx") == 0)
			c->ingress_drop = true;
		else if (strcmp(v, "off") == 0)
			c->ingress_drop = false;
		else
			return bad(o, key, v, "expected tcx or off");
		return 0;
	case OPT_WIRE_TX:
		if (strcmp(v, "tap") != 0 && strcmp(v, "packet") != 0 && strcmp(v, "ip") != 0)
			return bad(o, key, v, "expected tap, packet or ip");
		c->wire_tx_tap = strcmp(v, "tap") == 0;
		c->wire_tx_tap_asked = c->wire_tx_tap;
		c->wire_tx_packet = strcmp(v, "ip") != 0;
		return 0;
	case OPT_WIRE_RX:
		if (strcmp(v, "socket") == 0)
			c->wire_rx_ring = false;
		else if (strcmp(v, "ring") == 0)
			c->wire_rx_ring = true;
		else
			return bad(o, key, v, "expected socket or ring");
		return 0;
	case OPT_COALESCE_HOLD:
		if (parse_u64(v, 0, 1000, &n))
			return bad(o, key, v, "expected 0 to 1000 microseconds");
		c->coalesce_hold_us = (unsigned)n;
		return 0;
	case OPT_AQM_TARGET:
	case OPT_AQM_INTERVAL:
		if (parse_u64(v, 10, 10000000, &n))
			return bad(o, key, v, "expected 10 to 10000000 microseconds");
		*(id == OPT_AQM_TARGET ? &c->aqm_target_us : &c->aqm_interval_us) = (unsigned)n;
		return 0;
	}
	return -EINVAL;
}

struct file_ctx {
	struct parse *ps;
	const char *path;
	FILE *fp;
	int line, error;
	int key_line[sizeof(options) / sizeof(options[0])]; /* where each key was, or 0 */
};

/*
 * libinih's reader: one whole line at a time, counted, so that a bad value is reported at its
 * line. libinih would cut a line longer than its buffer (num) into pieces and parse each as
 * a line of its own: a long line is refused instead, and so is a NUL byte, which would end
 * the line early without a word. Either stops the parse (NULL).
 */
static char *read_line(char *str, int num, void *stream)
{
	struct file_ctx *f = stream;
	int len = 0, ch = EOF;

	while (len < num - 1 && (ch = getc(f->fp)) != EOF) {
		if (ch == '\0') {
			log_warnx("%s:%d: a NUL byte", f->path, f->line + 1);
			f->error = -EINVAL;
			return NULL;
		}
		str[len++] = (char)ch;
		if (ch == '\n')
			break;
	}
	if (len == 0)
		return NULL;
	f->line++;
	if (ch != '\n' && ch != EOF && len == num - 1) {
		log_warnx("%s:%d: line longer than %d bytes", f->path, f->line, num - 2);
		f->error = -EINVAL;
		return NULL;
	}
	str[len] = '\0';
	return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct file_ctx *f = user;
	struct origin o = { .file = f->path, .line = f->line };

	if (f->error)
		return 0;
	if (*section) {
		log_warnx("%s:%d: sections are not used in a gregw config file", f->path, f->line);
		f->error = -EINVAL;
		return 0;
	}
	for (const struct option *opt = options; opt->name; opt++) {
		int *seen = &f->key_line[opt - options];

		if (strcmp(opt->name, name) != 0 || opt->val < OPT_TUN || opt->val == OPT_CONFIG)
			continue;
		/* Last-wins would hide a mistake; only route and allow-from accumulate. */
		if (*seen && opt->val != OPT_ROUTE && opt->val != OPT_ALLOW_FROM) {
			log_warnx("%s:%d: duplicate key '%s' (first at line %d)", f->path, f->line,
				  name, *seen);
			f->error = -EINVAL;
			return 0;
		}
		*seen = f->line;
		f->error = apply(f->ps, opt->val, value, &o);
		return !f->error;
	}
	log_warnx("%s:%d: unknown key '%s'", f->path, f->line, name);
	f->error = -EINVAL;
	return 0;
}

static int load_file(struct parse *ps, const char *path)
{
	struct file_ctx f = { .ps = ps, .path = path };
	struct stat st;
	int fd, rc;

	/* Non-blocking, so that a FIFO cannot hold the open; only a regular file is read: a
	 * device such as /dev/zero would never end. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		log_warnx("%s: cannot open: %s", path, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_warnx("%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	f.fp = fdopen(fd, "r");
	if (!f.fp) {
		log_warnx("%s: cannot open: %s", path, strerror(errno));
		close(fd);
		return -EINVAL;
	}
	rc = ini_parse_stream(read_line, &f, on_key, &f);
	fclose(f.fp);
	if (f.error)
		return f.error;
	if (rc) {
		log_warnx("%s:%d: expected 'key = value'", path, rc);
		return -EINVAL;
	}
	return 0;
}

/* One address as given against the ranges: refused, naming how to allow it, unless inside. */
static int in_range(const struct seen *s, bool any)
{
	char what[32];

	if (!s->key || any || netaddr_prefix_is_bench(&s->p))
		return 0;
	if (s->o.file) {
		log_warnx("%s:%d: %s %s " OPT_OUTSIDE_BENCH
			  " (any-address = yes or --any-address allows it)",
			  s->o.file, s->o.line, s->key, s->value);
		return -EINVAL;
	}
	snprintf(what, sizeof(what), "--%s", s->key);
	return opt_bench(what, s->value, &s->p, any);
}

/*
 * Every address gregw will send from, send to or route with lies in the benchmarking ranges,
 * unless any-address says a real network was chosen on purpose: a testbed must not send into
 * a network nobody chose.
 */
static int check_ranges(const struct parse *ps)
{
	const struct seen *fixed[] = { &ps->remote, &ps->local, &ps->addr, &ps->addr6 };
	bool any = ps->c->any_address;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (in_range(fixed[i], any))
			return -EINVAL;
	}
	for (int i = 0; i < ps->c->nroutes; i++) {
		if (in_range(&ps->routes[i], any))
			return -EINVAL;
	}
	return 0;
}

/*
 * --tunnels: the file's tunnels, in place of the one tunnel's options (a second source of the
 * same thing would have to win somewhere; --encap may only agree); of one encapsulation and
 * one outer family, for now (docs/gregw.md: what is left); the first
 * tunnel's peer becomes remote (the next hop followed), its encapsulation gre_udp. A refusal
 * is one line, FILE:LINE: MESSAGE.
 */
static int load_tunnels(struct parse *ps)
{
	struct config *c = ps->c;
	const char *path = c->tunnels, *given = c->has_remote ? "remote"
						: c->has_key  ? "key"
						: c->seq      ? "seq"
						: c->csum     ? "csum"
							      : NULL;
	struct line_error err;
	char line[CONFIG_PATH_MAX + sizeof(err.msg) + 16], a[NETADDR_STRLEN], b[NETADDR_STRLEN];
	const struct tunnel_spec *t0;

	if (given) {
		log_warnx(
			"--%s and --tunnels: each tunnel of %s has its own (peer, key, seq, csum)",
			given, path);
		return -EINVAL;
	}
	if (tunfile_load(path, c->any_address, &c->tf, &err)) {
		log_warnx("%s", line_error_text(path, &err, line, sizeof(line)));
		return -EINVAL;
	}
	if (c->tf.n == 0) {
		log_warnx("%s: no tunnel", path);
		return -EINVAL;
	}
	t0 = &c->tf.specs[0];
	for (unsigned i = 1; i < c->tf.n; i++) {
		const struct tunnel_spec *t = &c->tf.specs[i];

		/* Peers may differ, within one outer family (the first one's next hop is
		 * followed, its address the sockets' own). */
		if (t->peer.family != t0->peer.family) {
			log_warnx("%s:%d: tunnel '%s': peer %s is not tunnel '%s''s %s (line %d): "
				  "gregw serves peers of one outer family",
				  path, c->tf.lines[i].peer, t->name, netaddr_format(&t->peer, a),
				  t0->name, netaddr_format(&t0->peer, b), c->tf.lines[0].peer);
			return -EINVAL;
		}
		if (t->udp != t0->udp) {
			log_warnx("%s:%d: tunnel '%s': encap %s is not tunnel '%s''s (line %d): "
				  "gregw's tunnels share one encapsulation",
				  path, c->tf.lines[i].section, t->name, t->udp ? "gre-udp" : "gre",
				  t0->name, c->tf.lines[0].section);
			return -EINVAL;
		}
	}
	/* --encap may say what the tunnels are, not change it. */
	if (ps->encap && c->gre_udp != t0->udp) {
		log_warnx("%s:%d: tunnel '%s': encap %s, but --encap %s", path,
			  c->tf.lines[0].section, t0->name, t0->udp ? "gre-udp" : "gre",
			  c->gre_udp ? "gre-udp" : "gre");
		return -EINVAL;
	}
	c->remote = t0->peer;
	c->has_remote = true;
	c->gre_udp = t0->udp;
	return 0;
}

void config_fini(struct config *c)
{
	tunfile_free(&c->tf);
}

int config_parse(struct config *c, int argc, char **argv)
{
	struct origin cli = { 0 };
	struct parse ps = { .c = c };
	int opt, rc;

	/* First pass: only --config, so that the command line overrides the file. */
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "vhV", options, NULL)) != -1) {
		if (opt == OPT_CONFIG) {
			rc = load_file(&ps, optarg);
			if (rc)
				return rc;
		}
	}
	opterr = 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "vhV", options, NULL)) != -1) {
		switch (opt) {
		case 'v':
			c->verbose++;
			break;
		case 'h':
			config_usage();
			return 1;
		case 'V':
			printf("gregw %s\n", TUNBED_VERSION);
			return 1;
		case OPT_CONFIG:
			break;
		case '?':
			return -EINVAL;
		default:
			rc = apply(&ps, opt, optarg ? optarg : "", &cli);
			if (rc)
				return rc;
		}
	}
	if (optind < argc) {
		log_warnx("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (c->tunnels[0] && (rc = load_tunnels(&ps)))
		return rc;
	if (!c->has_remote) {
		log_warnx("missing --remote ADDR: the peer's outer address, or --tunnels FILE (see "
			  "--help)");
		return -EINVAL;
	}
	if (c->has_local && c->local.family != c->remote.family) {
		log_warnx("--local and --remote are of different families");
		return -EINVAL;
	}
	return check_ranges(&ps);
}
