/*
 * The send schedule of a UDP session at a packet rate: slot i is due at t0 + (i + 1) / pps,
 * so that at any moment exactly as many datagrams are due as the rate allows, however the
 * sender's wake-ups fall, and a test of T seconds offers floor(pps * T) of them. Pure: the
 * clock is the caller's (nanoseconds, any monotonic origin).
 */
#ifndef TUNBED_TR_UDPSCHED_H
#define TUNBED_TR_UDPSCHED_H

#include <stdint.h>

struct udpsched {
	double pps;	 /* datagrams a second, above 0 */
	uint64_t t0_ns;	 /* the schedule's start */
	uint64_t passed; /* slots dealt with: sent, refused by the kernel, or skipped late */
};

void udpsched_init(struct udpsched *s, double pps, uint64_t t0_ns);

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

/* The earliest time at which k (1 or more) slots beyond those passed are due. */
uint64_t udpsched_at(const struct udpsched *s, uint64_t k);

#endif
