/*
 * Kernel operations for tunbed-topo through libnl-route-3 and ethtool (see kernel.h).
 */
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/route.h>
#include <netlink/route/tc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netns.h"

int kernel_nlerr(int nle)
{
	if (nle < 0)
		nle = -nle;
	switch (nle) {
	case 0:
		return 0;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
	case NLE_NOACCESS:
		return -EPERM;
	case NLE_OBJ_NOTFOUND:
	case NLE_NODEV:
		return -ENODEV;
	case NLE_INVAL:
	case NLE_MISSING_ATTR:
		return -EINVAL;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_AF_NOSUPPORT:
		return -EAFNOSUPPORT;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_NOATTR:
		return -ENODATA;
	}
	return -EIO;
}

int kernel_host_open(struct kernel_host *h, const char *netns)
{
	int saved, rc;

	h->sk = NULL;
	h->ioctl_fd = -1;
	h->nsfd = netns_open(netns);
	if (h->nsfd < 0)
		return h->nsfd;
	rc = netns_enter(h->nsfd, &saved);
	if (rc)
		goto err_ns;
	/* Both sockets belong to the namespace they are created in, wherever they are used. */
	h->sk = nl_socket_alloc();
	if (!h->sk) {
		rc = -ENOMEM;
		goto err_return;
	}
	rc = kernel_nlerr(nl_connect(h->sk, NETLINK_ROUTE));
	if (rc)
		goto err_sock;
	h->ioctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (h->ioctl_fd < 0) {
		rc = -errno;
		goto err_sock;
	}
	return netns_return(saved);

err_sock:
	nl_socket_free(h->sk);
	h->sk = NULL;
err_return:
	netns_return(saved);
err_ns:
	close(h->nsfd);
	h->nsfd = -1;
	return rc;
}

void kernel_host_close(struct kernel_host *h)
{
	if (h->sk)
		nl_socket_free(h->sk);
	if (h->ioctl_fd >= 0)
		close(h->ioctl_fd);
	if (h->nsfd >= 0)
		close(h->nsfd);
	h->sk = NULL;
	h->ioctl_fd = -1;
	h->nsfd = -1;
}

int kernel_ifindex(struct kernel_host *h, const char *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(h->ioctl_fd, SIOCGIFINDEX, &ifr) < 0)
		return -errno;
	return ifr.ifr_ifindex;
}

int kernel_veth_add(struct kernel_host *a, const char *ifa, struct kernel_host *b, const char *ifb,
		    unsigned mtu, unsigned queues)
{
	struct rtnl_link *link, *peer;
	int rc;

	link = rtnl_link_veth_alloc();
	if (!link)
		return -ENOMEM;
	peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, ifa);
	rtnl_link_set_name(peer, ifb);
	/* The request goes to a's namespace; the peer is created straight in b's. */
	rtnl_link_set_ns_fd(peer, b->nsfd);
	if (mtu) {
		rtnl_link_set_mtu(link, mtu);
		rtnl_link_set_mtu(peer, mtu);
	}
	if (queues) {
		rtnl_link_set_num_tx_queues(link, queues);
		rtnl_link_set_num_rx_queues(link, queues);
		rtnl_link_set_num_tx_queues(peer, queues);
		rtnl_link_set_num_rx_queues(peer, queues);
	}
	rc = kernel_nlerr(rtnl_link_add(a->sk, link, NLM_F_CREATE | NLM_F_EXCL));
	rtnl_link_put(peer);
	rtnl_link_veth_release(link);
	return rc;
}

int kernel_link_up(struct kernel_host *h, const char *ifname)
{
	struct rtnl_link *orig, *change;
	int idx = kernel_ifindex(h, ifname), rc;

	if (idx < 0)
		return idx;
	orig = rtnl_link_alloc();
	change = rtnl_link_alloc();
	if (!orig || !change) {
		rc = -ENOMEM;
		goto out;
	}
	rtnl_link_set_ifindex(orig, idx);
	rtnl_link_set_flags(change, IFF_UP);
	rc = kernel_nlerr(rtnl_link_change(h->sk, orig, change, 0));
out:
	if (orig)
		rtnl_link_put(orig);
	if (change)
		rtnl_link_put(change);
	return rc;
}

static struct nl_addr *to_nl_addr(const struct netaddr *a, unsigned len)
{
	struct nl_addr *na = nl_addr_build(a->family, a->bytes, netaddr_len(a->family));

	if (na)
		nl_addr_set_prefixlen(na, (int)len);
	return na;
}

int kernel_addr_add(struct kernel_host *h, const char *ifname, const struct netprefix *p)
{
	struct rtnl_addr *addr;
	struct nl_addr *local;
	int idx = kernel_ifindex(h, ifname), rc;

	if (idx < 0)
		return idx;
	addr = rtnl_addr_alloc();
	local = to_nl_addr(&p->addr, p->len);
	if (!addr || !local) {
		rc = -ENOMEM;
		goto out;
	}
	rtnl_addr_set_ifindex(addr, idx);
	rc = kernel_nlerr(rtnl_addr_set_local(addr, local));
	if (rc)
		goto out;
	rtnl_addr_set_prefixlen(addr, (int)p->len);
	if (p->addr.family == AF_INET6)
		rtnl_addr_set_flags(addr, IFA_F_NODAD);
	rc = kernel_nlerr(rtnl_addr_add(h->sk, addr, NLM_F_EXCL));
out:
	if (local)
		nl_addr_put(local);
	if (addr)
		rtnl_addr_put(addr);
	return rc;
}

/* A route of one next hop (via, ifindex: either may be NULL or 0) in table, of type and scope. */
static int route_add(struct kernel_host *h, const struct netprefix *dst, uint32_t table,
		     uint8_t type, uint8_t scope, const struct netaddr *via, int idx, unsigned mtu)
{
	struct rtnl_route *route;
	struct rtnl_nexthop *nh;
	struct nl_addr *d = NULL, *gw = NULL;
	int rc;

	route = rtnl_route_alloc();
	nh = rtnl_route_nh_alloc();
	d = to_nl_addr(&dst->addr, dst->len);
	if (via)
		gw = to_nl_addr(via, netaddr_len(via->family) * 8);
	if (!route || !nh || !d || (via && !gw)) {
		rc = -ENOMEM;
		goto out;
	}
	rtnl_route_set_family(route, (uint8_t)dst->addr.family);
	rtnl_route_set_table(route, table);
	rtnl_route_set_protocol(route, RTPROT_STATIC);
	rtnl_route_set_scope(route, scope);
	rtnl_route_set_type(route, type);
	rc = kernel_nlerr(rtnl_route_set_dst(route, d));
	if (rc)
		goto out;
	if (gw)
		rtnl_route_nh_set_gateway(nh, gw);
	if (idx)
		rtnl_route_nh_set_ifindex(nh, idx);
	rtnl_route_add_nexthop(route, nh);
	nh = NULL; /* owned by the route now */
	if (mtu) {
		rc = kernel_nlerr(rtnl_route_set_metric(route, RTAX_MTU, mtu));
		if (rc)
			goto out;
	}
	rc = kernel_nlerr(rtnl_route_add(h->sk, route, NLM_F_EXCL));
out:
	if (nh)
		rtnl_route_nh_free(nh);
	if (route)
		rtnl_route_put(route);
	if (d)
		nl_addr_put(d);
	if (gw)
		nl_addr_put(gw);
	return rc;
}

int kernel_route_add(struct kernel_host *h, const struct netprefix *dst, const struct netaddr *via,
		     const char *dev, unsigned mtu)
{
	int idx = 0;

	if (dev) {
		idx = kernel_ifindex(h, dev);
		if (idx < 0)
			return idx;
	}
	return route_add(h, dst, RT_TABLE_MAIN, RTN_UNICAST,
			 via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK, via, idx, mtu);
}

int kernel_route_add_local(struct kernel_host *h, const struct netprefix *dst)
{
	int lo = kernel_ifindex(h, "lo");

	if (lo < 0)
		return lo;
	return route_add(h, dst, RT_TABLE_LOCAL, RTN_LOCAL, RT_SCOPE_HOST, NULL, lo, 0);
}

int kernel_tbf_add(struct kernel_host *h, const char *ifname, uint64_t rate, uint32_t burst,
		   uint32_t limit)
{
	struct rtnl_qdisc *q;
	uint64_t bytes_per_sec = rate / 8;
	int idx = kernel_ifindex(h, ifname), rc;

	if (idx < 0)
		return idx;
	/* tbf's rate spec is 32 bits of bytes/s; libnl takes it as an int and stores it back
	 * as uint32_t, so values above INT_MAX survive the round trip. */
	if (bytes_per_sec == 0 || bytes_per_sec > UINT32_MAX || burst > INT32_MAX ||
	    limit > INT32_MAX)
		return -ERANGE;
	q = rtnl_qdisc_alloc();
	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), idx);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rc = kernel_nlerr(rtnl_tc_set_kind(TC_CAST(q), "tbf"));
	if (!rc) {
		rtnl_qdisc_tbf_set_limit(q, (int)limit);
		rtnl_qdisc_tbf_set_rate(q, (int)(uint32_t)bytes_per_sec, (int)burst, 0);
		rc = kernel_nlerr(rtnl_qdisc_add(h->sk, q, NLM_F_CREATE | NLM_F_REPLACE));
	}
	rtnl_qdisc_put(q);
	return rc;
}

/*
 * The feature bits behind a name as `ethtool -K` knows it. TSO is every "tx-tcp*-segmentation"
 * bit: kernels keep adding variants (ECN, mangle-id, IPv6, AccECN), and the legacy
 * ETHTOOL_STSO ioctl leaves the newer ones on.
 */
static bool feature_matches(enum kernel_feature f, const char *name)
{
	size_t n = strnlen(name, ETH_GSTRING_LEN);

	if (f == KERNEL_FEATURE_GRO)
		return strcmp(name, "rx-gro") == 0;
	return strncmp(name, "tx-tcp", 6) == 0 && n > 12 &&
	       strcmp(name + n - 12, "segmentation") == 0;
}

enum { FEATURE_BLOCKS = 32 }; /* 1024 feature bits; kernels have about 70 */

static void ifreq_for(struct ifreq *ifr, const char *ifname, void *data)
{
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	ifr->ifr_data = data;
}

/*
 * The bits of the device's feature set (ETH_SS_FEATURES) whose names match f, as a mask of
 * *blocks 32-bit words. Returns 0, -EOPNOTSUPP (none match) or -errno.
 */
static int feature_mask(struct kernel_host *h, const char *ifname, enum kernel_feature f,
			uint32_t mask[FEATURE_BLOCKS], uint32_t *blocks)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t count;
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_FEATURES } };
	struct ethtool_gstrings *gs;
	struct ifreq ifr;
	int rc = -EOPNOTSUPP;

	ifreq_for(&ifr, ifname, &info);
	if (ioctl(h->ioctl_fd, SIOCETHTOOL, &ifr) < 0)
		return -errno;
	if (!(info.hdr.sset_mask & (1ull << ETH_SS_FEATURES)) || info.count == 0 ||
	    info.count > FEATURE_BLOCKS * 32)
		return -EOPNOTSUPP;
	gs = calloc(1, sizeof(*gs) + (size_t)info.count * ETH_GSTRING_LEN);
	if (!gs)
		return -ENOMEM;
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_FEATURES;
	gs->len = info.count;
	ifreq_for(&ifr, ifname, gs);
	if (ioctl(h->ioctl_fd, SIOCETHTOOL, &ifr) < 0) {
		rc = -errno;
		goto out;
	}
	memset(mask, 0, FEATURE_BLOCKS * sizeof(mask[0]));
	*blocks = (gs->len + 31) / 32;
	for (uint32_t i = 0; i < gs->len; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, gs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		if (feature_matches(f, name)) {
			mask[i / 32] |= 1u << (i % 32);
			rc = 0;
		}
	}
out:
	free(gs);
	return rc;
}

int kernel_feature_set(struct kernel_host *h, const char *ifname, enum kernel_feature f, bool on)
{
	struct {
		struct ethtool_sfeatures hdr;
		struct ethtool_set_features_block b[FEATURE_BLOCKS];
	} sf = { .hdr = { .cmd = ETHTOOL_SFEATURES } };
	uint32_t mask[FEATURE_BLOCKS], blocks;
	struct ifreq ifr;
	int rc = feature_mask(h, ifname, f, mask, &blocks);

	if (rc)
		return rc;
	sf.hdr.size = blocks;
	for (uint32_t i = 0; i < blocks; i++) {
		sf.b[i].valid = mask[i];
		sf.b[i].requested = on ? mask[i] : 0;
	}
	ifreq_for(&ifr, ifname, &sf);
	rc = ioctl(h->ioctl_fd, SIOCETHTOOL, &ifr);
	if (rc < 0)
		return -errno;
	return (rc & ETHTOOL_F_UNSUPPORTED) ? -EOPNOTSUPP : 0;
}

int kernel_feature_get(struct kernel_host *h, const char *ifname, enum kernel_feature f)
{
	struct {
		struct ethtool_gfeatures hdr;
		struct ethtool_get_features_block b[FEATURE_BLOCKS];
	} gf = { .hdr = { .cmd = ETHTOOL_GFEATURES } };
	uint32_t mask[FEATURE_BLOCKS], blocks;
	struct ifreq ifr;
	int rc = feature_mask(h, ifname, f, mask, &blocks);

	if (rc)
		return rc;
	gf.hdr.size = blocks;
	ifreq_for(&ifr, ifname, &gf);
	if (ioctl(h->ioctl_fd, SIOCETHTOOL, &ifr) < 0)
		return -errno;
	/* On if any of the bits is: then the kernel may still use it. */
	for (uint32_t i = 0; i < blocks; i++) {
		if (gf.b[i].active & mask[i])
			return 1;
	}
	return 0;
}

/*
 * Opens /proc/sys/<name with dots as slashes> from inside the host's namespace: the files
 * under /proc/sys/net belong to the namespace of whoever opens them.
 */
static int sysctl_open(struct kernel_host *h, const char *name, int flags)
{
	char path[192];
	int saved, fd, rc;

	if (strncmp(name, "net.", 4) != 0 || strchr(name, '/') || strstr(name, ".."))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "/proc/sys/%s", name) >= sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + strlen("/proc/sys/"); *p; p++) {
		if (*p == '.')
			*p = '/';
	}
	rc = netns_enter(h->nsfd, &saved);
	if (rc)
		return rc;
	fd = open(path, flags | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	netns_return(saved);
	return rc ? rc : fd;
}

int kernel_sysctl_set(struct kernel_host *h, const char *name, const char *value)
{
	size_t n = strlen(value);
	ssize_t w;
	int fd = sysctl_open(h, name, O_WRONLY);

	if (fd < 0)
		return fd;
	w = write(fd, value, n);
	if (w < 0)
		w = -errno;
	close(fd);
	if (w < 0)
		return (int)w;
	return (size_t)w == n ? 0 : -EIO;
}

int kernel_sysctl_get(struct kernel_host *h, const char *name, char *buf, size_t size)
{
	ssize_t n;
	int fd = sysctl_open(h, name, O_RDONLY);

	if (fd < 0)
		return fd;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}
