/*
 * Loss, reordering, duplicates and jitter of a datagram stream from its sequence numbers and
 * send timestamps (see seqstat.h). Jitter is the interarrival jitter of RFC 3550, section
 * 6.4.1 and appendix A.8, kept in nanoseconds.
 */
#include "seqstat.h"

#include <math.h>
#include <string.h>

enum {
	WORDS = SEQ_WINDOW / 64,
	JITTER_GAIN = 16, /* RFC 3550 6.4.1: the 1/16 gain of the noise reduction */
};

void seqstat_init(struct seqstat *s)
{
	memset(s, 0, sizeof(*s));
}

/* Moves the window up by n numbers: bit i becomes bit i + n; bits past the end fall off. */
static void window_shift(uint64_t *w, uint64_t n)
{
	unsigned words, bits;

	if (n >= SEQ_WINDOW) {
		memset(w, 0, WORDS * sizeof(*w));
		return;
	}
	words = (unsigned)(n / 64);
	bits = (unsigned)(n % 64);
	for (unsigned k = WORDS; k-- > words;) {
		uint64_t v = w[k - words] << bits;

		if (bits && k > words)
			v |= w[k - words - 1] >> (64 - bits);
		w[k] = v;
	}
	memset(w, 0, words * sizeof(*w));
}

static bool window_test_set(uint64_t *w, uint64_t i)
{
	uint64_t mask = 1ull << (i % 64);
	bool seen = w[i / 64] & mask;

	w[i / 64] |= mask;
	return seen;
}

static void jitter_add(struct seqstat *s, uint64_t send_ns, uint64_t recv_ns)
{
	/* The clocks need not agree, so transit may be negative; only its changes matter. */
	int64_t transit = (int64_t)(recv_ns - send_ns);

	if (s->have_transit) {
		/* Modulo 2^64, so that clocks far apart cannot overflow the difference. */
		int64_t d = (int64_t)((uint64_t)transit - (uint64_t)s->last_transit_ns);

		s->jitter_ns += (fabs((double)d) - s->jitter_ns) / JITTER_GAIN;
	}
	s->last_transit_ns = transit;
	s->have_transit = true;
}

void seqstat_add(struct seqstat *s, uint64_t seq, uint64_t send_ns, uint64_t recv_ns)
{
	/* RFC 3550 A.8 takes every datagram that arrives, in whatever order, duplicates too. */
	jitter_add(s, send_ns, recv_ns);
	seqstat_count(s, seq);
}

void seqstat_count(struct seqstat *s, uint64_t seq)
{
	uint64_t back;

	if (s->received == 0) {
		s->highest = seq;
		s->lowest = seq;
		s->window[0] = 1;
		s->received = 1;
		return;
	}
	if (seq > s->highest) {
		window_shift(s->window, seq - s->highest);
		s->window[0] |= 1;
		s->highest = seq;
		s->received++;
		return;
	}
	back = s->highest - seq;
	if (back >= SEQ_WINDOW) {
		s->too_old++;
		return;
	}
	if (window_test_set(s->window, back)) {
		s->duplicates++;
		return;
	}
	s->received++;
	s->reordered++;
	if (seq < s->lowest)
		s->lowest = seq;
}
