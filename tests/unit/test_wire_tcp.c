/*
 * Unit tests of wire_tcp: segments in order, retransmitted, late (reordered, or resent after
 * a loss upstream, told apart by the IPv4 identification, or unresolved without it), landing
 * inside a hole, partly new, with SYN, across the 32-bit wrap, and more holes than remembered,
 * also by splitting one.
 */
#include "check.h"
#include "wire_tcp.h"

/* seq, len, syn, has_id, id */
#define S(seq, len)                           \
	{                                     \
		(seq), (len), false, false, 0 \
	}
#define I(seq, len, id)                         \
	{                                       \
		(seq), (len), false, true, (id) \
	}

struct tcp_case {
	const char *name;
	int n;
	struct wire_tcp_seg segs[8];
	uint64_t new_bytes, late_bytes, resent_bytes, unresolved_bytes;
};

static const struct tcp_case cases[] = {
	{ "in order", 3, { S(100, 10), S(110, 10), S(120, 10) }, 30, 0, 0, 0 },
	{ "SYN, then data", 3, { { 99, 0, true, false, 0 }, S(100, 10), S(110, 10) }, 20, 0, 0, 0 },
	{ "retransmitted", 3, { S(100, 10), S(110, 10), S(100, 10) }, 20, 0, 0, 0 },
	{ "late, no identification", 3, { S(100, 10), S(120, 10), S(110, 10) }, 30, 10, 0, 10 },
	{ "late, reordered", 3, { I(100, 10, 1), I(120, 10, 3), I(110, 10, 2) }, 30, 10, 0, 0 },
	{ "late, resent after a loss",
	  3,
	  { I(100, 10, 1), I(120, 10, 3), I(110, 10, 4) },
	  30,
	  10,
	  10,
	  0 },
	{ "identification wraps",
	  3,
	  { I(100, 10, 65534), I(120, 10, 65535), I(110, 10, 2) },
	  30,
	  10,
	  10,
	  0 },
	/* Either end of the comparison without an identification: the order is unknown. */
	{ "late, the highest without identification",
	  3,
	  { I(100, 10, 1), S(120, 10), I(110, 10, 2) },
	  30,
	  10,
	  0,
	  10 },
	{ "late, itself without identification",
	  3,
	  { I(100, 10, 1), I(120, 10, 3), S(110, 10) },
	  30,
	  10,
	  0,
	  10 },
	{ "late, then sent again",
	  4,
	  { S(100, 10), S(120, 10), S(110, 10), S(110, 10) },
	  30,
	  10,
	  0,
	  10 },
	{ "inside a hole", 4, { S(100, 10), S(140, 10), S(120, 5), S(110, 30) }, 50, 30, 0, 30 },
	{ "partly new", 2, { S(100, 10), S(105, 10) }, 15, 0, 0, 0 },
	{ "partly new, filling a hole", 3, { S(100, 10), S(120, 10), S(110, 30) }, 40, 10, 0, 10 },
	{ "across the wrap", 3, { S(0xfffffff0u, 16), S(10, 6), S(0, 10) }, 32, 10, 0, 10 },
	/* Five holes: the first is forgotten, so its bytes count as retransmitted. */
	{ "more holes than remembered",
	  8,
	  { S(0, 10), S(20, 10), S(40, 10), S(60, 10), S(80, 10), S(100, 10), S(10, 10),
	    S(30, 10) },
	  70,
	  10,
	  0,
	  10 },
	/*
	 * Four holes, [10,20) [30,40) [50,60) [70,80); a segment inside the highest splits it
	 * into a fifth: the lowest, [10,20), is forgotten, both parts of the split one kept.
	 */
	{ "split a hole with four kept",
	  8,
	  { S(0, 10), S(20, 10), S(40, 10), S(60, 10), S(80, 10), S(73, 2), S(75, 5), S(10, 10) },
	  57,
	  7,
	  0,
	  7 },
	/* The same inside the lowest: its own lower part is the one forgotten. */
	{ "split the lowest hole with four kept",
	  8,
	  { S(0, 10), S(20, 10), S(40, 10), S(60, 10), S(80, 10), S(13, 2), S(10, 3), S(15, 5) },
	  57,
	  7,
	  0,
	  7 },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcp_case *c = &cases[i];
		struct wire_tcp t = { 0 };
		uint64_t nb = 0, lb = 0, rb = 0, ub = 0;

		for (int k = 0; k < c->n; k++) {
			struct wire_tcp_result r = wire_tcp_add(&t, &c->segs[k]);

			nb += r.new_bytes;
			lb += r.late_bytes;
			rb += r.resent_bytes;
			ub += r.unresolved_bytes;
		}
		fprintf(stderr, "case: %s\n", c->name);
		CHECK_U64(nb, c->new_bytes);
		CHECK_U64(lb, c->late_bytes);
		CHECK_U64(rb, c->resent_bytes);
		CHECK_U64(ub, c->unresolved_bytes);
	}
	return check_done("test_wire_tcp");
}
