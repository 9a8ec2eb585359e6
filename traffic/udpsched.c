/*
 * A UDP session's send schedule (see udpsched.h): counts of slots from elapsed time, in
 * double, which holds them exactly far beyond a day at 100 Mpps (2^53 slots).
 */
#include "udpsched.h"

#include <math.h>

#include "clock.h"

void udpsched_init(struct udpsched *s, double pps, uint64_t t0_ns)
{
	s->pps = pps;
	s->t0_ns = t0_ns;
	s->passed = 0;
}

uint64_t udpsched_total(const struct udpsched *s, uint64_t now_ns)
{
	if (now_ns <= s->t0_ns)
		return 0;
	return (uint64_t)floor((double)(now_ns - s->t0_ns) * s->pps / NSEC_PER_SEC);
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
	uint64_t want = s->passed + k, at;
	double ns = ceil((double)want * NSEC_PER_SEC / s->pps);

	if (ns >= 18446744073709551615.0 - (double)s->t0_ns)
		return UINT64_MAX;
	at = s->t0_ns + (uint64_t)ns;
	/* Rounding must not leave the caller one slot short after waking exactly then. */
	for (int i = 0; i < 4 && udpsched_total(s, at) < want; i++)
		at++;
	return at;
}
