/*
 * CoDel (RFC 8289) on a worker's receive queue (--aqm codel): the kernel stamps each datagram
 * as it queues (SO_TIMESTAMPNS), the worker reads the stamp as it takes it, and the time in
 * between, the sojourn, says whether a standing queue has built up. While the sojourn has
 * stayed above the target for a whole interval, CoDel drops (or, for ECN-capable packets,
 * marks) one packet, then the next one interval / sqrt(count) later, until the sojourn falls
 * below the target again: bursts pass, a standing queue is told to shrink.
 *
 * Pure: times are nanoseconds on one clock, given by the caller; no allocation.
 */
#ifndef TUNBED_GW_CODEL_H
#define TUNBED_GW_CODEL_H

#include <stdbool.h>
#include <stdint.h>

struct codel {
	uint64_t target_ns;   /* acceptable standing queue */
	uint64_t interval_ns; /* how long the queue may stay above it: about a round trip */
	uint64_t first_above; /* when the sojourn may first be judged standing; 0: below target */
	uint64_t drop_next;   /* when dropping, the time of the next drop */
	uint32_t count;	      /* drops in this dropping state */
	uint32_t lastcount;
	bool dropping;
};

void codel_init(struct codel *c, uint64_t target_ns, uint64_t interval_ns);

/* A packet taken at now that had queued since enqueued: returns whether to drop (or mark)
 * it. An enqueue time after now counts as no wait. */
bool codel_take(struct codel *c, uint64_t enqueued, uint64_t now);

#endif
