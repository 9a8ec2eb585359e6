/*
 * Unit tests for tunbed-traffic's --pairs file (traffic/pairs.c): the pairs a file says, in its
 * order, and every refusal naming the line (test_traffic_options has --pairs on the command
 * line).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "log.h"
#include "pairs.h"
#include "traffic_limits.h"

static struct traffic_pair out[TRAFFIC_PAIRS_MAX];

static int parse(const char *text, bool any, unsigned *n, struct line_error *err)
{
	return pairs_parse(text, strlen(text), any, out, n, err);
}

static const char *fmt(const struct netaddr *a)
{
	static char buf[4][NETADDR_STRLEN];
	static int i;

	return netaddr_format(a, buf[i++ % 4]);
}

static void test_good(void)
{
	struct line_error err;
	unsigned n;

	CHECK_INT(parse("# client site, server site\n"
			"198.18.64.1 198.18.128.1\n"
			"\n"
			"   \t\n"
			"\t198.18.64.2\t 198.18.128.2   # tunnel 2\r\n"
			"2001:2:0:4000::1 2001:2:0:8000::1",
			false, &n, &err),
		  0);
	CHECK_INT(n, 3);
	CHECK_STR(fmt(&out[0].local), "198.18.64.1");
	CHECK_STR(fmt(&out[0].remote), "198.18.128.1");
	CHECK_STR(fmt(&out[1].local), "198.18.64.2");
	CHECK_STR(fmt(&out[1].remote), "198.18.128.2");
	CHECK_INT(out[2].local.family, AF_INET6);
	CHECK_STR(fmt(&out[2].remote), "2001:2:0:8000::1");
	/* Outside the ranges only with any_address. */
	CHECK_INT(parse("10.0.0.1 10.0.0.2\n", true, &n, &err), 0);
	CHECK_INT(n, 1);
}

static void test_bad(void)
{
	static const struct {
		const char *text;
		int line;
		const char *msg;
	} rows[] = {
		{ "", 0, "no pairs: expected lines of 'LOCAL REMOTE'" },
		{ "# nothing\n\n", 0, "no pairs: expected lines of 'LOCAL REMOTE'" },
		{ "198.18.64.1\n", 1, "expected 'LOCAL REMOTE': two addresses, found one" },
		{ "198.18.64.1 198.18.128.1\n198.18.64.2 198.18.128.2 198.18.0.1\n", 2,
		  "expected 'LOCAL REMOTE': two addresses, found more" },
		{ "\n\nhost 198.18.128.1\n", 3,
		  "bad local address 'host': expected an IPv4 or IPv6 address" },
		{ "198.18.64.1 198.18.128.1/24\n", 1,
		  "bad remote address '198.18.128.1/24': expected an IPv4 or IPv6 address" },
		{ "198.18.64.1 2001:2::1\n", 1,
		  "local 198.18.64.1 and remote 2001:2::1 are not of one family" },
		{ "10.0.0.1 198.18.128.1\n", 1,
		  "local address 10.0.0.1 is outside the benchmarking ranges 198.18.0.0/15 and "
		  "2001:2::/48 (--any-address allows it)" },
		{ "2001:2::1 2001:db8::1\n", 1,
		  "remote address 2001:db8::1 is outside the benchmarking ranges 198.18.0.0/15 "
		  "and 2001:2::/48 (--any-address allows it)" },
	};
	struct line_error err;
	unsigned n;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK_ROW(parse(rows[i].text, false, &n, &err) == -EINVAL, rows[i].text);
		CHECK_ROW(err.line == rows[i].line, rows[i].text);
		CHECK_ROW(strcmp(err.msg, rows[i].msg) == 0, rows[i].text);
		if (strcmp(err.msg, rows[i].msg))
			fprintf(stderr, "  got '%s'\n", err.msg);
	}
	/* A NUL inside a line would hide the rest of it. */
	CHECK_INT(pairs_parse("198.18.64.1 198.18.128.1\n198.18.64.2\0 10.0.0.1\n", 46, false, out,
			      &n, &err),
		  -EINVAL);
	CHECK_INT(err.line, 2);
	CHECK_STR(err.msg, "a NUL byte: not a text file");
}

/* The limits: a line past TRAFFIC_PAIRS_LINE_MAX, a pair past TRAFFIC_PAIRS_MAX. */
static void test_limits(void)
{
	size_t size = (size_t)(TRAFFIC_PAIRS_MAX + 1) * 32 + TRAFFIC_PAIRS_LINE_MAX + 2;
	char *text = malloc(size), *p = text;
	struct line_error err;
	unsigned n;

	CHECK(text != NULL);
	if (!text)
		return;
	memset(text, ' ', TRAFFIC_PAIRS_LINE_MAX);
	memcpy(text, "198.18.64.1 198.18.128.1 #", 26);
	text[TRAFFIC_PAIRS_LINE_MAX] = '\0';
	CHECK_INT(parse(text, false, &n, &err), 0);
	text[TRAFFIC_PAIRS_LINE_MAX] = ' ';
	text[TRAFFIC_PAIRS_LINE_MAX + 1] = '\0';
	CHECK_INT(parse(text, false, &n, &err), -EINVAL);
	CHECK_INT(err.line, 1);
	CHECK_STR(err.msg, "line longer than 256 bytes");

	for (unsigned i = 0; i < TRAFFIC_PAIRS_MAX; i++)
		p += sprintf(p, "198.18.%u.%u 198.19.%u.%u\n", 64 + i / 256, i % 256, i / 256,
			     i % 256);
	CHECK_INT(parse(text, false, &n, &err), 0);
	CHECK_INT(n, TRAFFIC_PAIRS_MAX);
	CHECK_STR(fmt(&out[TRAFFIC_PAIRS_MAX - 1].remote), "198.19.63.255");
	/* Comments past the last pair are not pairs. */
	p += sprintf(p, "# the end\n");
	CHECK_INT(parse(text, false, &n, &err), 0);
	sprintf(p, "198.18.200.1 198.19.200.1\n");
	CHECK_INT(parse(text, false, &n, &err), -EINVAL);
	CHECK_INT(err.line, TRAFFIC_PAIRS_MAX + 2);
	CHECK_STR(err.msg, "more than 16384 pairs: one a tunnel, as many as gregw's table holds");
	free(text);
}

int main(void)
{
	log_init("tunbed-traffic", LOG_LEVEL_WARN);
	test_good();
	test_bad();
	test_limits();
	return check_done("test_traffic_pairs");
}
