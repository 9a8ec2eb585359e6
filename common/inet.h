/*
 * Internet checksums (RFC 1071, incremental update per RFC 1624) and the IPv4 and IPv6
 * header fields that more than one part reads: the gateway, the wire audit and the tests'
 * packet builders. Pure functions on caller-owned buffers.
 */
#ifndef TUNBED_INET_H
#define TUNBED_INET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	IPV4_HLEN = 20,
	IPV6_HLEN = 40,
	IPV4_DF = 0x4000,
	IPV4_MF = 0x2000,
	IPV4_OFFMASK = 0x1fff,
	IPPROTO_GRE_NUM = 47,
};

/*
 * One's complement sum of data added to sum, not yet folded. Call repeatedly over the parts
 * of a message; every part but the last must have an even length.
 */
uint32_t inet_csum_add(uint32_t sum, const void *data, size_t len);

/* Folds a sum to 16 bits and complements it: the value to store in a checksum field. */
uint16_t inet_csum_fold(uint32_t sum);

/* inet_csum_fold(inet_csum_add(0, data, len)): 0 over data whose checksum field is right. */
uint16_t inet_csum(const void *data, size_t len);

/* The checksum field value after a 16-bit word changes from old to new (RFC 1624, eqn. 3). */
uint16_t inet_csum_replace16(uint16_t csum, uint16_t old, uint16_t new);

/* Sum of the TCP/UDP pseudo-header for family (AF_INET/AF_INET6), not folded. */
uint32_t inet_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto,
			 uint32_t len);

/* An IP header as read by ip_parse, in host order. */
struct ip_info {
	int family;		  /* AF_INET or AF_INET6 */
	unsigned hlen;		  /* header length; for IPv6 the fixed 40 bytes only */
	unsigned tot_len;	  /* header plus payload, from the header */
	uint8_t proto;		  /* protocol, or IPv6 next header */
	uint8_t ttl;		  /* or hop limit */
	uint8_t tos;		  /* or traffic class */
	bool df;		  /* IPv4 don't-fragment; IPv6 never fragments in transit */
	bool fragment;		  /* IPv4 MF or offset set */
	const uint8_t *src, *dst; /* into the buffer: 4 or 16 bytes */
};

/*
 * Parses the IP header at p: version, header length and total length are checked against
 * len (the bytes available). Pure. Returns the header length, or -ENODATA (p holds less than
 * a header or than the total length it claims), -EPROTO (not IPv4 or IPv6, or the IPv4 header
 * length is below 20) or -EBADMSG (IPv4 header checksum wrong; only when check_csum).
 */
int ip_parse(const uint8_t *p, size_t len, bool check_csum, struct ip_info *out);

/*
 * Marks an ECN-capable IPv4 or IPv6 packet Congestion Experienced (RFC 3168), keeping the
 * IPv4 header checksum right. Returns false, changing nothing, for a packet that is not
 * ECN-capable (Not-ECT) or too short to hold its IP header.
 */
bool ip_ecn_set_ce(uint8_t *p, size_t len);

#endif
