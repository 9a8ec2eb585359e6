/*
 * rtnetlink requests with libmnl (see ifconf.h). A request goes on the caller's socket
 * (struct ifconf_nl), or on one opened for it and closed after: it sends one message and reads
 * the answer to the kernel's ACK.
 */
#include "ifconf.h"

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <limits.h> /* INT_MAX, which linux/ethtool.h uses without including it */
#include <stddef.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	NL_BUF = 8192,	     /* answers */
	NL_MSG = 1024,	     /* requests: a header and a few attributes */
	FEATURES_MAX = 1024, /* ethtool's feature names: the kernel has about 70 */
};

int ifconf_nl_open(struct ifconf_nl *nl)
{
	memset(nl, 0, sizeof(*nl));
	nl->buf = malloc(NL_BUF);
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->buf || !nl->sock || mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int rc = nl->buf && nl->sock ? -errno : -ENOMEM;

		ifconf_nl_close(nl);
		return rc;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (unsigned)time(NULL);
	return 0;
}

void ifconf_nl_close(struct ifconf_nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl->buf);
	nl->sock = NULL;
	nl->buf = NULL;
}

/* Sends nlh on nl and runs cb over the answer until the ACK or the end of a dump. */
static int talk_on(struct ifconf_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	ssize_t n;
	int rc;

	nlh->nlmsg_seq = ++nl->seq;
	/* A dump ends with NLMSG_DONE; anything else with the ACK asked for here (an ACK after
	 * a dump's end would stay behind on a socket kept open). */
	if ((nlh->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP)
		nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl->sock, nl->buf, NL_BUF);
		if (n < 0)
			return -errno;
		/* An answer to another request: on a socket kept open, one an earlier request left
		 * unread (it failed half-way). Passed over. */
		if ((size_t)n >= sizeof(struct nlmsghdr) &&
		    ((const struct nlmsghdr *)nl->buf)->nlmsg_seq != nlh->nlmsg_seq) {
			rc = MNL_CB_OK;
			continue;
		}
		/* libmnl turns an NLMSG_ERROR into -1 with errno set to the kernel's error. */
		rc = mnl_cb_run(nl->buf, (size_t)n, nlh->nlmsg_seq, nl->portid, cb, data);
		if (rc < 0)
			return -errno;
	} while (rc > 0);
	return 0;
}

/* talk_on, on nl or else on a socket of its own. */
static int talk(struct ifconf_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct ifconf_nl own;
	int rc;

	if (nl)
		return talk_on(nl, nlh, cb, data);
	rc = ifconf_nl_open(&own);
	if (rc)
		return rc;
	rc = talk_on(&own, nlh, cb, data);
	ifconf_nl_close(&own);
	return rc;
}

int ifconf_link_up(int ifindex, unsigned mtu, unsigned txqlen)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	if (txqlen)
		mnl_attr_put_u32(nlh, IFLA_TXQLEN, txqlen);
	return talk(NULL, nlh, NULL, NULL);
}

int ifconf_addr_add(int ifindex, const struct netprefix *p)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;
	unsigned alen = netaddr_len(p->addr.family);

	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)p->addr.family;
	ifa->ifa_prefixlen = (uint8_t)p->len;
	ifa->ifa_index = (uint32_t)ifindex;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	if (p->addr.family == AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	mnl_attr_put(nlh, IFA_LOCAL, alen, p->addr.bytes);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, p->addr.bytes);
	return talk(NULL, nlh, NULL, NULL);
}

/* A route to dst through ifindex in the main table: type RTM_NEWROUTE or RTM_DELROUTE. */
static int route_msg(int ifindex, const struct netprefix *dst, uint16_t type, uint16_t flags)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->addr.family;
	rtm->rtm_dst_len = (uint8_t)dst->len;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, netaddr_len(dst->addr.family), dst->addr.bytes);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	return talk(NULL, nlh, NULL, NULL);
}

int ifconf_route_replace(int ifindex, const struct netprefix *dst)
{
	return route_msg(ifindex, dst, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
}

int ifconf_route_del(int ifindex, const struct netprefix *dst)
{
	return route_msg(ifindex, dst, RTM_DELROUTE, 0);
}

struct route_answer {
	struct ifconf_route *out;
	int family;
};

static int route_attr(const struct nlattr *a, void *data)
{
	struct route_answer *ans = data;
	struct ifconf_route *out = ans->out;
	unsigned alen = netaddr_len(ans->family);

	switch (mnl_attr_get_type(a)) {
	case RTA_OIF:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
			out->oif = (int)mnl_attr_get_u32(a);
		break;
	case RTA_PREFSRC:
		if (mnl_attr_get_payload_len(a) == alen) {
			out->has_src = true;
			out->src.family = ans->family;
			memcpy(out->src.bytes, mnl_attr_get_payload(a), alen);
		}
		break;
	case RTA_GATEWAY:
		if (mnl_attr_get_payload_len(a) == alen) {
			out->gw.family = ans->family;
			memcpy(out->gw.bytes, mnl_attr_get_payload(a), alen);
		}
		break;
	case RTA_VIA: { /* an IPv4 route through an IPv6 gateway (RFC 5549) */
		const struct rtvia *v = mnl_attr_get_payload(a);
		size_t len = mnl_attr_get_payload_len(a);

		if (len >= sizeof(*v) &&
		    (v->rtvia_family == AF_INET || v->rtvia_family == AF_INET6) &&
		    len - sizeof(*v) == netaddr_len(v->rtvia_family)) {
			out->gw.family = v->rtvia_family;
			memcpy(out->gw.bytes, v->rtvia_addr, len - sizeof(*v));
		}
		break;
	}
	case RTA_METRICS: {
		const struct nlattr *m;

		mnl_attr_for_each_nested(m, a)
		{
			if (mnl_attr_get_type(m) == RTAX_MTU &&
			    mnl_attr_validate(m, MNL_TYPE_U32) == 0)
				out->mtu = mnl_attr_get_u32(m);
		}
		break;
	}
	}
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct route_answer *ans = data;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	ans->out->type = rtm->rtm_type;
	mnl_attr_parse(nlh, sizeof(*rtm), route_attr, data);
	return MNL_CB_OK;
}

int ifconf_route_lookup(struct ifconf_nl *nl, const struct netaddr *dst, const struct netaddr *src,
			struct ifconf_route *out)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct route_answer ans = { .out = out, .family = dst->family };
	struct rtmsg *rtm;
	unsigned alen = netaddr_len(dst->family);
	int rc;

	memset(out, 0, sizeof(*out));
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->family;
	rtm->rtm_dst_len = (uint8_t)(alen * 8);
	mnl_attr_put(nlh, RTA_DST, alen, dst->bytes);
	if (src) {
		rtm->rtm_src_len = (uint8_t)(alen * 8);
		mnl_attr_put(nlh, RTA_SRC, alen, src->bytes);
	}
	rc = talk(nl, nlh, route_cb, &ans);
	if (rc)
		return rc;
	return out->oif > 0 ? 0 : -ENETUNREACH;
}

static int link_attr(const struct nlattr *a, void *data)
{
	struct ifconf_link *l = data;

	switch (mnl_attr_get_type(a)) {
	case IFLA_MTU:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
			l->mtu = mnl_attr_get_u32(a);
		break;
	case IFLA_ADDRESS:
		if (mnl_attr_get_payload_len(a) == sizeof(l->addr)) {
			memcpy(l->addr, mnl_attr_get_payload(a), sizeof(l->addr));
			l->has_addr = true;
		}
		break;
	case IFLA_IFNAME:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
			snprintf(l->name, sizeof(l->name), "%s", mnl_attr_get_str(a));
		break;
	case IFLA_STATS64:
		/* The struct grew over the years: an older kernel's is shorter, but always holds
		 * tx_dropped. Attributes are 4-byte aligned: copied, not read in place. */
		if (mnl_attr_get_payload_len(a) >=
		    offsetof(struct rtnl_link_stats64, tx_dropped) + sizeof(l->tx_dropped)) {
			memcpy(&l->tx_dropped,
			       (const char *)mnl_attr_get_payload(a) +
				       offsetof(struct rtnl_link_stats64, tx_dropped),
			       sizeof(l->tx_dropped));
			l->has_stats = true;
		}
		break;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct ifconf_link *l = data;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	l->type = ifi->ifi_type;
	l->flags = ifi->ifi_flags;
	mnl_attr_parse(nlh, sizeof(*ifi), link_attr, data);
	return MNL_CB_OK;
}

int ifconf_link_get(struct ifconf_nl *nl, int ifindex, struct ifconf_link *out)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	memset(out, 0, sizeof(*out));
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	return talk(nl, nlh, link_cb, out);
}

static int neigh_attr(const struct nlattr *a, void *data)
{
	struct ifconf_neigh *ne = data;

	if (mnl_attr_get_type(a) == NDA_LLADDR &&
	    mnl_attr_get_payload_len(a) == sizeof(ne->lladdr)) {
		memcpy(ne->lladdr, mnl_attr_get_payload(a), sizeof(ne->lladdr));
		ne->has_lladdr = true;
	}
	return MNL_CB_OK;
}

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct ifconf_neigh *ne = data;

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_OK;
	ne->state = ndm->ndm_state;
	mnl_attr_parse(nlh, sizeof(*ndm), neigh_attr, data);
	return MNL_CB_OK;
}

int ifconf_neigh_get(struct ifconf_nl *nl, int ifindex, const struct netaddr *addr,
		     struct ifconf_neigh *out)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ndmsg *ndm;

	memset(out, 0, sizeof(*out));
	nlh->nlmsg_type = RTM_GETNEIGH;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)addr->family;
	ndm->ndm_ifindex = ifindex;
	mnl_attr_put(nlh, NDA_DST, netaddr_len(addr->family), addr->bytes);
	return talk(nl, nlh, neigh_cb, out);
}

int ifconf_route_get(const struct netaddr *dst, struct ifconf_route *out)
{
	struct ifconf_link l;
	int rc = ifconf_route_lookup(NULL, dst, NULL, out);

	if (rc || out->mtu)
		return rc;
	rc = ifconf_link_get(NULL, out->oif, &l);
	out->mtu = l.mtu;
	return rc ? rc : (l.mtu ? 0 : -ENODATA);
}

struct addr_answer {
	struct netprefix *out;
	unsigned max, n;
	bool full;
};

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	struct addr_answer *ans = data;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a, *local = NULL, *address = NULL;
	unsigned alen = netaddr_len(ifa->ifa_family);
	struct netprefix p = { .addr.family = ifa->ifa_family, .len = ifa->ifa_prefixlen };

	if (nlh->nlmsg_type != RTM_NEWADDR || !alen)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*ifa))
	{
		if (mnl_attr_get_type(a) == IFA_LOCAL && mnl_attr_get_payload_len(a) == alen)
			local = a;
		else if (mnl_attr_get_type(a) == IFA_ADDRESS && mnl_attr_get_payload_len(a) == alen)
			address = a;
	}
	/* IFA_LOCAL is the address itself (IFA_ADDRESS the peer's on point-to-point links). */
	a = local ? local : address;
	if (!a)
		return MNL_CB_OK;
	memcpy(p.addr.bytes, mnl_attr_get_payload(a), alen);
	/* fe80::/10 is every link's, never a LAN this gateway serves. */
	if (p.addr.family == AF_INET6 && p.addr.bytes[0] == 0xfe &&
	    (p.addr.bytes[1] & 0xc0) == 0x80)
		return MNL_CB_OK;
	if (ans->n == ans->max) {
		ans->full = true;
		return MNL_CB_OK;
	}
	ans->out[ans->n++] = p;
	return MNL_CB_OK;
}

int ifconf_addresses(struct netprefix *out, unsigned max, unsigned *n)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct addr_answer ans = { .out = out, .max = max };
	struct ifaddrmsg *ifa;
	int rc;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	rc = talk(NULL, nlh, addr_cb, &ans);
	*n = ans.n;
	if (rc)
		return rc;
	return ans.full ? -ENOSPC : 0;
}

int ifconf_sysctl(const char *family, const char *dev, const char *key, const char *value)
{
	char path[160];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/%s", family, dev, key);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
		rc = -errno;
	close(fd);
	return rc;
}

/* ethtool's ioctl on dev through fd, its request at cmd. */
static int ethtool(int fd, const char *dev, void *cmd)
{
	struct ifreq ifr = { .ifr_data = cmd };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	return ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
}

/* The number of ethtool's feature names of dev, 0 when the kernel says none. */
static unsigned feature_count(int fd, const char *dev)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_FEATURES } };

	if (ethtool(fd, dev, &info) < 0 || !info.hdr.sset_mask)
		return 0;
	return info.len;
}

int ifconf_features(const char *dev, const char *const *names, unsigned n, bool *on)
{
	struct ethtool_gstrings *str = NULL;
	struct ethtool_gfeatures *feat = NULL;
	unsigned count, blocks;
	int fd, rc;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	count = feature_count(fd, dev);
	rc = -EOPNOTSUPP;
	if (count == 0 || count > FEATURES_MAX)
		goto out;
	blocks = (count + 31) / 32;
	str = calloc(1, sizeof(*str) + (size_t)count * ETH_GSTRING_LEN);
	feat = calloc(1, sizeof(*feat) + blocks * sizeof(feat->features[0]));
	rc = -ENOMEM;
	if (!str || !feat)
		goto out;
	str->cmd = ETHTOOL_GSTRINGS;
	str->string_set = ETH_SS_FEATURES;
	str->len = count;
	feat->cmd = ETHTOOL_GFEATURES;
	feat->size = blocks;
	rc = ethtool(fd, dev, str);
	if (rc == 0)
		rc = ethtool(fd, dev, feat);
	if (rc)
		goto out;
	for (unsigned k = 0; k < n; k++) {
		unsigned i = 0;

		/* The kernel's names are NUL-padded to ETH_GSTRING_LEN, ours shorter. */
		while (i < count && strncmp((const char *)str->data + (size_t)i * ETH_GSTRING_LEN,
					    names[k], ETH_GSTRING_LEN) != 0)
			i++;
		if (i == count) {
			rc = -ENOENT;
			goto out;
		}
		on[k] = feat->features[i / 32].active & (1u << (i % 32));
	}
out:
	free(feat);
	free(str);
	close(fd);
	return rc;
}
