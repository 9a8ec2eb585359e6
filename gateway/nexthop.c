/*
 * The next hop towards the peer (see nexthop.h): three rtnetlink lookups with libmnl (the
 * route, the device, the neighbour), a subscription to the changes that can move it, and a
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
#include "log.h"

#ifndef RTNLGRP_NEXTHOP
#define RTNLGRP_NEXTHOP 32 /* Linux 5.3 */
#endif

enum {
	NH_BUF = 16384,		 /* answers, and drained reports */
	NH_MSG = 512,		 /* requests: a header and a few attributes */
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

/* The one writer: the main thread. */
static void publish(struct nexthop_pub *p, const struct nexthop_hop *h)
{
	uint32_t s = __atomic_load_n(&p->seq, __ATOMIC_RELAXED), w[NH_WORDS] = { 0 };

	memcpy(w, h, sizeof(*h));
	__atomic_store_n(&p->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < NH_WORDS; i++)
		__atomic_store_n(&p->words[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, s + 2, __ATOMIC_RELEASE);
}

/* One request on the lookup socket, cb run over its answer until the kernel's ACK. */
static int request(struct nexthop *n, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	int rc;

	nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = ++n->req_seq;
	if (mnl_socket_sendto(n->req, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t len = mnl_socket_recvfrom(n->req, n->buf, NH_BUF);

		if (len < 0)
			return -errno;
		/* libmnl turns an NLMSG_ERROR into -1 with errno set to the kernel's error. */
		rc = mnl_cb_run(n->buf, (size_t)len, nlh->nlmsg_seq, n->req_portid, cb, data);
		if (rc < 0)
			return -errno;
	} while (rc > 0);
	return 0;
}

/* The attributes of one answer, by type, up to max (the largest of the three kinds'). */
enum { ATTR_MAX = IFLA_MAX };
_Static_assert(RTA_MAX <= ATTR_MAX && NDA_MAX <= ATTR_MAX, "ATTR_MAX covers every kind");

struct attrs {
	const struct nlattr *tb[ATTR_MAX + 1];
	unsigned max;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct attrs *t = data;
	unsigned type = mnl_attr_get_type(a);

	if (type <= t->max)
		t->tb[type] = a;
	return MNL_CB_OK;
}

/* The route: its type, device and gateway. */
struct route_ans {
	bool seen;
	uint8_t type;
	int oif;
	int gw_family;
	uint8_t gw[16];
};

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct route_ans *r = data;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct attrs t = { .max = RTA_MAX };

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, &t);
	r->seen = true;
	r->type = rtm->rtm_type;
	if (t.tb[RTA_OIF])
		r->oif = (int)mnl_attr_get_u32(t.tb[RTA_OIF]);
	if (t.tb[RTA_GATEWAY] && mnl_attr_get_payload_len(t.tb[RTA_GATEWAY]) <= sizeof(r->gw)) {
		r->gw_family = rtm->rtm_family;
		memcpy(r->gw, mnl_attr_get_payload(t.tb[RTA_GATEWAY]),
		       mnl_attr_get_payload_len(t.tb[RTA_GATEWAY]));
	} else if (t.tb[RTA_VIA] &&
		   mnl_attr_get_payload_len(t.tb[RTA_VIA]) >= sizeof(struct rtvia)) {
		/* An IPv4 route through an IPv6 gateway (RFC 5549). */
		const struct rtvia *v = mnl_attr_get_payload(t.tb[RTA_VIA]);
		size_t alen = mnl_attr_get_payload_len(t.tb[RTA_VIA]) - sizeof(*v);

		if ((v->rtvia_family == AF_INET && alen == 4) ||
		    (v->rtvia_family == AF_INET6 && alen == 16)) {
			r->gw_family = v->rtvia_family;
			memcpy(r->gw, v->rtvia_addr, alen);
		}
	}
	return MNL_CB_OK;
}

/* The device: its link type, flags and address. */
struct link_ans {
	bool seen;
	unsigned short type;
	unsigned flags;
	uint8_t addr[ETH_ALEN];
	bool has_addr;
	char name[IFNAMSIZ];
};

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_ans *l = data;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct attrs t = { .max = IFLA_MAX };

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifi), attr_cb, &t);
	l->seen = true;
	l->type = ifi->ifi_type;
	l->flags = ifi->ifi_flags;
	if (t.tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(t.tb[IFLA_ADDRESS]) == ETH_ALEN) {
		memcpy(l->addr, mnl_attr_get_payload(t.tb[IFLA_ADDRESS]), ETH_ALEN);
		l->has_addr = true;
	}
	if (t.tb[IFLA_IFNAME])
		snprintf(l->name, sizeof(l->name), "%s", mnl_attr_get_str(t.tb[IFLA_IFNAME]));
	return MNL_CB_OK;
}

/* The neighbour: its state and link-layer address. */
struct neigh_ans {
	bool seen;
	uint16_t state;
	uint8_t lladdr[ETH_ALEN];
	bool has_lladdr;
};

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct neigh_ans *ne = data;
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct attrs t = { .max = NDA_MAX };

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ndm), attr_cb, &t);
	ne->seen = true;
	ne->state = ndm->ndm_state;
	if (t.tb[NDA_LLADDR] && mnl_attr_get_payload_len(t.tb[NDA_LLADDR]) == ETH_ALEN) {
		memcpy(ne->lladdr, mnl_attr_get_payload(t.tb[NDA_LLADDR]), ETH_ALEN);
		ne->has_lladdr = true;
	}
	return MNL_CB_OK;
}

static int get_route(struct nexthop *n, struct route_ans *r)
{
	char buf[NH_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;
	unsigned alen = n->family == AF_INET6 ? 16 : 4;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)n->family;
	rtm->rtm_dst_len = (uint8_t)(alen * 8);
	rtm->rtm_src_len = (uint8_t)(alen * 8);
	mnl_attr_put(nlh, RTA_DST, alen, n->remote);
	/* No RTA_IP_PROTO: the kernel takes TCP, UDP and ICMP there, and refuses GRE
	 * (EOPNOTSUPP). Multipath routes hash GRE by its addresses, as here (the default
	 * policy). */
	mnl_attr_put(nlh, RTA_SRC, alen, n->local);
	return request(n, nlh, route_cb, r);
}

static int get_link(struct nexthop *n, int ifindex, struct link_ans *l)
{
	char buf[NH_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	return request(n, nlh, link_cb, l);
}

static int get_neigh(struct nexthop *n, int ifindex, int family, const uint8_t *addr,
		     struct neigh_ans *ne)
{
	char buf[NH_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ndmsg *ndm;

	nlh->nlmsg_type = RTM_GETNEIGH;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)family;
	ndm->ndm_ifindex = ifindex;
	mnl_attr_put(nlh, NDA_DST, family == AF_INET6 ? 16 : 4, addr);
	return request(n, nlh, neigh_cb, ne);
}

/* NUD states whose link-layer address the kernel itself sends to. */
static bool nud_usable(uint16_t state)
{
	return state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT);
}

/* Looks the hop up; fills n->hop (ifindex 0 when none), n->via, n->nud and n->why. */
static void lookup(struct nexthop *n)
{
	struct route_ans r = { 0 };
	struct link_ans l = { 0 };
	struct neigh_ans ne = { 0 };
	int rc, via_family;
	const uint8_t *via;

	memset(&n->hop, 0, sizeof(n->hop));
	memset(n->via, 0, sizeof(n->via));
	memset(n->dev, 0, sizeof(n->dev));
	n->via_family = 0;
	n->nud = 0;
	n->lookups++;
	rc = get_route(n, &r);
	if (rc < 0 || !r.seen) {
		n->why = rc == -ENETUNREACH || rc == -EHOSTUNREACH || rc == 0
				 ? "no route"
				 : "route lookup failed";
		return;
	}
	if (r.type != RTN_UNICAST || r.oif <= 0) {
		n->why = "the route does not forward";
		return;
	}
	if (get_link(n, r.oif, &l) < 0 || !l.seen) {
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
	via_family = r.gw_family ? r.gw_family : n->family;
	via = r.gw_family ? r.gw : n->remote;
	memcpy(n->via, via, via_family == AF_INET6 ? 16 : 4);
	n->via_family = via_family;
	rc = get_neigh(n, r.oif, via_family, via, &ne);
	n->nud = ne.seen ? ne.state : 0;
	if (rc < 0 || !ne.seen || !nud_usable(ne.state) || !ne.has_lladdr) {
		n->why = "neighbour not resolved";
		return;
	}
	n->hop.ifindex = r.oif;
	memcpy(n->hop.eth, ne.lladdr, ETH_ALEN);
	memcpy(n->hop.eth + ETH_ALEN, l.addr, ETH_ALEN);
	store_be16(n->hop.eth + 2 * ETH_ALEN, n->family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	n->why = NULL;
}

/* Looks up, publishes what changed and says so in one line. */
static void refresh(struct nexthop *n)
{
	struct nexthop_hop old = n->hop;

	lookup(n);
	if (memcmp(&old, &n->hop, sizeof(old)) == 0 && n->lookups > 1)
		return;
	publish(n->pub, &n->hop);
	if (n->hop.ifindex) {
		const uint8_t *m = n->hop.eth;

		log_info("next hop on %s: %02x:%02x:%02x:%02x:%02x:%02x: GRE leaves on the packet "
			 "socket",
			 n->dev, m[0], m[1], m[2], m[3], m[4], m[5]);
	} else {
		log_info("no next hop (%s): GRE leaves on the IP path", n->why);
	}
}

int nexthop_open(struct nexthop *n, struct nexthop_pub *pub, int family, const uint8_t *remote,
		 const uint8_t *local)
{
	struct itimerspec its = { .it_interval = { .tv_sec = NH_PROBE_MS / 1000 } };
	unsigned groups = RTMGRP_LINK | RTMGRP_NEIGH |
			  (family == AF_INET6 ? RTMGRP_IPV6_ROUTE : RTMGRP_IPV4_ROUTE);
	int rcvbuf = NH_MON_RCVBUF, grp = RTNLGRP_NEXTHOP, rc;
	unsigned alen = family == AF_INET6 ? 16 : 4;

	memset(n, 0, sizeof(*n));
	n->timer_fd = -1;
	n->pub = pub;
	n->family = family;
	memcpy(n->remote, remote, alen);
	memcpy(n->local, local, alen);
	n->buf = malloc(NH_BUF);
	n->req = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	n->mon = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!n->buf || !n->req || !n->mon)
		goto fail;
	if (mnl_socket_bind(n->req, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_bind(n->mon, groups, MNL_SOCKET_AUTOPID) < 0)
		goto fail;
	/* IPv4 routes through an IPv6 gateway report on IPv4's group; nexthop objects on their
	 * own, which an old kernel lacks. */
	(void)mnl_socket_setsockopt(n->mon, NETLINK_ADD_MEMBERSHIP, &grp, sizeof(grp));
	(void)setsockopt(mnl_socket_get_fd(n->mon), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	n->req_portid = mnl_socket_get_portid(n->req);
	n->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (n->timer_fd < 0)
		goto fail;
	its.it_value = its.it_interval;
	if (timerfd_settime(n->timer_fd, 0, &its, NULL) < 0)
		goto fail;
	refresh(n);
	return 0;
fail:
	rc = -errno;
	nexthop_close(n);
	return rc ? rc : -ENOMEM;
}

void nexthop_close(struct nexthop *n)
{
	if (n->mon)
		mnl_socket_close(n->mon);
	if (n->req)
		mnl_socket_close(n->req);
	if (n->timer_fd >= 0)
		close(n->timer_fd);
	free(n->buf);
	n->mon = n->req = NULL;
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
