/*
 * The next hop towards the peer (see nexthop.h): three rtnetlink lookups (ifconf.h: the route,
 * the device, the neighbour), a subscription to the changes that can move it (libmnl), and a
 * sequence count for the workers to read it by.
 */
#include "nexthop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "byteorder.h"
#include "ifconf.h"
#include "log.h"

#ifndef RTNLGRP_NEXTHOP
#define RTNLGRP_NEXTHOP 32 /* Linux 5.3 */
#endif

enum {
	NH_BUF = 16384,		 /* drained reports */
	NH_MON_RCVBUF = 1 << 20, /* reports wait here between two reads */
	NH_PROBE_MS = 1000,	 /* the workers' probe on the IP path */
};

enum { NH_WORDS = sizeof(((struct nexthop_pub *)0)->words) / sizeof(uint32_t) };
_Static_assert(sizeof(struct nexthop_hop) <= sizeof(((struct nexthop_pub *)0)->words),
	       "the hop fits its words");

bool nexthop_read(const struct nexthop_pub *p, uint32_t *seen, struct nexthop_hop *out)
{
	uint32_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE), s2, w[NH_WORDS];

	if (s1 == *seen)
		return false;
	for (;;) {
		if (!(s1 & 1)) {
			for (unsigned i = 0; i < NH_WORDS; i++)
				w[i] = __atomic_load_n(&p->words[i], __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			s2 = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
			if (s1 == s2)
				break;
		}
		s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
	}
	memcpy(out, w, sizeof(*out));
	*seen = s1;
	return true;
}

void nexthop_publish(struct nexthop_pub *p, const struct nexthop_hop *h)
{
	uint32_t s = __atomic_load_n(&p->seq, __ATOMIC_RELAXED), w[NH_WORDS] = { 0 };

	memcpy(w, h, sizeof(*h));
	__atomic_store_n(&p->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < NH_WORDS; i++)
		__atomic_store_n(&p->words[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, s + 2, __ATOMIC_RELEASE);
}

/* NUD states whose link-layer address the kernel itself sends to. */
static bool nud_usable(uint16_t state)
{
	return state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT);
}

/* Looks the hop up; fills n->hop (ifindex 0 when none), n->dev, n->via, n->nud and n->why. */
static void lookup(struct nexthop *n)
{
	struct ifconf_route r;
	struct ifconf_link l;
	struct ifconf_neigh ne;
	int rc;

	memset(&n->hop, 0, sizeof(n->hop));
	memset(n->dev, 0, sizeof(n->dev));
	n->via = (struct netaddr){ 0 };
	n->nud = 0;
	n->lookups++;
	rc = ifconf_route_lookup(&n->req, &n->remote, &n->local, &r);
	if (rc) {
		n->why = rc == -ENETUNREACH || rc == -EHOSTUNREACH ? "no route"
								   : "route lookup failed";
		return;
	}
	if (r.type != RTN_UNICAST) {
		n->why = "the route does not forward";
		return;
	}
	if (ifconf_link_get(&n->req, r.oif, &l) < 0) {
		n->why = "device lookup failed";
		return;
	}
	memcpy(n->dev, l.name, sizeof(n->dev));
	if (l.type != ARPHRD_ETHER || !l.has_addr || (l.flags & IFF_NOARP)) {
		n->why = "the device has no Ethernet neighbours";
		return;
	}
	if (!(l.flags & IFF_UP)) {
		n->why = "the device is down";
		return;
	}
	n->via = r.gw.family ? r.gw : n->remote;
	rc = ifconf_neigh_get(&n->req, r.oif, &n->via, &ne);
	n->nud = rc ? 0 : ne.state;
	if (rc || !nud_usable(ne.state) || !ne.has_lladdr) {
		n->why = "neighbour not resolved";
		return;
	}
	n->hop.ifindex = r.oif;
	memcpy(n->hop.eth, ne.lladdr, ETH_ALEN);
	memcpy(n->hop.eth + ETH_ALEN, l.addr, ETH_ALEN);
	store_be16(n->hop.eth + 2 * ETH_ALEN, n->remote.family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	n->why = NULL;
}

/* Looks up, publishes what changed and says so in one line. */
static void refresh(struct nexthop *n)
{
	struct nexthop_hop old = n->hop;

	lookup(n);
	if (memcmp(&old, &n->hop, sizeof(old)) == 0 && n->lookups > 1)
		return;
	nexthop_publish(n->pub, &n->hop);
	if (n->hop.ifindex) {
		char mac[NEXTHOP_LLADDR_STRLEN];

		log_info("next hop on %s: %s: GRE leaves on the packet socket", n->dev,
			 nexthop_lladdr(&n->hop, mac));
	} else {
		log_info("no next hop (%s): GRE leaves on the IP path", n->why);
	}
}

int nexthop_open(struct nexthop *n, struct nexthop_pub *pub, const struct netaddr *remote,
		 const struct netaddr *local)
{
	struct itimerspec its = { .it_interval = { .tv_sec = NH_PROBE_MS / 1000 } };
	unsigned groups = RTMGRP_LINK | RTMGRP_NEIGH |
			  (remote->family == AF_INET6 ? RTMGRP_IPV6_ROUTE : RTMGRP_IPV4_ROUTE);
	int rcvbuf = NH_MON_RCVBUF, grp = RTNLGRP_NEXTHOP, rc;

	memset(n, 0, sizeof(*n));
	n->timer_fd = -1;
	n->pub = pub;
	n->remote = *remote;
	n->local = *local;
	rc = ifconf_nl_open(&n->req);
	if (rc)
		goto fail;
	n->buf = malloc(NH_BUF);
	n->mon = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!n->buf || !n->mon) {
		rc = n->buf ? -errno : -ENOMEM;
		goto fail;
	}
	if (mnl_socket_bind(n->mon, groups, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		goto fail;
	}
	/* nexthop objects report on a group of their own, which an old kernel lacks. */
	(void)mnl_socket_setsockopt(n->mon, NETLINK_ADD_MEMBERSHIP, &grp, sizeof(grp));
	(void)setsockopt(mnl_socket_get_fd(n->mon), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	n->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	its.it_value = its.it_interval;
	if (n->timer_fd < 0 || timerfd_settime(n->timer_fd, 0, &its, NULL) < 0) {
		rc = -errno;
		goto fail;
	}
	refresh(n);
	return 0;
fail:
	nexthop_close(n);
	return rc;
}

void nexthop_close(struct nexthop *n)
{
	if (n->mon)
		mnl_socket_close(n->mon);
	ifconf_nl_close(&n->req);
	if (n->timer_fd >= 0)
		close(n->timer_fd);
	free(n->buf);
	n->mon = NULL;
	n->timer_fd = -1;
	n->buf = NULL;
}

void nexthop_changed(struct nexthop *n)
{
	/* What changed matters less than that something did: the reports are read to the end
	 * (an overrun, ENOBUFS, lost some) and the hop looked up once. */
	while (recv(mnl_socket_get_fd(n->mon), n->buf, NH_BUF, 0) >= 0 || errno == ENOBUFS ||
	       errno == EINTR)
		;
	refresh(n);
}

void nexthop_tick(struct nexthop *n)
{
	uint64_t ticks;

	if (read(n->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks))
		__atomic_fetch_add(&n->pub->probes, 1, __ATOMIC_RELAXED);
}

const char *nexthop_lladdr(const struct nexthop_hop *h, char buf[NEXTHOP_LLADDR_STRLEN])
{
	const uint8_t *m = h->eth;

	snprintf(buf, NEXTHOP_LLADDR_STRLEN, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
	return buf;
}

const char *nexthop_nud_name(uint16_t nud)
{
	static const struct {
		uint16_t nud;
		const char *name;
	} names[] = {
		{ NUD_INCOMPLETE, "incomplete" }, { NUD_REACHABLE, "reachable" },
		{ NUD_STALE, "stale" },		  { NUD_DELAY, "delay" },
		{ NUD_PROBE, "probe" },		  { NUD_FAILED, "failed" },
		{ NUD_NOARP, "noarp" },		  { NUD_PERMANENT, "permanent" },
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (nud & names[i].nud)
			return names[i].name;
	return "none";
}
