/*
 * GRE-in-UDP's send transport (tx_udp_ops, tx.h; RFC 8086): one UDP socket per source port
 * (udp.h), a flow's consecutive packets of one size in one message with UDP_SEGMENT.
 */
#ifndef TUNBED_GW_TX_UDP_H
#define TUNBED_GW_TX_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gw_limits.h"

/* A worker's sockets, and its batch's sending order. */
struct tx_udp {
	int fd[UDP_TX_PORTS];	 /* one per source port */
	bool gso_off;		 /* UDP_SEGMENT refused at run time: datagram by datagram since
				  * (atomic: the stats read it) */
	uint16_t order[TX_MSGS]; /* the queue's entries in sending order, by socket */
};

#endif
