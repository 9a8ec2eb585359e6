/*
 * Unit tests for common/clock.c: nanoseconds as seconds, timespec conversions both ways, and
 * the monotonic clock moving forward.
 */
#include "check.h"
#include "clock.h"

static void test_secs(void)
{
	static const struct {
		const char *name;
		uint64_t ns;
		double want;
	} rows[] = {
		{ "zero", 0, 0.0 },
		{ "one ns", 1, 1e-9 },
		{ "one ms", NSEC_PER_MSEC, 1e-3 },
		{ "one s", NSEC_PER_SEC, 1.0 },
		{ "1.5 s", 1500000000, 1.5 },
		{ "a day", 86400ull * NSEC_PER_SEC, 86400.0 },
		{ "max", UINT64_MAX, 18446744073.709551615 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double got = clock_secs(rows[i].ns), err = got - rows[i].want;

		/* What the reports computed before: the same division, so the same double. */
		CHECK_ROW(got == (double)rows[i].ns / 1e9, rows[i].name);
		CHECK_ROW((err < 0 ? -err : err) <= 1e-15 * rows[i].want, rows[i].name);
	}
}

static void test_ts(void)
{
	static const uint64_t rows[] = {
		0, 1, NSEC_PER_SEC - 1, NSEC_PER_SEC, 1500000000, 86400ull * NSEC_PER_SEC + 7
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct timespec ts = clock_ts_from_ns(rows[i]);

		CHECK_U64(clock_ns_from_ts(&ts), rows[i]);
		CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < NSEC_PER_SEC);
	}
}

static void test_mono(void)
{
	uint64_t a = clock_mono_ns(), b = clock_mono_ns();

	CHECK(a > 0);
	CHECK(b >= a);
}

int main(void)
{
	test_secs();
	test_ts();
	test_mono();
	return check_done("test_clock");
}
