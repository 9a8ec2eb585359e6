/*
 * Unit tests for common/netaddr.c: parsing, formatting, containment, benchmarking ranges,
 * socket addresses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "check.h"
#include "netaddr.h"

static void test_parse_format(void)
{
	static const struct {
		const char *in;
		int rc;
		const char *out; /* formatted back */
	} rows[] = {
		{ "198.18.0.1/24", 0, "198.18.0.1/24" },
		{ "198.18.0.1", 0, "198.18.0.1/32" },
		{ "2001:2::1/64", 0, "2001:2::1/64" },
		{ "2001:0002:0000::0001/64", 0, "2001:2::1/64" },
		{ "2001:2::", 0, "2001:2::/128" },
		{ "198.18.0.1/33", -EINVAL, NULL },
		{ "2001:2::1/129", -EINVAL, NULL },
		{ "198.18.0.1/", -EINVAL, NULL },
		{ "198.18.0.1/-1", -EINVAL, NULL },
		{ "198.18.0.256/24", -EINVAL, NULL },
		{ "198.18.0/24", -EINVAL, NULL },
		{ "host/24", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
	};
	char buf[NETPREFIX_STRLEN];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct netprefix p;
		int rc = netaddr_parse_prefix(rows[i].in, &p);

		CHECK_ROW(rc == rows[i].rc, rows[i].in);
		if (rc == 0)
			CHECK_STR(netaddr_format_prefix(&p, buf), rows[i].out);
	}
}

/* Parsed prefix in one of a few rotating slots, so that a line can use several. */
static const struct netprefix *P(const char *s)
{
	static struct netprefix slot[4];
	static unsigned next;
	struct netprefix *p = &slot[next++ % 4];

	netaddr_parse_prefix(s, p);
	return p;
}

static void test_contain(void)
{
	struct netprefix net = *P("198.18.1.0/24"), a = *P("198.18.1.77"), b = *P("198.18.2.1");
	struct netprefix odd = *P("198.18.1.0/23");

	CHECK(netaddr_in_prefix(&a.addr, &net));
	CHECK(!netaddr_in_prefix(&b.addr, &net));
	CHECK(netaddr_in_prefix(&b.addr, &odd) == false);
	CHECK(netaddr_in_prefix(&a.addr, &odd));
	CHECK(netaddr_prefix_within(&net, &odd));
	CHECK(!netaddr_prefix_within(&odd, &net));
	CHECK(!netaddr_in_prefix(&P("2001:2::1")->addr, &net));
	CHECK(netaddr_prefix_has_host_bits(P("198.18.3.1/24")));
	CHECK(!netaddr_prefix_has_host_bits(P("198.18.3.0/24")));
	CHECK(!netaddr_prefix_has_host_bits(P("198.18.3.1/32")));
	CHECK(netaddr_prefix_has_host_bits(P("2001:2::1/64")));
	CHECK(!netaddr_prefix_has_host_bits(P("2001:2:0:1::/64")));
	CHECK(netaddr_equal(&P("2001:2::1")->addr, &P("2001:2:0::1/64")->addr));
	CHECK(!netaddr_equal(&P("198.18.0.1")->addr, &P("198.18.0.2")->addr));
}

static void test_bench(void)
{
	static const struct {
		const char *in;
		bool bench;
	} rows[] = {
		{ "198.18.0.0/15", true },   { "198.19.255.255/32", true },
		{ "198.18.1.2/24", true },   { "198.18.0.0/14", false },
		{ "198.20.0.1/32", false },  { "198.17.255.255", false },
		{ "10.0.0.1/8", false },     { "0.0.0.0/0", false },
		{ "2001:2::/48", true },     { "2001:2:0:ff::1/64", true },
		{ "2001:2::/47", false },    { "2001:3::1/64", false },
		{ "2001:db8::1/64", false }, { "::/0", false },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct netprefix p;

		CHECK_ROW(netaddr_parse_prefix(rows[i].in, &p) == 0, rows[i].in);
		CHECK_ROW(netaddr_prefix_is_bench(&p) == rows[i].bench, rows[i].in);
	}
}

static void test_sockaddr(void)
{
	struct sockaddr_storage ss;
	struct netaddr a;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	static const uint8_t any6[16];

	netaddr_parse("198.18.0.2", &a);
	CHECK_INT(netaddr_sockaddr(AF_INET, a.bytes, 4754, &ss), sizeof(struct sockaddr_in));
	CHECK_INT(s4->sin_family, AF_INET);
	CHECK_INT(ntohs(s4->sin_port), 4754);
	CHECK_INT(ntohl(s4->sin_addr.s_addr), 0xc6120002);
	CHECK(netaddr_sockaddr_bytes(&ss, AF_INET) == (const uint8_t *)&s4->sin_addr);
	CHECK(memcmp(netaddr_sockaddr_bytes(&ss, AF_INET), a.bytes, 4) == 0);
	CHECK(!netaddr_sockaddr_bytes(&ss, AF_INET6)); /* another family */

	netaddr_parse("2001:2::1", &a);
	CHECK_INT(netaddr_sockaddr(AF_INET6, NULL, 9400, &ss), sizeof(struct sockaddr_in6));
	CHECK_INT(s6->sin6_family, AF_INET6);
	CHECK_INT(ntohs(s6->sin6_port), 9400);
	CHECK(memcmp(&s6->sin6_addr, any6, 16) == 0); /* the wildcard */
	CHECK(!netaddr_sockaddr_bytes(&ss, AF_INET));
	netaddr_sockaddr(AF_INET6, a.bytes, 0, &ss);
	CHECK(memcmp(netaddr_sockaddr_bytes(&ss, AF_INET6), a.bytes, 16) == 0);
	CHECK_INT(s6->sin6_flowinfo + s6->sin6_scope_id, 0);
}

int main(void)
{
	test_parse_format();
	test_contain();
	test_bench();
	test_sockaddr();
	return check_done("test_netaddr");
}
