/*
 * Packet builders for the gateway's unit tests: IPv4 and IPv6 packets with TCP, UDP or ICMP
 * payloads and correct checksums, written into caller buffers.
 */
#ifndef TUNBED_TEST_PKT_H
#define TUNBED_TEST_PKT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "inet.h"

struct pkt_spec {
	int family;
	const char *src, *dst;
	uint8_t proto; /* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP or IPPROTO_ICMPV6 */
	uint16_t sport, dport;
	uint8_t tcp_flags;   /* TCP: enum tcp_flags */
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
	uint32_t sum = inet_pseudo_sum(family, ip + ip_src_off(family), ip + ip_dst_off(family),
				       proto, (uint32_t)len);

	return inet_csum_fold(inet_csum_add(sum, l4, len));
}

/* Builds the packet of s into out and returns its length. */
static inline size_t pkt_build(const struct pkt_spec *s, uint8_t *out)
{
	size_t hlen = ip_fixed_hlen(s->family), l4len, total;
	uint8_t *l4 = out + hlen;

	if (s->proto == IPPROTO_TCP)
		l4len = TCP_HLEN + s->opts_len + s->payload;
	else
		l4len = UDP_HLEN + s->payload; /* ICMP's header is as long */
	total = hlen + l4len;
	memset(out, 0, total);
	if (s->family == AF_INET6) {
		out[0] = 0x60;
		store_be16(out + IPV6_PLEN_OFF, (uint16_t)l4len);
		out[IPV6_NEXT_OFF] = s->proto;
		out[IPV6_HOPS_OFF] = 64;
	} else {
		out[0] = 0x45;
		store_be16(out + IPV4_TOT_LEN_OFF, (uint16_t)total);
		store_be16(out + IPV4_ID_OFF, 0x1234);
		store_be16(out + IPV4_FRAG_OFF, (uint16_t)((s->df ? IPV4_DF : 0) | s->frag));
		out[IPV4_TTL_OFF] = 64;
		out[IPV4_PROTO_OFF] = s->proto;
	}
	inet_pton(s->family, s->src, out + ip_src_off(s->family));
	inet_pton(s->family, s->dst, out + ip_dst_off(s->family));
	if (s->family == AF_INET)
		store_be16(out + IPV4_CSUM_OFF, inet_csum(out, IPV4_HLEN));
	for (size_t i = 0; i < s->payload; i++)
		out[total - s->payload + i] = (uint8_t)(i * 7 + 3);
	if (s->proto == IPPROTO_TCP) {
		store_be16(l4 + TCP_SPORT_OFF, s->sport);
		store_be16(l4 + TCP_DPORT_OFF, s->dport);
		store_be32(l4 + TCP_SEQ_OFF, s->tcp_seq ? s->tcp_seq : 1000);
		l4[TCP_DOFF_OFF] = (uint8_t)(((TCP_HLEN + s->opts_len) / 4) << 4);
		l4[TCP_FLAGS_OFF] = s->tcp_flags;
		store_be16(l4 + TCP_WINDOW_OFF, 65535);
		if (s->opts_len)
			memcpy(l4 + TCP_HLEN, s->opts, s->opts_len);
		store_be16(l4 + TCP_CSUM_OFF, pkt_l4_csum(s->family, out, l4, l4len, IPPROTO_TCP));
	} else if (s->proto == IPPROTO_UDP) {
		store_be16(l4 + UDP_SPORT_OFF, s->sport);
		store_be16(l4 + UDP_DPORT_OFF, s->dport);
		store_be16(l4 + UDP_LEN_OFF, (uint16_t)l4len);
		store_be16(l4 + UDP_CSUM_OFF, pkt_l4_csum(s->family, out, l4, l4len, IPPROTO_UDP));
	} else if (s->proto == IPPROTO_ICMP) {
		l4[ICMP_TYPE_OFF] = s->icmp_type;
		store_be16(l4 + ICMP_CSUM_OFF, inet_csum(l4, l4len));
	} else {
		l4[ICMP_TYPE_OFF] = s->icmp_type;
		store_be16(l4 + ICMP_CSUM_OFF,
			   pkt_l4_csum(s->family, out, l4, l4len, IPPROTO_ICMPV6));
	}
	return total;
}

#endif
