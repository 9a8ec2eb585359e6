/*
 * Unit tests for traffic/hist.c: summary fields, percentile error bounds, the empty and
 * one-value cases, merging, values past the last octave, and a monotonic bucket mapping.
 */
#include <math.h>

#include "check.h"
#include "hist.h"

enum {
	US = 1000,
};

static void test_summary(void)
{
	static struct hist h;

	hist_init(&h);
	for (uint64_t i = 1; i <= 1000; i++)
		hist_add(&h, i * US);
	CHECK_U64(h.count, 1000);
	CHECK_U64(h.min_ns, 1 * US);
	CHECK_U64(h.max_ns, 1000 * US);
	CHECK_U64(h.sum_ns, 500500 * US);
}

static void test_uniform_percentiles(void)
{
	static const struct {
		const char *name;
		double q;
		uint64_t exact;
	} rows[] = {
		{ "p50", 50, 500 * US },     { "p90", 90, 900 * US },	 { "p99", 99, 990 * US },
		{ "p99.9", 99.9, 999 * US }, { "p1", 1, 10 * US },	 { "p0.1", 0.1, 1 * US },
		{ "p33.3", 33.3, 333 * US }, { "p100", 100, 1000 * US },
	};
	static struct hist h;

	hist_init(&h);
	/* Added out of order: a histogram must not care. */
	for (uint64_t i = 0; i < 1000; i++)
		hist_add(&h, ((i * 7) % 1000 + 1) * US);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t got = hist_percentile(&h, rows[i].q);
		double err = ((double)got - (double)rows[i].exact) / (double)rows[i].exact;

		/* An upper bucket edge never reports less than the true value. */
		CHECK_ROW(got >= rows[i].exact, rows[i].name);
		CHECK_ROW(err < 0.032, rows[i].name);
	}
	CHECK_U64(hist_percentile(&h, 100), h.max_ns);
}

static void test_small_values_exact(void)
{
	static struct hist h;

	hist_init(&h);
	for (uint64_t v = 0; v < 64; v++)
		hist_add(&h, v);
	/* Below 64 ns every value has its own bucket, so percentiles are exact. */
	CHECK_U64(hist_percentile(&h, 50), 31);
	CHECK_U64(hist_percentile(&h, 25), 15);
	CHECK_U64(hist_percentile(&h, 75), 47);
	CHECK_U64(hist_percentile(&h, 1), 0);
	CHECK_U64(hist_percentile(&h, 100), 63);
}

/*
 * q / 100 * count can land a hair above an integer in binary (0.9% of 1000 is
 * 9.000000000000002): the rank is still that integer.
 */
static void test_rank_rounding(void)
{
	static const struct {
		const char *name;
		double q;
		uint64_t low;
	} rows[] = {
		{ "p0.9", 0.9, 9 },
		{ "p1.1", 1.1, 11 },
		{ "p94.2", 94.2, 942 },
		{ "p99.9", 99.9, 999 },
	};
	static struct hist h;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		hist_init(&h);
		for (uint64_t k = 0; k < 1000; k++)
			hist_add(&h, k < rows[i].low ? 1 : 50);
		CHECK_ROW(hist_percentile(&h, rows[i].q) == 1, rows[i].name);
		hist_init(&h);
		for (uint64_t k = 0; k < 1000; k++)
			hist_add(&h, k < rows[i].low - 1 ? 1 : 50);
		CHECK_ROW(hist_percentile(&h, rows[i].q) == 50, rows[i].name);
	}
}

static void test_single_and_empty(void)
{
	static const double qs[] = { 0.001, 1, 50, 99.99, 100 };
	static struct hist h;

	hist_init(&h);
	CHECK_U64(h.count, 0);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		CHECK_U64(hist_percentile(&h, qs[i]), 0);
	hist_add(&h, 123457);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		CHECK_U64(hist_percentile(&h, qs[i]), 123457);
	CHECK_U64(h.min_ns, 123457);
	CHECK_U64(h.max_ns, 123457);
	CHECK_U64(h.sum_ns, 123457);
}

static int same(const struct hist *a, const struct hist *b)
{
	return a->count == b->count && a->min_ns == b->min_ns && a->max_ns == b->max_ns &&
	       a->sum_ns == b->sum_ns && memcmp(a->bucket, b->bucket, sizeof(a->bucket)) == 0;
}

static void test_merge(void)
{
	static struct hist a, b, all, empty;
	uint64_t x = 88172645463325252ull;

	hist_init(&a);
	hist_init(&b);
	hist_init(&all);
	hist_init(&empty);
	for (int i = 0; i < 5000; i++) {
		uint64_t v;

		/* xorshift64: a spread of values across many octaves. */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = x >> (20 + i % 30);
		hist_add(i % 3 ? &a : &b, v);
		hist_add(&all, v);
	}
	hist_merge(&a, &b);
	CHECK(same(&a, &all));
	CHECK_U64(hist_percentile(&a, 99), hist_percentile(&all, 99));
	hist_merge(&a, &empty);
	CHECK(same(&a, &all));
	hist_merge(&empty, &all);
	CHECK(same(&empty, &all));
}

static void test_huge(void)
{
	static struct hist h;

	hist_init(&h);
	hist_add(&h, (1ull << 40) - 1);
	CHECK_U64(h.bucket[HIST_BUCKETS - 1], 0);
	hist_add(&h, 1ull << 40);
	hist_add(&h, UINT64_MAX);
	CHECK_U64(h.bucket[HIST_BUCKETS - 1], 2);
	CHECK_U64(h.max_ns, UINT64_MAX);
	CHECK_U64(hist_percentile(&h, 100), UINT64_MAX);
	CHECK_U64(hist_percentile(&h, 60), UINT64_MAX);
	CHECK(hist_percentile(&h, 30) >= (1ull << 40) - 1);
	CHECK(hist_percentile(&h, 30) < (1ull << 40) + (1ull << 35));
}

/* The bucket a value lands in, found through a fresh histogram. */
static long bucket_index(struct hist *h, uint64_t v)
{
	long found = -1;

	hist_init(h);
	hist_add(h, v);
	for (long b = 0; b < HIST_BUCKETS; b++)
		if (h->bucket[b])
			found = found < 0 ? b : -2;
	return found;
}

static void test_monotonic(void)
{
	static struct hist h;
	uint64_t vals[4096];
	size_t n = 0;
	long prev = -1;
	int ok = 1, exact = 1, bounded = 1;

	for (uint64_t v = 0; v < 300; v++)
		vals[n++] = v;
	for (unsigned k = 9; k < 64; k++) {
		uint64_t p = 1ull << k;

		vals[n++] = p - 1;
		vals[n++] = p;
		vals[n++] = p + 1;
		for (unsigned j = 1; j < 40; j++)
			vals[n++] = p + (p / 40) * j;
	}
	vals[n++] = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		long idx = bucket_index(&h, vals[i]);

		if (idx < 0 || idx >= HIST_BUCKETS || idx < prev)
			ok = 0;
		if (vals[i] < 64 && idx != (long)vals[i])
			exact = 0;
		/*
		 * With a second, huge value, p50 is the upper edge of the bucket of vals[i]
		 * unclamped: within the range, it is less than 1/HIST_SUB above the value.
		 */
		if (vals[i] < (1ull << 40)) {
			uint64_t top;

			hist_add(&h, UINT64_MAX);
			top = hist_percentile(&h, 50);
			if (top < vals[i] || (top - vals[i]) * HIST_SUB > vals[i])
				bounded = 0;
		}
		prev = idx;
	}
	CHECK(ok);
	CHECK(exact);
	CHECK(bounded);
	CHECK(n > 1000);
	CHECK_INT(bucket_index(&h, UINT64_MAX), HIST_BUCKETS - 1);
	CHECK(bucket_index(&h, 1ull << 39) < bucket_index(&h, (1ull << 40) - 1));
	CHECK(bucket_index(&h, 1000) < bucket_index(&h, 1040));
}

int main(void)
{
	test_summary();
	test_uniform_percentiles();
	test_small_values_exact();
	test_rank_rounding();
	test_single_and_empty();
	test_merge();
	test_huge();
	test_monotonic();
	return check_done("test_hist");
}
