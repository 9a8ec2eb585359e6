/*
 * tunbed-framebench's receiver of superpackets (recv --via vnet): an AF_PACKET socket's
 * TPACKET_V2 ring with PACKET_VNET_HDR, so that the kernel writes before each frame the
 * virtio header of its skb: a superpacket that crossed the link whole arrives as one frame,
 * with its GSO type and gso_size (af_packet.c, tpacket_rcv). The ring's frames are of gregw's
 * geometry: a superpacket's slot holds its first bytes, headers included, and the length it
 * had. GRE and GRE-in-UDP test frames pass the socket's filter and are dropped at tc ingress
 * (progs.h), so the receiving IP stack takes none of them up; or, beside a gateway that takes
 * them (--no-drop), left to the stack.
 */
#ifndef TUNBED_FB_RECV_VNET_H
#define TUNBED_FB_RECV_VNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pktring.h"

struct recv_vnet_result {
	uint64_t frames, bytes;	   /* taken, by their length on the link */
	uint64_t len_min, len_max; /* of a frame (len_min 0 with no frame) */
	uint64_t gre, gre_udp;	   /* test frames of each encapsulation */
	uint64_t not_ours;	   /* not a test frame (frame_parse) */
	uint64_t partial;	   /* the kernel said the checksum was left partial */
	uint64_t gso;		   /* frames with a GSO type: superpackets */
	uint64_t gso_tcpv4;	   /* of those, TCPV4 (what the header can say of a tunnel) */
	uint64_t gso_size_min, gso_size_max;
	uint64_t gso_segs; /* the segments the superpackets carry, by their gso_size */
	uint64_t drops;	   /* the kernel could not queue: ring full */
	uint64_t wakeups;  /* sleeps in poll that ended with frames to take */
};

struct recv_vnet {
	int fd, tcx_link;
	struct pktring ring; /* gregw's ring (pktring.h), with the virtio header */
};

/*
 * Sets up the ring on ifindex, and with drop its tcx program. Returns 0 or -errno; releases
 * what it took on failure.
 */
int recv_vnet_open(struct recv_vnet *r, int ifindex, bool drop);

/*
 * Takes frames until stop_fd is readable (a signalfd), or until max are taken (0: no such
 * limit); *res (zeroed here) says what came. Returns 0 or -errno of a poll that failed.
 */
int recv_vnet_run(struct recv_vnet *r, int stop_fd, uint64_t max, struct recv_vnet_result *res);

void recv_vnet_close(struct recv_vnet *r);

#endif
