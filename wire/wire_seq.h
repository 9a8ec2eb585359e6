/*
 * Sequence number accounting of one direction of a tunnel, as a receiver would see it
 * (RFC 2890, section 2.2): numbers missing, how many runs they form, late arrivals
 * (reordered) and duplicates. 32-bit numbers are extended to 64 bits by serial arithmetic
 * (RFC 1982) and tracked in a fixed window below the highest one seen.
 */
#ifndef TUNBED_WIRE_SEQ_H
#define TUNBED_WIRE_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#include "wire_limits.h" /* WIRE_SEQ_WINDOW */

struct wire_seq {
	bool started;
	bool flushed;
	bool prev_missing; /* the number that last left the window was missing */
	uint64_t first;	   /* the first number seen, extended */
	uint64_t top;	   /* the highest number seen, extended */
	uint64_t frames;
	uint64_t missing;    /* numbers from first to top that never came */
	uint64_t gaps;	     /* runs of missing numbers */
	uint64_t reordered;  /* came below top, and not seen before */
	uint64_t duplicates; /* seen before (within the window) */
	uint64_t too_late;   /* came below the window: counted reordered, and missing too */
	uint64_t words;	     /* words of bits read or written: the work (test_wire_seq bounds it) */
	uint64_t bits[WIRE_SEQ_WINDOW / 64];
};

void wire_seq_init(struct wire_seq *s);

/*
 * Accounts one number; returns it extended to 64 bits, comparable with the others of the
 * direction. Not after wire_seq_finish.
 */
uint64_t wire_seq_add(struct wire_seq *s, uint32_t seq);

/* Judges the numbers still in the window: missing and gaps are final afterwards. Idempotent. */
void wire_seq_finish(struct wire_seq *s);

#endif
