/*
 * A token bucket on an injected clock (see pacer.h): tokens are bytes, earned at rate / 8 per
 * second of elapsed time and capped at the burst.
 */
#include "pacer.h"

#include <math.h>

#include "traffic_limits.h"

enum {
	NS_PER_SEC = 1000000000,
};

/* Bytes earned in ns nanoseconds at rate bit/s; in double, as ns * rate overflows 64 bits. */
static double earned(uint64_t rate, uint64_t ns)
{
	return (double)ns * (double)rate / (8.0 * NS_PER_SEC);
}

/* Tokens the bucket would hold at now_ns. */
static double tokens_at(const struct pacer *p, uint64_t now_ns)
{
	double t = p->tokens;

	/* A clock that steps back earns nothing: the same interval must not be paid twice. */
	if (now_ns > p->last_ns)
		t += earned(p->rate, now_ns - p->last_ns);
	return t < (double)p->burst ? t : (double)p->burst;
}

void pacer_init(struct pacer *p, uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns)
{
	if (burst_bytes == 0) {
		burst_bytes = rate_bps / 8 / 1000 * PACER_BURST_MS;
		if (burst_bytes < PACER_BURST_MIN)
			burst_bytes = PACER_BURST_MIN;
	}
	p->rate = rate_bps;
	p->burst = burst_bytes;
	p->tokens = (double)burst_bytes;
	p->last_ns = now_ns;
}

uint64_t pacer_allow(struct pacer *p, uint64_t now_ns, uint64_t want)
{
	if (p->rate == 0)
		return want;
	p->tokens = tokens_at(p, now_ns);
	/*
	 * last_ns only moves forward: after a step back, time is earned again only past the
	 * latest clock already paid for.
	 */
	if (now_ns > p->last_ns)
		p->last_ns = now_ns;
	if (p->tokens <= 0)
		return 0;
	/* (double)want may round up to 2^64; tokens is then below it and converts safely. */
	if (p->tokens >= (double)want)
		return want;
	return (uint64_t)p->tokens;
}

uint64_t pacer_grant(struct pacer *p, uint64_t now_ns, uint64_t want, uint64_t least)
{
	uint64_t n = pacer_allow(p, now_ns, want);

	if (least > want)
		least = want;
	return n < least ? 0 : n;
}

void pacer_take(struct pacer *p, uint64_t n)
{
	if (p->rate == 0)
		return;
	p->tokens -= (double)n;
}

uint64_t pacer_wait_ns(const struct pacer *p, uint64_t now_ns, uint64_t n)
{
	double have, need, ns;
	uint64_t wait, behind;

	if (p->rate == 0)
		return 0;
	have = tokens_at(p, now_ns);
	/* More than the bucket holds never becomes available: wait until it is full instead. */
	need = (double)(n < p->burst ? n : p->burst);
	if (have >= need)
		return 0;
	ns = ceil((need - have) * (8.0 * NS_PER_SEC) / (double)p->rate);
	if (ns >= 18446744073709551615.0)
		return UINT64_MAX;
	wait = (uint64_t)ns;
	/*
	 * Rounding must not leave the caller short after sleeping exactly this long. A few steps
	 * suffice; past 2^53 ns a step changes nothing and the caller simply waits again.
	 */
	for (int i = 0; i < 4 && have + earned(p->rate, wait) < need; i++)
		wait++;
	/* After a step back, nothing is earned until the clock passes last_ns again. */
	behind = now_ns < p->last_ns ? p->last_ns - now_ns : 0;
	return wait > UINT64_MAX - behind ? UINT64_MAX : wait + behind;
}
