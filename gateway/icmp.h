/*
 * ICMP errors gregw writes back into TUN for inner packets too big for the tunnel: IPv4
 * "fragmentation needed" (RFC 792, RFC 1191) and ICMPv6 "packet too big" (RFC 4443).
 * Pure: builds into a caller buffer.
 */
#ifndef TUNBED_GW_ICMP_H
#define TUNBED_GW_ICMP_H

#include <stddef.h>
#include <stdint.h>

#include "encap.h"

enum {
	ICMP4_QUOTE_MAX = 576,	/* RFC 1812 4.3.2.3: the whole error fits in 576 bytes */
	ICMP6_QUOTE_MAX = 1280, /* RFC 4443 2.4(c): the whole error fits in the minimum MTU */
};

/*
 * Builds the error for the inner packet pkt (len bytes, header already parsed into *ip) that
 * exceeds c->mtu: from the TUN's address of that family to the packet's source, with the
 * tunnel MTU, quoting as much of the packet as the RFCs allow. Returns its length, or 0 when
 * no error may be sent: no TUN address of the family, a source that is not a unicast host,
 * a packet that is itself an ICMP error, or a non-first fragment (RFC 1122 3.2.2, RFC 4443
 * 2.4(e)), or room too small.
 */
size_t icmp_too_big(const struct encap_cfg *c, const uint8_t *pkt, size_t len,
		    const struct ip_info *ip, uint8_t *out, size_t room);

#endif
