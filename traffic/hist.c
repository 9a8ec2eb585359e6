/*
 * A log-linear latency histogram in the manner of HdrHistogram (see hist.h): the leading one
 * of a value picks the octave and the HIST_SUB_BITS bits below it the sub-bucket.
 */
#include "hist.h"

#include <math.h>
#include <string.h>

/* Values from here on share the last bucket, as hist.h promises. */
#define HIST_LIMIT (1ull << HIST_OCTAVES)

/*
 * Values below HIST_SUB have a bucket each (octave 0). Above, a value whose leading one is
 * bit m lies in octave m - HIST_SUB_BITS + 1, in buckets 2^(octave - 1) ns wide, so that
 * the mapping is continuous and monotonic and each bucket is under 1/HIST_SUB of its values.
 */
static unsigned bucket_of(uint64_t ns)
{
	unsigned msb, octave, sub;

	if (ns < HIST_SUB)
		return (unsigned)ns;
	if (ns >= HIST_LIMIT)
		return HIST_BUCKETS - 1;
	msb = 63 - (unsigned)__builtin_clzll(ns);
	octave = msb - HIST_SUB_BITS + 1;
	sub = (unsigned)(ns >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1);
	return octave * HIST_SUB + sub;
}

/* The largest value that maps to bucket b. */
static uint64_t bucket_top(unsigned b)
{
	unsigned octave = b / HIST_SUB, sub = b % HIST_SUB;

	if (b >= HIST_BUCKETS - 1)
		return UINT64_MAX;
	if (octave == 0)
		return sub;
	return ((uint64_t)(HIST_SUB + sub + 1) << (octave - 1)) - 1;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

/* Saturates rather than wraps, so that a full bucket cannot make a percentile jump down. */
static void bucket_add(uint32_t *b, uint64_t n)
{
	*b = n >= UINT32_MAX - *b ? UINT32_MAX : *b + (uint32_t)n;
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->count++;
	h->sum_ns += ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	bucket_add(&h->bucket[bucket_of(ns)], 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (src->count == 0)
		return;
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		bucket_add(&dst->bucket[b], src->bucket[b]);
}

uint64_t hist_percentile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	double x;

	if (h->count == 0)
		return 0;
	if (q >= 100)
		return h->max_ns;
	/*
	 * q is decimal and rarely exact in binary: 99.9% of 1000 must be rank 999, not 1000, so
	 * a product a hair above an integer counts as that integer.
	 */
	x = q / 100.0 * (double)h->count;
	x = ceil(x - x * 1e-12);
	/* Written so that a NaN q lands on rank 1 instead of an undefined conversion. */
	rank = x >= (double)h->count ? h->count : x >= 1 ? (uint64_t)x : 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		/* The edge is never below min: it is at least the value the bucket holds. */
		if (seen >= rank) {
			v = bucket_top(b);
			return v < h->max_ns ? v : h->max_ns;
		}
	}
	/* Only saturated buckets hold fewer values than count. */
	return h->max_ns;
}
