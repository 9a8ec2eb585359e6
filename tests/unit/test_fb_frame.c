/*
 * tunbed-framebench's test frame (framebench/frame.c): the headers it writes (Ethernet, IPv4
 * with a right checksum, GRE, inner IPv4 and TCP, the lengths of the frame asked for); the
 * inner TCP checksum left partial (the pseudo-header's sum, as a device expects it) and
 * completed as a device would, against a plain RFC 1071 sum written here, the payload beside
 * the headers or elsewhere, twice alike; and the receiver's check: a partial checksum is wrong
 * when summed, a mangled frame is not ours, lengths out of range are refused.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "check.h"
#include "frame.h"

static const struct frame_spec spec = {
	.dst = { 0x02, 0, 0, 0, 0, 2 },
	.src = { 0x02, 0, 0, 0, 0, 1 },
	.len = 1514,
};

/* RFC 1071 over the inner TCP segment with its pseudo-header: 0xffff when the field is right. */
static uint16_t naive_tcp_sum(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + FRAME_INNER_OFF, *tcp = f + FRAME_L4_OFF;
	size_t tlen = len - FRAME_L4_OFF;
	uint32_t s = 0;

	for (unsigned i = 0; i < 8; i += 2)
		s += (uint32_t)(ip[IPV4_SRC_OFF + i] << 8 | ip[IPV4_SRC_OFF + i + 1]);
	s += 6 + (uint32_t)tlen;
	for (size_t i = 0; i + 1 < tlen; i += 2)
		s += (uint32_t)(tcp[i] << 8 | tcp[i + 1]);
	if (tlen & 1)
		s += (uint32_t)tcp[tlen - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

int main(void)
{
	uint8_t f[ETH_FRAME_LEN], g[ETH_FRAME_LEN], payload[ETH_FRAME_LEN];
	struct frame_spec s = spec;
	const uint8_t *outer = f + FRAME_OUTER_OFF, *inner = f + FRAME_INNER_OFF;
	uint16_t partial;

	CHECK_INT(frame_build(f, sizeof(f), &spec), 1514);
	CHECK(memcmp(f, spec.dst, ETH_ALEN) == 0 && memcmp(f + ETH_ALEN, spec.src, ETH_ALEN) == 0);
	CHECK_INT(load_be16(f + ETH_TYPE_OFF), ETH_P_IP);
	CHECK_INT(load_be16(outer + IPV4_TOT_LEN_OFF), 1500);
	CHECK_INT(outer[IPV4_PROTO_OFF], IPPROTO_GRE_NUM);
	CHECK_INT(inet_csum(outer, IPV4_HLEN), 0);
	CHECK_INT(load_be16(outer + IPV4_HLEN + GRE_PROTO_OFF), GRE_PROTO_IPV4);
	CHECK_INT(load_be16(outer + IPV4_HLEN), 0); /* no GRE flags, version 0 */
	CHECK_INT(load_be16(inner + IPV4_TOT_LEN_OFF), 1476);
	CHECK_INT(inet_csum(inner, IPV4_HLEN), 0);
	CHECK_INT(frame_check(f, 1514, false), 0);

	/* Partial: wrong as a whole, and completing it makes it right, as a device does. */
	CHECK_INT(frame_check(f, 1514, true), -EBADMSG);
	CHECK(naive_tcp_sum(f, 1514) != 0xffff);
	partial = load_be16(f + FRAME_L4_OFF + TCP_CSUM_OFF);
	frame_csum_complete(f, f + FRAME_HLEN, 1514 - FRAME_HLEN);
	CHECK_INT(naive_tcp_sum(f, 1514), 0xffff);
	CHECK_INT(frame_check(f, 1514, true), 0);
	CHECK(load_be16(f + FRAME_L4_OFF + TCP_CSUM_OFF) != partial);
	/* Twice gives the same field; the payload elsewhere gives the same as beside. */
	memcpy(g, f, sizeof(g));
	frame_csum_complete(g, g + FRAME_HLEN, 1514 - FRAME_HLEN);
	CHECK(memcmp(f, g, 1514) == 0);
	CHECK_INT(frame_build_headers(g, FRAME_HLEN, &spec), FRAME_HLEN);
	memcpy(payload, f + FRAME_HLEN, 1514 - FRAME_HLEN);
	memset(g + FRAME_HLEN, 0xee, 1514 - FRAME_HLEN);
	frame_csum_complete(g, payload, 1514 - FRAME_HLEN);
	CHECK_INT(load_be16(g + FRAME_L4_OFF + TCP_CSUM_OFF),
		  load_be16(f + FRAME_L4_OFF + TCP_CSUM_OFF));

	/* An odd length, and the shortest frame: headers alone. */
	s.len = 1001;
	CHECK_INT(frame_build(f, sizeof(f), &s), 1001);
	frame_csum_complete(f, f + FRAME_HLEN, 1001 - FRAME_HLEN);
	CHECK_INT(naive_tcp_sum(f, 1001), 0xffff);
	CHECK_INT(frame_check(f, 1001, true), 0);
	s.len = FRAME_HLEN;
	CHECK_INT(frame_build(f, sizeof(f), &s), FRAME_HLEN);
	frame_csum_complete(f, f + FRAME_HLEN, 0);
	CHECK_INT(frame_check(f, FRAME_HLEN, true), 0);

	/* Not a test frame: a length that disagrees, another protocol, cut short. */
	CHECK_INT(frame_build(f, sizeof(f), &spec), 1514);
	CHECK_INT(frame_check(f, 1500, false), -EPROTO);
	CHECK_INT(frame_check(f, FRAME_HLEN - 1, false), -EPROTO);
	f[FRAME_OUTER_OFF + IPV4_PROTO_OFF] = 17;
	CHECK_INT(frame_check(f, 1514, false), -EPROTO);
	CHECK_INT(frame_build(f, sizeof(f), &spec), 1514);
	f[FRAME_INNER_OFF + IPV4_PROTO_OFF] = 17;
	CHECK_INT(frame_check(f, 1514, false), -EPROTO);

	/* Refused: lengths out of range, room too small. */
	s.len = FRAME_HLEN - 1;
	CHECK_INT(frame_build(f, sizeof(f), &s), -EINVAL);
	s.len = ETH_FRAME_LEN + 1;
	CHECK_INT(frame_build(f, sizeof(f) + 8, &s), -EINVAL);
	CHECK_INT(frame_build(f, 1513, &spec), -ENOSPC);
	CHECK_INT(frame_build_headers(f, FRAME_HLEN - 1, &spec), -ENOSPC);
	return check_done("test_fb_frame");
}
