/*
 * Interface configuration for gregw over rtnetlink with libmnl: the TUN's MTU, state,
 * addresses and routes, and the route and MTU towards the peer. Setup only: called before
 * the workers start, in the gateway's namespace. Every function returns 0 or -errno (the
 * kernel's error for a refused request).
 */
#ifndef TUNBED_GW_IFCONF_H
#define TUNBED_GW_IFCONF_H

#include <stdbool.h>

#include "netaddr.h"

/* Sets the MTU and the transmit queue length (0 keeps it) of ifindex and brings it up. */
int ifconf_link_up(int ifindex, unsigned mtu, unsigned txqlen);

/* Adds an address to ifindex (IPv6 without duplicate address detection). */
int ifconf_addr_add(int ifindex, const struct netprefix *p);

/* Adds or replaces the route to dst through ifindex in the main table. */
int ifconf_route_replace(int ifindex, const struct netprefix *dst);

/* The kernel's route to dst: output interface, preferred source and MTU (route metric if
 * set, else the interface's). */
struct ifconf_route {
	int oif;
	bool has_src;
	struct netaddr src;
	unsigned mtu;
};

int ifconf_route_get(const struct netaddr *dst, struct ifconf_route *out);

/*
 * The addresses of every interface of the namespace, IPv4 and IPv6, each with its prefix
 * length as configured (198.18.3.1/24), IPv6 link-local ones left out, into out (at most
 * max; *n of them). Returns 0, or -ENOSPC when there are more than max.
 */
int ifconf_addresses(struct netprefix *out, unsigned max, unsigned *n);

#endif
