/*
 * rtnetlink requests with libmnl (see ifconf.h). The caller owns nothing: each request opens
 * a socket, sends one message, reads the answer and closes.
 */
#include "ifconf.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum {
	NL_BUF = 8192, /* answers */
	NL_MSG = 1024, /* requests: a header and a few attributes */
};

/* Sends nlh and runs cb over the answer until the ACK or the end of a dump. */
static int talk(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct mnl_socket *nl;
	char *buf;
	unsigned portid, seq;
	ssize_t n;
	int rc;

	buf = malloc(NL_BUF);
	if (!buf)
		return -ENOMEM;
	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl) {
		rc = -errno;
		goto out_free;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		goto out_close;
	}
	portid = mnl_socket_get_portid(nl);
	seq = (unsigned)time(NULL);
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		rc = -errno;
		goto out_close;
	}
	do {
		n = mnl_socket_recvfrom(nl, buf, NL_BUF);
		if (n < 0) {
			rc = -errno;
			break;
		}
		/* libmnl turns an NLMSG_ERROR into -1 with errno set to the kernel's error. */
		rc = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (rc < 0)
			rc = -errno;
	} while (rc > 0);
out_close:
	mnl_socket_close(nl);
out_free:
	free(buf);
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
	return talk(nlh, NULL, NULL);
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
	return talk(nlh, NULL, NULL);
}

int ifconf_route_replace(int ifindex, const struct netprefix *dst)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;

	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->addr.family;
	rtm->rtm_dst_len = (uint8_t)dst->len;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, netaddr_len(dst->addr.family), dst->addr.bytes);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	return talk(nlh, NULL, NULL);
}

struct route_answer {
	struct ifconf_route *out;
	int family;
};

static int route_attr(const struct nlattr *a, void *data)
{
	struct route_answer *ans = data;
	unsigned alen = netaddr_len(ans->family);

	switch (mnl_attr_get_type(a)) {
	case RTA_OIF:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
			ans->out->oif = (int)mnl_attr_get_u32(a);
		break;
	case RTA_PREFSRC:
		if (mnl_attr_get_payload_len(a) == alen) {
			ans->out->has_src = true;
			ans->out->src.family = ans->family;
			memcpy(ans->out->src.bytes, mnl_attr_get_payload(a), alen);
		}
		break;
	case RTA_METRICS: {
		const struct nlattr *m;

		mnl_attr_for_each_nested(m, a)
		{
			if (mnl_attr_get_type(m) == RTAX_MTU &&
			    mnl_attr_validate(m, MNL_TYPE_U32) == 0)
				ans->out->mtu = mnl_attr_get_u32(m);
		}
		break;
	}
	}
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct rtmsg), route_attr, data);
	return MNL_CB_OK;
}

static int link_attr(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == IFLA_MTU && mnl_attr_validate(a, MNL_TYPE_U32) == 0)
		*(unsigned *)data = mnl_attr_get_u32(a);
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct ifinfomsg), link_attr, data);
	return MNL_CB_OK;
}

int ifconf_route_get(const struct netaddr *dst, struct ifconf_route *out)
{
	char buf[NL_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct route_answer ans = { .out = out, .family = dst->family };
	struct ifinfomsg *ifi;
	struct rtmsg *rtm;
	unsigned link_mtu = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->family;
	rtm->rtm_dst_len = (uint8_t)(netaddr_len(dst->family) * 8);
	mnl_attr_put(nlh, RTA_DST, netaddr_len(dst->family), dst->bytes);
	rc = talk(nlh, route_cb, &ans);
	if (rc)
		return rc;
	if (out->oif <= 0)
		return -ENETUNREACH;
	if (out->mtu)
		return 0;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = out->oif;
	rc = talk(nlh, link_cb, &link_mtu);
	out->mtu = link_mtu;
	return rc ? rc : (link_mtu ? 0 : -ENODATA);
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
	rc = talk(nlh, addr_cb, &ans);
	*n = ans.n;
	if (rc)
		return rc;
	return ans.full ? -ENOSPC : 0;
}
