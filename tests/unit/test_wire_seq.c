/*
 * Unit tests of wire_seq: missing numbers and their runs, late arrivals, duplicates, the
 * 32-bit wrap, and jumps past the window, each from a table of arrival orders; the same counts
 * as a plain model's over random arrivals; and the work the window costs, counted in words.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/* A fixed xorshift64 generator: every run sees the same numbers. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * The model: one byte per number, indexed by its offset from the first plus a window (so
 * that numbers below the first fit), judged one by one as the window's definition says.
 */
enum { MODEL_SPAN = 64 * WIRE_SEQ_WINDOW, MODEL_BASE = WIRE_SEQ_WINDOW };

struct model {
	int64_t top;
	bool prev_missing;
	uint64_t missing, gaps, reordered, duplicates, too_late;
	unsigned char seen[MODEL_BASE + MODEL_SPAN];
};

static void model_leave(struct model *m, int64_t k)
{
	if (m->seen[MODEL_BASE + k]) {
		m->prev_missing = false;
		return;
	}
	m->missing++;
	if (!m->prev_missing)
		m->gaps++;
	m->prev_missing = true;
}

static void model_add(struct model *m, int64_t k)
{
	if (k > m->top) {
		for (int64_t j = m->top + 1; j <= k; j++)
			if (j - WIRE_SEQ_WINDOW >= 0)
				model_leave(m, j - WIRE_SEQ_WINDOW);
		m->top = k;
		m->seen[MODEL_BASE + k] = 1;
	} else if (k + WIRE_SEQ_WINDOW <= m->top) {
		m->reordered++;
		if (k >= 0)
			m->too_late++;
	} else if (m->seen[MODEL_BASE + k]) {
		m->duplicates++;
	} else {
		m->seen[MODEL_BASE + k] = 1;
		m->reordered++;
	}
}

static void model_finish(struct model *m)
{
	for (int64_t j = m->top - WIRE_SEQ_WINDOW + 1; j <= m->top; j++)
		if (j >= 0)
			model_leave(m, j);
}

/*
 * Random arrivals, offsets from a first number just below the 32-bit wrap: mostly forward
 * steps of 1 to 3 (some numbers lost), late ones a little or about a whole window back,
 * duplicates, near the first (below it, or too late), steps of up to 130 (runs across word
 * edges), and jumps of half a window to past the whole one. wire_seq counts what the model
 * counts.
 */
static void test_against_model(void)
{
	static struct wire_seq s;
	static struct model m;
	const uint32_t first = 0xfff00000u;
	uint64_t frames = 1;
	int64_t k = 0;

	wire_seq_init(&s);
	memset(&m, 0, sizeof(m));
	wire_seq_add(&s, first);
	m.seen[MODEL_BASE] = 1;
	while (m.top < MODEL_SPAN - 2 * WIRE_SEQ_WINDOW) {
		uint64_t r = rng(), pick = r % 10000;

		r >>= 16;
		if (pick < 8500)
			k = m.top + 1 + (int64_t)(r % 3);
		else if (pick < 9300)
			k = m.top - (int64_t)(r % 300);
		else if (pick < 9600)
			k = m.top - WIRE_SEQ_WINDOW + 1 - (int64_t)(r % 200) + 100;
		else if (pick < 9800)
			k = (int64_t)(r % 50) - 25;
		else if (pick < 9995)
			k = m.top + 1 + (int64_t)(r % 130);
		else
			k = m.top + WIRE_SEQ_WINDOW / 2 + (int64_t)(r % WIRE_SEQ_WINDOW);
		if (k < -WIRE_SEQ_WINDOW)
			k = -WIRE_SEQ_WINDOW;
		wire_seq_add(&s, first + (uint32_t)k);
		model_add(&m, k);
		frames++;
	}
	wire_seq_finish(&s);
	model_finish(&m);
	fprintf(stderr,
		"against the model: %" PRIu64 " frames, %" PRIu64 " missing in %" PRIu64
		" gaps, %" PRIu64 " reordered, %" PRIu64 " duplicates, %" PRIu64 " too late\n",
		frames, m.missing, m.gaps, m.reordered, m.duplicates, m.too_late);
	CHECK_U64(s.frames, frames);
	CHECK_U64(s.missing, m.missing);
	CHECK_U64(s.gaps, m.gaps);
	CHECK_U64(s.reordered, m.reordered);
	CHECK_U64(s.duplicates, m.duplicates);
	CHECK_U64(s.too_late, m.too_late);
	CHECK(m.too_late > 0 && m.duplicates > 0 && m.gaps > 1000);
}

/*
 * The window's work, in words of 64 numbers read or written (s.words). A number costs a word;
 * a step forward by d costs the words that d numbers leaving and d slots cleared span, at most
 * 2 * (d / 64 + 2), and never more than two whole windows; the end costs one window.
 */
static uint64_t step_bound(uint64_t d)
{
	uint64_t w = d < WIRE_SEQ_WINDOW ? d / 64 + 2 : WIRE_SEQ_WINDOW / 64 + 1;

	return 2 * w + 1;
}

/* 50,000 numbers drawn from the whole 32-bit space: about half of them jump the window. */
static void test_work_random(void)
{
	static struct wire_seq s;
	uint64_t bound = WIRE_SEQ_WINDOW / 64 + 1;
	const int n = 50000;

	wire_seq_init(&s);
	for (int i = 0; i < n; i++)
		wire_seq_add(&s, (uint32_t)rng());
	wire_seq_finish(&s);
	bound += (uint64_t)n * step_bound(WIRE_SEQ_WINDOW);
	fprintf(stderr, "random numbers: %" PRIu64 " words, bound %" PRIu64 "\n", s.words, bound);
	CHECK(s.words <= bound);
	CHECK_U64(s.frames, (uint64_t)n);
}

/* Steps forward of 1 to 4096 (the numbers between lost): the work follows words, not bits. */
static void test_work_steps(void)
{
	static struct wire_seq s;
	uint64_t bound = WIRE_SEQ_WINDOW / 64 + 1;
	uint32_t seq = 0;

	wire_seq_init(&s);
	for (int i = 0; i < 100000; i++) {
		uint64_t d = 1 + rng() % 4096;

		seq += (uint32_t)d;
		wire_seq_add(&s, seq);
		bound += step_bound(d);
	}
	wire_seq_finish(&s);
	fprintf(stderr, "steps of 1 to 4096: %" PRIu64 " words, bound %" PRIu64 "\n", s.words,
		bound);
	CHECK(s.words <= bound);
}

/* In order, a frame costs a few words: the one that leaves, the slot cleared, its own. */
static void test_work_in_order(void)
{
	static struct wire_seq s;
	const uint64_t n = 1000000;

	wire_seq_init(&s);
	for (uint32_t i = 0; i < n; i++)
		wire_seq_add(&s, i);
	wire_seq_finish(&s);
	fprintf(stderr, "in order: %" PRIu64 " words for %" PRIu64 " frames\n", s.words, n);
	CHECK(s.words <= 3 * n + WIRE_SEQ_WINDOW / 64 + 1);
	CHECK_U64(s.missing, 0);
}

int main(void)
{
	test_cases();
	test_long_run();
	test_against_model();
	test_work_random();
	test_work_steps();
	test_work_in_order();
	return check_done("test_wire_seq");
}
