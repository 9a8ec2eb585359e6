/*
 * Flow queueing of what a worker reads from TUN (--fair-queue on, the default): the packets
 * read and not yet sent wait in per-flow lists (buckets of the inner flow's hash) and leave
 * by deficit round robin, the scheduler of FQ-CoDel (RFC 8290, 4.2): a flow new to the queue
 * goes first, each backlogged flow then takes turns of a quantum of bytes. Every backlogged
 * flow gets an equal share of what the worker sends, and a sparse one (a request, an ACK, a
 * ping) does not wait behind the bulk flows' backlog. The queue holds a bounded number of
 * packets and of bytes (its limits); fq_admission says what becomes of the next one when it
 * is full: it waits where it is (the caller does not take it yet), or the oldest packet of
 * the flow with the most bytes queued makes room for it (fq_drop_longest).
 *
 * With fq_aqm_init, FQ-CoDel's CoDel too (RFC 8290, 4.1; RFC 8289): each flow has its own
 * CoDel state, judged on the time each packet waited in the queue as it leaves (its sojourn),
 * and fq_dequeue says when CoDel signals on the packet it hands out; the caller marks it CE
 * or drops it (tos.h), since the packets are the caller's.
 *
 * The packets are the caller's: fq keeps slot numbers, 0 .. nslots - 1, each queued once at
 * most. Pure; times are the caller's (fq_clock); no allocation after fq_init and
 * fq_aqm_init, no lock (one worker's).
 */
#ifndef TUNBED_GW_FQ_H
#define TUNBED_GW_FQ_H

#include <stdbool.h>
#include <stdint.h>

#include "codel.h"

#define FQ_NONE UINT32_MAX

struct fq_bucket {
	uint32_t head, tail; /* its slots, oldest first; FQ_NONE when empty */
	uint32_t next;	     /* the next bucket in the list it is on */
	int32_t deficit;     /* bytes it may still send this turn */
	uint64_t backlog;    /* bytes queued */
	uint8_t list;	     /* FQ_IDLE, FQ_NEW or FQ_OLD */
};

struct fq_list {
	uint32_t head, tail; /* bucket numbers; FQ_NONE when empty */
};

struct fq {
	struct fq_bucket *b;
	uint32_t *slot_next; /* per slot: the next slot in its bucket */
	uint32_t *slot_len;  /* per slot: its bytes */
	unsigned nslots, nbuckets;
	unsigned limit; /* slots queued at most */
	int32_t quantum;
	struct fq_list new_flows, old_flows;
	unsigned queued;     /* slots queued */
	uint64_t bytes;	     /* bytes queued */
	uint64_t byte_limit; /* bytes queued at most (fq_admission); 0: no limit */
	/* fq_aqm_init: CoDel per flow. */
	struct codel *codel; /* per bucket */
	bool *pending;	     /* per bucket: a signal owed to its next packet of aqm_min */
	uint64_t *slot_time; /* per slot: when it was queued */
	uint32_t aqm_min;    /* bytes a packet needs to carry a signal */
	uint64_t now;	     /* fq_clock's */
};

/* Sets up nbuckets (a power of two) flows' lists over nslots slots, turns of quantum bytes,
 * at most limit (1 to nslots) of them queued at once. Returns 0 or -ENOMEM / -EINVAL. */
int fq_init(struct fq *q, unsigned nslots, unsigned nbuckets, int32_t quantum, unsigned limit);

/* Bounds the bytes queued as well (fq_admission): 0, the default, bounds only the slots. */
static inline void fq_limit_bytes(struct fq *q, uint64_t bytes)
{
	q->byte_limit = bytes;
}

/*
 * Gives each flow a CoDel (codel.h) of target_ns and interval_ns, judged as fq_dequeue hands
 * its packets out: only a packet of at least min_len bytes carries a signal (one that falls
 * on a shorter one, an ACK or a probe, which could not shrink the queue, waits for the flow's
 * next long one), and a packet that leaves the queue empty counts as no wait (RFC 8289 never
 * drops the last packet). After fq_init. Returns 0 or -ENOMEM.
 */
int fq_aqm_init(struct fq *q, uint64_t target_ns, uint64_t interval_ns, uint32_t min_len);

/* Releases what fq_init and fq_aqm_init allocated. */
void fq_fini(struct fq *q);

/* The time, in nanoseconds of the caller's clock, at which the next packets are queued and
 * handed out: their sojourn is the difference. */
static inline void fq_clock(struct fq *q, uint64_t now_ns)
{
	q->now = now_ns;
}

/* Queues slot (len bytes) behind its flow's, the flow chosen by hash, at fq_clock's time. */
void fq_enqueue(struct fq *q, uint32_t slot, uint32_t hash, uint32_t len);

/* The next slot to send, taken off the queue; FQ_NONE when it is empty. With fq_aqm_init,
 * *signal (when signal is not NULL) says whether its flow's CoDel signals on it at fq_clock's
 * time: the caller marks it CE if it is ECN-capable, else drops it; false without. */
uint32_t fq_dequeue(struct fq *q, bool *signal);

/*
 * The slot fq_dequeue would return next when it goes on with the flow it served last, in the
 * same turn (the flow has slots queued and bytes of its turn left), not taken off the queue;
 * FQ_NONE when the next one would be another flow's, or there is none. Only right after an
 * fq_dequeue, with nothing queued since: what a sender may merge with the slot just taken
 * (merge.h) without changing the order the queue hands slots out in. Pure.
 */
uint32_t fq_peek_turn(const struct fq *q);

/* The bytes slot was queued with. */
static inline uint32_t fq_len(const struct fq *q, uint32_t slot)
{
	return q->slot_len[slot];
}

/* What a full queue (its slots, or its bytes) does with the next packet: leave it where it
 * waits (the caller stops taking packets until a dequeue makes room), or give up a queued
 * one for it. */
enum fq_full { FQ_FULL_PAUSE, FQ_FULL_DROP };

/* The admission of the next packet, whatever its size: below the byte limit, a packet of any
 * size is admitted (the queue may pass it by one packet). */
enum fq_admit {
	FQ_ADMIT, /* room: queue it */
	FQ_WAIT,  /* full, FQ_FULL_PAUSE: do not take it yet */
	FQ_EVICT, /* full, FQ_FULL_DROP: fq_drop_longest first, then queue it */
};

/* The admission of the next packet into q as it is now, by the policy full. Pure. */
enum fq_admit fq_admission(const struct fq *q, enum fq_full full);

/* The oldest slot of the flow with the most bytes queued, taken off the queue (to be
 * dropped: the queue is full); FQ_NONE when it is empty. O(buckets): only on overflow. */
uint32_t fq_drop_longest(struct fq *q);

#endif
