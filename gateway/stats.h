/*
 * Per-worker telemetry of gregw: counters written by one worker only, with plain relaxed
 * stores (no locked instructions), read by the control thread with relaxed loads. Each
 * worker's block starts on its own cache line.
 */
#ifndef TUNBED_GW_STATS_H
#define TUNBED_GW_STATS_H

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
	STAT_TUN_READS,	       /* reads from TUN that returned a packet or superpacket */
	STAT_TUN_WRITES,       /* writes into TUN that took a packet or superpacket */
	STAT_GSO_SUPERPACKETS, /* superpackets read from TUN and segmented (--offload) */
	STAT_GRO_SUPERPACKETS, /* superpackets coalesced and written into TUN (--offload) */
	STAT_GRO_BAD_CSUM,     /* TCP segments with a wrong checksum: passed on, not merged */
	STAT_AQM_MARKED,       /* --aqm: packets CoDel marked CE instead of dropping them */
	STAT_UDP_GSO_SENDS,    /* GRE-in-UDP messages sent with UDP_SEGMENT (several datagrams) */
	STAT_UDP_GRO_READS,    /* GRE-in-UDP messages received holding several datagrams */
	STAT_MAX,
};

struct worker_stats {
	uint64_t ctr[STAT_MAX];
	uint64_t drops[DROP_MAX];
	/* Sequence numbers received, extended to 64 bits relative to the first one this worker
	 * saw, for the tunnel-wide count of numbers never seen (see docs/gregw.md). */
	uint32_t seq_first;
	uint32_t seq_last;
	int64_t seq_cur, seq_lo, seq_hi;
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

/* Counts a received sequence number and extends it. Worker thread only. */
void stats_seq(struct worker_stats *s, uint32_t seq);

/* Stable JSON name of a counter ("tun_rx_packets"). */
const char *stat_name(enum stat_counter c);

#endif
