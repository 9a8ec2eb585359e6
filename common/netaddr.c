/*
 * Addresses, prefixes and the benchmarking ranges of RFC 2544 and RFC 5180 (see netaddr.h).
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

unsigned netaddr_len(int family)
{
	switch (family) {
	case AF_INET:
		return 4;
	case AF_INET6:
		return 16;
	}
	return 0;
}

int netaddr_parse(const char *s, struct netaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, out->bytes) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, out->bytes) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int netaddr_parse_prefix(const char *s, struct netprefix *out)
{
	char buf[NETADDR_STRLEN];
	const char *slash;
	uint64_t len;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -EINVAL;
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (netaddr_parse(buf, &out->addr))
		return -EINVAL;
	len = netaddr_len(out->addr.family) * 8;
	if (slash && parse_u64(slash + 1, 0, len, &len))
		return -EINVAL;
	out->len = (unsigned)len;
	return 0;
}

const char *netaddr_format(const struct netaddr *a, char *buf)
{
	if (!inet_ntop(a->family, a->bytes, buf, NETADDR_STRLEN))
		snprintf(buf, NETADDR_STRLEN, "?");
	return buf;
}

const char *netaddr_format_prefix(const struct netprefix *p, char *buf)
{
	char a[NETADDR_STRLEN];

	snprintf(buf, NETPREFIX_STRLEN, "%s/%u", netaddr_format(&p->addr, a), p->len);
	return buf;
}

bool netaddr_equal(const struct netaddr *a, const struct netaddr *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, netaddr_len(a->family)) == 0;
}

/* Compares the first bits bits of x and y. */
static bool bits_equal(const uint8_t *x, const uint8_t *y, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	uint8_t mask;

	if (memcmp(x, y, whole) != 0)
		return false;
	if (!rest)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return (x[whole] & mask) == (y[whole] & mask);
}

bool netaddr_in_prefix(const struct netaddr *a, const struct netprefix *p)
{
	return a->family == p->addr.family && bits_equal(a->bytes, p->addr.bytes, p->len);
}

bool netaddr_prefix_within(const struct netprefix *inner, const struct netprefix *outer)
{
	return inner->addr.family == outer->addr.family && inner->len >= outer->len &&
	       bits_equal(inner->addr.bytes, outer->addr.bytes, outer->len);
}

bool netaddr_prefix_has_host_bits(const struct netprefix *p)
{
	unsigned total = netaddr_len(p->addr.family) * 8;

	for (unsigned bit = p->len; bit < total; bit++) {
		if (p->addr.bytes[bit / 8] & (0x80 >> (bit % 8)))
			return true;
	}
	return false;
}

bool netaddr_prefix_is_bench(const struct netprefix *p)
{
	static const struct netprefix v4 = {
		.addr = { .family = AF_INET, .bytes = { 198, 18 } },
		.len = 15,
	};
	static const struct netprefix v6 = {
		.addr = { .family = AF_INET6, .bytes = { 0x20, 0x01, 0x00, 0x02 } },
		.len = 48,
	};

	return netaddr_prefix_within(p, &v4) || netaddr_prefix_within(p, &v6);
}

socklen_t netaddr_sockaddr(int family, const uint8_t *bytes, uint16_t port,
			   struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (bytes)
			memcpy(&s6->sin6_addr, bytes, 16);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	if (bytes)
		memcpy(&s4->sin_addr, bytes, 4);
	return sizeof(*s4);
}

const uint8_t *netaddr_sockaddr_bytes(const struct sockaddr_storage *ss, int family)
{
	if (ss->ss_family != family)
		return NULL;
	if (family == AF_INET6)
		return (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	return family == AF_INET ? (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr
				 : NULL;
}
