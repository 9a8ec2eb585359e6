/*
 * A token bucket for pacing a sender at a bit rate, on an injected clock (nanoseconds, any
 * monotonic origin) so that tests can drive it. Pure.
 */
#ifndef TUNBED_TR_PACER_H
#define TUNBED_TR_PACER_H

#include <stdint.h>

struct pacer {
	uint64_t rate;	  /* bit/s; 0: unlimited */
	uint64_t burst;	  /* bytes the bucket holds */
	double tokens;	  /* bytes available */
	uint64_t last_ns; /* clock at the last refill */
};

/*
 * Starts a full bucket at now_ns. rate 0 means unlimited. burst 0 picks a default: the larger
 * of 1 ms at the rate and 16 KiB.
 */
void pacer_init(struct pacer *p, uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns);

/*
 * Refills for the time since the last call and returns how many bytes may be sent now (at
 * most want; UINT64_MAX-safe when unlimited). Does not take them: call pacer_take.
 */
uint64_t pacer_allow(struct pacer *p, uint64_t now_ns, uint64_t want);

/*
 * pacer_allow, but 0 while fewer than least bytes (or want, where it is smaller) may go: a
 * sender's loop over it sends whole quanta and, between them, leaves the loop for the clock
 * (pacer_wait_ns) and its socket's other work. Over pacer_allow alone a loop whose calls take
 * longer than a byte's time at the rate is never told to wait: it sends the crumbs each call
 * earned, for ever, and never reads (a duplex session's receive stalled for its whole test).
 */
uint64_t pacer_grant(struct pacer *p, uint64_t now_ns, uint64_t want, uint64_t least);

/* Takes n bytes sent (may go negative after a write larger than allowed: repaid later). */
void pacer_take(struct pacer *p, uint64_t n);

/* Nanoseconds from now_ns until at least n bytes are available (0 if they are now). */
uint64_t pacer_wait_ns(const struct pacer *p, uint64_t now_ns, uint64_t n);

#endif
