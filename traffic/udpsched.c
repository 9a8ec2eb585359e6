/*
 * A UDP session's send schedule (see udpsched.h). The stream of all sessions' slots is
 * counted in 128-bit integers: slot j of the stream is due j x den / (num x turns) seconds
 * after t0, which no double holds exactly at a slot's edge (1000 / 3 a second for 3 s is
 * 1000 slots, or 999 or 1001 after rounding).
 */
#include "udpsched.h"

#include <stdbool.h>

#include "clock.h"

typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

void udpsched_init(struct udpsched *s, struct udpsched_rate r, uint64_t t0_ns, uint64_t end_ns)
{
	s->r = r;
	s->t0_ns = t0_ns;
	s->end_ns = end_ns;
	s->passed = 0;
}

/* The stream's rate, q / d slots a nanosecond. */
static u128 rate_q(const struct udpsched *s)
{
	return (u128)s->r.num * s->r.turns;
}

static u128 rate_d(const struct udpsched *s)
{
	return (u128)s->r.den * NSEC_PER_SEC;
}

/* The stream's slots due within e_ns of t0: at t0 + e_ns or before, or (strict) before. */
static u128 stream_slots(const struct udpsched *s, uint64_t e_ns, bool strict)
{
	u128 q = rate_q(s), x;

	if (e_ns && q > U128_MAX / e_ns)
		return U128_MAX; /* beyond any clock */
	x = (u128)e_ns * q;
	if (strict)
		return x ? (x - 1) / rate_d(s) + 1 : 0;
	return x / rate_d(s) + 1;
}

/* This session's slots among the stream's first n. */
static uint64_t mine(const struct udpsched *s, u128 n)
{
	u128 k;

	if (n <= s->r.turn)
		return 0;
	k = (n - 1 - s->r.turn) / s->r.turns + 1;
	return k > UINT64_MAX ? UINT64_MAX : (uint64_t)k;
}

uint64_t udpsched_total(const struct udpsched *s, uint64_t now_ns)
{
	u128 n, before_end;

	if (now_ns < s->t0_ns || s->end_ns <= s->t0_ns)
		return 0;
	n = stream_slots(s, now_ns - s->t0_ns, false);
	before_end = stream_slots(s, s->end_ns - s->t0_ns, true);
	return mine(s, n < before_end ? n : before_end);
}

uint64_t udpsched_due(const struct udpsched *s, uint64_t now_ns)
{
	uint64_t total = udpsched_total(s, now_ns);

	return total > s->passed ? total - s->passed : 0;
}

void udpsched_pass(struct udpsched *s, uint64_t n)
{
	s->passed += n;
}

uint64_t udpsched_skip_late(struct udpsched *s, uint64_t now_ns, uint64_t backlog_ns)
{
	uint64_t late;

	if (now_ns < s->t0_ns + backlog_ns)
		return 0;
	late = udpsched_due(s, now_ns - backlog_ns);
	s->passed += late;
	return late;
}

uint64_t udpsched_at(const struct udpsched *s, uint64_t k)
{
	/* The session's slot number passed + k - 1 is the stream's slot j. */
	u128 j = ((u128)s->passed + k - 1) * s->r.turns + s->r.turn, d = rate_d(s), q = rate_q(s);
	u128 ns;

	if (j && d > U128_MAX / j)
		return UINT64_MAX;
	/* Rounded up: at that nanosecond the slot is due, and not one before. */
	ns = j * d / q + (j * d % q != 0);
	if (ns > UINT64_MAX - s->t0_ns)
		return UINT64_MAX;
	return s->t0_ns + (uint64_t)ns;
}
