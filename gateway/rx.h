/*
 * The receive side of a gregw worker: datagrams from the peer, from the transport gregw
 * chose at start, handed one at a time to one consumer with CoDel's verdict on each. A
 * transport is a table of operations (struct rx_ops, as iproute2's link_util is one per link
 * kind): the packet ring (rx_ring.h; plain GRE's, and GRE-in-UDP's with --wire-rx ring) or
 * GRE-in-UDP's socket (rx_udp.h); each has a part every worker shares (struct rx_group) and a
 * part per worker (struct rxq). With --aqm, CoDel (RFC 8289) on the queue, from the kernel's
 * arrival stamps (rx.c).
 */
#ifndef TUNBED_GW_RX_H
#define TUNBED_GW_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codel.h"
#include "drop.h"
#include "pktring.h"
#include "rx_ring.h"
#include "rx_udp.h"
#include "shared.h"
#include "stats.h"
#include "udp.h"

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

/* A datagram from the peer, as a transport hands it over: valid, and ours to edit in place,
 * until the next rxq_next. */
struct rx_dgram {
	uint8_t *data;		 /* from the ring: the outer IP header; over UDP: the GRE header */
	size_t len;		 /* bytes at data: captured (ring), or the datagram's (UDP) */
	size_t wirelen;		 /* the packet's bytes on the wire, outer headers included */
	bool outer;		 /* data starts at the outer IP header */
	const uint8_t *src;	 /* without outer: the outer source address (the family's 4 or
				  * 16 bytes), which tunnels_decap checks with the key */
	struct rx_merged merged; /* plain GRE with rx_cfg.gro: a superpacket the kernel
				  * merged on the interface (gso_size 0: one packet) */
	bool csum_partial;	 /* plain GRE, one packet: a sender on this host left its inner
				  * checksum to a device (TP_STATUS_CSUMNOTREADY); its field holds
				  * the pseudo-header's sum, where merged.csum_start says when
				  * the frame had a virtio header */
	enum drop_reason drop;	 /* the transport's verdict: DROP_TRUNCATED (a UDP message cut
				* short, or a merged superpacket not had whole),
				* DROP_OUTER_FRAGMENT (reassembled by the kernel),
				* DROP_UNKNOWN_PEER (a UDP source of another family), or
				* DROP_NONE */
	bool aqm; /* --aqm: CoDel's signal goes to this one (rxq_next): mark it CE, or drop it */
	uint8_t outer_ds; /* without outer: the outer header's DS field, as the socket (its
			   * control data) or the ring's burst had it */
};

/* What a receive transport is told of the gateway, by the main thread at start. */
struct rx_cfg {
	enum pktring_kind ring; /* plain GRE: --rx-ring */
	int ifindex;		/* the interface towards the peer */
	unsigned fanout_group;	/* the ring: the rings' group, the same for every worker */
	unsigned frame_max;	/* the ring: largest packet to hold whole in a frame (outer MTU) */
	unsigned nworkers;
	bool gro;	   /* the ring: take superpackets whole */
	bool ingress_drop; /* the ring: --ingress-drop tcx */
	bool udp_ring;	   /* GRE-in-UDP from the packet ring (--wire-rx ring), not the socket */
};

struct rx_ops;
struct rxq;

/* A receive transport's part that every worker shares: the main thread's. */
struct rx_group {
	const struct rx_ops *ops;
	struct gw_shared *sh;
	struct rx_cfg cfg;
	bool tun_steer;		   /* workers are picked by the flow table's program (steer.h):
				    * the TUN device may pick them so too */
	struct rx_ring_group ring; /* plain GRE */
};

/*
 * One transport. The group's operations run on the main thread: group_init before any
 * worker's queue opens (returns 0 or -errno, said once, and releases what it took on
 * failure), group_ready once all have (may be NULL), group_fini after they closed (may be
 * NULL). A queue's open (returns 0 or -errno, sets rxq.fd) and close (safe after a failed
 * open, and twice) run on the main thread too; begin (may be NULL), next and drops on the
 * worker's (drops on any one thread).
 */
struct rx_ops {
	const char *drops_name; /* what the stats call its drops: ring_drops, socket_drops */
	int (*group_init)(struct rx_group *grp);
	void (*group_ready)(struct rx_group *grp, const struct rxq *first);
	void (*group_fini)(struct rx_group *grp);
	int (*open)(struct rxq *q, unsigned id, const struct rx_group *grp);
	void (*close)(struct rxq *q);
	void (*begin)(struct rxq *q); /* a pass starts */
	/* The next datagram, unless the pass has had RX_BUDGET (q->taken) or the source is
	 * empty; calls rxq_aqm_take for what it takes. */
	bool (*next)(struct rxq *q, struct rx_dgram *d);
	uint64_t (*drops)(struct rxq *q); /* what the kernel dropped since the last call */
};

extern const struct rx_ops rx_ring_ops; /* plain GRE (rx_ring.c) */
extern const struct rx_ops rx_udp_ops;	/* GRE-in-UDP (rx_udp.c) */

/* A worker's receive queue. */
struct rxq {
	const struct rx_ops *ops;
	struct gw_shared *sh;
	struct worker_stats *stats; /* the worker's, written by it alone */
	int fd;			    /* to poll for more datagrams */
	union {
		struct rx_ring ring; /* plain GRE */
		struct rx_udp udp;   /* GRE-in-UDP */
	};
	/* The pass. */
	unsigned taken; /* datagrams handed out */
	uint64_t now;	/* --aqm: the time the queue is judged at (CLOCK_REALTIME, ns) */
	struct codel codel;
	bool aqm_pending; /* CoDel asked for a drop or mark not yet given */
};

/*
 * Chooses the transport of sh->cfg (GRE-in-UDP's socket, or the ring: plain GRE's, and
 * GRE-in-UDP's with cfg->udp_ring), once for every worker, and sets up what they share. Main thread, before any rxq_init. Returns 0 or -errno,
 * said once.
 */
int rx_group_init(struct rx_group *grp, struct gw_shared *sh, const struct rx_cfg *cfg);

/* Once every worker's queue is open (first: worker 0's): what needs them all. Main thread. */
void rx_group_ready(struct rx_group *grp, const struct rxq *first);

/* Releases what rx_group_init and rx_group_ready acquired. Main thread, after rxq_fini. */
void rx_group_fini(struct rx_group *grp);

/* Opens worker id's queue of grp's transport. Main thread, before the workers start.
 * Returns 0 or -errno. */
int rxq_init(struct rxq *q, unsigned id, const struct rx_group *grp, struct worker_stats *stats);

/* Releases what rxq_init acquired; safe on an rxq whose init failed. */
void rxq_fini(struct rxq *q);

/* The fd to poll for more datagrams. */
static inline int rxq_fd(const struct rxq *q)
{
	return q->fd;
}

/* After poll said POLLERR on rxq_fd: takes the socket's pending error (SO_ERROR; ENETDOWN
 * when its interface went down or away), which would otherwise wake every poll at once, and
 * counts it. Worker thread. */
void rxq_take_error(struct rxq *q);

/* Starts a pass: up to RX_BUDGET datagrams (a UDP batch is never split). Worker thread. */
void rxq_begin(struct rxq *q);

/*
 * Hands out the next datagram of the pass in *d; false when the pass is over (the budget
 * spent, or the source empty). With --aqm, CoDel's pending signal goes with it (d->aqm) when
 * it is full-sized (RX_AQM_MIN_WIRE: a bulk flow's, which builds the queue, never an ACK or a
 * probe, which could not shrink it) and not dropped by its transport. Worker thread.
 */
bool rxq_next(struct rxq *q, struct rx_dgram *d);

/* A datagram that carried CoDel's signal was dropped as bad before it could take it: the
 * signal goes to the next one (a spoofed or broken packet must not absorb it). Worker
 * thread. */
void rxq_aqm_unspent(struct rxq *q);

/* For the transports, as they take a packet: CoDel's verdict on one that queued since queued
 * (ns, CLOCK_REALTIME; 0: no stamp), judged at q->now. Worker thread. */
void rxq_aqm_take(struct rxq *q, uint64_t queued);

/* What the kernel dropped before this worker could take it since the last call: frames the
 * ring had no room for (plain GRE), or buffers the socket dropped (GRE-in-UDP: udp_drops).
 * Any one thread may call it (the control thread does). */
uint64_t rxq_drops(struct rxq *q);

/* GRE-in-UDP: probes the kernel's UDP_SEGMENT and, with gro (the socket receives), UDP_GRO
 * into sh, once for both directions (the send side reads sh->udp_gso); says what is missing
 * in one warning. Main thread, at setup. */
void udp_group_probe(struct gw_shared *sh, bool gro);

/* GRE-in-UDP, worker 0: the namespace's UDP counters since the worker was set up, in *out.
 * Returns 0, or -ENODATA (another worker, plain GRE, or unreadable). Any thread. */
int rxq_udp_mib(const struct rxq *q, struct udp_mib *out);

#endif
