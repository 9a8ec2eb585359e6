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

/*
 * Keeps [lo, hi) as hole pos; the holes stay in order, lowest first. When all are in use the
 * lowest is forgotten first, wherever the new one goes. Returns where the new hole ended up.
 */
static unsigned hole_insert(struct wire_tcp *t, unsigned pos, uint32_t lo, uint32_t hi)
{
	if (t->nholes == WIRE_TCP_HOLES) {
		/* pos >= 1 here: a hole at 0 only ever goes into a table with room. */
		hole_drop(t, 0);
		pos--;
	}
	memmove(&t->holes[pos + 1], &t->holes[pos], (t->nholes - pos) * sizeof(t->holes[0]));
	t->holes[pos].lo = lo;
	t->holes[pos].hi = hi;
	t->nholes++;
	return pos;
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
			/* The segment landed inside the hole: its two parts are two holes now. */
			t->holes[i].hi = a;
			i = hole_insert(t, i + 1, b, hhi);
		}
		i++;
	}
	return filled;
}

/* Sent after the segment that reached hi: its identification is later (serial order). */
static bool sent_later(const struct wire_tcp *t, const struct wire_tcp_seg *s)
{
	return s->has_id && t->has_hi_id && (int16_t)(s->id - t->hi_id) > 0;
}

struct wire_tcp_result wire_tcp_add(struct wire_tcp *t, const struct wire_tcp_seg *s)
{
	struct wire_tcp_result r = { 0, 0, 0, 0 };
	uint32_t lo = s->syn ? s->seq + 1 : s->seq, hi = lo + s->len;
	bool later = sent_later(t, s), known = s->has_id && t->has_hi_id;

	if (!t->seen) {
		t->seen = true;
		t->hi = lo;
	}
	if (s->len == 0)
		return r;
	if (before(t->hi, hi)) {
		uint32_t old = t->hi;

		t->hi = hi;
		t->has_hi_id = s->has_id;
		t->hi_id = s->id;
		if (before(old, lo)) {
			hole_insert(t, t->nholes, old, lo);
			r.new_bytes = s->len;
			return r;
		}
		r.new_bytes = hi - old;
		hi = old;
	}
	r.late_bytes = holes_fill(t, lo, hi);
	r.new_bytes += r.late_bytes;
	if (later)
		r.resent_bytes = r.late_bytes;
	else if (!known)
		r.unresolved_bytes = r.late_bytes;
	return r;
}
