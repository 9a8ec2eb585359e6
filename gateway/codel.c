/*
 * CoDel, as RFC 8289 section 5 gives it, one packet per call (see codel.h).
 */
#include "codel.h"

#include <math.h>

void codel_init(struct codel *c, uint64_t target_ns, uint64_t interval_ns)
{
	*c = (struct codel){ .target_ns = target_ns, .interval_ns = interval_ns };
}

/* The next drop: interval / sqrt(count) after t, so drops come faster while the queue
 * stays. */
static uint64_t control_law(const struct codel *c, uint64_t t)
{
	return t + (uint64_t)((double)c->interval_ns / sqrt((double)c->count));
}

/* Whether the sojourn has been above target for an interval. */
static bool ok_to_drop(struct codel *c, uint64_t sojourn, uint64_t now)
{
	if (sojourn < c->target_ns) {
		c->first_above = 0;
		return false;
	}
	if (c->first_above == 0) {
		c->first_above = now + c->interval_ns;
		return false;
	}
	return now >= c->first_above;
}

bool codel_take(struct codel *c, uint64_t enqueued, uint64_t now)
{
	uint64_t sojourn = now > enqueued ? now - enqueued : 0;
	bool ok = ok_to_drop(c, sojourn, now);

	if (c->dropping) {
		if (!ok) {
			c->dropping = false;
			return false;
		}
		if (now >= c->drop_next) {
			c->count++;
			c->drop_next = control_law(c, c->drop_next);
			return true;
		}
		return false;
	}
	if (!ok)
		return false;
	/* Entering the dropping state: if it was left recently, resume near the old rate. */
	c->dropping = true;
	if (c->count > c->lastcount + 1 &&
	    (int64_t)(now - c->drop_next) < (int64_t)(16 * c->interval_ns))
		c->count = c->count - c->lastcount;
	else
		c->count = 1;
	c->lastcount = c->count;
	c->drop_next = control_law(c, now);
	return true;
}
