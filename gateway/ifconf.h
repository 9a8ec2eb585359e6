/*
 * Interface configuration for gregw over rtnetlink with libmnl: the TUN's MTU, state,
 * addresses and routes, the route and MTU towards the peer, and the lookups of the next hop
 * (a route, a device, a neighbour). Setup opens a socket a request; the next hop's lookups
 * go on one kept open (struct ifconf_nl: nothing is opened once the privileges are gone).
 * Main thread, in the gateway's namespace. Every function returns 0 or -errno (the kernel's
 * error for a refused request).
 */
#ifndef TUNBED_GW_IFCONF_H
#define TUNBED_GW_IFCONF_H

#include <linux/if_ether.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "netaddr.h"

/* A route socket kept open, and its answer buffer. */
struct ifconf_nl {
	struct mnl_socket *sock;
	char *buf;
	unsigned portid, seq;
};

int ifconf_nl_open(struct ifconf_nl *nl);

/* Safe on one whose open failed, and twice. */
void ifconf_nl_close(struct ifconf_nl *nl);

/* Sets the MTU and the transmit queue length (0 keeps it) of ifindex and brings it up. */
int ifconf_link_up(int ifindex, unsigned mtu, unsigned txqlen);

/* Adds an address to ifindex (IPv6 without duplicate address detection). */
int ifconf_addr_add(int ifindex, const struct netprefix *p);

/* Adds or replaces the route to dst through ifindex in the main table. */
int ifconf_route_replace(int ifindex, const struct netprefix *dst);

/* Removes the route to dst through ifindex from the main table (-ESRCH: there is none). */
int ifconf_route_del(int ifindex, const struct netprefix *dst);

/* The kernel's route to dst: output interface, preferred source and MTU (route metric if
 * set, else the interface's). */
struct ifconf_route {
	int oif;
	bool has_src;
	struct netaddr src;
	unsigned mtu;
	uint8_t type;	   /* RTN_UNICAST, RTN_LOCAL, RTN_BLACKHOLE, ... */
	struct netaddr gw; /* its gateway (family 0: dst is on the link); IPv6 for an IPv4
			    * route through one */
};

int ifconf_route_get(const struct netaddr *dst, struct ifconf_route *out);

/* The route to dst from src (NULL: any), on nl (NULL: a socket of its own): no MTU from the
 * interface. -ENETUNREACH without an output interface. */
int ifconf_route_lookup(struct ifconf_nl *nl, const struct netaddr *dst, const struct netaddr *src,
			struct ifconf_route *out);

/* An interface: its type (ARPHRD_*), flags (IFF_*), MTU, Ethernet address and name, and of
 * its counters the packets it dropped on transmit (IFLA_STATS64). */
struct ifconf_link {
	unsigned short type;
	unsigned flags;
	unsigned mtu;
	bool has_addr;
	uint8_t addr[ETH_ALEN];
	char name[IF_NAMESIZE];
	bool has_stats;
	uint64_t tx_dropped;
};

int ifconf_link_get(struct ifconf_nl *nl, int ifindex, struct ifconf_link *out);

/* The neighbour addr on ifindex: its NUD state and Ethernet address. The kernel says -ENOENT
 * when it has none. */
struct ifconf_neigh {
	uint16_t state;
	bool has_lladdr;
	uint8_t lladdr[ETH_ALEN];
};

int ifconf_neigh_get(struct ifconf_nl *nl, int ifindex, const struct netaddr *addr,
		     struct ifconf_neigh *out);

/*
 * The addresses of every interface of the namespace, IPv4 and IPv6, each with its prefix
 * length as configured (198.18.3.1/24), IPv6 link-local ones left out, into out (at most
 * max; *n of them). Returns 0, or -ENOSPC when there are more than max.
 */
int ifconf_addresses(struct netprefix *out, unsigned max, unsigned *n);

/* Writes value into the per-device sysctl /proc/sys/net/FAMILY/conf/DEV/KEY, in the calling
 * thread's namespace. -ENOENT: no such device, or no such family in this kernel. */
int ifconf_sysctl(const char *family, const char *dev, const char *key, const char *value);

/*
 * Whether the features names[0..n) of device dev (ethtool's names, "tx-gre-segmentation")
 * are active, into on[0..n), by the ethtool ioctl. -ENOENT: a name the kernel does not know.
 */
int ifconf_features(const char *dev, const char *const *names, unsigned n, bool *on);

#endif
