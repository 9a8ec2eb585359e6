/*
 * tunbed-traffic server: serves any number of clients and tests at once, TCP and UDP on one
 * port, with one epoll thread per CPU (SO_REUSEPORT listeners), until SIGINT or SIGTERM.
 * A misbehaving client costs its own connection, never the server.
 */
#ifndef TUNBED_TR_SERVER_H
#define TUNBED_TR_SERVER_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "netaddr.h"

struct server_cfg {
	uint16_t port;
	bool has_bind;
	struct netaddr bind; /* default: every address, IPv4 and IPv6 */
	unsigned threads;    /* 0: one per CPU */
	bool has_cpus;
	cpu_set_t cpus;
	uint8_t dscp;	     /* --dscp: of what it sends, its TCP connections and UDP replies */
	uint64_t corrupt_at; /* test hook: flip the byte at this offset of what session 0 is sent */
};

/* Runs the server until SIGINT or SIGTERM. Returns the exit status: 0, or 1 if setup failed. */
int server_run(const struct server_cfg *c);

#endif
