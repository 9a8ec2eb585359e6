/*
 * CoDel (gateway/codel.c) against RFC 8289's rules: no drop below the target or for a burst
 * shorter than the interval; the first drop one interval after the sojourn rose above the
 * target; then drops at interval / sqrt(count); leaving the dropping state as soon as the
 * sojourn falls below the target; re-entering soon after resumes near the old rate.
 */
#include <stdint.h>

#include "check.h"
#include "codel.h"

enum { US = 1000, MS = 1000 * US, TARGET = 500 * US, INTERVAL = 10 * MS };

/* Takes one packet every step_ns from t0 for dur_ns, each having waited sojourn_ns;
 * returns how many CoDel dropped and the time of the first drop (0: none). */
static unsigned run(struct codel *c, uint64_t t0, uint64_t dur, uint64_t step, uint64_t sojourn,
		    uint64_t *first)
{
	unsigned drops = 0;

	*first = 0;
	for (uint64_t t = t0; t < t0 + dur; t += step) {
		if (codel_take(c, t - sojourn, t)) {
			if (!drops)
				*first = t;
			drops++;
		}
	}
	return drops;
}

int main(void)
{
	struct codel c;
	uint64_t first, t;

	/* Below the target: never, however long. */
	codel_init(&c, TARGET, INTERVAL);
	CHECK_INT(run(&c, 1 * MS, 1000 * MS, 10 * US, TARGET - 1, &first), 0);

	/* Above it for less than an interval (a burst), then below: nothing. */
	codel_init(&c, TARGET, INTERVAL);
	CHECK_INT(run(&c, 1 * MS, INTERVAL - 100 * US, 10 * US, 5 * MS, &first), 0);
	CHECK_INT(run(&c, 1 * MS + INTERVAL, 50 * MS, 10 * US, 0, &first), 0);

	/* A standing queue: the first drop one interval after it was first seen, then the
	 * next after interval / sqrt(2), then / sqrt(3). */
	codel_init(&c, TARGET, INTERVAL);
	t = 100 * MS;
	CHECK_INT(run(&c, t, INTERVAL + 10 * US, 10 * US, 2 * MS, &first), 1);
	CHECK_INT(first, t + INTERVAL);
	CHECK(c.dropping && c.count == 1);
	CHECK_INT(c.drop_next, t + 2 * INTERVAL);
	CHECK_INT(run(&c, t + INTERVAL + 10 * US, INTERVAL, 10 * US, 2 * MS, &first), 1);
	CHECK_INT(first, t + 2 * INTERVAL);
	CHECK_INT(c.count, 2);
	/* 10 ms / sqrt(2) = 7.071 ms after the previous drop time. */
	CHECK_INT(c.drop_next, t + 2 * INTERVAL + 7071067);
	CHECK_INT(run(&c, t + 2 * INTERVAL + 10 * US, 7071 * US + 10 * US, 10 * US, 2 * MS, &first),
		  1);
	CHECK_INT(c.count, 3);

	/* The queue drains: CoDel leaves the dropping state at the first packet below target. */
	CHECK_INT(run(&c, t + 40 * MS, 10 * US, 10 * US, 100 * US, &first), 0);
	CHECK(!c.dropping);

	/* It comes back within 16 intervals: after the interval, dropping resumes at count
	 * minus the count at the last entry (3 - 1 = 2), so the next gap is interval/sqrt(2). */
	CHECK_INT(run(&c, t + 50 * MS, INTERVAL + 10 * US, 10 * US, 2 * MS, &first), 1);
	CHECK_INT(first, t + 50 * MS + INTERVAL);
	CHECK_INT(c.count, 2);

	/* Much later, it starts over at 1. */
	CHECK_INT(run(&c, t + 70 * MS, 10 * US, 10 * US, 0, &first), 0);
	CHECK_INT(run(&c, t + 1000 * MS, INTERVAL + 10 * US, 10 * US, 2 * MS, &first), 1);
	CHECK_INT(c.count, 1);

	/* A stamp later than the reading (clock steps): no wait, no drop. */
	codel_init(&c, TARGET, INTERVAL);
	CHECK(!codel_take(&c, 5 * MS, 1 * MS));
	CHECK_INT(c.first_above, 0);
	return check_done("test_codel");
}
