/*
 * A latency histogram with bounded relative error: log-linear buckets (every power of two of
 * nanoseconds split into HIST_SUB sub-buckets), so that 1 us and 1 s are both kept within
 * 1/HIST_SUB of their value in fixed memory. Pure; no allocation.
 */
#ifndef TUNBED_TR_HIST_H
#define TUNBED_TR_HIST_H

#include <stdint.h>

#include "traffic_limits.h"

/* HIST_SUB_BITS and HIST_OCTAVES are in traffic_limits.h. */
enum {
	HIST_SUB = 1 << HIST_SUB_BITS,
	HIST_BUCKETS = HIST_OCTAVES * HIST_SUB,
};

struct hist {
	uint64_t count;
	uint64_t min_ns, max_ns;
	uint64_t sum_ns;
	uint32_t bucket[HIST_BUCKETS];
};

void hist_init(struct hist *h);

/* Records one value; values at or beyond 2^40 ns land in the last bucket (max stays exact). */
void hist_add(struct hist *h, uint64_t ns);

/* Adds every value of src into dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * The value at percentile q (0 < q <= 100): the upper edge of the bucket holding the
 * ceil(q/100 * count)-th smallest value, clamped to [min, max]. 0 for an empty histogram.
 */
uint64_t hist_percentile(const struct hist *h, double q);

#endif
