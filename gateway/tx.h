/*
 * The send queue of a gregw worker: inner packets (or segments, headers and payload apart)
 * queued during a pass, encapsulated and sent in sendmmsg batches. Plain GRE leaves on a
 * packet socket (AF_PACKET), whole frames to the next hop that nexthop.h publishes, inner
 * checksums left to the device where they may be; or, without a next hop (and with
 * --wire-tx ip), on the IP path: a raw IPPROTO_GRE socket, send-only, the kernel writing the
 * outer IPv4 or IPv6 header. GRE-in-UDP (RFC 8086) on one UDP socket per source port, a
 * flow's consecutive packets of one size in one message with UDP_SEGMENT.
 */
#ifndef TUNBED_GW_TX_H
#define TUNBED_GW_TX_H

#include <linux/if_packet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "inet.h"
#include "limits.h"
#include "nexthop.h"
#include "shared.h"
#include "stats.h"

/* Room for one segment's headers: the outer headers, then the inner ones. A message's
 * pieces: its headers (on the packet socket from the virtio header on), then its payload. */
enum { TX_SEG_HDR = ENCAP_HEADROOM + GSO_HDR_MAX, TX_IOV = 2 };

struct txq {
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	unsigned id;		    /* the worker's, for the one message it may log */
	/* What the next sendmmsg carries: a whole inner packet (tail NULL), or a segment, its
	 * headers in hdrs and its payload where it lies in the superpacket. */
	struct tx_ent {
		uint8_t *inner;
		size_t len;
		const uint8_t *tail;
		size_t tail_len;
		/* Over UDP: what may share a UDP_SEGMENT message with it, the flow's number
		 * (a superpacket's own when its flow is untracked); 0 alone. */
		uint32_t flow;
		unsigned sock;	     /* over UDP: which sending socket (source port) */
		struct l4_csum csum; /* an inner checksum left partial (sh->tx_csum_partial) */
	} ents[TX_MSGS];
	unsigned nents;
	uint16_t order[TX_MSGS]; /* over UDP: ents in sending order, by socket */
	uint32_t groups;	 /* numbers handed to untracked superpackets */
	uint8_t *hdrs;		 /* TX_MSGS of TX_SEG_HDR */
	struct mmsghdr msgs[TX_MSGS];
	struct iovec iov[TX_IOV * TX_MSGS];
	union tx_cmsg {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cmsg[TX_MSGS];
	int raw_fd;		  /* plain GRE: the IP path */
	unsigned ip_hlen;	  /* ... where the kernel writes the outer IP header */
	int pkt_fd;		  /* plain GRE: the packet socket (sh->wire_tx_packet), or -1 */
	struct nexthop_hop hop;	  /* ... the next hop as last read (sh->nh) */
	uint32_t hop_seen;	  /* ... the sequence count it was read at */
	uint32_t probes_seen;	  /* ... sh->nh.probes when this queue last probed */
	struct sockaddr_ll ll;	  /* ... where the packet socket sends: hop's device */
	int udp_fd[UDP_TX_PORTS]; /* GRE-in-UDP, one per source port */
	bool udp_gso_off;	  /* UDP_SEGMENT refused at run time: datagram by datagram since
				   * (atomic: the stats read it) */
	struct sockaddr_storage peer;
	socklen_t peer_len;
};

/*
 * Opens the sending sockets and allocates the header room: the raw socket for plain GRE, or
 * UDP_TX_PORTS UDP sockets; the first worker to call it picks the source ports all share
 * (sh->udp_sports). Main thread, before the workers start. Returns 0 or -errno (-EADDRINUSE:
 * no free run of ports found).
 */
int txq_init(struct txq *q, unsigned id, struct gw_shared *sh, struct worker_stats *stats);

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
 * Encapsulates and sends what is queued, taking the batch's GRE sequence numbers with one
 * atomic add. Plain GRE goes on the packet socket while the next hop is known, but for the
 * batch's first message once a second (nexthop_tick), which takes the IP path: its sends keep
 * the kernel's neighbour entry in use, so that the kernel confirms it or finds it gone. On
 * the IP path a checksum left partial is completed first. What the kernel refuses is
 * dropped and counted (DROP_TX_SEND), never retried for ever. Worker thread.
 */
void txq_flush(struct txq *q);

/* Whether the queue sends GRE-in-UDP with UDP_SEGMENT: offered at start and not refused since.
 * Any thread. */
static inline bool txq_udp_gso(const struct txq *q)
{
	return q->sh->udp_gso && !__atomic_load_n(&q->udp_gso_off, __ATOMIC_RELAXED);
}

/*
 * Opens the plain GRE sending socket of c: raw, protocol GRE, bound to c->local, the kernel
 * writing the outer IP header as the template has it; it receives nothing. Its sends block
 * for at most timeout_ms when its buffer is full. Returns an fd or -errno.
 */
int tx_raw_open(const struct encap_cfg *c, unsigned timeout_ms);

/*
 * Opens a plain GRE packet socket: AF_PACKET, SOCK_RAW (whole frames), bound to no protocol,
 * so it receives nothing; with virtio headers (PACKET_VNET_HDR), by which a frame leaves its
 * inner checksum to the device. Its sends block for at most timeout_ms. Returns an fd or
 * -errno.
 */
int tx_packet_open(unsigned timeout_ms);

#endif
