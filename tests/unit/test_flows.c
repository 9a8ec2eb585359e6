/*
 * Unit tests for the per-worker flow table and sequence accounting (gateway/flows.c,
 * gateway/stats.c): both directions of a flow share an entry, a full table counts instead
 * of growing, a client's flows spread over slots and source ports, RFC 2890 numbers are
 * compared in serial arithmetic across the wrap, and the receive window: spoofed numbers
 * counted out of it, a restarted peer, a spoofed run undone, several workers' windows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "flows.h"
#include "gw_limits.h"
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

	CHECK_INT(flow_seq(&e, 0xfffffffe, 1), 0);
	CHECK_INT(flow_seq(&e, 0xffffffff, 1), 0);
	CHECK_INT(flow_seq(&e, 1, 1), 0);	   /* across the wrap: still forward */
	CHECK_INT(flow_seq(&e, 0xffffffff, 1), 1); /* below the highest: reordered */
	CHECK_INT(flow_seq(&e, 1, 1), 2);	   /* the highest again: duplicate */
	CHECK_INT(flow_seq(&e, 5, 1), 0);
	CHECK_INT(e.last_seq, 5);
	/* A window that restarted (a new era) judges the flow afresh: its numbers start again. */
	CHECK_INT(flow_seq(&e, 2, 2), 0);
	CHECK_INT(flow_seq(&e, 3, 2), 0);
	CHECK_INT(e.last_seq, 3);
}

/* Workers' stats for the sequence tests: n of them, and their windows of one tunnel (the
 * peers stats_seq takes). */
struct seq_bed {
	struct worker_stats w[3];
	struct seq_window win[3];
	unsigned n;
};

static struct seq_bed *bed_new(unsigned n)
{
	struct seq_bed *b = calloc(1, sizeof(*b));

	b->n = n;
	return b;
}

static unsigned add(struct seq_bed *b, unsigned worker, uint32_t seq)
{
	return stats_seq(&b->win[worker], &b->w[worker], b->win, b->n, seq);
}

static void summary(const struct seq_bed *b, struct seq_summary *sum)
{
	struct seq_era eras[3];

	for (unsigned i = 0; i < b->n; i++) {
		if (!stats_seq_read(&b->win[i].seq, &eras[i]))
			eras[i].id = 0;
	}
	stats_seq_merge(eras, b->n, sum);
}

static void test_seq_extension(void)
{
	struct seq_bed *b = bed_new(1);
	static const uint32_t seen[] = { 0xfffffff0, 0xfffffff1, 0xfffffff5, 0xfffffff3, 2, 3 };
	struct seq_summary sum;

	printf("case: extension across the wrap\n");
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		CHECK(add(b, 0, seen[i]));
	CHECK_U64(b->w[0].ctr[STAT_SEQ_PACKETS], 6);
	CHECK_INT(b->win[0].seq.first, 0xfffffff0);
	CHECK_INT(b->win[0].seq.lo, 0);
	/* 3 is 19 numbers after 0xfffffff0: the span is 20 numbers of which 6 arrived. */
	CHECK_INT(b->win[0].seq.hi, 19);
	summary(b, &sum);
	CHECK(sum.any);
	CHECK_INT(sum.lowest, 0xfffffff0);
	CHECK_INT(sum.highest, 3);
	CHECK_U64(sum.lost, 14);
	free(b);
}

/*
 * Spoofed numbers, far from the window and from each other, among the peer's: counted out
 * of the window and nothing else. Without the window they moved the extension by up to 2^31
 * each way every time: lowest above highest, lost in the billions.
 */
static void test_seq_spoofed(void)
{
	struct seq_bed *b = bed_new(1);
	struct seq_summary sum;
	uint32_t x = 12345;

	printf("case: spoofed numbers\n");
	for (uint32_t i = 0; i < 10000; i++) {
		CHECK(add(b, 0, i));
		if (i % 10 == 0)
			CHECK(!add(b, 0, 0x40000000u + i / 10 * 0x20000u));
	}
	CHECK_U64(b->w[0].ctr[STAT_SEQ_OUTSIDE], 1000);
	summary(b, &sum);
	CHECK_INT(sum.lowest, 0);
	CHECK_INT(sum.highest, 9999);
	CHECK_U64(sum.lost, 0);
	/* Random numbers: the few that land within the window move it at most SEQ_WINDOW each;
	 * none restarts it (a run needs 4 in a row, each near the one before). */
	for (uint32_t i = 10000; i < 20000; i++) {
		CHECK(add(b, 0, i));
		x = x * 1664525u + 1013904223u;
		add(b, 0, x);
	}
	CHECK(b->w[0].ctr[STAT_SEQ_OUTSIDE] >= 1000 + 9990);
	CHECK_U64(b->w[0].ctr[STAT_SEQ_RESYNCS], 0);
	summary(b, &sum);
	CHECK((int32_t)(sum.highest - sum.lowest) >= 19999);
	CHECK(sum.lost <= 10 * (uint64_t)SEQ_WINDOW);
	free(b);
}

/* A peer that restarted: its numbers start at 0 again, far below the window's top. After 4
 * of them the window restarts on them; the flow judges them afresh. */
static void test_seq_restart(void)
{
	struct seq_bed *b = bed_new(1);
	struct seq_summary sum;

	printf("case: a restarted peer\n");
	for (uint32_t i = 0; i < 100000; i++)
		add(b, 0, i);
	CHECK_INT(b->win[0].seq.id, 1);
	for (uint32_t i = 0; i < 10; i++)
		CHECK_INT(add(b, 0, i), i >= SEQ_RESYNC_RUN);
	CHECK_U64(b->w[0].ctr[STAT_SEQ_OUTSIDE], SEQ_RESYNC_RUN);
	CHECK_U64(b->w[0].ctr[STAT_SEQ_RESYNCS], 1);
	CHECK_INT(b->win[0].seq.id, 2);
	summary(b, &sum);
	CHECK_INT(sum.lowest, 0);
	CHECK_INT(sum.highest, 9);
	CHECK_U64(sum.lost, 0);
	free(b);
}

/* A spoofer's run of 4 moves the window; the peer's next 4 bring it back to the window it
 * had, with everything it had counted, and the run's numbers in it. */
static void test_seq_spoofed_run(void)
{
	struct seq_bed *b = bed_new(1);
	struct seq_summary sum;

	printf("case: a spoofed run, and the way back\n");
	for (uint32_t i = 0; i < 1000; i++)
		add(b, 0, i);
	for (uint32_t i = 0; i < SEQ_RESYNC_RUN; i++)
		CHECK(!add(b, 0, 0x40000000u + i));
	CHECK_INT(b->win[0].seq.id, 2);
	for (uint32_t i = 1000; i < 1010; i++)
		CHECK_INT(add(b, 0, i), i >= 1000 + SEQ_RESYNC_RUN);
	CHECK_INT(b->win[0].seq.id, 1);
	CHECK_U64(b->w[0].ctr[STAT_SEQ_OUTSIDE], 2 * SEQ_RESYNC_RUN);
	CHECK_U64(b->w[0].ctr[STAT_SEQ_RESYNCS], 2);
	summary(b, &sum);
	CHECK_INT(sum.lowest, 0);
	CHECK_INT(sum.highest, 1009);
	CHECK_U64(sum.lost, 0);
	free(b);
}

/*
 * Several workers each see their flows' numbers. One idle while the tunnel went on far beyond
 * its window takes the next number by the others' windows: no number out of the window. When
 * the peer restarts, the first worker to see 4 of its numbers restarts its window, and the
 * others join it.
 */
static void test_seq_workers(void)
{
	struct seq_bed *b = bed_new(3);
	struct seq_summary sum;

	printf("case: several workers\n");
	CHECK(add(b, 1, 1));
	for (uint32_t i = 0; i < 200000; i += 2)
		CHECK(add(b, 0, i));
	CHECK(add(b, 1, 200001));
	CHECK(add(b, 2, 200003)); /* its first number joins the others' era */
	CHECK_U64(b->w[1].ctr[STAT_SEQ_OUTSIDE], 0);
	CHECK_INT(b->win[1].seq.id, b->win[0].seq.id);
	CHECK_INT(b->win[2].seq.id, b->win[0].seq.id);
	summary(b, &sum);
	CHECK_INT(sum.lowest, 0);
	CHECK_INT(sum.highest, 200003);
	/* 200004 numbers, 100003 taken: the odd ones but three never came. */
	CHECK_U64(sum.lost, 200004 - 100003);
	/* The restart. */
	for (uint32_t i = 0; i < 8; i += 2)
		CHECK(!add(b, 0, i));
	CHECK_U64(b->w[0].ctr[STAT_SEQ_RESYNCS], 1);
	CHECK(add(b, 1, 9));
	CHECK(add(b, 1, 11));
	CHECK(add(b, 0, 10));
	CHECK_INT(b->win[1].seq.id, b->win[0].seq.id);
	CHECK_U64(b->w[1].ctr[STAT_SEQ_OUTSIDE], 0);
	/* Worker 2, idle since, keeps one number of the old era; the new one has more. */
	summary(b, &sum);
	CHECK_INT(sum.lowest, 0);
	CHECK_INT(sum.highest, 11);
	CHECK_U64(sum.lost, 12 - 7);
	free(b);
}

/* Superpacket sizes into their buckets, and the buckets' names. */
static void test_seg_buckets(void)
{
	static const struct {
		unsigned nseg, bucket;
		const char *name;
	} rows[] = {
		{ 0, 0, "1" },	    { 1, 0, "1" },
		{ 2, 1, "2" },	    { 3, 2, "3-4" },
		{ 4, 2, "3-4" },    { 5, 3, "5-8" },
		{ 8, 3, "5-8" },    { 9, 4, "9-16" },
		{ 16, 4, "9-16" },  { 17, 5, "17-32" },
		{ 32, 5, "17-32" }, { 33, 6, "33-64" },
		{ 64, 6, "33-64" }, { 65, 7, "65+" },
		{ 1000, 7, "65+" }, { UINT32_MAX, 7, "65+" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK_INT(stat_seg_bucket(rows[i].nseg), rows[i].bucket);
		CHECK_STR(stat_seg_bucket_name(stat_seg_bucket(rows[i].nseg)), rows[i].name);
	}
	CHECK_STR(stat_seg_bucket_name(STAT_SEG_BUCKETS), "?");
}

int main(void)
{
	test_seg_buckets();
	test_table();
	test_hash_spread();
	test_seq();
	test_seq_extension();
	test_seq_spoofed();
	test_seq_restart();
	test_seq_spoofed_run();
	test_seq_workers();
	return check_done("test_flows");
}
