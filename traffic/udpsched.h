/*
 * The send schedule of a UDP session at a packet rate. A test's sessions take turns on one
 * evenly spaced stream: session k of n, at rate r, has slot i due at t0 + (i + k / n) / r, and
 * the slots due before the schedule's end are its. The stream's first slot is due at once,
 * and a test of T seconds offers the n x r x T datagrams due in it (rounded up), each session
 * its turn's share, however the senders' wake-ups fall. The rate is a fraction of integers
 * and every count exact. Pure: the clock is the caller's (nanoseconds, any monotonic origin).
 */
#ifndef TUNBED_TR_UDPSCHED_H
#define TUNBED_TR_UDPSCHED_H

#include <stdint.h>

/* A session's rate, and its turn among the sessions at that rate. */
struct udpsched_rate {
	uint64_t num, den;    /* num / den datagrams a second, both above 0 */
	uint32_t turn, turns; /* 0 to turns - 1, of turns sessions (1 or more) */
};

struct udpsched {
	struct udpsched_rate r;
	uint64_t t0_ns;	 /* the schedule's start */
	uint64_t end_ns; /* slots due at or after it are not the schedule's (UINT64_MAX: none) */
	uint64_t passed; /* slots dealt with: sent, refused by the kernel, or skipped late */
};

void udpsched_init(struct udpsched *s, struct udpsched_rate r, uint64_t t0_ns, uint64_t end_ns);

/* Slots due by now_ns in all, passed or not (0 before t0). */
uint64_t udpsched_total(const struct udpsched *s, uint64_t now_ns);

/* Slots due by now_ns that are not passed yet. */
uint64_t udpsched_due(const struct udpsched *s, uint64_t now_ns);

/* Marks n slots passed. */
void udpsched_pass(struct udpsched *s, uint64_t n);

/*
 * Passes the slots that were due before now_ns - backlog_ns and are not passed: a sender
 * that fell behind skips them rather than catching up in one burst. Returns how many.
 */
uint64_t udpsched_skip_late(struct udpsched *s, uint64_t now_ns, uint64_t backlog_ns);

/*
 * The earliest time at which k (1 or more) slots beyond those passed are due, were the
 * schedule without end (UINT64_MAX if past the clock's range).
 */
uint64_t udpsched_at(const struct udpsched *s, uint64_t k);

#endif
