/*
 * The packet ring, plain GRE's receive transport and GRE-in-UDP's with --wire-rx ring
 * (rx_ring_ops, rx.h). Per worker, an AF_PACKET socket on the interface towards the peer, in a
 * PACKET_FANOUT group shared by all workers (its steering program, or the kernel's flow hash,
 * which looks inside GRE: one inner flow always lands on one worker), with a classic BPF
 * filter that passes only GRE (or UDP to port 4754) addressed to the local tunnel address,
 * and a memory-mapped ring (pktring.h): TPACKET_V2 (one frame per packet) or TPACKET_V3
 * (blocks of packets), each frame with its virtio header. A superpacket (the interface's GRO
 * merged it, or a sender on this host left it whole) comes whole, from the socket behind its
 * frame, its gso_size told. For the whole gregw: the sink (the kernel has no GRE handler here,
 * and would answer every GRE packet with ICMP "protocol unreachable", or GRE-in-UDP with "port
 * unreachable", unless some socket takes it), the fanout group's program, and the drop at tc
 * ingress (tcx.h).
 */
#ifndef TUNBED_GW_RX_RING_H
#define TUNBED_GW_RX_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "pktring.h"

/* A worker's ring. */
struct rx_ring {
	int fd;
	struct pktring pr; /* the socket's ring */
	bool gro;	   /* superpackets too large for a frame are queued whole on the socket */
	uint8_t *gro_buf;  /* with gro: RX_GRO_BUF for one such superpacket, read whole */
	/* GRE-in-UDP: a UDP GSO frame (a sender's UDP_SEGMENT, carried whole), its datagrams
	 * handed out one at a time from where it lies (the ring holds it meanwhile): the next
	 * one, the bytes left, each one's size, the outer headers before the first, and their
	 * DS field. */
	uint8_t *burst;
	size_t burst_left, burst_seg;
	unsigned burst_outer;
	uint8_t burst_ds;
	const uint8_t *burst_src; /* its outer source address, in the frame */
};

/* What the rings share: the main thread's. */
struct rx_ring_group {
	int sink_fd;	 /* the GRE sink: a raw IPPROTO_GRE socket whose filter drops all */
	int fanout_prog; /* the fanout group's steering program until the rings joined, or -1 */
	int tcx_fd;	 /* the BPF link of the GRE drop at tc ingress (tcx.h), or -1 */
	bool whole;	 /* the rings take merged superpackets whole (rx_ring.gro) */
};

#endif
