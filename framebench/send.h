/*
 * The sending side of tunbed-framebench: full-sized GRE frames out of one interface, one of
 * three ways, each as a gateway would use it (a batch of FB_BATCH frames a system call):
 *  - SEND_MMSG: sendmmsg on an AF_PACKET socket with virtio headers, gregw's way;
 *  - SEND_TXRING: an AF_PACKET TX ring (TPACKET_V2, PACKET_QDISC_BYPASS), each frame written
 *    into its slot, the ring flushed by one send;
 *  - SEND_XSK: an AF_XDP socket's TX ring in copy mode, each frame written into a umem chunk;
 *  - SEND_TAP: superpackets, each one write into a TAP with a virtio header (GSO over a UDP
 *    tunnel for GRE-in-UDP, TCP for GRE), which a tcx program at the TAP's ingress (progs.h)
 *    redirects to the interface that sends them, or the namespace's routing forwards there;
 *    that interface, or software GSO before it, cuts them into frames.
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
	SEND_TAP,
};

struct send_cfg {
	enum send_via via;
	int ifindex;
	struct frame_spec frame; /* SEND_TAP: one segment's frame, as on the wire */
	/* Complete each frame's inner checksum in software before it goes (the work a device
	 * does for a partial one); otherwise it leaves partial, in the virtio header, which
	 * SEND_XSK cannot carry. */
	bool csum_full;
	uint64_t frames;   /* stop after as many sent; 0: no such limit */
	uint64_t until_ns; /* stop at this CLOCK_MONOTONIC time; 0: no such limit */
	/* SEND_TAP: segments a superpacket, 1 to frame_segs_max; the interface a tcx program
	 * redirects them to (0: the stack forwards them) */
	unsigned segs;
	int redirect;
};

struct send_result {
	uint64_t frames; /* the kernel took (SEND_XSK: completed; SEND_TAP: superpackets) */
	uint64_t calls;	 /* system calls made to send (SEND_XSK: kicks, also those the kernel
			  * answered EAGAIN or EBUSY) */
};

/* Whether via can leave a checksum partial; and complete one (SEND_TAP cannot: the
 * kernel's segmentation does it for each segment). */
bool send_can_partial(enum send_via via);
bool send_can_full(enum send_via via);

/* The payload of each segment of a SEND_TAP superpacket: a frame of cfg->frame less its
 * headers. */
unsigned send_gso_size(const struct send_cfg *cfg);

/* The superpacket SEND_TAP writes into the TAP (after the virtio header). */
struct frame_spec send_tap_spec(const struct send_cfg *cfg);

/*
 * Sets up via's socket, sends until one of cfg's limits, and tears it down; *res says what
 * went. Returns 0, or -errno of the setup (EAFNOSUPPORT: no AF_XDP; EINVAL: a partial
 * checksum asked of SEND_XSK, a full one of SEND_TAP, or from TUNSETIFF: not a TAP) or of a
 * send that failed (SEND_TAP: EINVAL, a kernel that refused the virtio header). Blocks; the
 * caller's thread only.
 */
int send_run(const struct send_cfg *cfg, struct send_result *res);

#endif
