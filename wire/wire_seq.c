/*
 * Sequence accounting (see wire_seq.h). The window holds one bit per number in
 * (top - WIRE_SEQ_WINDOW, top]; a number is judged missing when it leaves the window unseen,
 * and numbers leave in rising order, so runs of missing numbers are counted exactly. Numbers
 * leave and slots are cleared a word of 64 at a time, so a step costs the words it spans.
 */
#include "wire_seq.h"

#include <string.h>

/* Extended numbers start here, so that a step back from the first never wraps below 0. */
#define SEQ_BASE (1ull << 40)

enum { SEQ_WORDS = WIRE_SEQ_WINDOW / 64 };

void wire_seq_init(struct wire_seq *s)
{
	memset(s, 0, sizeof(*s));
}

/* The word that holds number n's bit (bit n % 64: the window is a whole number of words). */
static uint64_t *word(struct wire_seq *s, uint64_t n)
{
	return &s->bits[n % WIRE_SEQ_WINDOW / 64];
}

static bool bit_get(struct wire_seq *s, uint64_t n)
{
	s->words++;
	return *word(s, n) >> (n % 64) & 1;
}

static void bit_set(struct wire_seq *s, uint64_t n)
{
	s->words++;
	*word(s, n) |= 1ull << (n % 64);
}

/* The numbers from lo (at most hi) that share lo's word: how many, and their mask from bit 0. */
static unsigned chunk(uint64_t lo, uint64_t hi, uint64_t *mask)
{
	unsigned off = lo % 64;
	unsigned len = hi - lo >= 63u - off ? 64u - off : (unsigned)(hi - lo + 1);

	*mask = len == 64 ? ~0ull : (1ull << len) - 1;
	return len;
}

/* count numbers that were never in the window leave it (they were passed over): missing. */
static void leave_unseen(struct wire_seq *s, uint64_t count)
{
	s->missing += count;
	if (!s->prev_missing)
		s->gaps++;
	s->prev_missing = true;
}

/* The numbers lo to hi leave the window, in rising order: count those that never came. */
static void leave(struct wire_seq *s, uint64_t lo, uint64_t hi)
{
	uint64_t missing = 0, gaps = 0, words = 0;
	bool prev = s->prev_missing;

	/* Summed in locals: stores to s in the loop would stall on the next word's loads. */
	for (; lo <= hi; words++) {
		uint64_t mask;
		unsigned len = chunk(lo, hi, &mask);
		uint64_t absent = ~(*word(s, lo) >> (lo % 64)) & mask, starts;

		lo += len;
		/* All came, or none (a jump leaves such words): no bits to count. */
		if (absent == 0) {
			prev = false;
			continue;
		}
		if (absent == mask) {
			missing += len;
			gaps += !prev;
			prev = true;
			continue;
		}
		/* A run starts at an absent number whose predecessor came. */
		starts = absent & ~(absent << 1 | (uint64_t)prev);
		missing += (uint64_t)__builtin_popcountll(absent);
		gaps += (uint64_t)__builtin_popcountll(starts);
		prev = absent >> (len - 1) & 1;
	}
	s->missing += missing;
	s->gaps += gaps;
	s->prev_missing = prev;
	s->words += words;
}

/* The slots of the numbers lo to hi, about to enter the window, start empty. */
static void clear(struct wire_seq *s, uint64_t lo, uint64_t hi)
{
	if (hi - lo >= WIRE_SEQ_WINDOW - 1) {
		memset(s->bits, 0, sizeof(s->bits));
		s->words += SEQ_WORDS;
		return;
	}
	while (lo <= hi) {
		uint64_t mask;
		unsigned len = chunk(lo, hi, &mask);

		*word(s, lo) &= ~(mask << (lo % 64));
		s->words++;
		lo += len;
	}
}

static uint64_t window_low(const struct wire_seq *s)
{
	uint64_t low = s->top - WIRE_SEQ_WINDOW + 1;

	return low > s->first ? low : s->first;
}

/*
 * The top moves up to n: the numbers up to n - WIRE_SEQ_WINDOW leave (those in the window,
 * then any passed over by a jump past it), and the slots of top + 1 to n, which the numbers
 * that left held, are cleared after they were read.
 */
static void advance(struct wire_seq *s, uint64_t n)
{
	uint64_t out = n - WIRE_SEQ_WINDOW, low = window_low(s);

	if (out >= low)
		leave(s, low, out < s->top ? out : s->top);
	if (out > s->top)
		leave_unseen(s, out - s->top);
	clear(s, s->top + 1, n);
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
	leave(s, window_low(s), s->top);
	s->flushed = true;
}
