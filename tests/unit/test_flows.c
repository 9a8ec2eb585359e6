/*
 * Unit tests for the per-worker flow table and sequence accounting (gateway/flows.c,
 * gateway/stats.c): both directions of a flow share an entry, a full table counts instead
 * of growing, a client's flows spread over slots and source ports, and RFC 2890 numbers are
 * compared in serial arithmetic across the wrap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "flows.h"
#include "pkt.h"
#include "stats.h"

static void key_of(const char *src, const char *dst, uint16_t sport, uint16_t dport,
		   struct flow_key *k)
{
	struct pkt_spec s = { .family = AF_INET,
			      .src = src,
			      .dst = dst,
			      .proto = IPPROTO_TCP,
			      .sport = sport,
			      .dport = dport,
			      .tcp_flags = TCP_F_ACK };
	uint8_t pkt[128];
	size_t len = pkt_build(&s, pkt);
	struct ip_info ip;

	ip_parse(pkt, len, false, &ip);
	flow_key_from(pkt, len, &ip, k);
}

static void test_table(void)
{
	struct flow_table *t = calloc(1, sizeof(*t));
	struct flow_key a, b, c;
	struct flow_entry *e;
	unsigned got = 0;

	key_of("198.18.1.2", "198.18.3.2", 40000, 5201, &a);
	key_of("198.18.3.2", "198.18.1.2", 5201, 40000, &b);
	key_of("198.18.1.2", "198.18.3.2", 40001, 5201, &c);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	CHECK(memcmp(&a, &c, sizeof(a)) != 0);
	e = flow_get(t, &a);
	CHECK(e != NULL);
	CHECK(flow_get(t, &b) == e);
	CHECK(flow_get(t, &c) != e);
	/* Fill the table: every flow gets a slot or is counted as untracked, never lost. */
	for (unsigned i = 0; i < 2 * FLOW_TABLE_SIZE; i++) {
		struct flow_key k;

		key_of("198.18.1.2", "198.18.3.2", (uint16_t)(1000 + i), 80, &k);
		got += flow_get(t, &k) != NULL;
	}
	CHECK(got >= FLOW_TABLE_SIZE / 2 && got <= FLOW_TABLE_SIZE - 2);
	CHECK_U64(t->untracked, 2 * FLOW_TABLE_SIZE - got);
	free(t);
}

/*
 * Flows that differ in one port only (a client's sessions) spread over the table's slots
 * and the 8 UDP source ports about as random keys would: flow_hash's low bits pick both.
 */
static void test_hash_spread(void)
{
	unsigned slots[FLOW_TABLE_SIZE] = { 0 }, ports[8] = { 0 }, distinct = 0, lo = ~0u, hi = 0;

	for (unsigned i = 0; i < FLOW_TABLE_SIZE; i++) {
		struct flow_key k;
		uint32_t h;

		key_of("198.18.1.2", "198.18.3.2", (uint16_t)(40000 + i), 9400, &k);
		h = flow_hash(&k);
		CHECK(h != 0);
		distinct += slots[h & (FLOW_TABLE_SIZE - 1)]++ == 0;
		ports[h % 8]++;
	}
	/* Random keys fill 1 - 1/e of the slots (647 of 1024); a weak hash far fewer. */
	CHECK(distinct >= 560);
	for (unsigned i = 0; i < 8; i++) {
		lo = ports[i] < lo ? ports[i] : lo;
		hi = ports[i] > hi ? ports[i] : hi;
	}
	CHECK(lo >= 96 && hi <= 160); /* 128 each on average */

	/* Keys a weak hash (the ports XORed, the low bits of a sum) folds together: ports 64
	 * apart, servers 1024 addresses apart. */
	memset(slots, 0, sizeof(slots));
	distinct = 0;
	for (unsigned i = 0; i < FLOW_TABLE_SIZE; i++) {
		char dst[32];
		struct flow_key k;
		uint32_t h;

		snprintf(dst, sizeof(dst), "198.18.%u.2", (i % 64) * 4);
		key_of("198.18.1.2", dst, (uint16_t)(i / 64 << 6), 9400, &k);
		h = flow_hash(&k);
		distinct += slots[h & (FLOW_TABLE_SIZE - 1)]++ == 0;
	}
	CHECK(distinct >= 560);
}

static void test_seq(void)
{
	struct flow_entry e = { 0 };

	CHECK_INT(flow_seq(&e, 0xfffffffe), 0);
	CHECK_INT(flow_seq(&e, 0xffffffff), 0);
	CHECK_INT(flow_seq(&e, 1), 0);		/* across the wrap: still forward */
	CHECK_INT(flow_seq(&e, 0xffffffff), 1); /* below the highest: reordered */
	CHECK_INT(flow_seq(&e, 1), 2);		/* the highest again: duplicate */
	CHECK_INT(flow_seq(&e, 5), 0);
	CHECK_INT(e.last_seq, 5);
}

static void test_seq_extension(void)
{
	struct worker_stats s = { 0 };
	static const uint32_t seen[] = { 0xfffffff0, 0xfffffff1, 0xfffffff5, 0xfffffff3, 2, 3 };

	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		stats_seq(&s, seen[i]);
	CHECK_U64(s.ctr[STAT_SEQ_PACKETS], 6);
	CHECK_INT(s.seq_first, 0xfffffff0);
	CHECK_INT(s.seq_lo, 0);
	/* 3 is 19 numbers after 0xfffffff0: the span is 20 numbers of which 6 arrived. */
	CHECK_INT(s.seq_hi, 19);
}

int main(void)
{
	test_table();
	test_hash_spread();
	test_seq();
	test_seq_extension();
	return check_done("test_flows");
}
