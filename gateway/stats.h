/*
 * Per-worker telemetry of gregw: counters written by one worker only, with plain relaxed
 * stores (no locked instructions), read by the control thread with relaxed loads. Each
 * worker's block starts on its own cache line.
 */
#ifndef TUNBED_GW_STATS_H
#define TUNBED_GW_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"

enum stat_counter {
	STAT_TUN_RX_PACKETS, /* inner packets read from TUN, a superpacket's segments each */
	STAT_TUN_RX_BYTES,
	STAT_WIRE_TX_PACKETS, /* GRE packets the kernel accepted for sending */
	STAT_WIRE_TX_BYTES,   /* outer bytes (IP + GRE + inner) */
	STAT_WIRE_RX_PACKETS, /* packets taken from the ring, before any check */
	STAT_WIRE_RX_BYTES,   /* outer bytes */
	STAT_TUN_TX_PACKETS,  /* inner packets written into TUN, a superpacket's segments each */
	STAT_TUN_TX_BYTES,
	STAT_TX_BATCHES,       /* sendmmsg calls */
	STAT_RX_BATCHES,       /* passes over the ring that found packets */
	STAT_ICMP_SENT,	       /* ICMP errors written into TUN */
	STAT_ICMP_LIMITED,     /* ICMP errors not sent: over the rate limit */
	STAT_MSS_CLAMPED,      /* SYNs whose MSS was lowered, both directions */
	STAT_SEQ_PACKETS,      /* packets received with a sequence number */
	STAT_SEQ_REORDERED,    /* ... numbered below the highest seen on their flow */
	STAT_SEQ_DUPLICATE,    /* ... numbered the same as the highest seen on their flow */
	STAT_SEQ_OUTSIDE,      /* ... numbered far from the window (SEQ_WINDOW) */
	STAT_SEQ_RESYNCS,      /* windows restarted by a run of such numbers (SEQ_RESYNC_RUN) */
	STAT_TUN_READS,	       /* reads from TUN that returned a packet or superpacket */
	STAT_TUN_WRITES,       /* writes into TUN that took a packet or superpacket */
	STAT_GSO_SUPERPACKETS, /* superpackets read from TUN and segmented (--offload) */
	STAT_COALESCED_SUPERPACKETS, /* superpackets coalesced and written into TUN (--offload) */
	STAT_COALESCE_BAD_CSUM,	     /* TCP segments with a wrong checksum: passed on, not merged */
	STAT_AQM_MARKED,	     /* --aqm: packets CoDel marked CE instead of dropping them */
	STAT_UDP_GSO_SENDS,    /* GRE-in-UDP messages sent with UDP_SEGMENT (several datagrams) */
	STAT_UDP_GRO_READS,    /* GRE-in-UDP messages received holding several datagrams */
	STAT_UDP_WHOLE_READS,  /* GRE-in-UDP datagrams holding a TCP superpacket a sender on this
				* host left whole (rx_udp.c) */
	STAT_UDP_CSUM_PARTIAL, /* GRE-in-UDP datagrams whose inner checksum a sender on this host
				 * left partial, completed on the way into TUN (worker.c) */
	STAT_GRE_GRO_READS,    /* plain GRE superpackets the kernel merged, taken whole */
	STAT_TUN_CUT_SUPERPACKETS, /* superpackets from the wire cut by gregw: TUN does not take
				    * their kind whole (offloads off, or not offered) */
	STAT_WIRE_TX_IP,   /* plain GRE packets sent on the IP path (raw socket): all of them
				* with --wire-tx ip; else while no next hop is known, and one a
				* second that keeps the kernel's neighbour entry in use */
	STAT_TAP_WRITES,   /* --wire-tx tap: superpackets written whole into the TAP */
	STAT_TAP_SEGMENTS, /* ... the segments they carry (in wire_tx_packets too) */
	/* System calls of the packet path, each one made (those that found nothing or failed
	 * too): what a packet costs beyond the copy. */
	STAT_TUN_READ_CALLS,   /* read/readv on the TUN queue, the ones that found it empty too */
	STAT_TUN_WRITE_CALLS,  /* write/writev on the TUN queue, refused ones too */
	STAT_SEND_CALLS,       /* sendmmsg, sendmsg where UDP_SEGMENT was refused, and writes
				* into the TAP */
	STAT_RECV_CALLS,       /* recvmmsg on the GRE-in-UDP socket (the ring is read in memory) */
	STAT_POLLS,	       /* poll with nothing to do: the worker's sleeps, and wake-ups */
	STAT_RX_SOCKET_ERRORS, /* errors the receive socket reported (its interface went down
				* or away): taken, so that poll sleeps again */
	STAT_TUN_READ_PAUSES,  /* --fq-full pause: passes that found the flow queue full and
				* left what TUN held in its queue, unread, until there was room */
	STAT_ECN_ALARMS,       /* packets from the wire delivered whose outer and inner ECN
				* fields no standard makes together (RFC 6040's "(!!!)": Not-ECT
				* inside ECT, CE inside ECT(1)): counted, not logged */
	STAT_TX_MERGED_READS,  /* --tx-merge: TUN reads appended to the read before them of their
				* flow, which left as one superpacket (merge.h) */
	STAT_TX_AQM_MARKED,    /* --aqm with --fair-queue: TUN reads CoDel marked CE in the flow
				* queue instead of dropping them (a superpacket counts once) */
	STAT_MAX,
};

/*
 * Superpacket sizes, in segments, of what crosses the TUN device each way: how much one
 * read or write carries (1 for a plain packet). Buckets by powers of two: 1, 2, 3-4, 5-8,
 * 9-16, 17-32, 33-64, 65 and more.
 */
enum stat_tun_dir { STAT_TUN_READ, STAT_TUN_WRITE, STAT_TUN_DIRS };
enum { STAT_SEG_BUCKETS = 8 };

/* The bucket of a read or write of nseg segments (nseg >= 1). Pure. */
static inline unsigned stat_seg_bucket(unsigned nseg)
{
	unsigned b = nseg <= 1 ? 0 : 32u - (unsigned)__builtin_clz(nseg - 1);

	return b < STAT_SEG_BUCKETS ? b : STAT_SEG_BUCKETS - 1;
}

/*
 * A receive window of sequence numbers (RFC 2890, 2.2): the numbers of one tunnel a worker
 * took since it last restarted, extended to 64 bits relative to first (serial arithmetic, RFC
 * 1982), for the tunnel's count of numbers never seen. Its top is the highest, first + hi; a
 * number within SEQ_WINDOW of it either way lies in the window. Windows that follow one
 * peer's numbering share an era id, so the control thread can put them on one base.
 */
struct seq_era {
	uint32_t id;	  /* 0: no number yet */
	uint32_t first;	  /* the number extended to 0 */
	int64_t lo, hi;	  /* lowest and highest taken, extended */
	uint64_t packets; /* numbers taken in this window */
	uint64_t dups;	  /* ... of which duplicates on their flow */
};

/* One worker's window of one tunnel (tunnels_pub.h keeps one a worker and tunnel slot). */
struct seq_window {
	/* Written by its worker with relaxed stores and read by the control thread and, for a
	 * number outside it, by the tunnel's other workers (see docs/gregw.md). */
	struct seq_era seq;
	/* The worker's own: the window before the last restart, and a run of numbers out of
	 * the window, each within SEQ_WINDOW of the one before (run of them so far). */
	struct seq_era saved;
	uint32_t run_first, run_last;
	unsigned run;
} __attribute__((aligned(64)));

struct worker_stats {
	uint64_t ctr[STAT_MAX];
	uint64_t drops[DROP_MAX];
	uint64_t segs[STAT_TUN_DIRS][STAT_SEG_BUCKETS]; /* reads and writes by segments carried */
} __attribute__((aligned(64)));

/* Adds v to a counter of the calling worker's own block. Worker thread only. */
static inline void stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline uint64_t stat_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/*
 * Accounts sequence number seq of a tunnel received by a worker: w its window of the tunnel, s
 * its counters. A number within SEQ_WINDOW of the top of w, or of another worker's window of
 * the tunnel (peers: every worker's, w among them, npeers of them; w then joins that
 * worker's era), is taken: true. Any other is out of the window: counted, false, and it
 * moves nothing but a run; SEQ_RESYNC_RUN of them in a row, each within SEQ_WINDOW of the one
 * before, restart the window there (counted as a resync), or back on the window before, if
 * they follow it. The first number starts the window. Worker thread only (it reads the
 * peers' windows with relaxed loads).
 */
bool stats_seq(struct seq_window *w, struct worker_stats *s, const struct seq_window *peers,
	       unsigned npeers, uint32_t seq);

/* A number stats_seq took was the same as the highest on its flow. Worker thread only. */
void stats_seq_duplicate(struct seq_window *w, struct worker_stats *s);

/* Copies window e as its worker last published it into *out, for another thread; false
 * while it is being replaced, or before its first number. */
bool stats_seq_read(const struct seq_era *e, struct seq_era *out);

/* A tunnel's sequence accounting, from the workers' windows of it. */
struct seq_summary {
	bool any;		  /* some window holds a number */
	uint32_t lowest, highest; /* of the era reported, as sequence numbers */
	uint64_t lost;		  /* numbers between them that never arrived */
};

/*
 * Merges the workers' windows (n of them; id 0 for a worker without one): the era the most
 * numbers were taken in (of two alike, the higher id), its windows put on one base (valid
 * while their first numbers lie within 2^31 of each other), and the numbers of its span that
 * no window took, duplicates not counting. Pure.
 */
void stats_seq_merge(const struct seq_era *eras, unsigned n, struct seq_summary *out);

/* Stable JSON name of a counter ("tun_rx_packets"). */
const char *stat_name(enum stat_counter c);

/* Stable JSON name of a superpacket bucket ("1", "3-4", "65+"). */
const char *stat_seg_bucket_name(unsigned b);

#endif
