/*
 * The sending side of tunbed-framebench: full-sized GRE frames out of one interface, one of
 * three ways, each as a gateway would use it (a batch of FB_BATCH frames a system call):
 *  - SEND_MMSG: sendmmsg on an AF_PACKET socket with virtio headers, gregw's way;
 *  - SEND_TXRING: an AF_PACKET TX ring (TPACKET_V2, PACKET_QDISC_BYPASS), each frame written
 *    into its slot, the ring flushed by one send;
 *  - SEND_XSK: an AF_XDP socket's TX ring in copy mode, each frame written into a umem chunk.
 */
#ifndef TUNBED_FB_SEND_H
#define TUNBED_FB_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"

enum send_via {
	SEND_MMSG,
	SEND_TXRING,
	SEND_XSK,
};

struct send_cfg {
	enum send_via via;
	int ifindex;
	struct frame_spec frame;
	/* Complete each frame's inner checksum in software before it goes (the work a device
	 * does for a partial one); otherwise it leaves partial, in the virtio header, which
	 * SEND_XSK cannot carry. */
	bool csum_full;
	uint64_t frames;   /* stop after as many sent; 0: no such limit */
	uint64_t until_ns; /* stop at this CLOCK_MONOTONIC time; 0: no such limit */
};

struct send_result {
	uint64_t frames; /* the kernel took (SEND_XSK: completed) */
	uint64_t calls;	 /* system calls made to send (SEND_XSK: kicks, also those the kernel
			  * answered EAGAIN or EBUSY) */
};

/* Whether via can leave a checksum partial. */
bool send_can_partial(enum send_via via);

/*
 * Sets up via's socket, sends until one of cfg's limits, and tears it down; *res says what
 * went. Returns 0, or -errno of the setup (EAFNOSUPPORT: no AF_XDP; EINVAL: a partial
 * checksum asked of SEND_XSK) or of a send that failed. Blocks; the caller's thread only.
 */
int send_run(const struct send_cfg *cfg, struct send_result *res);

#endif
