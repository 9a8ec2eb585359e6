/*
 * Unit tests of wire_seq: missing numbers and their runs, late arrivals, duplicates, the
 * 32-bit wrap, and jumps past the window, each from a table of arrival orders.
 */
#include <stdlib.h>

#include "check.h"
#include "wire_seq.h"

struct seq_case {
	const char *name;
	uint32_t first;
	int n;
	int64_t steps[16]; /* arrivals as offsets from first */
	uint64_t missing, gaps, reordered, duplicates, too_late;
};

static const struct seq_case cases[] = {
	{ "in order", 0, 5, { 0, 1, 2, 3, 4 }, 0, 0, 0, 0, 0 },
	{ "one gap of two", 10, 4, { 0, 1, 4, 5 }, 2, 1, 0, 0, 0 },
	{ "two gaps", 10, 5, { 0, 2, 3, 5, 6 }, 2, 2, 0, 0, 0 },
	{ "late fills its gap", 10, 4, { 0, 2, 1, 3 }, 0, 0, 1, 0, 0 },
	{ "duplicate", 10, 4, { 0, 1, 1, 2 }, 0, 0, 0, 1, 0 },
	{ "duplicate of a late one", 10, 5, { 0, 2, 1, 1, 3 }, 0, 0, 1, 1, 0 },
	{ "before the first", 10, 3, { 0, -1, 1 }, 0, 0, 1, 0, 0 },
	{ "across the 32-bit wrap", 0xfffffffe, 5, { 0, 1, 3, 4, 2 }, 0, 0, 1, 0, 0 },
	{ "gap across the wrap", 0xfffffffd, 3, { 0, 1, 5 }, 3, 1, 0, 0, 0 },
	{ "jump past the window",
	  0,
	  3,
	  { 0, 1, WIRE_SEQ_WINDOW + 10 },
	  WIRE_SEQ_WINDOW + 8,
	  1,
	  0,
	  0,
	  0 },
	/* 1 comes after it left the window: reordered, and still missing (see wire_seq.h). */
	{ "late beyond the window",
	  0,
	  4,
	  { 0, 2, WIRE_SEQ_WINDOW + 5, 1 },
	  WIRE_SEQ_WINDOW + 3,
	  2,
	  1,
	  0,
	  1 },
};

static void test_cases(void)
{
	static struct wire_seq s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct seq_case *c = &cases[i];

		wire_seq_init(&s);
		for (int k = 0; k < c->n; k++)
			wire_seq_add(&s, (uint32_t)(c->first + (uint32_t)c->steps[k]));
		wire_seq_finish(&s);
		wire_seq_finish(&s); /* idempotent */
		fprintf(stderr, "case: %s\n", c->name);
		CHECK_U64(s.frames, (uint64_t)c->n);
		CHECK_U64(s.missing, c->missing);
		CHECK_U64(s.gaps, c->gaps);
		CHECK_U64(s.reordered, c->reordered);
		CHECK_U64(s.duplicates, c->duplicates);
		CHECK_U64(s.too_late, c->too_late);
	}
}

/* Extended numbers keep rising across wraps: a long run with every 1000th number lost. */
static void test_long_run(void)
{
	static struct wire_seq s;
	uint64_t prev = 0, lost = 0;
	uint32_t seq = 0xffff0000u;

	wire_seq_init(&s);
	for (uint32_t i = 0; i < 3000000; i++, seq++) {
		uint64_t ext;

		if (i % 1000 == 500) {
			lost++;
			continue;
		}
		ext = wire_seq_add(&s, seq);
		CHECK(ext > prev);
		prev = ext;
	}
	wire_seq_finish(&s);
	CHECK_U64(s.missing, lost);
	CHECK_U64(s.gaps, lost);
	CHECK_U64(s.reordered, 0);
}

int main(void)
{
	test_cases();
	test_long_run();
	return check_done("test_wire_seq");
}
