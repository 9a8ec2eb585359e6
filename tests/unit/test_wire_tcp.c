/*
 * Unit tests of wire_tcp: segments in order, retransmitted, late (reordered, or resent after
 * a loss upstream, told apart by the IPv4 identification), landing inside a hole, partly new,
 * with SYN, across the 32-bit wrap, and more holes than remembered.
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
	uint64_t new_bytes, late_bytes, resent_bytes;
};

static const struct tcp_case cases[] = {
	{ "in order", 3, { S(100, 10), S(110, 10), S(120, 10) }, 30, 0, 0 },
	{ "SYN, then data", 3, { { 99, 0, true, false, 0 }, S(100, 10), S(110, 10) }, 20, 0, 0 },
	{ "retransmitted", 3, { S(100, 10), S(110, 10), S(100, 10) }, 20, 0, 0 },
	{ "late, no identification", 3, { S(100, 10), S(120, 10), S(110, 10) }, 30, 10, 0 },
	{ "late, reordered", 3, { I(100, 10, 1), I(120, 10, 3), I(110, 10, 2) }, 30, 10, 0 },
	{ "late, resent after a loss",
	  3,
	  { I(100, 10, 1), I(120, 10, 3), I(110, 10, 4) },
	  30,
	  10,
	  10 },
	{ "identification wraps",
	  3,
	  { I(100, 10, 65534), I(120, 10, 65535), I(110, 10, 2) },
	  30,
	  10,
	  10 },
	{ "late, then sent again",
	  4,
	  { S(100, 10), S(120, 10), S(110, 10), S(110, 10) },
	  30,
	  10,
	  0 },
	{ "inside a hole", 4, { S(100, 10), S(140, 10), S(120, 5), S(110, 30) }, 50, 30, 0 },
	{ "partly new", 2, { S(100, 10), S(105, 10) }, 15, 0, 0 },
	{ "partly new, filling a hole", 3, { S(100, 10), S(120, 10), S(110, 30) }, 40, 10, 0 },
	{ "across the wrap", 3, { S(0xfffffff0u, 16), S(10, 6), S(0, 10) }, 32, 10, 0 },
	/* Five holes: the first is forgotten, so its bytes count as retransmitted. */
	{ "more holes than remembered",
	  8,
	  { S(0, 10), S(20, 10), S(40, 10), S(60, 10), S(80, 10), S(100, 10), S(10, 10),
	    S(30, 10) },
	  70,
	  10,
	  0 },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcp_case *c = &cases[i];
		struct wire_tcp t = { 0 };
		uint64_t nb = 0, lb = 0, rb = 0;

		for (int k = 0; k < c->n; k++) {
			struct wire_tcp_result r = wire_tcp_add(&t, &c->segs[k]);

			nb += r.new_bytes;
			lb += r.late_bytes;
			rb += r.resent_bytes;
		}
		fprintf(stderr, "case: %s\n", c->name);
		CHECK_U64(nb, c->new_bytes);
		CHECK_U64(lb, c->late_bytes);
		CHECK_U64(rb, c->resent_bytes);
	}
	return check_done("test_wire_tcp");
}
