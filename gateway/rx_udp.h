/*
 * GRE-in-UDP's receive transport (rx_udp_ops, rx.h; RFC 8086). Per worker, a UDP socket on
 * port 4754 in the workers' SO_REUSEPORT group (udp.h; the group's program, steer.h, picks the
 * worker by the inner flow), read with recvmmsg, with UDP_GRO, whose bursts are cut back into
 * datagrams here. For the whole gregw: the probe of the kernel's UDP offloads.
 */
#ifndef TUNBED_GW_RX_UDP_H
#define TUNBED_GW_RX_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "gw_limits.h"
#include "udp.h"

/* A worker's socket, its last recvmmsg, and where in it the next datagram is. */
struct rx_udp {
	int fd;
	uint64_t drops; /* the socket's drops already reported */
	bool has_mib;	/* worker 0: the namespace's UDP counters when it started */
	struct udp_mib mib_base;
	uint8_t *bufs; /* RX_UDP_BATCH of RX_UDP_BUF */
	struct mmsghdr msgs[RX_UDP_BATCH];
	struct iovec iov[RX_UDP_BATCH];
	struct sockaddr_storage from[RX_UDP_BATCH];
	union rx_cmsg {
		char buf[3 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} cmsg[RX_UDP_BATCH];
	unsigned got, cur; /* messages in the batch; the one being cut */
	size_t off, seg;   /* the next datagram's offset in it; its UDP_GRO segment size */
	bool cut;	   /* every datagram of message cur handed out (an empty one is one) */
	bool frag;	   /* message cur was reassembled from outer fragments by the kernel */
	bool full;	   /* the batch was full: the socket may hold more */
	uint8_t ds;	   /* message cur's outer DS field (IP_RECVTOS, IPV6_RECVTCLASS) */
};

#endif
