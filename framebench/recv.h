/*
 * The receiving side of tunbed-framebench: the GRE frames arriving on one interface, taken
 * one of three ways, each checked (frame_check) and handed back:
 *  - RECV_RING: an AF_PACKET socket's TPACKET_V2 ring, gregw's own (pktring.h), with a
 *    classic BPF filter passing GRE, and the frames' GRE dropped at tc ingress (tcx.h,
 *    gregw's) so the IP stack never takes it: gregw's way;
 *  - RECV_XDP: an AF_XDP socket in copy mode, fed by an XDP program at the driver's hook;
 *  - RECV_XDP_GENERIC: the same at the kernel's generic XDP hook, after the skb is built.
 * (RECV_VNET, superpackets with their virtio header, is recv_vnet.h's.)
 */
#ifndef TUNBED_FB_RECV_H
#define TUNBED_FB_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pktring.h"
#include "xsk.h"

enum recv_via {
	RECV_RING,
	RECV_XDP,
	RECV_XDP_GENERIC,
	RECV_VNET,
};

struct recv_cfg {
	enum recv_via via;
	int ifindex;
	/* Sum every frame's inner TCP checksum, unless the kernel says it is left partial by a
	 * sender on this host or already checked (RECV_RING only: AF_XDP says neither). */
	bool verify;
	bool no_drop;	 /* RECV_VNET: no drop at tc ingress, the stack takes the frames too */
	uint64_t frames; /* stop once as many are taken; 0: at the signal only */
};

struct recv_result {
	uint64_t frames, bytes; /* taken, test frames or not */
	uint64_t partial;	/* the kernel said the checksum was left partial */
	uint64_t verified;	/* checksums summed here */
	uint64_t bad_csum;	/* of those, wrong */
	uint64_t not_ours;	/* not a test frame (frame_check) */
	uint64_t drops;		/* the kernel could not queue: ring or fill ring full */
	uint64_t wakeups;	/* sleeps in poll that ended with frames to take */
};

struct recv {
	enum recv_via via;
	bool verify;
	uint64_t max; /* cfg->frames */
	/* RECV_RING: gregw's ring (pktring.h) */
	int fd, tcx_link;
	struct pktring ring;
	/* AF_XDP */
	struct xsk xsk;
	int xdp_link;
};

/*
 * Sets up via on cfg->ifindex: socket, ring or umem, and the BPF programs. Returns 0, or
 * -errno (EAFNOSUPPORT: no AF_XDP; EEXIST: an XDP program is already on the interface).
 * Releases what it took on failure.
 */
int recv_open(struct recv *r, const struct recv_cfg *cfg);

/*
 * Takes frames until stop_fd is readable (a signalfd), or until cfg->frames are taken; adds
 * to *res what it saw, the drops the kernel counted included. Returns 0 or -errno of a poll
 * that failed.
 */
int recv_run(struct recv *r, int stop_fd, struct recv_result *res);

void recv_close(struct recv *r);

#endif
