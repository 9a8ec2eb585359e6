/*
 * Unit tests for traffic/seqstat.c: in-order streams, gaps, reordering, duplicates, numbers
 * below the window, jumps past it, every datagram counted once, and RFC 3550 jitter against
 * the recurrence computed here.
 */
#include <math.h>

#include "check.h"
#include "seqstat.h"

enum {
	MS = 1000000,
};

#define BIG (1ull << 62)

/* Feeds a list of numbers with a constant transit time. */
static void feed(struct seqstat *s, const uint64_t *seq, size_t n)
{
	seqstat_init(s);
	for (size_t i = 0; i < n; i++)
		seqstat_add(s, seq[i], 1000 * seq[i], 1000 * seq[i] + 5 * MS);
}

static void test_in_order(void)
{
	static struct seqstat s;

	seqstat_init(&s);
	for (uint64_t i = 0; i < 100; i++)
		seqstat_add(&s, i, i * MS, i * MS + 300000);
	CHECK_U64(s.received, 100);
	CHECK_U64(s.duplicates, 0);
	CHECK_U64(s.reordered, 0);
	CHECK_U64(s.too_old, 0);
	CHECK_U64(s.lowest, 0);
	CHECK_U64(s.highest, 99);
	CHECK(s.jitter_ns == 0);
}

static void test_table(void)
{
	static const struct {
		const char *name;
		uint64_t seq[16];
		size_t n;
		uint64_t received, duplicates, reordered, too_old, lowest, highest;
	} rows[] = {
		{ "gaps", { 0, 1, 3, 4, 7, 9 }, 6, 6, 0, 0, 0, 0, 9 },
		{ "lost head", { 5, 6, 7 }, 3, 3, 0, 0, 0, 5, 7 },
		{ "swap", { 0, 1, 3, 2, 4, 5 }, 6, 6, 0, 1, 0, 0, 5 },
		{ "late by many", { 0, 2, 3, 4, 5, 6, 1 }, 7, 7, 0, 1, 0, 0, 6 },
		{ "reversed", { 5, 4, 3, 2, 1, 0 }, 6, 6, 0, 5, 0, 0, 5 },
		{ "duplicate", { 0, 1, 1, 2 }, 4, 3, 1, 0, 0, 0, 2 },
		{ "duplicate of the highest", { 0, 1, 2, 2, 2 }, 5, 3, 2, 0, 0, 0, 2 },
		{ "duplicate of a late one", { 0, 2, 1, 1, 3 }, 5, 4, 1, 1, 0, 0, 3 },
		{ "duplicate and a gap", { 0, 0, 3 }, 3, 2, 1, 0, 0, 0, 3 },
		{ "edge of the window", { 0, 4095 }, 2, 2, 0, 0, 0, 0, 4095 },
		{ "edge, late", { 4095, 0 }, 2, 2, 0, 1, 0, 0, 4095 },
		{ "just too old", { 4096, 0 }, 2, 1, 0, 0, 1, 4096, 4096 },
		{ "too old twice", { 5000, 5, 5 }, 3, 1, 0, 0, 2, 5000, 5000 },
		{ "past window", { 0, 1, 5000, 2, 4999 }, 5, 4, 0, 1, 1, 0, 5000 },
		{ "nothing", { 0 }, 0, 0, 0, 0, 0, 0, 0 },
		{ "big numbers", { BIG, BIG + 2 }, 2, 2, 0, 0, 0, BIG, BIG + 2 },
	};
	static struct seqstat s;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		feed(&s, rows[i].seq, rows[i].n);
		CHECK_ROW(s.received == rows[i].received, rows[i].name);
		CHECK_ROW(s.duplicates == rows[i].duplicates, rows[i].name);
		CHECK_ROW(s.reordered == rows[i].reordered, rows[i].name);
		CHECK_ROW(s.too_old == rows[i].too_old, rows[i].name);
		if (rows[i].n) {
			CHECK_ROW(s.lowest == rows[i].lowest, rows[i].name);
			CHECK_ROW(s.highest == rows[i].highest, rows[i].name);
		}
		/* The client's loss is what it sent less what was received: every datagram that
		 * came must be counted once, as received, a duplicate, or too old. */
		CHECK_ROW(s.received + s.duplicates + s.too_old == rows[i].n, rows[i].name);
	}
}

/* A long stream with every 7th number lost and every 10th swapped with its successor. */
static void test_long_stream(void)
{
	static struct seqstat s;
	uint64_t lost = 0, swaps = 0;

	seqstat_init(&s);
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t seq = i;

		if (i % 10 == 0)
			seq = i + 1;
		else if (i % 10 == 1)
			seq = i - 1;
		if (seq % 7 == 3) {
			lost++;
			continue;
		}
		if (i % 10 == 1 && (seq + 1) % 7 != 3)
			swaps++;
		seqstat_add(&s, seq, 0, 0);
	}
	CHECK_U64(s.received, 20000 - lost);
	CHECK_U64(s.reordered, swaps);
	CHECK_U64(s.duplicates, 0);
	/* Bits shifted across every word boundary still mark what came 4095 numbers ago. */
	seqstat_add(&s, 19999 - 4095, 0, 0);
	seqstat_add(&s, 19999 - 4096, 0, 0);
	seqstat_add(&s, 19999 - 65, 0, 0);
	CHECK_U64(s.duplicates, (19999 - 4095) % 7 == 3 ? 1 : 2);
	CHECK_U64(s.too_old, 1);
}

/*
 * Random forward jumps of every size, including whole-word and past-the-window shifts, and
 * random looks back, against a model that remembers every number ever seen.
 */
static void test_against_model(void)
{
	enum { RANGE = 1 << 22, OPS = 20000 };
	static bool seen[RANGE];
	static struct seqstat s;
	uint64_t x = 0x2545f4914f6cdd1dull, highest = 0, lowest = UINT64_MAX;
	uint64_t received = 0, dups = 0, reordered = 0, too_old = 0;
	int i;

	seqstat_init(&s);
	for (i = 0; i < OPS; i++) {
		uint64_t r, seq;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = x >> 32;
		if (i == 0 || r % 3 == 0)
			seq = highest + (r >> 8) % (r % 16 ? 3 : 5000) + 1;
		else
			seq = highest - (r >> 8) % (r % 2 ? 130 : 5000) % (highest + 1);
		if (seq >= RANGE)
			break;
		if (i == 0 || seq > highest) {
			highest = seq;
			received++;
		} else if (highest - seq >= SEQ_WINDOW) {
			too_old++;
		} else if (seen[seq]) {
			dups++;
		} else {
			received++;
			reordered++;
			if (seq < lowest)
				lowest = seq;
		}
		if (i == 0)
			lowest = seq;
		seen[seq] = true;
		seqstat_add(&s, seq, 0, 0);
	}
	CHECK_U64(s.received, received);
	CHECK_U64(s.duplicates, dups);
	CHECK_U64(s.reordered, reordered);
	CHECK_U64(s.too_old, too_old);
	CHECK_U64(s.highest, highest);
	CHECK_U64(s.lowest, lowest);
	CHECK_INT(i, OPS);
	CHECK(reordered > 1000 && dups > 1000 && too_old > 100);
}

/* RFC 3550 A.8 recurrence, in double, written apart from seqstat.c. */
static double rfc_jitter(const int64_t *transit, size_t n)
{
	double j = 0;

	for (size_t i = 1; i < n; i++)
		j += (fabs((double)(transit[i] - transit[i - 1])) - j) / 16;
	return j;
}

static void test_jitter(void)
{
	static struct seqstat s;
	int64_t transit[200];

	/* Constant transit, sender clock far ahead of ours: no jitter. */
	seqstat_init(&s);
	for (uint64_t i = 0; i < 50; i++)
		seqstat_add(&s, i, 1000000000000ull + i * MS, 7 * MS + i * MS);
	CHECK(s.jitter_ns == 0);

	/* Transit alternating 1 ms above and below 10 ms: |D| = 2 ms, J tends to 2 ms. */
	seqstat_init(&s);
	for (size_t i = 0; i < 200; i++) {
		uint64_t send = 5000000000ull + i * MS;

		transit[i] = 10 * MS + (i % 2 ? 1 : -1) * MS;
		seqstat_add(&s, i, send, send + (uint64_t)transit[i]);
	}
	CHECK(fabs(s.jitter_ns - rfc_jitter(transit, 200)) < 1e-6);
	CHECK(s.jitter_ns > 1.99 * MS && s.jitter_ns < 2.0 * MS);

	/* The first step: J = |D| / 16 after two datagrams. */
	seqstat_init(&s);
	seqstat_add(&s, 0, 0, 1 * MS);
	CHECK(s.jitter_ns == 0);
	seqstat_add(&s, 1, 1 * MS, 2 * MS + 160000);
	CHECK(fabs(s.jitter_ns - 10000) < 1e-9);

	/* Reordered datagrams count too: jitter follows arrival order. */
	seqstat_init(&s);
	{
		static const uint64_t seq[] = { 0, 2, 1, 3 };
		static const int64_t tr[] = { 3 * MS, 4 * MS, 2 * MS, 3 * MS };

		for (size_t i = 0; i < 4; i++)
			seqstat_add(&s, seq[i], seq[i] * MS, seq[i] * MS + (uint64_t)tr[i]);
		CHECK(fabs(s.jitter_ns - rfc_jitter(tr, 4)) < 1e-6);
	}

	/* Receiver clock behind the sender's: negative transit is fine. */
	seqstat_init(&s);
	seqstat_add(&s, 0, 10 * MS, 1 * MS);
	seqstat_add(&s, 1, 11 * MS, 2 * MS + 16000);
	CHECK(fabs(s.jitter_ns - 1000) < 1e-9);
}

int main(void)
{
	test_in_order();
	test_table();
	test_long_stream();
	test_against_model();
	test_jitter();
	return check_done("test_seqstat");
}
