/*
 * Unit tests for traffic/udpsched.c on a simulated clock: slots due at their times, passing
 * and skipping late ones, the exact time of the next slots at rates that do not divide a
 * second, and a sender waking at uneven times that offers exactly floor(pps * T) datagrams.
 */
#include <stdlib.h>

#include "check.h"
#include "udpsched.h"

enum {
	US = 1000,
	MS = 1000000,
	SEC = 1000000000,
};

/* An arbitrary clock origin, so that nothing depends on the clock starting at 0. */
static const uint64_t T0 = 987654321000ull;

static void test_due(void)
{
	struct udpsched s;

	udpsched_init(&s, 1000, T0);
	/* Before and at the start nothing is due; slot 0 at 1 ms. */
	CHECK_U64(udpsched_due(&s, T0 - 1), 0);
	CHECK_U64(udpsched_due(&s, T0), 0);
	CHECK_U64(udpsched_due(&s, T0 + MS - 1), 0);
	CHECK_U64(udpsched_due(&s, T0 + MS), 1);
	CHECK_U64(udpsched_due(&s, T0 + SEC), 1000);
	CHECK_U64(udpsched_total(&s, T0 + 10ull * SEC + MS / 2), 10000);
	udpsched_pass(&s, 3);
	CHECK_U64(udpsched_due(&s, T0 + 2 * MS), 0);
	CHECK_U64(udpsched_due(&s, T0 + 5 * MS), 2);
	CHECK_U64(udpsched_total(&s, T0 + 5 * MS), 5);
}

static void test_skip_late(void)
{
	struct udpsched s;

	udpsched_init(&s, 1000, T0);
	/* Less than the backlog since the start: nothing is late. */
	CHECK_U64(udpsched_skip_late(&s, T0 + MS, 2 * MS), 0);
	/* At 10 ms, slots 0-7 were due before 8 ms: skipped, 8 and 9 still due. */
	CHECK_U64(udpsched_skip_late(&s, T0 + 10 * MS, 2 * MS), 8);
	CHECK_U64(udpsched_due(&s, T0 + 10 * MS), 2);
	CHECK_U64(udpsched_skip_late(&s, T0 + 10 * MS, 2 * MS), 0);
	udpsched_pass(&s, 2);
	CHECK_U64(udpsched_skip_late(&s, T0 + 11 * MS, 2 * MS), 0);
	CHECK_U64(udpsched_due(&s, T0 + 11 * MS), 1);
}

static void test_at(void)
{
	static const double rates[] = { 1, 3, 7.5, 1000, 33333.3, 148809.5, 1e6, 14880952, 1e8 };
	struct udpsched s;

	udpsched_init(&s, 1000, T0);
	CHECK_U64(udpsched_at(&s, 1), T0 + MS);
	CHECK_U64(udpsched_at(&s, 64), T0 + 64 * MS);
	udpsched_pass(&s, 5);
	CHECK_U64(udpsched_at(&s, 1), T0 + 6 * MS);
	/* Exact at every rate: k more are due at that time, and not a nanosecond before. */
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		udpsched_init(&s, rates[i], T0);
		for (uint64_t passed = 0; passed < 5000; passed += 1 + passed / 3) {
			for (uint64_t k = 1; k <= 64; k *= 4) {
				uint64_t at;

				s.passed = passed;
				at = udpsched_at(&s, k);
				CHECK_ROW(udpsched_due(&s, at) >= k && udpsched_due(&s, at - 1) < k,
					  "due exactly at udpsched_at");
			}
		}
	}
}

/* A sender that wakes at uneven times (up to 3 ms apart, and late) and sends what is due,
 * skipping what is older than 2 ms: over T it sends floor(pps * T) less what it skipped,
 * and with wake-ups within the backlog it skips nothing. */
static void test_sender(void)
{
	static const double rates[] = { 10, 999.9, 148809.5, 2e6 };

	srand(7);
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		for (int late_ms = 0; late_ms <= 3; late_ms += 3) {
			struct udpsched s;
			uint64_t now = T0, end = T0 + 3ull * SEC, sent = 0, skipped = 0;

			udpsched_init(&s, rates[i], T0);
			while (now < end) {
				now += (uint64_t)(rand() % (1 + (late_ms ? 3 * MS : MS))) + US;
				if (now > end)
					now = end;
				skipped += udpsched_skip_late(&s, now, 2 * MS);
				sent += udpsched_due(&s, now);
				udpsched_pass(&s, udpsched_due(&s, now));
			}
			CHECK_ROW(sent + skipped == (uint64_t)(rates[i] * 3),
				  "every slot dealt with");
			CHECK_ROW(late_ms || skipped == 0, "on time: nothing skipped");
		}
	}
}

int main(void)
{
	test_due();
	test_skip_late();
	test_at();
	test_sender();
	return check_done("test_udpsched");
}
