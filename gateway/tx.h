/*
 * The send queue of a gregw worker: inner packets (or segments, headers and payload apart, or
 * TCP superpackets whole) queued during a pass, then encapsulated and sent by the transport
 * gregw chose at start. A transport is a table of operations (struct tx_ops, as iproute2's
 * link_util is one per link kind) and a file: plain GRE on a packet socket, or on the IP path
 * alone (tx_packet.h); GRE-in-UDP with UDP_SEGMENT (tx_udp.h); either encapsulation's
 * superpackets written whole into a TAP whose tcx program redirects them to the interface
 * towards the peer, the rest on the encapsulation's own transport (tx_tap.h). Each has a part
 * every worker shares (struct tx_group) and a part per worker (struct txq); one the kernel
 * cannot serve hands over to its fallback at start, said once.
 */
#ifndef TUNBED_GW_TX_H
#define TUNBED_GW_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "inet.h"
#include "gw_limits.h"
#include "nexthop.h"
#include "shared.h"
#include "stats.h"
#include "tx_packet.h"
#include "tx_tap.h"
#include "tx_udp.h"

/* Room for one segment's headers: the outer headers, then the inner ones. A message's
 * pieces: its headers (on the packet socket from the virtio header on), then its payload. */
enum { TX_SEG_HDR = ENCAP_HEADROOM + GSO_HDR_MAX, TX_IOV = 2 };

/* A TCP superpacket queued whole (tx_tap.h), as TUN's virtio header described it. */
struct tx_gso {
	uint16_t size;	  /* its segments' payload bytes (gso_size); 0: not a superpacket */
	uint8_t type;	  /* VIRTIO_NET_HDR_GSO_TCPV4 or _TCPV6, with the ECN bit */
	uint16_t l4_off;  /* its TCP header, whose checksum is left partial */
	uint16_t hdr_len; /* its headers: each segment's */
	uint16_t nseg;
};

/* What the next send carries: a whole inner packet (tail NULL), or a segment, its headers in
 * the queue's hdrs and its payload where it lies in the superpacket, or (gso.size set) a
 * superpacket whole. */
struct tx_ent {
	const struct tunnel *tn; /* the tunnel it goes into: valid for the worker's pass, within
				  * which the queue is sent */
	unsigned outer_hlen;	 /* what encap_build writes for it (encap_outer_hlen) */
	uint8_t *inner;
	size_t len;
	const uint8_t *tail;
	size_t tail_len;
	/* Over UDP: what may share a UDP_SEGMENT message with it, the flow's number (a
	 * superpacket's own when its flow is untracked); 0 alone. */
	uint32_t flow;
	unsigned sock;	     /* over UDP: which sending socket (source port) */
	struct l4_csum csum; /* an inner checksum left partial (sh->tx_csum_partial) */
	struct tx_gso gso;   /* a superpacket whole (txq_add_whole); size 0 otherwise */
	/* Over UDP: the outer DS field and TTL (encap_tos), which a UDP_SEGMENT message's
	 * datagrams share. */
	struct tos_fields tos;
};

/* A message's control messages on a datagram socket: the outer DS field and TTL (txq_cmsg),
 * and UDP_SEGMENT. */
union tx_cmsg {
	char buf[2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

/* What a send transport is told of the gateway, by the main thread at start. */
struct tx_cfg {
	bool tap; /* --wire-tx tap: superpackets whole through a TAP where the kernel can */
	bool tap_software; /* ... GRE-in-UDP also to an interface that does not segment it,
			    * the kernel cutting in software (--wire-tx tap given) */
	bool packet;	   /* plain GRE: frames on packet sockets (else the IP path) */
	unsigned nworkers; /* the TAP's queues */
	int ifindex;	   /* the interface towards the peer at start: where the TAP redirects */
};

/* A send transport's part that every worker shares: the main thread's. */
struct tx_group {
	const struct tx_ops *ops;
	struct gw_shared *sh;
	struct tx_cfg cfg;
	struct nexthop nh;	 /* tx_packet_ops and the TAP: the next hop, followed (nexthop.h) */
	struct tx_tap_group tap; /* the TAP's */
	const char *why;	 /* why superpackets do not go whole through a TAP (the stats'
				  * config says it); NULL when they do */
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
	const char *name; /* as the stats' config says it (wire_tx): tap, packet, ip, udp */
	/* Where prepare fails; NULL: none, gregw stops. The TAP's sends what is not a
	 * superpacket by its fallback. */
	const struct tx_ops *fallback;
	int (*prepare)(struct tx_group *grp);
	void (*release)(struct tx_group *grp);
	int (*open)(struct txq *q);
	void (*close)(struct txq *q);
	/* Encapsulates (txq_encap, in the sending order: the GRE sequence numbers follow it) and
	 * sends the queue's entries from to to (not included); counts what the kernel took and
	 * drops (DROP_TX_SEND, txq_drop_send) what it refused. */
	void (*send)(struct txq *q, unsigned from, unsigned to);
};

extern const struct tx_ops tx_packet_ops;  /* plain GRE, frames (tx_packet.c) */
extern const struct tx_ops tx_ip_ops;	   /* plain GRE, the IP path (tx_packet.c) */
extern const struct tx_ops tx_udp_ops;	   /* GRE-in-UDP (tx_udp.c) */
extern const struct tx_ops tx_tap_gre_ops; /* plain GRE, superpackets into a TAP (tx_tap.c) */
extern const struct tx_ops tx_tap_udp_ops; /* GRE-in-UDP, likewise */

/* A worker's send queue. */
struct txq {
	const struct tx_ops *ops;
	const struct tx_group *grp;
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	unsigned id;		    /* the worker's, for the one message it may log */
	struct tx_ent ents[TX_MSGS];
	unsigned nents;
	uint32_t groups; /* numbers handed to untracked superpackets */
	uint8_t *hdrs;	 /* TX_MSGS of TX_SEG_HDR */
	struct mmsghdr msgs[TX_MSGS];
	struct iovec iov[TX_IOV * TX_MSGS];
	union tx_cmsg cmsg[TX_MSGS];
	struct sockaddr_storage names[TX_MSGS]; /* a message's to another tunnel's peer than the
						 * first (txq_name) */
	union {
		struct tx_packet packet; /* tx_packet_ops, tx_ip_ops, tx_tap_gre_ops */
		struct tx_udp udp;	 /* tx_udp_ops, tx_tap_udp_ops */
	};
	struct tx_tap tap; /* tx_tap_gre_ops, tx_tap_udp_ops */
};

/*
 * Chooses the transport of sh->cfg as cfg says, once for every worker: with cfg->tap the TAP
 * (tx_tap.h), where the configuration and the kernel allow; else GRE-in-UDP's sockets, or for
 * plain GRE the packet socket when cfg->packet (--wire-tx packet), else the IP path; one the
 * kernel refuses hands over to its fallback. Sets up what the workers share. Main thread,
 * before any txq_init. Returns 0 or -errno, said once.
 */
int tx_group_init(struct tx_group *grp, struct gw_shared *sh, const struct tx_cfg *cfg);

/* Releases what tx_group_init acquired. Main thread, after txq_fini. */
void tx_group_fini(struct tx_group *grp);

/* The next hop the transport follows, for the main thread to keep current (nexthop_changed,
 * nexthop_tick) and report; NULL when it follows none. */
struct nexthop *tx_group_nexthop(struct tx_group *grp);

/* Whether the group's transport is a TAP's (tx_tap_gre_ops, tx_tap_udp_ops): superpackets may
 * go whole. Setup and control thread. */
bool tx_group_tap(const struct tx_group *grp);

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
 * headers (len bytes, from txq_hdr_room) and payload (tail, tail_len), into tunnel tn (of the
 * table the worker's pass holds). flow, sock and csum as in struct tx_ent (a partial
 * checksum's field within the headers). Sends what is queued first when the queue is full.
 * Worker thread.
 */
void txq_add(struct txq *q, const struct tunnel *tn, uint8_t *inner, size_t len,
	     const uint8_t *tail, size_t tail_len, uint32_t flow, unsigned sock,
	     struct l4_csum csum);

/*
 * The longest inner superpacket that may go whole this pass (txq_add_whole), or 0 when every
 * one must be cut: the transport sends superpackets whole (the TAP's), its next hop is known
 * and on the interface the TAP redirects to, and no probe of the IP path is due (a pass that
 * cuts sends it: tx_packet.h). Call it before the pass reads TUN. Worker thread.
 */
size_t txq_whole_max(struct txq *q);

/*
 * Whether a superpacket into tunnel tn may go whole, in a pass whose txq_whole_max is not 0:
 * the TAP carries that tunnel's (tx_tap_takes: without sequence numbers or GRE checksums, to
 * the first peer). Else it is cut, as the transport's fallback sends. Worker thread.
 */
bool txq_whole_takes(const struct txq *q, const struct tunnel *tn);

/*
 * Queues a TCP superpacket of len bytes (at most txq_whole_max's) whole, ENCAP_HEADROOM before
 * it, its checksum left partial where gso says, into a tunnel txq_whole_takes. sock as in
 * struct tx_ent. Sends what is queued first when the queue is full. Worker thread.
 */
void txq_add_whole(struct txq *q, const struct tunnel *tn, uint8_t *inner, size_t len,
		   const struct tx_gso *gso, unsigned sock);

/* A number, never a flow's, for the segments of an untracked superpacket to share. */
uint32_t txq_group(struct txq *q);

/*
 * Encapsulates and sends what is queued by the transport. What the kernel refuses is dropped
 * and counted (DROP_TX_SEND), never retried for ever. Worker thread, within the pass that
 * queued it (the entries' tunnels are that pass's table's).
 */
void txq_flush(struct txq *q);

/*
 * For the transports: writes entry e's outer headers (encap_build2 for its tunnel) and returns
 * their start. A tunnel with GRE_F_SEQ takes its next number here (one atomic add: the
 * numbers follow the order of the calls); one with GRE_F_CSUM has a checksum left partial
 * completed first, which the GRE checksum covers. Worker thread.
 */
uint8_t *txq_encap(struct txq *q, struct tx_ent *e);

/* For the transports: n of entry e's packets the kernel refused, counted (DROP_TX_SEND) for
 * the worker and the tunnel. Worker thread. */
void txq_drop_send(struct txq *q, const struct tx_ent *e, unsigned n);

/* Whether the queue sends GRE-in-UDP with UDP_SEGMENT: offered at start and not refused since.
 * Any thread. */
static inline bool txq_udp_gso(const struct txq *q)
{
	return q->ops == &tx_udp_ops && q->sh->udp_gso &&
	       !__atomic_load_n(&q->udp.gso_off, __ATOMIC_RELAXED);
}

/* For the transports. An entry's bytes on the wire past the kernel's headers. */
static inline size_t tx_ent_len(const struct tx_ent *e)
{
	return e->outer_hlen + e->len + e->tail_len;
}

/* Counts what the kernel accepted for the wire: packets, and their bytes with the outer
 * headers. Worker thread. */
void txq_count_sent(struct txq *q, uint64_t packets, uint64_t bytes);

/*
 * The control messages of message m (its buffer q->cmsg[slot]) on a datagram socket, whose
 * kernel writes the outer IP header: the DS field and TTL of tos where they differ from what
 * the socket sends by itself (DS field 0, TTL c->ttl: most packets carry none), IP_TOS and
 * IP_TTL or IPV6_TCLASS and IPV6_HOPLIMIT; then with gso set, UDP_SEGMENT of gso bytes.
 * Worker thread.
 */
void txq_cmsg(struct txq *q, struct msghdr *m, unsigned slot, struct tos_fields tos, uint16_t gso);

/*
 * Where message m (the queue's k-th) on a datagram socket goes: to entry e's tunnel's peer at
 * port (host order; 0 for raw IP), named in the message (q->names[k]) when it is another
 * peer than the first (c->remote), else to first (first_len bytes; NULL: the peer the socket
 * is connected to). Worker thread.
 */
void txq_name(struct txq *q, struct msghdr *m, unsigned k, const struct tx_ent *e, uint16_t port,
	      struct sockaddr_storage *first, socklen_t first_len);

/*
 * Message k's pieces on a datagram socket, whose kernel writes the first skip bytes of the
 * outer headers (the outer IP header on the raw socket; over UDP nothing, as GRE is all
 * encap_build writes there): the rest of the outer header with the entry's headers, then
 * its payload, right after message k-1's (send_udp joins messages). A checksum left partial
 * is completed. Worker thread.
 */
void txq_dgram_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer, unsigned skip);

#endif
