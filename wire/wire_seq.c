/*
 * Sequence accounting (see wire_seq.h). The window holds one bit per number in
 * (top - WIRE_SEQ_WINDOW, top]; a number is judged missing when it leaves the window unseen,
 * and numbers leave in rising order, so runs of missing numbers are counted exactly.
 */
#include "wire_seq.h"

#include <string.h>

/* Extended numbers start here, so that a step back from the first never wraps below 0. */
#define SEQ_BASE (1ull << 40)

void wire_seq_init(struct wire_seq *s)
{
	memset(s, 0, sizeof(*s));
}

static bool bit_get(const struct wire_seq *s, uint64_t n)
{
	uint64_t i = n % WIRE_SEQ_WINDOW;

	return s->bits[i / 64] >> (i % 64) & 1;
}

static void bit_set(struct wire_seq *s, uint64_t n)
{
	uint64_t i = n % WIRE_SEQ_WINDOW;

	s->bits[i / 64] |= 1ull << (i % 64);
}

static void bit_clear(struct wire_seq *s, uint64_t n)
{
	uint64_t i = n % WIRE_SEQ_WINDOW;

	s->bits[i / 64] &= ~(1ull << (i % 64));
}

/* count numbers leave the window (or are passed over): count them if they never came. */
static void leave(struct wire_seq *s, uint64_t count, bool present)
{
	if (present) {
		s->prev_missing = false;
		return;
	}
	s->missing += count;
	if (!s->prev_missing)
		s->gaps++;
	s->prev_missing = true;
}

static uint64_t window_low(const struct wire_seq *s)
{
	uint64_t low = s->top - WIRE_SEQ_WINDOW + 1;

	return low > s->first ? low : s->first;
}

static void advance(struct wire_seq *s, uint64_t n)
{
	if (n - s->top >= WIRE_SEQ_WINDOW) {
		/* A jump past the whole window: everything in it leaves, then the numbers passed. */
		for (uint64_t m = window_low(s); m <= s->top; m++)
			leave(s, 1, bit_get(s, m));
		if (n - WIRE_SEQ_WINDOW > s->top)
			leave(s, n - WIRE_SEQ_WINDOW - s->top, false);
		memset(s->bits, 0, sizeof(s->bits));
		s->top = n;
		return;
	}
	for (uint64_t m = s->top + 1; m <= n; m++) {
		uint64_t out = m - WIRE_SEQ_WINDOW;

		if (out >= s->first)
			leave(s, 1, bit_get(s, out));
		bit_clear(s, m);
	}
	s->top = n;
}

uint64_t wire_seq_add(struct wire_seq *s, uint32_t seq)
{
	uint64_t n;

	if (!s->started) {
		s->started = true;
		s->first = s->top = SEQ_BASE + seq;
		s->frames = 1;
		bit_set(s, s->top);
		return s->top;
	}
	/* Serial arithmetic: a step of less than 2^31 either way is taken as it is. */
	n = s->top + (uint64_t)(int64_t)(int32_t)(seq - (uint32_t)s->top);
	s->frames++;
	if (n > s->top) {
		advance(s, n);
		bit_set(s, n);
	} else if (n + WIRE_SEQ_WINDOW <= s->top) {
		s->reordered++;
		if (n >= s->first)
			s->too_late++;
	} else if (bit_get(s, n)) {
		s->duplicates++;
	} else {
		bit_set(s, n);
		s->reordered++;
	}
	return n;
}

void wire_seq_finish(struct wire_seq *s)
{
	if (!s->started || s->flushed)
		return;
	for (uint64_t m = window_low(s); m <= s->top; m++)
		leave(s, 1, bit_get(s, m));
	s->flushed = true;
}
