/*
 * Unit tests of wire_tcp: segments in order, lost and retransmitted, reordered, landing
 * inside a hole, partly new, with SYN, across the 32-bit wrap, and more holes than remembered.
 */
#include "check.h"
#include "wire_tcp.h"

struct seg {
	uint32_t seq, len;
	bool syn;
};

struct tcp_case {
	const char *name;
	int n;
	struct seg segs[8];
	uint64_t new_bytes, reordered_bytes;
};

static const struct tcp_case cases[] = {
	{ "in order", 3, { { 100, 10, false }, { 110, 10, false }, { 120, 10, false } }, 30, 0 },
	{ "SYN, then data", 3, { { 99, 0, true }, { 100, 10, false }, { 110, 10, false } }, 20, 0 },
	{ "retransmitted",
	  3,
	  { { 100, 10, false }, { 110, 10, false }, { 100, 10, false } },
	  20,
	  0 },
	{ "reordered", 3, { { 100, 10, false }, { 120, 10, false }, { 110, 10, false } }, 30, 10 },
	{ "reordered, then sent again",
	  4,
	  { { 100, 10, false }, { 120, 10, false }, { 110, 10, false }, { 110, 10, false } },
	  30,
	  10 },
	{ "inside a hole",
	  4,
	  { { 100, 10, false }, { 140, 10, false }, { 120, 5, false }, { 110, 30, false } },
	  50,
	  30 },
	{ "partly new", 2, { { 100, 10, false }, { 105, 10, false } }, 15, 0 },
	{ "across the wrap",
	  3,
	  { { 0xfffffff0u, 16, false }, { 10, 6, false }, { 0, 10, false } },
	  32,
	  10 },
	/* Five holes: the first is forgotten, so its bytes count as retransmitted. */
	{ "more holes than remembered",
	  8,
	  { { 0, 10, false },
	    { 20, 10, false },
	    { 40, 10, false },
	    { 60, 10, false },
	    { 80, 10, false },
	    { 100, 10, false },
	    { 10, 10, false },
	    { 30, 10, false } },
	  70,
	  10 },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcp_case *c = &cases[i];
		struct wire_tcp t = { 0 };
		uint64_t nb = 0, rb = 0;

		for (int k = 0; k < c->n; k++) {
			struct wire_tcp_result r =
				wire_tcp_add(&t, c->segs[k].seq, c->segs[k].len, c->segs[k].syn);

			nb += r.new_bytes;
			rb += r.reordered_bytes;
		}
		fprintf(stderr, "case: %s\n", c->name);
		CHECK_U64(nb, c->new_bytes);
		CHECK_U64(rb, c->reordered_bytes);
	}
	return check_done("test_wire_tcp");
}
