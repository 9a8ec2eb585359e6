/*
 * Unit tests for traffic/udpsched.c on a simulated clock: slots due at their times, the first
 * at once, none at or after the end; sessions taking turns, whose shares add up to rate x time
 * exactly for rates and sessions that do not divide each other, fewer datagrams a second than
 * sessions included; passing and skipping late slots; the exact time of the next slots; and
 * senders waking at uneven times, starting after the test did, that offer rate x time.
 */
#include <stdlib.h>

#include "check.h"
#include "udpsched.h"

enum {
	US = 1000,
	MS = 1000000,
};

#define SEC 1000000000ull

/* An arbitrary clock origin, so that nothing depends on the clock starting at 0. */
static const uint64_t T0 = 987654321000ull;

/* A session of a rate num / den a second, turn of turns, from T0 to end. */
static struct udpsched sched(uint64_t num, uint64_t den, uint32_t turn, uint32_t turns,
			     uint64_t end)
{
	struct udpsched s;

	udpsched_init(&s, (struct udpsched_rate){ num, den, turn, turns }, T0, end);
	return s;
}

/* ceil(num / den x ns / 10^9), written apart from udpsched.c: whole seconds and the rest, so
 * that no product leaves 64 bits. */
static uint64_t slots_in(uint64_t num, uint64_t den, uint64_t ns)
{
	uint64_t rest = ns % SEC * num, c = ns / SEC * num + rest / SEC;

	return c / den + (c % den || rest % SEC ? 1 : 0);
}

static void test_due(void)
{
	struct udpsched s = sched(1000, 1, 0, 1, UINT64_MAX);

	/* Before the start nothing is due; slot 0 at once, slot 1 at 1 ms. */
	CHECK_U64(udpsched_due(&s, T0 - 1), 0);
	CHECK_U64(udpsched_due(&s, T0), 1);
	CHECK_U64(udpsched_due(&s, T0 + MS - 1), 1);
	CHECK_U64(udpsched_due(&s, T0 + MS), 2);
	CHECK_U64(udpsched_due(&s, T0 + SEC - 1), 1000);
	CHECK_U64(udpsched_total(&s, T0 + 10 * SEC + MS / 2), 10001);
	udpsched_pass(&s, 3);
	CHECK_U64(udpsched_due(&s, T0 + 2 * MS), 0);
	CHECK_U64(udpsched_due(&s, T0 + 5 * MS), 3);
	CHECK_U64(udpsched_total(&s, T0 + 5 * MS), 6);

	/* With an end, the slots due before it: a second at 1000 a second is 1000 of them, the
	 * one due exactly at the end is not, and nothing before the start. */
	s = sched(1000, 1, 0, 1, T0 + SEC);
	CHECK_U64(udpsched_total(&s, T0 + SEC - 1), 1000);
	CHECK_U64(udpsched_total(&s, T0 + SEC), 1000);
	CHECK_U64(udpsched_total(&s, T0 + 10 * SEC), 1000);
	s = sched(1000, 1, 0, 1, T0);
	CHECK_U64(udpsched_total(&s, T0 + SEC), 0);
	/* An end just after a slot takes it. */
	s = sched(10, 1, 0, 1, T0 + 900 * MS + 1);
	CHECK_U64(udpsched_total(&s, T0 + SEC), 10);
}

/* Turns: 1000 a second over 3 sessions is one stream, a slot a millisecond, dealt in turn. */
static void test_turns(void)
{
	struct udpsched s1 = sched(1000, 3, 1, 3, T0 + 3 * SEC);
	uint64_t share[3];

	CHECK_U64(udpsched_total(&s1, T0), 0);
	CHECK_U64(udpsched_total(&s1, T0 + MS - 1), 0);
	CHECK_U64(udpsched_total(&s1, T0 + MS), 1);
	CHECK_U64(udpsched_total(&s1, T0 + 4 * MS - 1), 1);
	CHECK_U64(udpsched_total(&s1, T0 + 4 * MS), 2);
	CHECK_U64(udpsched_at(&s1, 1), T0 + MS);
	CHECK_U64(udpsched_at(&s1, 2), T0 + 4 * MS);
	/* 1 s: 1000 in all, the first session's slot at 999 ms the last; 3 s: 1000 each, the
	 * count a double can get wrong by one at the end. */
	for (uint32_t k = 0; k < 3; k++) {
		struct udpsched a = sched(1000, 3, k, 3, T0 + SEC),
				b = sched(1000, 3, k, 3, T0 + 3 * SEC);

		share[k] = udpsched_total(&a, T0 + 4 * SEC);
		CHECK_ROW(udpsched_total(&b, T0 + 4 * SEC) == 1000, "1000 / 3 a second, 3 s");
	}
	CHECK_U64(share[0], 334);
	CHECK_U64(share[1], 333);
	CHECK_U64(share[2], 333);

	/* Fewer datagrams a second than sessions: 5 a second over 10, for 1 s and for 3 s. */
	for (uint32_t k = 0; k < 10; k++) {
		struct udpsched a = sched(5, 10, k, 10, T0 + SEC),
				b = sched(5, 10, k, 10, T0 + 3 * SEC);

		CHECK_ROW(udpsched_total(&a, T0 + SEC) == (k < 5), "5 a second, 10 sessions, 1 s");
		CHECK_ROW(udpsched_total(&b, T0 + 3 * SEC) == (k < 5 ? 2 : 1),
			  "5 a second, 10 sessions, 3 s");
	}
}

/* Over rates, session counts and times that divide nothing: the shares add up to
 * ceil(rate x time) of the stream, and differ by at most one, the first turns first. */
static void test_shares(void)
{
	static const struct {
		uint64_t num, den; /* the stream's rate */
	} rates[] = { { 1, 1 },	      { 3, 1 },	       { 15, 2 },
		      { 1000, 1 },    { 33333, 1 },    { 1488095, 10 },
		      { 1000000, 1 }, { 14880952, 1 }, { 100000000, 1 } };
	static const uint32_t turns[] = { 1, 2, 3, 7, 64, 10000 };
	static const uint64_t times[] = { 100 * MS, SEC, 3 * SEC, 7 * SEC + 333 * MS + 1,
					  3600 * SEC };

	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (size_t n = 0; n < sizeof(turns) / sizeof(turns[0]); n++) {
			for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
				uint64_t sum = 0, prev = UINT64_MAX, first = 0;
				int ok = 1;

				for (uint32_t k = 0; k < turns[n]; k++) {
					/* Each session at the stream's rate / turns. */
					struct udpsched s =
						sched(rates[r].num, rates[r].den * turns[n], k,
						      turns[n], T0 + times[t]);
					uint64_t got = udpsched_total(&s, UINT64_MAX);

					if (k == 0)
						first = got;
					ok &= got <= prev && first - got <= 1;
					prev = got;
					sum += got;
				}
				CHECK_ROW(sum == slots_in(rates[r].num, rates[r].den, times[t]),
					  "the shares add up to ceil(rate x time)");
				CHECK_ROW(
					ok,
					"the shares differ by one at most, the first turns first");
			}
		}
	}
}

static void test_skip_late(void)
{
	struct udpsched s = sched(1000, 1, 0, 1, UINT64_MAX);

	/* Less than the backlog since the start: nothing is late. */
	CHECK_U64(udpsched_skip_late(&s, T0 + MS, 2 * MS), 0);
	/* At 10 ms, slots 0-8 were due by 8 ms: skipped, 9 and 10 still due. */
	CHECK_U64(udpsched_skip_late(&s, T0 + 10 * MS, 2 * MS), 9);
	CHECK_U64(udpsched_due(&s, T0 + 10 * MS), 2);
	CHECK_U64(udpsched_skip_late(&s, T0 + 10 * MS, 2 * MS), 0);
	udpsched_pass(&s, 2);
	CHECK_U64(udpsched_skip_late(&s, T0 + 11 * MS, 2 * MS), 0);
	CHECK_U64(udpsched_due(&s, T0 + 11 * MS), 1);
}

static void test_at(void)
{
	static const struct {
		uint64_t num, den;
	} rates[] = { { 1, 1 },		{ 3, 1 },	 { 15, 2 },	    { 1000, 1 },
		      { 333333, 10 },	{ 1488095, 10 }, { 1000000, 1 },    { 14880952, 1 },
		      { 100000000, 1 }, { 1000, 3 },	 { 1000000, 11200 } };
	static const uint32_t turns[] = { 1, 3, 64 };
	struct udpsched s = sched(1000, 1, 0, 1, UINT64_MAX);

	CHECK_U64(udpsched_at(&s, 1), T0);
	CHECK_U64(udpsched_at(&s, 64), T0 + 63 * MS);
	udpsched_pass(&s, 5);
	CHECK_U64(udpsched_at(&s, 1), T0 + 5 * MS);
	/* Exact at every rate and turn: k more are due at that time, and not a nanosecond
	 * before. */
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		for (size_t n = 0; n < sizeof(turns) / sizeof(turns[0]); n++) {
			s = sched(rates[i].num, rates[i].den, turns[n] - 1, turns[n], UINT64_MAX);
			for (uint64_t passed = 0; passed < 5000; passed += 1 + passed / 3) {
				for (uint64_t k = 1; k <= 64; k *= 4) {
					uint64_t at;

					s.passed = passed;
					at = udpsched_at(&s, k);
					CHECK_ROW(udpsched_due(&s, at) >= k &&
							  udpsched_due(&s, at - 1) < k,
						  "due exactly at udpsched_at");
				}
			}
		}
	}
	/* Beyond the clock: the largest time, not a wrapped one. */
	s = sched(1, 1000000, 0, 1, UINT64_MAX);
	s.passed = UINT64_MAX / 2;
	CHECK_U64(udpsched_at(&s, 1), UINT64_MAX);
}

/*
 * Senders that start 50 us after the test did (a thread's start) and wake at uneven times
 * (up to 3 ms apart, and late) until the test's end, sending what is due and skipping what
 * is older than 2 ms: the slots sent and skipped are the ceil(rate x time) of the schedule's
 * span, rate x time of the test when a slot lasts longer than the start took, and with
 * wake-ups within the backlog nothing is skipped. Three sessions of one stream take turns.
 */
static void test_sender(void)
{
	static const struct {
		uint64_t num, den;
		uint32_t turns;
		uint64_t test_ns, want; /* 0: the schedule's span */
	} rows[] = {
		{ 10, 1, 1, SEC, 10 },		{ 10, 1, 1, 3 * SEC, 30 },
		{ 10, 3, 3, SEC, 10 },		{ 9999, 10, 1, 3 * SEC, 3000 },
		{ 1488095, 10, 1, 3 * SEC, 0 }, { 2000000, 1, 1, 3 * SEC, 0 },
		{ 2000000, 3, 3, 3 * SEC, 0 },
	};
	const uint64_t start = T0 + 50 * US;

	srand(7);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (int late_ms = 0; late_ms <= 3; late_ms += 3) {
			uint64_t end = T0 + rows[i].test_ns, sent = 0, skipped = 0;
			uint64_t want = rows[i].want ? rows[i].want
						     : slots_in(rows[i].num * rows[i].turns,
								rows[i].den, end - start);

			for (uint32_t k = 0; k < rows[i].turns; k++) {
				struct udpsched s;
				uint64_t now = start;

				udpsched_init(&s,
					      (struct udpsched_rate){ rows[i].num, rows[i].den, k,
								      rows[i].turns },
					      start, end);
				while (now < end) {
					now += (uint64_t)(rand() % (1 + (late_ms ? 3 * MS : MS))) +
					       US;
					if (now > end)
						now = end;
					skipped += udpsched_skip_late(&s, now, 2 * MS);
					sent += udpsched_due(&s, now);
					udpsched_pass(&s, udpsched_due(&s, now));
				}
			}
			CHECK_ROW(sent + skipped == want, "every slot of the test dealt with");
			CHECK_ROW(late_ms || skipped == 0, "on time: nothing skipped");
		}
	}
}

int main(void)
{
	test_due();
	test_turns();
	test_shares();
	test_skip_late();
	test_at();
	test_sender();
	return check_done("test_udpsched");
}
