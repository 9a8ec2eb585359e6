/*
 * Packet builders for the gateway's unit tests: IPv4 and IPv6 packets with TCP, UDP or ICMP
 * payloads and correct checksums, written into caller buffers.
 */
#ifndef TUNBED_TEST_PKT_H
#define TUNBED_TEST_PKT_H

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "inet.h"

struct pkt_spec {
	int family;
	const char *src, *dst;
	uint8_t proto; /* 6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6 */
	uint16_t sport, dport;
	uint8_t tcp_flags;   /* TCP */
	uint32_t tcp_seq;    /* TCP sequence number; 0 stands for 1000 */
	const uint8_t *opts; /* TCP options, a multiple of 4 bytes */
	size_t opts_len;
	size_t payload; /* bytes of payload after the L4 header, filled with a pattern */
	bool df;
	uint16_t frag; /* IPv4 fragment field bits besides DF */
	uint8_t icmp_type;
};

/* Checksum of the L4 segment at l4 (len bytes) under the pseudo-header of an IP packet. */
static inline uint16_t pkt_l4_csum(int family, const uint8_t *ip, const uint8_t *l4, size_t len,
				   uint8_t proto)
{
	const uint8_t *src = family == AF_INET6 ? ip + 8 : ip + 12;
	const uint8_t *dst = family == AF_INET6 ? ip + 24 : ip + 16;
	uint32_t sum = inet_pseudo_sum(family, src, dst, proto, (uint32_t)len);

	return inet_csum_fold(inet_csum_add(sum, l4, len));
}

/* Builds the packet of s into out and returns its length. */
static inline size_t pkt_build(const struct pkt_spec *s, uint8_t *out)
{
	size_t hlen = s->family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN, l4len, total;
	uint8_t *l4 = out + hlen;

	if (s->proto == 6)
		l4len = 20 + s->opts_len + s->payload;
	else
		l4len = 8 + s->payload;
	total = hlen + l4len;
	memset(out, 0, total);
	if (s->family == AF_INET6) {
		out[0] = 0x60;
		store_be16(out + 4, (uint16_t)l4len);
		out[6] = s->proto;
		out[7] = 64;
		inet_pton(AF_INET6, s->src, out + 8);
		inet_pton(AF_INET6, s->dst, out + 24);
	} else {
		out[0] = 0x45;
		store_be16(out + 2, (uint16_t)total);
		store_be16(out + 4, 0x1234);
		store_be16(out + 6, (uint16_t)((s->df ? IPV4_DF : 0) | s->frag));
		out[8] = 64;
		out[9] = s->proto;
		inet_pton(AF_INET, s->src, out + 12);
		inet_pton(AF_INET, s->dst, out + 16);
		store_be16(out + 10, inet_csum(out, IPV4_HLEN));
	}
	for (size_t i = 0; i < s->payload; i++)
		out[total - s->payload + i] = (uint8_t)(i * 7 + 3);
	if (s->proto == 6) {
		store_be16(l4, s->sport);
		store_be16(l4 + 2, s->dport);
		store_be32(l4 + 4, s->tcp_seq ? s->tcp_seq : 1000);
		l4[12] = (uint8_t)(((20 + s->opts_len) / 4) << 4);
		l4[13] = s->tcp_flags;
		store_be16(l4 + 14, 65535);
		if (s->opts_len)
			memcpy(l4 + 20, s->opts, s->opts_len);
		store_be16(l4 + 16, pkt_l4_csum(s->family, out, l4, l4len, 6));
	} else if (s->proto == 17) {
		store_be16(l4, s->sport);
		store_be16(l4 + 2, s->dport);
		store_be16(l4 + 4, (uint16_t)l4len);
		store_be16(l4 + 6, pkt_l4_csum(s->family, out, l4, l4len, 17));
	} else if (s->proto == 1) {
		l4[0] = s->icmp_type;
		store_be16(l4 + 2, inet_csum(l4, l4len));
	} else {
		l4[0] = s->icmp_type;
		store_be16(l4 + 2, pkt_l4_csum(s->family, out, l4, l4len, 58));
	}
	return total;
}

#endif
