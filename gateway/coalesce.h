/*
 * Receive-side coalescing towards TUN (the coalescer; GRO names the kernel's, on a receiving
 * interface): consecutive TCP segments of one flow, as they come out of the tunnel, are merged
 * into one superpacket and written into a TUN device with IFF_VNET_HDR as a single packet with
 * a GSO header; the kernel forwards it whole and cuts it where it must. Merging follows the kernel's own GRO (net/ipv4/tcp_offload.c
 * tcp_gro_receive, net/ipv4/af_inet.c inet_gro_receive; tcpjoin.h): only what it would merge
 * is merged, so the segments that leave are the segments that came in.
 *
 * A segment joins the open superpacket of its flow when: IPv4 without options (or IPv6 with
 * TCP right after the fixed header); same addresses, ports, TOS/traffic class, TTL/hop limit,
 * DF and the IPv4 identification one up, or the same flow label; its TCP checksum is right
 * (or left partial by a sender on this host, which the kernel too takes as right);
 * its sequence number follows; the ACK number, window, flags other than PSH and FIN and
 * every option byte are the same; no SYN, RST, URG or CWR; its payload is no larger than the
 * first segment's; the result stays within 64 KB. A short segment, or one with PSH or FIN,
 * is merged and closes the superpacket; one with FIN does not open one. Anything else
 * flushes its flow's superpacket first and then goes into TUN on its own, so the order
 * within a flow never changes.
 *
 * Pure apart from the emit callback; no allocation after coalesce_init.
 */
#ifndef TUNBED_GW_COALESCE_H
#define TUNBED_GW_COALESCE_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inet.h"
#include "gw_limits.h"

/*
 * Receives each packet to write into TUN with its virtio header: a superpacket of nseg > 1
 * segments (GSO, checksum partial), or one packet (nseg 1; DATA_VALID when its TCP checksum
 * was verified, NEEDS_CSUM when it came partial). The callee may not keep the pointers.
 */
typedef void coalesce_emit_fn(void *ctx, const struct virtio_net_hdr *h, const uint8_t *pkt,
			      size_t len, unsigned nseg);

struct coalesce_flow {
	uint8_t *buf; /* COALESCE_BUF bytes: the superpacket */
	size_t len;   /* bytes of the superpacket so far */
	unsigned nseg;
	unsigned hdr_len; /* IP + TCP headers */
	unsigned l4_off;
	unsigned mss; /* the first segment's payload */
	uint32_t next_seq;
	uint16_t next_id;
	uint64_t age;	    /* when it was opened, for eviction */
	uint64_t opened_ns; /* the coalescer's now_ns when it was opened, for the hold */
	int family;
	struct l4_csum csum; /* the first segment's checksum, when it came partial */
};

struct coalescer {
	struct coalesce_flow flow[COALESCE_FLOWS];
	unsigned open;	 /* bitmap of open flows */
	uint64_t clock;	 /* counts packets, orders opens */
	uint64_t now_ns; /* the caller's clock (coalesce_clock), stamped on what opens */
};

/* What coalesce_add did with a packet. */
enum coalesce_result {
	COALESCE_HELD,	   /* opened a superpacket with it */
	COALESCE_MERGED,   /* appended it to its flow's open superpacket */
	COALESCE_PASSED,   /* emitted it on its own (after its flow's superpacket) */
	COALESCE_BAD_CSUM, /* a TCP segment with a wrong checksum: emitted on its own, unverified */
};

/* Sets up g over COALESCE_FLOWS * COALESCE_BUF bytes of mem, owned by the caller. */
void coalesce_init(struct coalescer *g, uint8_t *mem);

/*
 * Takes one inner IPv4 or IPv6 packet of len bytes that has passed decap's checks, and
 * merges it, holds it as a new superpacket, or emits it (after its flow's superpacket).
 * csum: its transport checksum as it came left partial (start 0: complete, to be verified).
 * Returns which.
 */
enum coalesce_result coalesce_add(struct coalescer *g, const uint8_t *pkt, size_t len,
				  struct l4_csum csum, coalesce_emit_fn *emit, void *ctx);

/* Emits every open superpacket. */
void coalesce_flush(struct coalescer *g, coalesce_emit_fn *emit, void *ctx);

/* Sets the time (CLOCK_MONOTONIC ns) that superpackets opened from now on are stamped with. */
static inline void coalesce_clock(struct coalescer *g, uint64_t now_ns)
{
	g->now_ns = now_ns;
}

/* Emits the open superpackets opened before before_ns: those held long enough. */
void coalesce_flush_older(struct coalescer *g, uint64_t before_ns, coalesce_emit_fn *emit,
			  void *ctx);

/* Whether a superpacket is open: segments wait for the rest of their burst. */
static inline bool coalesce_holding(const struct coalescer *g)
{
	return g->open != 0;
}

#endif
