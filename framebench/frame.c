/*
 * The test frame (see frame.h): built once per buffer, checked on receipt.
 */
#include "frame.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "byteorder.h"

const uint8_t frame_outer_src[4] = { 198, 18, 0, 1 }, frame_outer_dst[4] = { 198, 18, 0, 2 };
static const uint8_t inner_src[4] = { 198, 19, 0, 1 }, inner_dst[4] = { 198, 19, 0, 2 };

static void ipv4_build(uint8_t *p, size_t len, uint8_t proto, const uint8_t *src,
		       const uint8_t *dst)
{
	memset(p, 0, IPV4_HLEN);
	p[0] = 0x45;
	store_be16(p + IPV4_TOT_LEN_OFF, (uint16_t)len);
	store_be16(p + IPV4_FRAG_OFF, IPV4_DF);
	p[IPV4_TTL_OFF] = 64;
	p[IPV4_PROTO_OFF] = proto;
	memcpy(p + IPV4_SRC_OFF, src, 4);
	memcpy(p + IPV4_DST_OFF, dst, 4);
	store_be16(p + IPV4_CSUM_OFF, inet_csum(p, IPV4_HLEN));
}

static uint32_t tcp_pseudo(size_t len)
{
	return inet_pseudo_sum(AF_INET, inner_src, inner_dst, IPPROTO_TCP,
			       (uint32_t)(len - FRAME_L4_OFF));
}

int frame_build_headers(uint8_t *buf, size_t room, const struct frame_spec *spec)
{
	const struct gre_info gre = { .proto = GRE_PROTO_IPV4 };
	size_t len = spec->len;
	uint8_t *tcp = buf + FRAME_L4_OFF;

	if (len < FRAME_HLEN || len > ETH_FRAME_LEN)
		return -EINVAL;
	if (room < FRAME_HLEN)
		return -ENOSPC;
	memcpy(buf, spec->dst, ETH_ALEN);
	memcpy(buf + ETH_ALEN, spec->src, ETH_ALEN);
	store_be16(buf + ETH_TYPE_OFF, ETH_P_IP);
	ipv4_build(buf + FRAME_OUTER_OFF, len - FRAME_OUTER_OFF, IPPROTO_GRE_NUM, frame_outer_src,
		   frame_outer_dst);
	gre_build(buf + FRAME_OUTER_OFF + IPV4_HLEN, GRE_HLEN_MIN, &gre);
	ipv4_build(buf + FRAME_INNER_OFF, len - FRAME_INNER_OFF, IPPROTO_TCP, inner_src, inner_dst);
	memset(tcp, 0, TCP_HLEN);
	store_be16(tcp + TCP_SPORT_OFF, 40000);
	store_be16(tcp + TCP_DPORT_OFF, 5201);
	tcp[TCP_DOFF_OFF] = (TCP_HLEN / 4) << 4;
	tcp[TCP_FLAGS_OFF] = TCP_F_ACK;
	store_be16(tcp + TCP_WINDOW_OFF, 0xffff);
	/* The field of a checksum left partial holds the pseudo-header's sum, not inverted. */
	store_be16(tcp + TCP_CSUM_OFF, (uint16_t)~inet_csum_fold(tcp_pseudo(len)));
	return FRAME_HLEN;
}

void frame_payload_fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + 1);
}

int frame_build(uint8_t *buf, size_t room, const struct frame_spec *spec)
{
	int rc = frame_build_headers(buf, room, spec);

	if (rc < 0)
		return rc;
	if (room < spec->len)
		return -ENOSPC;
	frame_payload_fill(buf + FRAME_HLEN, spec->len - FRAME_HLEN);
	return (int)spec->len;
}

void frame_csum_complete(uint8_t *hdr, const uint8_t *payload, size_t payload_len)
{
	const struct l4_csum c = { .start = IPV4_HLEN, .offset = TCP_CSUM_OFF };
	uint8_t *tcp = hdr + FRAME_L4_OFF;
	size_t len = FRAME_HLEN + payload_len;

	/* Again partial first, so that completing twice gives the same field. */
	store_be16(tcp + TCP_CSUM_OFF, (uint16_t)~inet_csum_fold(tcp_pseudo(len)));
	/* As a device does: the sum from the start, over the field's pseudo-header sum. */
	inet_csum_finish(tcp, TCP_HLEN, payload, payload_len, c);
}

int frame_check(const uint8_t *f, size_t len, bool verify)
{
	const uint8_t *outer = f + FRAME_OUTER_OFF, *inner = f + FRAME_INNER_OFF;

	if (len < FRAME_HLEN || load_be16(f + ETH_TYPE_OFF) != ETH_P_IP ||
	    outer[IPV4_PROTO_OFF] != IPPROTO_GRE_NUM ||
	    load_be16(outer + IPV4_TOT_LEN_OFF) != len - FRAME_OUTER_OFF ||
	    load_be16(outer + IPV4_HLEN + GRE_PROTO_OFF) != GRE_PROTO_IPV4 ||
	    inner[IPV4_PROTO_OFF] != IPPROTO_TCP ||
	    load_be16(inner + IPV4_TOT_LEN_OFF) != len - FRAME_INNER_OFF)
		return -EPROTO;
	if (verify &&
	    inet_csum_fold(inet_csum_add(tcp_pseudo(len), f + FRAME_L4_OFF, len - FRAME_L4_OFF)))
		return -EBADMSG;
	return 0;
}
