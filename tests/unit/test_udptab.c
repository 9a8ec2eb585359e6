/*
 * Unit tests for traffic/udptab.c, the UDP sessions a server thread tracks: a session keeps
 * its slot, a test's slots are freed when its results are taken (many tests one after the
 * other never fill the table), a freed slot inside a chain does not split a live session,
 * datagrams after the results are late, and a slot silent for RESULTS_KEEP_S is taken over.
 */
#include <stdlib.h>

#include "check.h"
#include "clock.h"
#include "proto.h"
#include "udptab.h"

static const uint64_t keep_ns = (uint64_t)RESULTS_KEEP_S * NSEC_PER_SEC;

/* One datagram, numbered seq, of session of test at now; false if it went untracked. */
static bool datagram(struct udptab *t, uint64_t test, uint32_t session, uint64_t seq, uint64_t now)
{
	struct seqstat *st = udptab_get(t, test, session, now);

	if (st)
		seqstat_add(st, seq, now, now + 1000);
	return st != NULL;
}

/* Takes test's results: how many records, and their datagrams received in all. */
static uint32_t take(struct udptab *t, uint64_t test, uint64_t *received)
{
	static uint8_t out[PROTO_MAX_SESSIONS * PROTO_UDP_RESULT_LEN];
	uint32_t count = 0;
	size_t used = udptab_take(t, test, out, sizeof(out), &count);

	*received = 0;
	CHECK_U64(used, (uint64_t)count * PROTO_UDP_RESULT_LEN);
	for (uint32_t i = 0; i < count; i++) {
		struct proto_udp_result r;

		CHECK(proto_udp_result_parse(out + (size_t)i * PROTO_UDP_RESULT_LEN,
					     PROTO_UDP_RESULT_LEN, &r) == PROTO_UDP_RESULT_LEN);
		*received += r.received;
	}
	return count;
}

static void test_session(void)
{
	static struct udptab t;
	uint64_t got;

	CHECK_INT(udptab_init(&t), 0);
	for (uint64_t seq = 0; seq < 10; seq++) {
		CHECK(datagram(&t, 7, 3, seq, seq));
		CHECK(datagram(&t, 7, 4, seq, seq));
	}
	CHECK(udptab_get(&t, 7, 3, 20) == udptab_get(&t, 7, 3, 21));
	CHECK(udptab_get(&t, 7, 3, 20) != udptab_get(&t, 7, 4, 20));
	CHECK_INT(take(&t, 8, &got), 0);
	CHECK_INT(take(&t, 7, &got), 2);
	CHECK_U64(got, 20);
	/* Taken once: the slots are free, the test is over. */
	CHECK_INT(take(&t, 7, &got), 0);
	CHECK(!datagram(&t, 7, 3, 10, 30));
	CHECK_U64(t.late, 1);
	CHECK_U64(t.untracked, 0);
	udptab_fini(&t);
}

/*
 * The defect: slots were never freed, so that after some 4,000 sessions of earlier tests a
 * new test's sessions found none, and what they sent looked lost. Twelve tests of 1,000
 * sessions, then one of 3,000 and one of 4, each taken when it is over: every session of
 * every test is tracked, and every datagram counted.
 */
static void test_many_tests(void)
{
	static const struct {
		uint32_t sessions;
		uint64_t tests;
	} rows[] = { { 1000, 12 }, { 3000, 1 }, { 4, 1 } };
	static struct udptab t;
	uint64_t test = 0x1000, now = NSEC_PER_SEC, got;

	CHECK_INT(udptab_init(&t), 0);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		for (uint64_t k = 0; k < rows[r].tests; k++, test += 0x9e37) {
			uint64_t tracked = 0;

			for (uint64_t seq = 0; seq < 3; seq++) {
				for (uint32_t s = 0; s < rows[r].sessions; s++)
					tracked += datagram(&t, test, s, seq, now++);
			}
			CHECK_U64(tracked, 3ull * rows[r].sessions);
			CHECK_INT(take(&t, test, &got), rows[r].sessions);
			CHECK_U64(got, 3ull * rows[r].sessions);
		}
	}
	CHECK_U64(t.untracked, 0);
	udptab_fini(&t);
}

/*
 * Freeing leaves holes in probe chains: a session whose chain ran past a freed slot must
 * still find its own, not take the hole as a second slot.
 */
static void test_hole(void)
{
	static struct udptab t;
	uint32_t b = 0;
	unsigned home_a = udptab_home(1, 5);
	uint64_t got;

	CHECK_INT(udptab_init(&t), 0);
	/* A session of test 2 that starts probing where test 1's session 5 sits. */
	while (udptab_home(2, b) != home_a)
		b++;
	CHECK(datagram(&t, 1, 5, 0, 1));
	CHECK(datagram(&t, 2, b, 0, 2));
	CHECK_INT(take(&t, 1, &got), 1);
	CHECK(datagram(&t, 2, b, 1, 3));
	CHECK(datagram(&t, 3, 0, 0, 4)); /* whoever may take the hole */
	CHECK_INT(take(&t, 2, &got), 1);
	CHECK_U64(got, 2);
	udptab_fini(&t);
}

/*
 * A chain full of sessions heard from lately: one more is untracked. Silent for
 * RESULTS_KEEP_S (a test whose client never asked), their slots are taken over.
 */
static void test_full_chain(void)
{
	static struct udptab t;
	uint32_t s = 0, n = 0, extra;
	unsigned home = udptab_home(9, 0);

	CHECK_INT(udptab_init(&t), 0);
	/* SRV_UDP_PROBES sessions of test 9 whose chains start at one slot. */
	for (; n < SRV_UDP_PROBES; s++) {
		if (udptab_home(9, s) == home) {
			CHECK(datagram(&t, 9, s, 0, 1));
			n++;
		}
	}
	while (udptab_home(9, s) != home)
		s++;
	extra = s;
	CHECK(!datagram(&t, 9, extra, 0, 2));
	CHECK_U64(t.untracked, 1);
	CHECK(!datagram(&t, 9, extra, 0, 1 + keep_ns));
	CHECK(datagram(&t, 9, extra, 0, 2 + keep_ns));
	udptab_fini(&t);
}

int main(void)
{
	test_session();
	test_many_tests();
	test_hole();
	test_full_chain();
	return check_done("test_udptab");
}
