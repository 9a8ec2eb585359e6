/*
 * IPv4 and IPv6 addresses and prefixes, and the benchmarking ranges every tunbed tool is
 * confined to: 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180).
 */
#ifndef TUNBED_NETADDR_H
#define TUNBED_NETADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

enum {
	NETADDR_STRLEN = 46,   /* INET6_ADDRSTRLEN */
	NETPREFIX_STRLEN = 50, /* address, '/', three digits, NUL */
};

struct netaddr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16];
};

struct netprefix {
	struct netaddr addr;
	unsigned len; /* 0..32 or 0..128 */
};

/* "198.18.0.1" or "2001:2::1". Returns 0 or -EINVAL. */
int netaddr_parse(const char *s, struct netaddr *out);

/*
 * "198.18.0.1/24" or "2001:2::/48"; without "/len" the prefix is one host (32 or 128).
 * Host bits are kept: 198.18.0.1/24 is an interface address. Returns 0 or -EINVAL.
 */
int netaddr_parse_prefix(const char *s, struct netprefix *out);

/* Address or prefix as text; buf must hold NETADDR_STRLEN / NETPREFIX_STRLEN bytes. */
const char *netaddr_format(const struct netaddr *a, char *buf);
const char *netaddr_format_prefix(const struct netprefix *p, char *buf);

/* Address length in bytes for the family: 4, 16, or 0 for an unknown family. */
unsigned netaddr_len(int family);

bool netaddr_equal(const struct netaddr *a, const struct netaddr *b);

/* True if a lies inside p (same family, first p->len bits equal). */
bool netaddr_in_prefix(const struct netaddr *a, const struct netprefix *p);

/* True if every address of inner lies inside outer. */
bool netaddr_prefix_within(const struct netprefix *inner, const struct netprefix *outer);

/* True if the prefix has bits set beyond its length (198.18.3.1/24). */
bool netaddr_prefix_has_host_bits(const struct netprefix *p);

/* True if the whole prefix lies inside 198.18.0.0/15 or 2001:2::/48. */
bool netaddr_prefix_is_bench(const struct netprefix *p);

/*
 * The socket address of family's address bytes (4 or 16 of them; NULL: the wildcard) and
 * port (host order) in *ss, the rest zero. Returns its length for bind, connect or sendto.
 */
socklen_t netaddr_sockaddr(int family, const uint8_t *bytes, uint16_t port,
			   struct sockaddr_storage *ss);

/* The address bytes of *ss (4 or 16, within it) when it is of family, else NULL. */
const uint8_t *netaddr_sockaddr_bytes(const struct sockaddr_storage *ss, int family);

/* The benchmarking ranges as text, for error messages. */
#define NETADDR_BENCH_RANGES "198.18.0.0/15 and 2001:2::/48"

#endif
