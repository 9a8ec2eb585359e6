/*
 * The send queue of a gregw worker: inner packets (or segments, headers and payload apart)
 * queued during a pass, then encapsulated and sent in sendmmsg batches by the transport gregw
 * chose at start. A transport is a table of operations (struct tx_ops, as iproute2's
 * link_util is one per link kind) and a file: plain GRE on a packet socket, or on the IP path
 * alone (tx_packet.h); GRE-in-UDP with UDP_SEGMENT (tx_udp.h). Each has a part every worker
 * shares (struct tx_group) and a part per worker (struct txq); one the kernel cannot serve
 * hands over to its fallback at start, said once.
 */
#ifndef TUNBED_GW_TX_H
#define TUNBED_GW_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "inet.h"
#include "limits.h"
#include "nexthop.h"
#include "shared.h"
#include "stats.h"
#include "tx_packet.h"
#include "tx_udp.h"

/* Room for one segment's headers: the outer headers, then the inner ones. A message's
 * pieces: its headers (on the packet socket from the virtio header on), then its payload. */
enum { TX_SEG_HDR = ENCAP_HEADROOM + GSO_HDR_MAX, TX_IOV = 2 };

/* What the next sendmmsg carries: a whole inner packet (tail NULL), or a segment, its headers
 * in the queue's hdrs and its payload where it lies in the superpacket. */
struct tx_ent {
	uint8_t *inner;
	size_t len;
	const uint8_t *tail;
	size_t tail_len;
	/* Over UDP: what may share a UDP_SEGMENT message with it, the flow's number (a
	 * superpacket's own when its flow is untracked); 0 alone. */
	uint32_t flow;
	unsigned sock;	     /* over UDP: which sending socket (source port) */
	struct l4_csum csum; /* an inner checksum left partial (sh->tx_csum_partial) */
};

/* A send transport's part that every worker shares: the main thread's. */
struct tx_group {
	const struct tx_ops *ops;
	struct gw_shared *sh;
	struct nexthop nh; /* tx_packet_ops: the next hop, followed (nexthop.h) */
};

struct txq;

/*
 * One transport. prepare (may be NULL) sets up the group before any worker's queue opens, on
 * the main thread: it returns 0, or -errno after saying why, and its fallback, if any, takes
 * over; release (may be NULL) undoes it after the queues closed. A queue's open (returns 0 or
 * -errno) and close (safe after a failed open, and twice) run on the main thread; send on the
 * worker's.
 */
struct tx_ops {
	const char *name;	       /* as the stats' config says it (wire_tx): packet, ip, udp */
	const struct tx_ops *fallback; /* where prepare fails; NULL: none, gregw stops */
	int (*prepare)(struct tx_group *grp);
	void (*release)(struct tx_group *grp);
	int (*open)(struct txq *q);
	void (*close)(struct txq *q);
	/* Encapsulates and sends the queue's n entries, numbered from seq in sending order
	 * (GRE_F_SEQ); counts what the kernel took and drops (DROP_TX_SEND) what it refused. */
	void (*send)(struct txq *q, unsigned n, uint32_t seq);
};

extern const struct tx_ops tx_packet_ops; /* plain GRE, frames (tx_packet.c) */
extern const struct tx_ops tx_ip_ops;	  /* plain GRE, the IP path (tx_packet.c) */
extern const struct tx_ops tx_udp_ops;	  /* GRE-in-UDP (tx_udp.c) */

/* A worker's send queue. */
struct txq {
	const struct tx_ops *ops;
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	unsigned id;		    /* the worker's, for the one message it may log */
	struct tx_ent ents[TX_MSGS];
	unsigned nents;
	uint32_t groups; /* numbers handed to untracked superpackets */
	uint8_t *hdrs;	 /* TX_MSGS of TX_SEG_HDR */
	struct mmsghdr msgs[TX_MSGS];
	struct iovec iov[TX_IOV * TX_MSGS];
	union {
		struct tx_packet packet; /* tx_packet_ops, tx_ip_ops */
		struct tx_udp udp;	 /* tx_udp_ops */
	};
};

/*
 * Chooses the transport of sh->cfg, once for every worker: GRE-in-UDP's sockets, or for plain
 * GRE the packet socket when packet (--wire-tx packet), else the IP path; one the kernel
 * refuses hands over to its fallback. Sets up what the workers share. Main thread, before
 * any txq_init. Returns 0 or -errno, said once.
 */
int tx_group_init(struct tx_group *grp, struct gw_shared *sh, bool packet);

/* Releases what tx_group_init acquired. Main thread, after txq_fini. */
void tx_group_fini(struct tx_group *grp);

/* The next hop the transport follows, for the main thread to keep current (nexthop_changed,
 * nexthop_tick) and report; NULL when it follows none. */
struct nexthop *tx_group_nexthop(struct tx_group *grp);

/*
 * Opens worker id's sockets of grp's transport and allocates the header room; over UDP the
 * first worker to call it picks the source ports all share (sh->udp_sports). Main thread,
 * before the workers start. Returns 0 or -errno (-EADDRINUSE: no free run of ports found).
 */
int txq_init(struct txq *q, unsigned id, const struct tx_group *grp, struct worker_stats *stats);

/* Releases what txq_init acquired; safe on a txq whose init failed. */
void txq_fini(struct txq *q);

/*
 * Room for the headers of a segment to queue next (TX_SEG_HDR bytes; write from
 * ENCAP_HEADROOM on). Sends what is queued first when the queue is full. Worker thread.
 */
uint8_t *txq_hdr_room(struct txq *q);

/*
 * Queues an inner packet of len bytes with ENCAP_HEADROOM before it, or a segment: its
 * headers (len bytes, from txq_hdr_room) and payload (tail, tail_len). flow, sock and csum as
 * in struct tx_ent (a partial checksum's field within the headers). Sends what is queued
 * first when the queue is full. Worker thread.
 */
void txq_add(struct txq *q, uint8_t *inner, size_t len, const uint8_t *tail, size_t tail_len,
	     uint32_t flow, unsigned sock, struct l4_csum csum);

/* A number, never a flow's, for the segments of an untracked superpacket to share. */
uint32_t txq_group(struct txq *q);

/*
 * Encapsulates and sends what is queued by the transport, taking the batch's GRE sequence
 * numbers with one atomic add. What the kernel refuses is dropped and counted (DROP_TX_SEND),
 * never retried for ever. Worker thread.
 */
void txq_flush(struct txq *q);

/* Whether the queue sends GRE-in-UDP with UDP_SEGMENT: offered at start and not refused since.
 * Any thread. */
static inline bool txq_udp_gso(const struct txq *q)
{
	return q->ops == &tx_udp_ops && q->sh->udp_gso &&
	       !__atomic_load_n(&q->udp.gso_off, __ATOMIC_RELAXED);
}

/* For the transports. An entry's bytes on the wire past the kernel's headers. */
static inline size_t tx_ent_len(const struct tx_ent *e, unsigned outer_hlen)
{
	return outer_hlen + e->len + e->tail_len;
}

/* Counts what the kernel accepted for the wire: packets, and their bytes with the outer
 * headers. Worker thread. */
void txq_count_sent(struct txq *q, uint64_t packets, uint64_t bytes);

/*
 * Message k's pieces on a datagram socket, whose kernel writes the first skip bytes of the
 * outer headers (the outer IP header on the raw socket; over UDP nothing, as GRE is all
 * encap_build writes there): the rest of the outer header with the entry's headers, then
 * its payload, right after message k-1's (send_udp joins messages). A checksum left partial
 * is completed. Worker thread.
 */
void txq_dgram_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer, unsigned skip);

#endif
