/*
 * Flow queueing of what a worker reads from TUN (--fair-queue on, the default): the packets
 * read and not yet sent wait in per-flow lists (buckets of the inner flow's hash) and leave
 * by deficit round robin, the scheduler of FQ-CoDel (RFC 8290, 4.2, without its CoDel): a flow new to
 * the queue goes first, each backlogged flow then takes turns of a quantum of bytes. Every
 * backlogged flow gets an equal share of what the worker sends, and a sparse one (a request,
 * an ACK, a ping) does not wait behind the bulk flows' backlog. The queue holds a bounded
 * number of packets (its limit); fq_admission says what becomes of the next one when it is
 * full: it waits where it is (the caller does not take it yet), or the oldest packet of the
 * flow with the most bytes queued makes room for it (fq_drop_longest).
 *
 * The packets are the caller's: fq keeps slot numbers, 0 .. nslots - 1, each queued once at
 * most. Pure; no allocation after fq_init, no lock (one worker's).
 */
#ifndef TUNBED_GW_FQ_H
#define TUNBED_GW_FQ_H

#include <stdint.h>

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
	unsigned queued; /* slots queued */
	uint64_t bytes;	 /* bytes queued */
};

/* Sets up nbuckets (a power of two) flows' lists over nslots slots, turns of quantum bytes,
 * at most limit (1 to nslots) of them queued at once. Returns 0 or -ENOMEM / -EINVAL. */
int fq_init(struct fq *q, unsigned nslots, unsigned nbuckets, int32_t quantum, unsigned limit);

/* Releases what fq_init allocated. */
void fq_fini(struct fq *q);

/* Queues slot (len bytes) behind its flow's, the flow chosen by hash. */
void fq_enqueue(struct fq *q, uint32_t slot, uint32_t hash, uint32_t len);

/* The next slot to send, taken off the queue; FQ_NONE when it is empty. */
uint32_t fq_dequeue(struct fq *q);

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

/* What a full queue does with the next packet: leave it where it waits (the caller stops
 * taking packets until a dequeue makes room), or give up a queued one for it. */
enum fq_full { FQ_FULL_PAUSE, FQ_FULL_DROP };

/* The admission of the next packet, whatever its size (a slot holds any). */
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
