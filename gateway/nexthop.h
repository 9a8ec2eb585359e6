/*
 * The link-layer next hop towards the peer, for plain GRE sent on a packet socket (tx_packet.h):
 * the route the kernel takes from --local to --remote for GRE (its device, and its gateway or the
 * peer itself), that neighbour's link-layer address in the kernel's neighbour table, and the
 * device's own address. The main thread looks it up at start and again whenever rtnetlink reports a
 * change of links, routes, nexthops or neighbours, and publishes it; the workers read it without a
 * lock (a sequence count), once per batch. Where there is none (no route, a route that does not
 * forward, a neighbour not resolved or failed, a device without Ethernet headers), the workers send
 * on the IP path, whose sends have the kernel resolve the neighbour; its answer is one of the
 * changes that bring the next hop back.
 */
#ifndef TUNBED_GW_NEXTHOP_H
#define TUNBED_GW_NEXTHOP_H

#include <linux/if_ether.h>
#include <stdbool.h>
#include <stdint.h>

#include "ifconf.h"
#include "netaddr.h"

#include "ifconf.h"
#include "netaddr.h"

/* A next hop as the workers use it: where to send, and the Ethernet header to send with. */
struct nexthop_hop {
	int ifindex; /* 0: none, send on the IP path */
	uint8_t eth[ETH_HLEN];
};

/* What the main thread publishes (in gw_shared). */
struct nexthop_pub {
	uint32_t seq; /* even while stable, odd while being written */
	uint32_t words[(sizeof(struct nexthop_hop) + 3) / 4];
	uint32_t probes; /* counts up once a second (nexthop_tick) */
};

/* The published hop, when its sequence count is no longer *seen: copies it to out and sets
 * *seen. Returns whether it did. Any thread; no lock. */
bool nexthop_read(const struct nexthop_pub *p, uint32_t *seen, struct nexthop_hop *out);

/* Publishes h in p for nexthop_read. One writer at a time: the main thread (nexthop_open and
 * the lookups after changes). */
void nexthop_publish(struct nexthop_pub *p, const struct nexthop_hop *h);

/* The main thread's side: the lookup, the rtnetlink subscription and the probe timer. */
struct nexthop {
	struct nexthop_pub *pub;
	struct mnl_socket *mon; /* link, route, nexthop and neighbour changes */
	struct ifconf_nl req;	/* the lookups */
	char *buf;		/* what mon reports, read and dropped */
	int timer_fd;		/* once a second: nexthop_tick */
	struct netaddr remote, local;
	/* The last lookup, for the stats: the hop, its device's name, the neighbour's address
	 * (family 0 before a route was found) and state. */
	struct nexthop_hop hop;
	char dev[IF_NAMESIZE];
	struct netaddr via;
	uint16_t nud;	 /* NUD_* of the neighbour, 0 when there is none */
	const char *why; /* why there is no hop: "no route", ...; NULL with one */
	uint64_t lookups;
};

/*
 * Opens the rtnetlink sockets and the timer (before the privileges go: nothing is opened
 * later), looks the next hop up and publishes it in pub. Returns 0 or -errno.
 */
int nexthop_open(struct nexthop *n, struct nexthop_pub *pub, const struct netaddr *remote,
		 const struct netaddr *local);

/* Releases what nexthop_open acquired; safe on one whose open failed, and twice. */
void nexthop_close(struct nexthop *n);

/* A change reported on n->mon (readable): drains the reports and looks the hop up again. */
void nexthop_changed(struct nexthop *n);

/* n->timer_fd readable: the workers' once-a-second probe (tx_packet.c) is due. */
void nexthop_tick(struct nexthop *n);

/* h's destination address as ip-neighbour(8) prints it, into buf; returns buf. */
enum { NEXTHOP_LLADDR_STRLEN = 3 * ETH_ALEN };
const char *nexthop_lladdr(const struct nexthop_hop *h, char buf[NEXTHOP_LLADDR_STRLEN]);

/* The name of a neighbour's NUD state, as ip-neighbour(8) prints it ("none" for 0). */
const char *nexthop_nud_name(uint16_t nud);

#endif
