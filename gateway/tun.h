/*
 * The TUN device of gregw: one multi-queue device (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE),
 * one non-blocking fd per queue, one queue per worker. Not persistent: the device goes away
 * with the last fd. A worker's queue (struct tunq) hides the device's quirks: with offloads
 * (IFF_VNET_HDR) the virtio header, the superpackets it reads, cut into segments (gso.h) or,
 * where they go whole, merged with the reads of their flow after them (merge.h), and the
 * segments it writes, merged into superpackets (coalesce.h); the worker sees packets.
 */
#ifndef TUNBED_GW_TUN_H
#define TUNBED_GW_TUN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "fq.h"
#include "coalesce.h"
#include "gso.h"
#include "inet.h"
#include "shared.h"
#include "stats.h"

/*
 * Creates TUN device name in the calling thread's namespace with n queues and stores their
 * fds in fds[0..n). Refuses a name that is already a device (-EEXIST): attaching to another
 * program's multi-queue device would steal its packets. With vnet_hdr every read and write
 * starts with a struct virtio_net_hdr. Returns 0 or -errno.
 */
int tun_open(const char *name, unsigned n, bool vnet_hdr, int *fds);

/*
 * Offers the kernel the best offloads it accepts (TUN_F_* of linux/if_tun.h), from checksum,
 * TSO4, TSO6, TSO with ECN, USO4 and USO6 down to none: a kernel refuses flags it does not
 * know. Returns the flags in force, or -errno.
 */
int tun_offload(int fd);

/* "csum,tso4,tso6,tso_ecn,uso4,uso6" for the flags in force; "none" for none. */
const char *tun_offload_names(int flags, char *buf, size_t len);

/* Closes n queue fds; the device goes away with the last. */
void tun_close(int *fds, unsigned n);

/* A packet read from a queue: whole, or one segment of a superpacket. */
struct tun_pkt {
	uint8_t *data;	     /* the packet, ENCAP_HEADROOM free before it; or, for a segment,
			      * its headers, written where the caller said */
	size_t len;	     /* bytes at data */
	const uint8_t *tail; /* a segment's payload, where it lies in its superpacket */
	size_t tail_len;
	struct ip_info ip;	   /* the inner IP header (a segment's: its superpacket's) */
	unsigned seg, nseg;	   /* segment seg of nseg; 0 and 0 for a whole packet */
	bool whole;		   /* a TCP superpacket of nseg segments handed over whole
				* (tunq_whole): data its nseg segments, gso how to cut them */
	const struct gso_pkt *gso; /* with whole: valid until the next tunq_next */
	struct l4_csum csum;	   /* its transport checksum left partial (sh->tx_csum_partial):
				* start 0 when it is complete */
	enum drop_reason drop;	   /* DROP_NONE, or why the packet may not enter the tunnel:
				* DROP_TX_BAD_INNER (data NULL when the read itself was bad) or
				* DROP_TX_TOO_BIG (ip filled, for the ICMP error) */
};

struct tunq {
	int fd; /* owned by gregw: tun_close closes it */
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	uint8_t *slots;		    /* WORKER_BATCH of ENCAP_HEADROOM + WORKER_SLOT */
	unsigned nread;		    /* reads this pass: the next free slot (not --fair-queue) */
	/* --fair-queue: the reads (TUN_FQ_READS of them) wait in fq between the read and the
	 * send, in the slots' memory cut into pages of TUN_FQ_PAGE_SLOTS slots, where they are
	 * packed (but for reads lent to io_uring, and with --tx-merge, which grows a read in
	 * place: those keep a slot's room each). */
	struct fq fq;
	uint32_t *free_slots, *sent; /* free reads; taken this pass, free at the next */
	unsigned nfree, nsent;
	uint8_t **data;			  /* per read: its packet, in its page */
	uint16_t *page_of;		  /* per read: its page */
	uint32_t *page_refs, *free_pages; /* per page: reads in it; pages with none */
	unsigned nfree_pages;
	unsigned open_page; /* where the next read goes, at open_off */
	size_t open_off;
	bool pack;		     /* reads take their length of a page, not a slot's room */
	unsigned pass_segs;	     /* segments taken this pass */
	struct virtio_net_hdr *hdrs; /* per read: its virtio header */
	struct gso_pkt gso;	     /* the superpacket being cut */
	struct ip_info gso_ip;
	unsigned gso_next;     /* its next segment; gso.nseg when done */
	bool gso_partial;      /* its segments' checksums left to the device (tun_pkt.csum) */
	bool gso_drop_last;    /* --aqm: its last segment is CoDel's drop (DROP_TX_AQM) */
	bool aqm_cut;	       /* --aqm: the read being taken is a Not-ECT superpacket CoDel
				* signalled on: cut, and its last segment dropped */
	size_t whole_max;      /* this pass: TCP superpackets up to this long go whole; 0: none */
	struct coalescer coal; /* --offload: coalescing towards TUN */
	uint8_t *coal_mem;     /* its COALESCE_FLOWS buffers */
	/* --tun-io uring (tun_uring.h): reads lent to a ring (NULL: read(2)), their slots out
	 * of free_slots: the last chain's, not taken back yet; whether its submission was
	 * refused (it waits). */
	struct tun_uring *uring;
	unsigned lent;
	bool uring_unsent;
	uint8_t seg_hdr[GSO_HDR_MAX]; /* a segment's headers, cut from the wire's superpacket */
};

/* Sets up a worker's queue on fd (not taken over); with sh->tun_uring its ring
 * (tun_uring_init). Main thread. Returns 0, -ENOMEM, or tun_uring_init's -errno. */
int tunq_init(struct tunq *q, int fd, struct gw_shared *sh, struct worker_stats *stats);

/* Releases what tunq_init allocated (not fd), after the worker's thread has ended. */
void tunq_fini(struct tunq *q);

/* For the next pass: TCP superpackets no longer than max bytes are handed over whole
 * (tun_pkt.whole), not cut; 0 cuts every one. Worker thread. */
static inline void tunq_whole(struct tunq *q, size_t max)
{
	q->whole_max = max;
}

/* Starts a pass of up to WORKER_BATCH reads; the packets of the last pass must be sent by now
 * (their slots are read into again). With --fair-queue, reads what TUN has into the slots'
 * pages while the flow queue has room (--fq-limit reads, TUN_FQ_BYTES bytes); a full one
 * leaves the rest in the TUN device's queue until a later pass (--fq-full pause:
 * STAT_TUN_READ_PAUSES), or gives up the oldest packet of its longest flow for each read
 * (drop: DROP_TX_FQ_OVERFLOW). The pass then takes them in fq's order, up to TUN_FQ_PASS_SEGS
 * segments; with --aqm, each flow's CoDel judges them as they leave (tunq_next). With
 * --tun-io uring the reads are the ring's (tun_uring.h): those completed since the last
 * pass, and those it completes at once. Worker thread. */
void tunq_begin(struct tunq *q);

/* --tun-io uring: ends the reads lent to the ring (their packets are lost), so that none holds
 * the queue's fd once the worker has ended. The worker's thread, as it ends. */
void tunq_quit(struct tunq *q);

/* --tun-io uring: the ring's fd, readable when a read lent to it has completed (a worker
 * sleeps on it beside fd); -1 otherwise. */
int tunq_ring_fd(const struct tunq *q);

/*
 * The next packet of the pass in *p: the next segment of the superpacket being cut, its
 * headers written at hdr (TX_SEG_HDR bytes of room, ENCAP_HEADROOM of them before the
 * headers), or a new read. Checks what it reads (a well-formed IPv4 or IPv6 packet of its
 * length, within the tunnel MTU; a superpacket's virtio header against the packet) and says
 * why in p->drop. With --fair-queue and --tx-merge, a TCP read that goes whole (tunq_whole)
 * takes the reads of its flow that the queue hands out next along (merge.h): p is then one
 * superpacket of them all. With --fair-queue and --aqm, a read its flow's CoDel signals on is
 * marked CE when ECN-capable (STAT_TX_AQM_MARKED), else handed out with DROP_TX_AQM; a Not-ECT
 * superpacket is cut instead, its last segment handed out with DROP_TX_AQM, so that the signal
 * costs its flow one segment, not all of them. False when the queue is empty or the pass has had its reads.
 * Worker thread.
 */
bool tunq_next(struct tunq *q, uint8_t *hdr, struct tun_pkt *p);

/*
 * p, a TCP superpacket tunq_next handed over whole, is to be cut after all (its tunnel's
 * packets cannot go whole): p becomes its first segment, its headers written at hdr (as
 * tunq_next's), and the next calls of tunq_next hand out the rest. Worker thread.
 */
void tunq_cut(struct tunq *q, uint8_t *hdr, struct tun_pkt *p);

/* Writes an inner packet from the wire into TUN; with offloads through the coalescer, which
 * may hold it until tunq_flush. csum: its transport checksum as it came left partial, which
 * goes on so (without offloads it is completed here first). Counts what TUN took, or
 * DROP_TUN_WRITE. Worker thread. */
void tunq_write(struct tunq *q, uint8_t *pkt, size_t len, struct l4_csum csum);

/* How the kernel merged a superpacket from the wire (rx.h), its offsets from the inner IP
 * header. */
struct tun_merged {
	uint16_t gso_size;    /* its segments' payload size */
	uint8_t gso_type;     /* VIRTIO_NET_HDR_GSO_*, with the ECN bit */
	uint16_t csum_start;  /* its L4 header, whose checksum holds the pseudo-header's sum */
	uint16_t csum_offset; /* the checksum's offset in it */
	uint16_t hdr_len;     /* set by tunq_write_merged: each segment's IP and L4 headers */
};

/*
 * Writes a superpacket from the wire (the kernel merged it, or a sender on this host wrote it
 * whole; decapsulated: pkt is its inner IP packet, ip its header) into TUN whole, after what
 * the coalescer holds, counted as the segments it holds; where the device does not take its
 * kind (offloads off, or not offered), cut here into segments whose checksums are completed.
 * Returns those segments, or 0, writing nothing, when its header does not agree with the
 * packet. Worker thread.
 */
unsigned tunq_write_merged(struct tunq *q, const uint8_t *pkt, size_t len, const struct ip_info *ip,
			   struct tun_merged *m);

/* Writes a packet gregw made itself (an ICMP error) into TUN at once. Returns whether TUN took
 * it. Worker thread. */
bool tunq_put(struct tunq *q, const uint8_t *pkt, size_t len);

/* Starts a pass from the wire at now_ns (CLOCK_MONOTONIC): superpackets opened in it are
 * stamped with it. Worker thread. */
void tunq_clock(struct tunq *q, uint64_t now_ns);

/*
 * Ends a pass from the wire: superpackets open for --coalesce-hold or longer (every one with no
 * hold, as the kernel's GRO flushes at the end of a NAPI poll) go into TUN; younger ones wait
 * for the rest of their burst. Worker thread.
 */
void tunq_flush(struct tunq *q, uint64_t now_ns);

/* Whether the coalescer holds segments (tunq_flush left some). Worker thread. */
bool tunq_holding(const struct tunq *q);

/* Everything the coalescer holds into TUN: before the worker sleeps. Worker thread. */
void tunq_flush_all(struct tunq *q);

#endif
