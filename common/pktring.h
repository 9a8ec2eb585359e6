/*
 * A packet socket's memory-mapped receive ring (packet(7), Linux
 * Documentation/networking/packet_mmap.rst): TPACKET_V2, one frame a packet, each sized to
 * hold a packet of the link's MTU, or TPACKET_V3, blocks of packets. gregw's receive ring
 * (gateway/rx_ring.c), and the ring tunbed-framebench's ring receiver measures: one geometry,
 * one reading loop. The caller owns the socket: it opens it, filters and binds it.
 */
#ifndef TUNBED_PKTRING_H
#define TUNBED_PKTRING_H

#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pktring_kind {
	PKTRING_V3,
	PKTRING_V2,
};

/* The ring's geometry: what one socket's ring holds. */
enum {
	PKTRING_V2_FRAMES = 4096,	 /* TPACKET_V2 frames, each sized to the largest packet */
	PKTRING_FRAME_OVERHEAD = 128,	 /* tpacket2_hdr, sockaddr_ll and alignment before data */
	PKTRING_V3_BLOCK_SIZE = 1 << 20, /* TPACKET_V3 block: holds a 64 KB GRO packet many times */
	PKTRING_V3_BLOCKS = 16,		 /* 16 MiB of V3 ring */
	PKTRING_V3_FRAME = 2048,	 /* V3's nominal frame size: only the count is checked */
	PKTRING_V3_RETIRE_MS = 1, /* a partly filled V3 block goes to the reader after 1 ms */
};

struct pktring {
	enum pktring_kind kind;
	int fd;	       /* the socket's, not owned */
	bool vnet_hdr; /* the socket has PACKET_VNET_HDR: a virtio header before each packet */
	uint8_t *map;
	size_t map_len;
	unsigned nblocks, block_size;			/* V3, and V2's blocks of frames */
	unsigned nframes, frame_size, frames_per_block; /* V2 */
	unsigned cur;					/* block (V3) or frame (V2) being read */
	unsigned left;					/* V3: packets left in the current block */
	uint8_t *next; /* V3: next packet header in the current block */
	bool held;     /* a packet was handed out and its slot not yet returned */
};

/* One packet in the ring: valid until the next pktring_next on the same ring. */
struct pktring_pkt {
	uint8_t *mac;	  /* its link-layer header: a SOCK_RAW socket's packets start there */
	uint32_t mac_len; /* bytes before the network header */
	uint32_t snaplen; /* bytes in the ring, from mac */
	uint32_t len;	  /* bytes on the wire, from mac */
	uint32_t status;  /* TP_STATUS_*: COPY, CSUMNOTREADY, CSUM_VALID, ... */
	uint32_t rxhash;  /* the kernel's flow hash (V3; 0 on V2) */
	uint64_t queued;  /* when the kernel put it in the ring (ns, CLOCK_REALTIME) */
	struct virtio_net_hdr vnet; /* with pktring.vnet_hdr, the header the kernel wrote before
				     * the packet; zero without */
};

/*
 * The ring of kind for packets of frame_max bytes, in *req, with blocks of page bytes or the
 * smallest power of two above that holds a V2 frame (frames may not straddle blocks). Returns
 * V2's frames per block (0 for V3). Pure.
 */
unsigned pktring_geometry(enum pktring_kind kind, unsigned frame_max, unsigned page,
			  struct tpacket_req3 *req);

/*
 * Gives the packet socket fd a ring of kind and maps it: V2 frames of frame_max bytes of
 * packet (the link's MTU) and their headers (pktring_geometry, blocks from the page size);
 * vnet_hdr when fd has PACKET_VNET_HDR on. Call it before the bind,
 * so that no packet queues outside the ring. Returns 0 or -errno (the kernel refused the
 * version or the ring, or mmap failed). Setup only.
 */
int pktring_map(struct pktring *r, int fd, enum pktring_kind kind, unsigned frame_max,
		bool vnet_hdr);

/* Unmaps the ring; safe on one whose map failed, and twice. The socket stays the caller's. */
void pktring_unmap(struct pktring *r);

/*
 * Returns the slot of the previous packet to the kernel, then hands out the next ready one.
 * Returns false when the ring holds no more. Only the ring's reader calls it.
 */
bool pktring_next(struct pktring *r, struct pktring_pkt *p);

/*
 * Packets the kernel dropped because the ring was full since the last call (the counter
 * resets on read), or 0 when it cannot be read. Any one thread may call it.
 */
uint64_t pktring_drops(const struct pktring *r);

#endif
