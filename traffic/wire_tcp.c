/*
 * TCP payload accounting (see wire_tcp.h). Sequence numbers compare by serial arithmetic
 * (RFC 1982): a flow's window is far below 2^31.
 */
#include "wire_tcp.h"

#include <string.h>

static bool before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static uint32_t max32(uint32_t a, uint32_t b)
{
	return before(a, b) ? b : a;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return before(a, b) ? a : b;
}

static void hole_drop(struct wire_tcp *t, unsigned i)
{
	memmove(&t->holes[i], &t->holes[i + 1], (t->nholes - i - 1) * sizeof(t->holes[0]));
	t->nholes--;
}

/* Holes are kept oldest (lowest) first; a new one past the limit pushes the oldest out. */
static void hole_add(struct wire_tcp *t, uint32_t lo, uint32_t hi)
{
	if (t->nholes == WIRE_TCP_HOLES)
		hole_drop(t, 0);
	t->holes[t->nholes].lo = lo;
	t->holes[t->nholes].hi = hi;
	t->nholes++;
}

/* Fills what [lo, hi) covers of the holes; returns the bytes filled. */
static uint32_t holes_fill(struct wire_tcp *t, uint32_t lo, uint32_t hi)
{
	uint32_t filled = 0;

	for (unsigned i = 0; i < t->nholes;) {
		uint32_t hlo = t->holes[i].lo, hhi = t->holes[i].hi;
		uint32_t a = max32(lo, hlo), b = min32(hi, hhi);

		if (!before(a, b)) {
			i++;
			continue;
		}
		filled += b - a;
		if (a == hlo && b == hhi) {
			hole_drop(t, i);
			continue;
		}
		if (a == hlo) {
			t->holes[i].lo = b;
		} else if (b == hhi) {
			t->holes[i].hi = a;
		} else {
			/* The segment landed inside the hole: two holes now, if there is room. */
			t->holes[i].hi = a;
			if (t->nholes < WIRE_TCP_HOLES) {
				memmove(&t->holes[i + 2], &t->holes[i + 1],
					(t->nholes - i - 1) * sizeof(t->holes[0]));
				t->holes[i + 1].lo = b;
				t->holes[i + 1].hi = hhi;
				t->nholes++;
				i++;
			}
		}
		i++;
	}
	return filled;
}

struct wire_tcp_result wire_tcp_add(struct wire_tcp *t, uint32_t seq, uint32_t len, bool syn)
{
	struct wire_tcp_result r = { 0, 0 };
	uint32_t lo = syn ? seq + 1 : seq, hi = lo + len;

	if (!t->seen) {
		t->seen = true;
		t->hi = lo;
	}
	if (len == 0)
		return r;
	if (before(t->hi, hi)) {
		if (before(t->hi, lo)) {
			hole_add(t, t->hi, lo);
			t->hi = hi;
			r.new_bytes = len;
			return r;
		}
		r.new_bytes = hi - t->hi;
		hi = t->hi;
		t->hi = lo + len;
	}
	r.reordered_bytes = holes_fill(t, lo, hi);
	r.new_bytes += r.reordered_bytes;
	return r;
}
