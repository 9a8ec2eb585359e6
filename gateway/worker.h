/*
 * A gregw worker: a thread pinned to one CPU that owns one TUN queue, one send queue, one
 * receive queue, its flow table and its counters. Workers share only the read-only
 * configuration, the stop flag and the tunnel's GRE sequence counter (shared.h).
 *
 * The data path, one pass of worker_main's loop (each direction in its own file):
 *
 *   TUN queue i --tunq_next--> packets (superpackets cut into segments: tun.c, gso.c)
 *     --worker.c: checks, MSS clamp, flow--> txq_add ... txq_flush (tx.c: GRE sequence
 *     numbers) --sendmmsg--> wire, by the transport chosen at start: frames on a packet
 *     socket or the IP path (tx_packet.c), UDP_SEGMENT messages (tx_udp.c); outer headers
 *     by encap.c
 *
 *   wire --rxq_next--> datagrams with CoDel's verdict (rx.c), from the transport chosen at
 *     start: ring frames (rx_ring.c), or UDP_GRO bursts cut (rx_udp.c)
 *     --worker.c deliver: decap (encap.c), CoDel's mark or drop, flow, MSS clamp-->
 *     tunq_write ... tunq_flush --> TUN queue i (segments merged into superpackets: coalesce.c)
 *
 * A pass reads up to WORKER_BATCH packets from TUN (with --fair-queue, up to TUN_FQ_PASS_READS
 * into the flow queue, and sends up to TUN_FQ_PASS_SEGS segments of it, each flow's CoDel
 * marking or dropping with --aqm: tun.c, fq.c) and RX_BUDGET datagrams from the wire;
 * with no work the worker sleeps in poll until either has more, or the stop eventfd fires.
 */
#ifndef TUNBED_GW_WORKER_H
#define TUNBED_GW_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "flows.h"
#include "icmp.h"
#include "gw_limits.h"
#include "rx.h"
#include "shared.h"
#include "stats.h"
#include "tun.h"
#include "tx.h"

struct worker {
	struct worker_stats stats; /* first: its own cache lines */
	unsigned id;
	int cpu; /* pinned to, or -1 */
	struct gw_shared *sh;
	struct tunq tun;
	struct txq tx;
	struct rxq rx;
	struct flow_table *flows;
	const struct tunnels *tab; /* the tunnel table of the pass (tunnels_enter), else NULL */
	uint8_t icmp[ICMP6_QUOTE_MAX];
	uint64_t icmp_window; /* second (monotonic) the ICMP budget applies to */
	unsigned icmp_in_window;
	uint64_t spoofed_told_ns; /* when it last said why it dropped a spoofed_source (0: never) */
	pid_t tid; /* set by the thread when it starts (atomic), for /proc accounting */
	pthread_t thread;
	bool started;
};

/* Whether the worker sends GRE-in-UDP with UDP_SEGMENT: the kernel offered it at start and
 * has not refused it since (any thread may ask). */
static inline bool worker_udp_gso(const struct worker *w)
{
	return txq_udp_gso(&w->tx);
}

/*
 * Allocates the worker's buffers and flow table and opens its sockets, of the transports
 * rxg and txg chose (their shared part is gregw's): everything the packet path will use, so
 * that it allocates nothing. tun_fd stays gregw's. Main thread, before start. Returns 0 or
 * -errno.
 */
int worker_init(struct worker *w, unsigned id, int cpu, int tun_fd, const struct rx_group *rxg,
		const struct tx_group *txg);

/* Starts the thread, pinned to w->cpu when it is not -1. Returns 0 or -errno. */
int worker_start(struct worker *w);

/* Waits for a started worker to return (after the stop flag and eventfd are set). */
void worker_join(struct worker *w);

/* Frames the ring dropped (plain GRE), or buffers the socket dropped (GRE-in-UDP, a burst of
 * up to 64 datagrams counting once: udp.h), before this worker could take them, since the
 * last call. Any one thread may call it (the control thread does). */
uint64_t worker_rx_drops(struct worker *w);

/* GRE-in-UDP: the namespace's UDP counters since start (rxq_udp_mib); worker 0 keeps them.
 * Returns 0 or -ENODATA. Any thread. */
static inline int worker_udp_mib(const struct worker *w, struct udp_mib *out)
{
	return rxq_udp_mib(&w->rx, out);
}

/* Releases what worker_init acquired, in reverse order. */
void worker_fini(struct worker *w);

#endif
