/*
 * For the gateway's unit tests: a prefix written as text ("198.18.1.0/24") as the packet
 * path matches it (struct encap_prefix); an unparsable one is all zeros.
 */
#ifndef TUNBED_TEST_ENCAP_PREFIX_H
#define TUNBED_TEST_ENCAP_PREFIX_H

#include <string.h>

#include "encap.h"
#include "netaddr.h"

static inline struct encap_prefix prefix(const char *s)
{
	struct netprefix p;
	struct encap_prefix e = { 0 };

	if (netaddr_parse_prefix(s, &p) == 0) {
		e.family = (uint8_t)p.addr.family;
		e.len = (uint8_t)p.len;
		memcpy(e.addr, p.addr.bytes, sizeof(e.addr));
	}
	return e;
}

#endif
