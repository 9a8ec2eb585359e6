/*
 * Unit tests for common/opt.c's range check (opt_bench, opt_bench_addr): inside the
 * benchmarking ranges an address passes, outside it is refused with one line naming the value
 * and --any-address, unless --any-address was given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "opt.h"

/* Runs the check with stderr into a file; what it wrote in *line ("" if nothing). */
static int bench(const char *what, const char *val, bool prefix, bool any, char *line, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(2), rc;
	struct netprefix p;
	size_t n;

	if (netaddr_parse_prefix(val, &p)) {
		fprintf(stderr, "test row '%s' is not an address\n", val);
		exit(1);
	}
	dup2(fileno(f), 2);
	rc = prefix ? opt_bench(what, val, &p, any) : opt_bench_addr(what, val, &p.addr, any);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(line, 1, size - 1, f);
	line[n] = '\0';
	fclose(f);
	return rc;
}

static void test_bench(void)
{
	static const struct {
		const char *val;
		bool prefix; /* opt_bench on the prefix, else opt_bench_addr on the address */
		bool inside;
	} rows[] = {
		{ "198.18.0.1", false, true },
		{ "198.19.255.255", false, true },
		{ "198.17.255.255", false, false },
		{ "198.20.0.0", false, false },
		{ "10.1.2.3", false, false },
		{ "2001:2::1", false, true },
		{ "2001:2:0:ffff::1", false, true },
		{ "2001:3::1", false, false },
		{ "2001:db8::1", false, false },
		{ "198.18.0.0/15", true, true },
		{ "198.19.3.0/24", true, true },
		{ "198.18.0.0/14", true, false }, /* wider than the range */
		{ "0.0.0.0/0", true, false },
		{ "2001:2::/48", true, true },
		{ "2001:2::/47", true, false },
	};
	char line[512], want[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = bench("--remote", rows[i].val, rows[i].prefix, false, line, sizeof(line));

		CHECK_ROW(rc == (rows[i].inside ? 0 : -EINVAL), rows[i].val);
		if (rows[i].inside) {
			CHECK_ROW(line[0] == '\0', rows[i].val);
		} else {
			snprintf(want, sizeof(want),
				 "test_opt: --remote %s is outside the benchmarking ranges "
				 "198.18.0.0/15 and 2001:2::/48 (--any-address allows it)\n",
				 rows[i].val);
			CHECK_STR(line, want);
		}
		/* --any-address: everything passes, silently. */
		rc = bench("--remote", rows[i].val, rows[i].prefix, true, line, sizeof(line));
		CHECK_ROW(rc == 0 && line[0] == '\0', rows[i].val);
	}
	/* WHAT names the value as the tool's user knows it. */
	CHECK_INT(bench("server address", "192.0.2.1", false, false, line, sizeof(line)), -EINVAL);
	CHECK_STR(line, "test_opt: server address 192.0.2.1 is outside the benchmarking ranges "
			"198.18.0.0/15 and 2001:2::/48 (--any-address allows it)\n");
}

int main(void)
{
	log_init("test_opt", LOG_LEVEL_WARN);
	test_bench();
	return check_done("test_opt");
}
