/*
 * A gregw worker: a thread pinned to one CPU that owns one TUN queue, one transmit socket,
 * one receive ring, its buffers, its flow table and its counters. Workers share only the
 * read-only configuration, the stop flag and the tunnel's GRE sequence counter.
 */
#ifndef TUNBED_GW_WORKER_H
#define TUNBED_GW_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "codel.h"
#include "encap.h"
#include "flows.h"
#include "gro.h"
#include "gso.h"
#include "icmp.h"
#include "rx.h"
#include "stats.h"
#include "udp.h"

enum {
	WORKER_BATCH = 256,    /* packets (or superpackets) read from TUN per pass */
	WORKER_TX_MSGS = 1024, /* GRE packets per sendmmsg at most (UIO_MAXIOV) */
	WORKER_SEG_HDR = ENCAP_HEADROOM + GSO_HDR_MAX, /* outer + inner headers of a segment */
	WORKER_RX_BUDGET = 256,	    /* packets taken from the ring before looking at TUN again */
	WORKER_SLOT = 65536,	    /* largest inner packet: a full TUN read */
	WORKER_ICMP_PER_SEC = 1000, /* ICMP errors per worker per second, then counted, not sent */
	WORKER_POLL_MS = 200,	    /* idle wake-up; stop requests wake workers at once anyway */
	WORKER_SEND_TIMEOUT_MS = 200, /* a full socket buffer blocks a send at most this long */
	WORKER_UDP_RX_BATCH = 16,     /* datagrams (or GRO bursts) per recvmmsg */
	WORKER_UDP_RX_BUF = 65536,    /* one of them */
};

/* What all workers share. Written before they start, then only read, except tx_seq. */
struct gw_shared {
	const struct encap_cfg *cfg;
	int stop_fd;	       /* eventfd: readable once the workers must stop */
	int stop;	       /* set (release) before stop_fd is written */
	unsigned mss4, mss6;   /* MSS clamp targets; 0 when --mss-clamp is off */
	bool vnet_hdr;	       /* TUN reads and writes carry a virtio_net_hdr (--offload on) */
	bool udp_gso, udp_gro; /* GRE-in-UDP sends with UDP_SEGMENT, receives with UDP_GRO */
	bool aqm;	       /* --aqm codel on each worker's receive queue */
	uint64_t aqm_target_ns, aqm_interval_ns;
	uint16_t udp_sports[UDP_TX_PORTS]; /* its source ports: the first worker picks them */
	/* RFC 2890 numbers the tunnel, not a worker: each batch takes a block of numbers with
	 * one atomic add, so the counter is touched once per sendmmsg, not per packet. */
	_Alignas(64) uint32_t tx_seq;
};

struct worker {
	struct worker_stats stats; /* first: its own cache lines */
	unsigned id;
	int cpu;    /* pinned to, or -1 */
	int tun_fd; /* owned by gregw (the TUN queue); not closed here */
	int tx_fd;
	struct rx_ring rx;
	struct gw_shared *sh;
	struct flow_table *flows;
	uint8_t *slots; /* WORKER_BATCH slots of ENCAP_HEADROOM + WORKER_SLOT */
	/* What the next sendmmsg carries: a whole inner packet in a slot (tail NULL), or a
	 * segment, its headers in seg_hdrs and its payload in the superpacket's slot. */
	struct tx_ent {
		uint8_t *inner;
		size_t len;
		const uint8_t *tail;
		size_t tail_len;
		/* Over UDP: what may share a UDP_SEGMENT message with it. The packets of one
		 * flow share it (its flow table entry), or a superpacket's segments when the
		 * flow is untracked; 0 alone. */
		uint32_t flow;
		unsigned sock; /* over UDP: which sending socket (source port) */
	} ents[WORKER_TX_MSGS];
	uint16_t order[WORKER_TX_MSGS]; /* over UDP: ents in sending order, by socket */
	uint32_t groups;
	unsigned nents;
	uint8_t *seg_hdrs; /* WORKER_TX_MSGS of WORKER_SEG_HDR */
	struct mmsghdr msgs[WORKER_TX_MSGS];
	struct iovec iov[2 * WORKER_TX_MSGS];
	/* GRE-in-UDP (--encap gre-udp) instead of the raw socket and the ring. */
	int udp_rx;
	int udp_tx[UDP_TX_PORTS];
	uint64_t udp_drops; /* the receiving socket's drops already reported */
	bool udp_gso_off;   /* UDP_SEGMENT failed at run time: datagram by datagram since
			     * (atomic: the stats read it) */
	struct codel codel; /* --aqm: on the receive queue (ring or socket) */
	bool aqm_pending;   /* --aqm: CoDel asked for a drop or mark not yet made */
	uint8_t *udp_bufs;  /* WORKER_UDP_RX_BATCH of WORKER_UDP_RX_BUF */
	struct mmsghdr rx_msgs[WORKER_UDP_RX_BATCH];
	struct iovec rx_iov[WORKER_UDP_RX_BATCH];
	struct sockaddr_storage rx_from[WORKER_UDP_RX_BATCH];
	union cmsg_space {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} rx_cmsg[WORKER_UDP_RX_BATCH], tx_cmsg[WORKER_TX_MSGS];
	struct gro gro;	  /* --offload: coalescing towards TUN */
	uint8_t *gro_mem; /* its GRO_FLOWS buffers */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t icmp[ICMP6_QUOTE_MAX];
	uint64_t icmp_window; /* second (monotonic) the ICMP budget applies to */
	unsigned icmp_in_window;
	pid_t tid; /* set by the thread when it starts (atomic), for /proc accounting */
	pthread_t thread;
	bool started;
};

/* Whether the worker sends GRE-in-UDP with UDP_SEGMENT: the kernel offered it at start and
 * has not refused it since (any thread may ask). */
static inline bool worker_udp_gso(const struct worker *w)
{
	return w->sh->udp_gso && !__atomic_load_n(&w->udp_gso_off, __ATOMIC_RELAXED);
}

/*
 * Allocates the worker's buffers and flow table and opens its sockets: everything the packet
 * path will use, so that it allocates nothing. Main thread, before start. Returns 0 or -errno.
 */
int worker_init(struct worker *w, unsigned id, int cpu, int tun_fd, const struct rx_cfg *rxc,
		struct gw_shared *sh);

/* Starts the thread, pinned to w->cpu when it is not -1. Returns 0 or -errno. */
int worker_start(struct worker *w);

/* Waits for a started worker to return (after the stop flag and eventfd are set). */
void worker_join(struct worker *w);

/* Datagrams or frames the kernel dropped before this worker could take them, since the last
 * call. Any one thread may call it (the control thread does). */
uint64_t worker_rx_drops(struct worker *w);

/* Releases what worker_init acquired, in reverse order. */
void worker_fini(struct worker *w);

#endif
