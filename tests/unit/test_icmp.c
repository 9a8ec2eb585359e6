/*
 * Unit tests for the ping probes' messages and statistics (traffic/icmp.c): echo requests as
 * RFC 792 and RFC 4443 lay them out, replies read back, every kind of reply that is not one
 * of ours refused with its error, and ping(8)'s figures on known round trips.
 */
#include <errno.h>
#include <math.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "check.h"
#include "icmp.h"
#include "inet.h"

static void test_build(void)
{
	struct icmp_probe pr = { .number = 0x12345, .test_id = 0x0123456789abcdefull };
	uint8_t b[ICMP_HLEN + 100];

	CHECK_INT(icmp_echo_build(b, sizeof(b), AF_INET, &pr, 56), ICMP_HLEN + 56);
	CHECK_INT(b[ICMP_TYPE_OFF], 8);
	CHECK_INT(b[ICMP_CODE_OFF], 0);
	/* The ping socket fills checksum and identifier. */
	CHECK_INT(load_be16(b + ICMP_CSUM_OFF), 0);
	CHECK_INT(load_be16(b + ICMP_ECHO_ID_OFF), 0);
	CHECK_INT(load_be16(b + ICMP_ECHO_SEQ_OFF), 0x2345);
	CHECK_U64(load_be32(b + 8), 0x54424943);
	CHECK_U64(load_be32(b + 12), 0x12345);
	CHECK_U64(load_be64(b + 16), 0x0123456789abcdefull);
	CHECK_INT(b[ICMP_HLEN + 16], 16);
	CHECK_INT(b[ICMP_HLEN + 55], 55);
	CHECK_INT(icmp_echo_build(b, sizeof(b), AF_INET6, &pr, 16), ICMP_HLEN + 16);
	CHECK_INT(b[ICMP_TYPE_OFF], 128);
	/* No room, a payload without room for our header or beyond a datagram, a family. */
	CHECK_INT(icmp_echo_build(b, ICMP_HLEN + 55, AF_INET, &pr, 56), -ENOSPC);
	CHECK_INT(icmp_echo_build(b, sizeof(b), AF_INET, &pr, 15), -EINVAL);
	CHECK_INT(icmp_echo_build(b, sizeof(b), AF_INET, &pr, 65500), -EINVAL);
	CHECK_INT(icmp_echo_build(b, sizeof(b), AF_UNIX, &pr, 56), -EINVAL);
}

/* A reply as the kernel hands it over: the request with its type changed. */
static size_t reply(uint8_t *b, size_t room, int family, uint32_t number, size_t payload)
{
	struct icmp_probe pr = { .number = number, .test_id = 42 };
	int len = icmp_echo_build(b, room, family, &pr, payload);

	b[ICMP_TYPE_OFF] = family == AF_INET6 ? 129 : 0;
	store_be16(b + ICMP_ECHO_ID_OFF, 0x9488);
	store_be16(b + ICMP_CSUM_OFF, 0x3e49);
	return (size_t)len;
}

static void test_parse(void)
{
	static const struct {
		const char *name;
		int family;
		size_t len; /* bytes handed over, from a reply of 56 bytes of payload */
		size_t at;  /* a byte changed, if val >= 0 */
		int val;
		int want; /* the length, or -errno */
	} rows[] = {
		{ "IPv4 reply", AF_INET, 64, 0, -1, 64 },
		{ "IPv6 reply", AF_INET6, 64, 0, -1, 64 },
		{ "reply cut after our header", AF_INET, ICMP_HLEN + 16, 0, -1, ICMP_HLEN + 16 },
		{ "empty", AF_INET, 0, 0, -1, -EINVAL },
		{ "one byte", AF_INET, 1, 0, -1, -EINVAL },
		{ "ICMP header less a byte", AF_INET, ICMP_HLEN - 1, 0, -1, -EINVAL },
		{ "ICMP header alone", AF_INET, ICMP_HLEN, 0, -1, -EBADMSG },
		{ "our header less a byte", AF_INET, ICMP_HLEN + 15, 0, -1, -EBADMSG },
		{ "an echo request", AF_INET, 64, ICMP_TYPE_OFF, 8, -ENOMSG },
		{ "destination unreachable", AF_INET, 64, ICMP_TYPE_OFF, 3, -ENOMSG },
		{ "an ICMPv6 reply on IPv4", AF_INET, 64, ICMP_TYPE_OFF, 129, -ENOMSG },
		{ "an ICMPv4 reply on IPv6", AF_INET6, 64, ICMP_TYPE_OFF, 0, -ENOMSG },
		{ "an ICMPv6 request", AF_INET6, 64, ICMP_TYPE_OFF, 128, -ENOMSG },
		{ "code 1", AF_INET, 64, ICMP_CODE_OFF, 1, -ENOMSG },
		{ "another magic", AF_INET, 64, ICMP_HLEN + 3, 0x42, -EBADMSG },
		{ "an unknown family", AF_UNIX, 64, 0, -1, -ENOMSG },
	};
	uint8_t b[ICMP_HLEN + 56];
	struct icmp_probe out;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int fam = rows[i].family == AF_INET6 ? AF_INET6 : AF_INET;

		reply(b, sizeof(b), fam, 7, 56);
		if (rows[i].val >= 0)
			b[rows[i].at] = (uint8_t)rows[i].val;
		out = (struct icmp_probe){ 0 };
		CHECK_ROW(icmp_echo_parse(b, rows[i].len, rows[i].family, &out) == rows[i].want,
			  rows[i].name);
		if (rows[i].want > 0)
			CHECK_ROW(out.number == 7 && out.test_id == 42, rows[i].name);
	}
	/* The whole number, not the 16 bits of the ICMP sequence field. */
	reply(b, sizeof(b), AF_INET, 70000, 56);
	CHECK_INT(icmp_echo_parse(b, sizeof(b), AF_INET, &out), sizeof(b));
	CHECK_U64(out.number, 70000);
}

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void test_stats(void)
{
	struct icmp_stats s;
	struct icmp_summary m;

	icmp_stats_init(&s);
	icmp_stats_summary(&s, 0, 0, &m);
	CHECK(m.loss_percent == 0 && m.avg_ms == 0 && m.min_ms == 0 && m.mdev_ms == 0);
	icmp_stats_summary(&s, 4, 0, &m);
	CHECK(m.loss_percent == 100 && m.max_ms == 0);
	/* 1, 2, 4 and 1 ms: mean 2, mean of squares 5.5, mdev sqrt(1.5); differences 1, 2, 3. */
	icmp_stats_add(&s, 1000000);
	icmp_stats_add(&s, 2000000);
	icmp_stats_add(&s, 4000000);
	icmp_stats_add(&s, 1000000);
	icmp_stats_summary(&s, 5, 4, &m);
	CHECK(near(m.min_ms, 1) && near(m.max_ms, 4) && near(m.avg_ms, 2));
	CHECK(near(m.mdev_ms, sqrt(1.5)));
	CHECK(near(m.jitter_ms, 2));
	CHECK(near(m.loss_percent, 20));
	/* More replies than probes (duplicates the caller failed to drop) never give a gain. */
	icmp_stats_summary(&s, 3, 4, &m);
	CHECK(near(m.loss_percent, 0));
	/* One round trip: no spread, no jitter. */
	icmp_stats_init(&s);
	icmp_stats_add(&s, 123456);
	icmp_stats_summary(&s, 1, 1, &m);
	CHECK(near(m.min_ms, 0.123456) && near(m.avg_ms, 0.123456) && near(m.max_ms, 0.123456));
	CHECK(m.mdev_ms == 0 && m.jitter_ms == 0);
	/* Equal round trips of a second: the sums' rounding never makes mdev negative or NaN. */
	icmp_stats_init(&s);
	for (int i = 0; i < 100000; i++)
		icmp_stats_add(&s, 999999937);
	icmp_stats_summary(&s, 100000, 100000, &m);
	CHECK(m.mdev_ms >= 0 && m.mdev_ms < 1e-3 && !isnan(m.mdev_ms));
}

int main(void)
{
	test_build();
	test_parse();
	test_stats();
	return check_done("test_icmp");
}
