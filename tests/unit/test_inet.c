/*
 * The Internet checksum (common/inet.c) against a byte-at-a-time RFC 1071 reference: every
 * length from 0 to 300 at every alignment, sums chained over parts, and RFC 1071's example;
 * ECN marking, the DS field and the ECN codepoints' names.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "check.h"
#include "inet.h"

/* RFC 1071, 4.1, one big-endian 16-bit word at a time. */
static uint32_t reference(uint32_t sum, const uint8_t *p, size_t len)
{
	uint64_t acc = sum;

	for (size_t i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	while (acc >> 32)
		acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

int main(void)
{
	static const uint8_t rfc1071[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t buf[512];
	unsigned mismatches = 0;

	/* RFC 1071, 3: the sum of these words is ddf2 (folded); the checksum its complement. */
	CHECK_INT(inet_csum_fold(inet_csum_add(0, rfc1071, sizeof(rfc1071))), 0xffff & ~0xddf2);

	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 300; len++)
			if (inet_csum_fold(inet_csum_add(0, buf + off, len)) !=
			    inet_csum_fold(reference(0, buf + off, len)))
				mismatches++;
	CHECK_INT(mismatches, 0);

	/* All ones: the largest words carry on every add. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = 0xff;
	CHECK_INT(inet_csum_fold(inet_csum_add(0, buf, 511)),
		  inet_csum_fold(reference(0, buf, 511)));
	{
		/* A whole superpacket of them: the wide accumulators' carries. */
		uint8_t *big = malloc(65535);

		memset(big, 0xff, 65535);
		CHECK_INT(inet_csum_fold(inet_csum_add(0x12345678u, big, 65535)),
			  inet_csum_fold(reference(0x12345678u, big, 65535)));
		free(big);
	}

	/* Chained over parts (every part but the last even), starting from a large sum. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	{
		uint32_t s = inet_csum_add(0xfffffff0u, buf, 40);

		s = inet_csum_add(s, buf + 40, 200);
		s = inet_csum_add(s, buf + 240, 33);
		CHECK_INT(inet_csum_fold(s), inet_csum_fold(reference(0xfffffff0u, buf, 273)));
	}
	/* A header whose checksum field is right sums to zero. */
	{
		uint8_t ip[20] = { 0x45, 0, 0,	 40, 0x12, 0x34, 0x40, 0,  64, 6,
				   0,	 0, 198, 18, 1,	   2,	 198,  18, 3,  2 };
		uint16_t c = inet_csum(ip, sizeof(ip));

		store_be16(ip + IPV4_CSUM_OFF, c);
		CHECK_INT(inet_csum(ip, sizeof(ip)), 0);

		/* ECN (RFC 3168): Not-ECT stays as it is; ECT(0) and ECT(1) become CE, and the
		 * header checksum stays right. */
		CHECK(!ip_ecn_set_ce(ip, sizeof(ip)));
		CHECK_INT(ip[IPV4_TOS_OFF], 0);
		CHECK_INT(inet_csum(ip, sizeof(ip)), 0);
		for (uint8_t ect = 1; ect <= 3; ect++) {
			uint8_t x[20];

			memcpy(x, ip, sizeof(x));
			x[IPV4_TOS_OFF] = (uint8_t)(0xb8 | ect); /* DSCP EF */
			store_be16(x + IPV4_CSUM_OFF, 0);
			store_be16(x + IPV4_CSUM_OFF, inet_csum(x, sizeof(x)));
			CHECK(ip_ecn_set_ce(x, sizeof(x)));
			CHECK_INT(x[IPV4_TOS_OFF], 0xbb);
			CHECK_INT(inet_csum(x, sizeof(x)), 0);
		}
		CHECK(!ip_ecn_set_ce(ip, IPV4_HLEN - 1));
	}
	{
		/* IPv6: ECN sits in bits 4-5 of the second byte, beside the flow label. */
		uint8_t ip6[40] = { 0x6b, 0x8f, 0x12, 0x34 };

		CHECK(!ip_ecn_set_ce(ip6, sizeof(ip6)));
		ip6[1] = 0x9f; /* traffic class 0xb9: ECT(1), flow label 0xf1234 */
		CHECK(ip_ecn_set_ce(ip6, sizeof(ip6)));
		CHECK(ip6[0] == 0x6b && ip6[1] == 0xbf && ip6[2] == 0x12 && ip6[3] == 0x34);
		CHECK(!ip_ecn_set_ce(ip6, IPV6_HLEN - 1));
		/* The DS field, either family: traffic class 0xbb, TOS byte 0x2a. */
		CHECK_INT(ip_dsfield(ip6), 0xbb);
		CHECK_INT(ip_ttl_off(AF_INET6), IPV6_HOPS_OFF);
		CHECK_INT(ip_ttl_off(AF_INET), IPV4_TTL_OFF);
	}
	{
		uint8_t ip4[20] = { 0x45, 0x2a };

		CHECK_INT(ip_dsfield(ip4), 0x2a);
	}
	/* The codepoints' names, both ways; nothing else is one. */
	for (unsigned ecn = 0; ecn < 4; ecn++)
		CHECK_INT(ip_ecn_parse(ip_ecn_name(ecn)), ecn);
	CHECK_STR(ip_ecn_name(IP_ECN_ECT0), "ect0");
	CHECK_STR(ip_ecn_name(IP_ECN_NOT_ECT), "not-ect");
	CHECK_INT(ip_ecn_parse("ect2"), -EINVAL);
	CHECK_INT(ip_ecn_parse("CE"), -EINVAL);
	CHECK_INT(ip_ecn_parse(""), -EINVAL);
	return check_done("test_inet");
}
