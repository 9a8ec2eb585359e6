/*
 * The receive side of a gregw worker: an AF_PACKET socket on the interface towards the peer,
 * in a PACKET_FANOUT_HASH group shared by all workers (the kernel's flow hash looks inside
 * GRE, so one inner flow always lands on one worker), with a classic BPF filter that passes
 * only GRE addressed to the local tunnel address, and a memory-mapped ring: TPACKET_V3
 * (blocks of packets) or TPACKET_V2 (one frame per packet; lower latency at low rates).
 *
 * Also the GRE sink: the kernel has no GRE handler here, and would answer every GRE packet
 * with ICMP "protocol unreachable" unless some socket takes it (see rx_sink_open).
 */
#ifndef TUNBED_GW_RX_H
#define TUNBED_GW_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rx_ring_kind {
	RX_RING_V3,
	RX_RING_V2,
};

struct rx_cfg {
	enum rx_ring_kind kind;
	int family;	       /* outer family: AF_INET or AF_INET6 */
	const uint8_t *local;  /* outer destination to accept, 4 or 16 bytes */
	int ifindex;	       /* interface to bind to */
	unsigned fanout_group; /* same for every worker of one gregw */
	unsigned frame_max;    /* largest packet to hold whole (outer MTU) */
};

struct rx_ring {
	enum rx_ring_kind kind;
	int fd;
	uint8_t *map;
	size_t map_len;
	unsigned nblocks, block_size;			/* V3 */
	unsigned nframes, frame_size, frames_per_block; /* V2 */
	unsigned cur;					/* block (V3) or frame (V2) being read */
	unsigned left;					/* V3: packets left in the current block */
	uint8_t *next; /* V3: next packet header in the current block */
	bool held;     /* a packet was handed out and its slot not yet returned */
};

/* One packet in the ring: valid until the next rx_next call on the same ring. */
struct rx_pkt {
	uint8_t *data;	  /* the outer IP header */
	uint32_t caplen;  /* bytes in the ring */
	uint32_t wirelen; /* bytes on the wire */
	uint32_t rxhash;  /* the kernel's flow hash (V3; 0 on V2) */
	uint64_t queued;  /* when the kernel put it in the ring (ns, CLOCK_REALTIME) */
};

/* Opens the socket, filter, ring and fanout membership. Returns 0 or -errno. */
int rx_open(struct rx_ring *r, const struct rx_cfg *cfg);
void rx_close(struct rx_ring *r);

/*
 * Returns the slot of the previous packet to the kernel, then hands out the next ready one.
 * Returns false when the ring holds no more. Only the owning worker calls it.
 */
bool rx_next(struct rx_ring *r, struct rx_pkt *p);

/*
 * Packets the kernel dropped because the ring was full since the last call (the counter
 * resets on read). Any one thread may call it.
 */
uint64_t rx_ring_drops(struct rx_ring *r);

/*
 * Opens a raw IPPROTO_GRE socket of family whose filter drops everything: its presence alone
 * makes the kernel treat GRE as delivered and send no "protocol unreachable". One per gregw,
 * not per worker: every raw socket gets a clone of every GRE packet. Returns an fd or -errno.
 */
int rx_sink_open(int family);

#endif
