/*
 * The receive side of a gregw worker: two sources of datagrams from the peer, feeding one
 * consumer. Plain GRE: an AF_PACKET socket on the interface towards the peer, in a
 * PACKET_FANOUT_HASH group shared by all workers (the kernel's flow hash looks inside GRE, so
 * one inner flow always lands on one worker), with a classic BPF filter that passes only GRE
 * addressed to the local tunnel address, and a memory-mapped ring: TPACKET_V2 (one frame per
 * packet) or TPACKET_V3 (blocks of packets). GRE-in-UDP (RFC 8086): a UDP socket in the
 * workers' SO_REUSEPORT group, with UDP_GRO, whose bursts are cut back into datagrams here.
 * Either way, with --aqm, CoDel (RFC 8289) on the queue, from the kernel's arrival stamps.
 *
 * Also the GRE sink: the kernel has no GRE handler here, and would answer every GRE packet
 * with ICMP "protocol unreachable" unless some socket takes it (see rx_sink_open).
 */
#ifndef TUNBED_GW_RX_H
#define TUNBED_GW_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "codel.h"
#include "drop.h"
#include "pktring.h"
#include "shared.h"
#include "stats.h"
#include "udp.h"

struct rx_cfg {
	enum pktring_kind kind;
	int family;	       /* outer family: AF_INET or AF_INET6 */
	const uint8_t *local;  /* outer destination to accept, 4 or 16 bytes */
	int ifindex;	       /* interface to bind to */
	unsigned fanout_group; /* same for every worker of one gregw */
	int fanout_prog;       /* the group's steering program (steer.h), or -1: the kernel's
				* flow hash (PACKET_FANOUT_HASH) */
	unsigned frame_max;    /* largest packet to hold whole in a frame (outer MTU) */
	bool gro;	       /* take the kernel's GRO superpackets whole (rx_open) */
};

struct rx_ring {
	int fd;
	struct pktring pr; /* the socket's ring (pktring.h) */
	bool gro;	   /* superpackets too large for a frame are queued whole (rx_open) */
};

/* How the kernel merged a packet from the wire, as its virtio header says (rx_cfg.gro):
 * gso_size 0 when it is one packet, or when its L4 checksum is not left to be completed (what
 * GRO makes always is). */
struct rx_merged {
	uint16_t gso_size;    /* its inner segments' payload size */
	uint8_t gso_type;     /* VIRTIO_NET_HDR_GSO_*, with the ECN bit */
	uint16_t csum_start;  /* from the outer IP header: where its inner L4 checksum's coverage
			       * starts */
	uint16_t csum_offset; /* the checksum's offset from there */
};

/* One packet in the ring: valid until the next rx_next call on the same ring. */
struct rx_pkt {
	uint8_t *data;		 /* the outer IP header */
	uint32_t caplen;	 /* bytes in the ring */
	uint32_t wirelen;	 /* bytes on the wire */
	uint32_t rxhash;	 /* the kernel's flow hash (V3; 0 on V2) */
	uint64_t queued;	 /* when the kernel put it in the ring (ns, CLOCK_REALTIME) */
	uint32_t mac_len;	 /* link-layer header before data (the socket is SOCK_RAW) */
	bool copy;		 /* too large for its frame: queued whole on the socket */
	bool csum_partial;	 /* a sender on this host left its inner checksum to a device
				  * (TP_STATUS_CSUMNOTREADY, the kernel's CHECKSUM_PARTIAL) */
	struct rx_merged merged; /* with rx_ring.gro, from the frame's virtio header */
};

/*
 * Opens the socket, filter, ring and fanout membership. With cfg->gro, a packet larger than a
 * frame (a superpacket the kernel's GRO merged on the interface, as a NIC driver does by
 * default) gets a truncated frame marked copy, and is queued whole on the socket, behind a
 * virtio header that tells how it was merged (PACKET_COPY_THRESH, PACKET_VNET_HDR); r->gro
 * says whether the kernel took those options. Returns 0 or -errno.
 */
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

/* A datagram from the peer, as a source hands it over: valid, and ours to edit in place,
 * until the next rxq_next. */
struct rx_dgram {
	uint8_t *data;		 /* from the ring: the outer IP header; over UDP: the GRE header */
	size_t len;		 /* bytes at data: captured (ring), or the datagram's (UDP) */
	size_t wirelen;		 /* the packet's bytes on the wire, outer headers included */
	bool outer;		 /* data starts at the outer IP header */
	struct rx_merged merged; /* plain GRE with rx_cfg.gro: a superpacket the kernel
				  * merged on the interface (gso_size 0: one packet) */
	bool csum_partial;	 /* plain GRE, one packet: rx_pkt.csum_partial; its field holds
				  * the pseudo-header's sum, where merged.csum_start says when
				  * the frame had a virtio header */
	enum drop_reason drop;	 /* the source's verdict: DROP_TRUNCATED (a UDP message cut short,
				* or a merged superpacket not had whole),
				* DROP_OUTER_FRAGMENT (reassembled by the kernel),
				* DROP_UNKNOWN_PEER (a UDP source other than --remote), or
				* DROP_NONE */
};

struct rxq {
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	struct rx_ring ring;	    /* plain GRE */
	uint8_t *gro_buf;	    /* plain GRE: RX_GRO_BUF for a superpacket read whole */
	/* GRE-in-UDP: the socket, its last recvmmsg, and where in it the next datagram is. */
	int udp_fd;
	uint64_t udp_drops; /* the socket's drops already reported */
	bool has_mib;	    /* worker 0: the namespace's UDP counters when it started */
	struct udp_mib mib_base;
	uint8_t *udp_bufs; /* RX_UDP_BATCH of RX_UDP_BUF */
	struct mmsghdr msgs[RX_UDP_BATCH];
	struct iovec iov[RX_UDP_BATCH];
	struct sockaddr_storage from[RX_UDP_BATCH];
	union rx_cmsg {
		char buf[2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} cmsg[RX_UDP_BATCH];
	unsigned got, cur; /* messages in the batch; the one being cut */
	size_t off, seg;   /* the next datagram's offset in it; its UDP_GRO segment size */
	bool cut;	   /* every datagram of message cur handed out (an empty one is one) */
	bool frag;	   /* message cur was reassembled from outer fragments by the kernel */
	bool full;	   /* the batch was full: the socket may hold more */
	/* The pass. */
	unsigned taken; /* datagrams handed out */
	uint64_t now;	/* --aqm: the time the queue is judged at (CLOCK_REALTIME, ns) */
	struct codel codel;
	bool aqm_pending; /* CoDel asked for a drop or mark not yet made */
};

/*
 * Opens worker id's source: the ring for plain GRE (rxc), or the UDP socket, joined to the
 * workers' reuseport group with the steering program (steer.h). Main thread, before the
 * workers start. Returns 0 or -errno.
 */
int rxq_init(struct rxq *q, unsigned id, const struct rx_cfg *rxc, struct gw_shared *sh,
	     struct worker_stats *stats);

/* Releases what rxq_init acquired; safe on an rxq whose init failed. */
void rxq_fini(struct rxq *q);

/* The fd to poll for more datagrams. */
int rxq_fd(const struct rxq *q);

/* After poll said POLLERR on rxq_fd: takes the socket's pending error (SO_ERROR; ENETDOWN
 * when its interface went down or away), which would otherwise wake every poll at once, and
 * counts it. Worker thread. */
void rxq_take_error(struct rxq *q);

/* Starts a pass: up to RX_BUDGET datagrams (a UDP batch is never split). Worker thread. */
void rxq_begin(struct rxq *q);

/*
 * Hands out the next datagram of the pass in *d; false when the pass is over (the budget
 * spent, or the source empty). Counts UDP_GRO reads. Worker thread.
 */
bool rxq_next(struct rxq *q, struct rx_dgram *d);

/*
 * --aqm: whether CoDel's pending signal (a standing queue) goes to this packet of wirelen
 * bytes, a full-sized one (RX_AQM_MIN_WIRE: a bulk flow's, which builds the queue, never an
 * ACK or a probe, which could not shrink it); it is then taken. Worker thread.
 */
bool rxq_aqm_signal(struct rxq *q, size_t wirelen);

/* Frames the kernel dropped because the ring was full (plain GRE), or buffers the socket
 * dropped (GRE-in-UDP: udp_drops), since the last call. Any one thread may call it (the
 * control thread does). */
uint64_t rxq_drops(struct rxq *q);

/* GRE-in-UDP, worker 0: the namespace's UDP counters since the worker was set up, in *out.
 * Returns 0, or -ENODATA (another worker, plain GRE, or unreadable). Any thread. */
int rxq_udp_mib(const struct rxq *q, struct udp_mib *out);

#endif
