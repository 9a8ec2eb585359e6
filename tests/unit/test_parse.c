/*
 * Unit tests for common/parse.c: integers, sizes, rates, booleans and CPU lists, and rates
 * and CPU lists formatted back.
 */
#include <errno.h>

#include "check.h"
#include "parse.h"

static void test_u64(void)
{
	static const struct {
		const char *in;
		uint64_t min, max;
		int rc;
		uint64_t want;
	} rows[] = {
		{ "0", 0, 10, 0, 0 },
		{ "10", 0, 10, 0, 10 },
		{ "11", 0, 10, -ERANGE, 0 },
		{ "18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX },
		{ "18446744073709551616", 0, UINT64_MAX, -ERANGE, 0 },
		{ "", 0, 10, -EINVAL, 0 },
		{ "-1", 0, 10, -EINVAL, 0 },
		{ "+1", 0, 10, -EINVAL, 0 },
		{ " 1", 0, 10, -EINVAL, 0 },
		{ "1 ", 0, 10, -EINVAL, 0 },
		{ "0x10", 0, 100, -EINVAL, 0 },
		{ "1500", 68, 65535, 0, 1500 },
		{ "67", 68, 65535, -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t v = 0;
		int rc = parse_u64(rows[i].in, rows[i].min, rows[i].max, &v);

		CHECK_ROW(rc == rows[i].rc, rows[i].in);
		if (rc == 0)
			CHECK_ROW(v == rows[i].want, rows[i].in);
	}
	CHECK_INT(parse_u64(NULL, 0, 1, &(uint64_t){ 0 }), -EINVAL);
}

static void test_size(void)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t want;
	} rows[] = {
		{ "0", 0, 0 },
		{ "1500", 0, 1500 },
		{ "64k", 0, 65536 },
		{ "64K", 0, 65536 },
		{ "64kb", 0, 65536 },
		{ "64KiB", 0, 65536 },
		{ "1m", 0, 1 << 20 },
		{ "2g", 0, 2ull << 30 },
		{ "100b", 0, 100 },
		{ "1.5k", -EINVAL, 0 },
		{ "k", -EINVAL, 0 },
		{ "12q", -EINVAL, 0 },
		{ "17179869184g", -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t v = 0;
		int rc = parse_size(rows[i].in, &v);

		CHECK_ROW(rc == rows[i].rc, rows[i].in);
		if (rc == 0)
			CHECK_ROW(v == rows[i].want, rows[i].in);
	}
}

static void test_rate(void)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t want;
	} rows[] = {
		{ "1gbit", 0, 1000000000 },
		{ "1G", 0, 1000000000 },
		{ "2.5gbit", 0, 2500000000 },
		{ "100mbit", 0, 100000000 },
		{ "8kbit", 0, 8000 },
		{ "1000000", 0, 1000000 },
		{ "1tbit", 0, 1000000000000ull },
		{ "0", -EINVAL, 0 },
		{ "0.1", -EINVAL, 0 },
		{ "-1g", -EINVAL, 0 },
		{ "1e9", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 },
		{ "1gbps", -EINVAL, 0 },
		{ "10 pigeons", -EINVAL, 0 },
		{ "99999999999t", -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t v = 0;
		int rc = parse_rate(rows[i].in, &v);

		CHECK_ROW(rc == rows[i].rc, rows[i].in);
		if (rc == 0)
			CHECK_ROW(v == rows[i].want, rows[i].in);
	}
}

static void test_format_rate(void)
{
	static const struct {
		uint64_t in;
		const char *want;
	} rows[] = {
		{ 1000000000, "1gbit" }, { 2500000000, "2.5gbit" }, { 100000000, "100mbit" },
		{ 999, "999bit" },	 { 8000, "8kbit" },	    { 1500000, "1.5mbit" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK(format_rate(rows[i].in, buf, sizeof(buf)) > 0);
		CHECK_STR(buf, rows[i].want);
	}
	CHECK_INT(format_rate(1000000000, buf, 3), -ENOSPC);
}

static void test_format_rate_text(void)
{
	static const struct {
		double in;
		const char *want;
	} rows[] = {
		{ 2.56e9, "2.56 Gbit/s" },    { 1e9, "1.00 Gbit/s" },
		{ 12.346e9, "12.35 Gbit/s" }, { 999.96e6, "1000.0 Mbit/s" },
		{ 1e6, "1.0 Mbit/s" },	      { 100.04e6, "100.0 Mbit/s" },
		{ 999999, "1000 kbit/s" },    { 1500, "2 kbit/s" },
		{ 400, "0 kbit/s" },	      { 0, "0 kbit/s" },
	};
	char buf[32], small[6];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK_ROW(format_rate_text(rows[i].in, buf, sizeof(buf)) == buf, rows[i].want);
		CHECK_STR(buf, rows[i].want);
	}
	/* Cut like snprintf, still a string. */
	CHECK_STR(format_rate_text(2.56e9, small, sizeof(small)), "2.56 ");
}

static void test_bool(void)
{
	bool b = false;

	CHECK_INT(parse_bool("on", &b), 0);
	CHECK(b);
	CHECK_INT(parse_bool("No", &b), 0);
	CHECK(!b);
	CHECK_INT(parse_bool("TRUE", &b), 0);
	CHECK(b);
	CHECK_INT(parse_bool("0", &b), 0);
	CHECK(!b);
	CHECK_INT(parse_bool("maybe", &b), -EINVAL);
	CHECK_INT(parse_bool("", &b), -EINVAL);
}

static void test_cpulist(void)
{
	cpu_set_t set;
	char buf[64];

	CHECK_INT(parse_cpulist("0-3,6", &set), 5);
	CHECK(CPU_ISSET(0, &set) && CPU_ISSET(3, &set) && CPU_ISSET(6, &set));
	CHECK(!CPU_ISSET(4, &set));
	CHECK(format_cpulist(&set, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "0-3,6");
	CHECK_INT(parse_cpulist("1", &set), 1);
	CHECK_INT(parse_cpulist("3-1", &set), -EINVAL);
	CHECK_INT(parse_cpulist("", &set), -EINVAL);
	CHECK_INT(parse_cpulist("1,", &set), -EINVAL);
	CHECK_INT(parse_cpulist("a", &set), -EINVAL);
	CHECK_INT(parse_cpulist("0-", &set), -EINVAL);
	CHECK_INT(parse_cpulist("1024", &set), -ERANGE);
	CHECK_INT(parse_cpulist("0,1,0", &set), 2);
	CHECK(format_cpulist(&set, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "0-1");
	CHECK_INT(format_cpulist(&set, buf, 2), -ENOSPC);
	{
		int order[4];
		unsigned n;

		/* As listed, ranges ascending, a repeat kept once, at most max. */
		CHECK_INT(parse_cpulist_ordered("3,1-2,0,1", &set, order, 4, &n), 4);
		CHECK_INT((int)n, 4);
		CHECK(order[0] == 3 && order[1] == 1 && order[2] == 2 && order[3] == 0);
		CHECK_INT(parse_cpulist_ordered("1,0", &set, order, 4, &n), 2);
		CHECK(n == 2 && order[0] == 1 && order[1] == 0);
		CHECK_INT(parse_cpulist_ordered("5-9", &set, order, 2, &n), 5);
		CHECK(n == 2 && order[0] == 5 && order[1] == 6);
		CHECK_INT(parse_cpulist_ordered("2-1", &set, order, 4, &n), -EINVAL);
	}
}

int main(void)
{
	test_u64();
	test_size();
	test_rate();
	test_format_rate();
	test_format_rate_text();
	test_bool();
	test_cpulist();
	return check_done("test_parse");
}
