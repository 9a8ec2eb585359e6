/*
 * The kernel side of tunbed-topo: links, addresses, routes and qdiscs through libnl-route-3,
 * features through the ethtool ioctl, sysctls through /proc/sys. Each host is reached through
 * a handle that holds its namespace and sockets opened inside it. All functions return 0 or
 * -errno; libnl's NLE_* codes are converted here and nowhere else.
 */
#ifndef TUNBED_TOPO_KERNEL_H
#define TUNBED_TOPO_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netaddr.h"

struct nl_sock;

struct kernel_host {
	int nsfd;	    /* the namespace */
	struct nl_sock *sk; /* NETLINK_ROUTE socket opened inside it */
	int ioctl_fd;	    /* datagram socket opened inside it, for ethtool and ifindex */
};

enum kernel_feature {
	KERNEL_FEATURE_GRO,
	KERNEL_FEATURE_TSO, /* every tx-tcp*-segmentation bit, as ethtool -K tso does */
};

/* Opens the handle of namespace netns. Returns 0, -ENOENT (no such namespace) or -errno. */
int kernel_host_open(struct kernel_host *h, const char *netns);
void kernel_host_close(struct kernel_host *h);

/* Interface index of ifname in the host, or -ENODEV. */
int kernel_ifindex(struct kernel_host *h, const char *ifname);

/*
 * Creates a veth pair with end ifa in host a and end ifb in host b, in one request, so that
 * neither end ever exists anywhere else. mtu and queues of 0 keep the kernel's defaults.
 */
int kernel_veth_add(struct kernel_host *a, const char *ifa, struct kernel_host *b, const char *ifb,
		    unsigned mtu, unsigned queues);

int kernel_link_up(struct kernel_host *h, const char *ifname);

/* Adds an interface address; IPv6 ones skip duplicate address detection. */
int kernel_addr_add(struct kernel_host *h, const char *ifname, const struct netprefix *p);

/* Adds a unicast route in the main table; via and dev may each be NULL but not both. */
int kernel_route_add(struct kernel_host *h, const struct netprefix *dst, const struct netaddr *via,
		     const char *dev, unsigned mtu);

/*
 * Adds a local route for dst on lo, in the local table, as `ip route add local DST dev lo`:
 * the host takes every address of dst as its own (Linux's AnyIP). IPv6 binds to one need
 * net.ipv6.ip_nonlocal_bind; IPv4 binds do not.
 */
int kernel_route_add_local(struct kernel_host *h, const struct netprefix *dst);

/* Replaces the root qdisc of ifname with tbf at rate bit/s (at most TOPO_RATE_MAX_BPS). */
int kernel_tbf_add(struct kernel_host *h, const char *ifname, uint64_t rate, uint32_t burst,
		   uint32_t limit);

/*
 * Turns every feature bit behind f on or off, as `ethtool -K IFNAME gro|tso on|off` does.
 * Returns 0, -EOPNOTSUPP (the device has no such bit, or refuses to change it) or -errno.
 */
int kernel_feature_set(struct kernel_host *h, const char *ifname, enum kernel_feature f, bool on);

/* 1 if any bit behind f is active, 0 if none, or -errno. */
int kernel_feature_get(struct kernel_host *h, const char *ifname, enum kernel_feature f);

/* Writes value to the dotted sysctl name (net.* only) inside the host's namespace. */
int kernel_sysctl_set(struct kernel_host *h, const char *name, const char *value);

/* Reads a dotted sysctl inside the host's namespace into buf (trailing newline removed). */
int kernel_sysctl_get(struct kernel_host *h, const char *name, char *buf, size_t size);

/* Converts a libnl error (negative or positive NLE_*) to -errno. */
int kernel_nlerr(int nle);

#endif
