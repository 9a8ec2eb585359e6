/*
 * tunbed-framebench's test frame (framebench/frame.c): the headers it writes (Ethernet, IPv4
 * with a right checksum, GRE, inner IPv4 and TCP, the lengths of the frame asked for); the
 * inner TCP checksum left partial (the pseudo-header's sum, as a device expects it) and
 * completed as a device would, against a plain RFC 1071 sum written here, the payload beside
 * the headers or elsewhere, twice alike; and the receiver's check: a partial checksum is wrong
 * when summed, a mangled frame is not ours, lengths out of range are refused. Then the other
 * shapes: GRE-in-UDP and the bare TCP packet, a 64 KB superpacket of each and the virtio
 * header that hands it to a TAP (the offsets the kernel checks), how many segments fit, and
 * the receiver reading a superpacket of which its ring slot holds only the first bytes.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
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

/* GRE-in-UDP and the bare TCP packet: headers at their places, every length that of len. */
static void test_shapes(void)
{
	uint8_t f[ETH_FRAME_LEN];
	struct frame_spec s = spec;
	const uint8_t *outer = f + FRAME_OUTER_OFF, *udp = outer + IPV4_HLEN;
	struct frame_info fi;

	CHECK_INT(frame_hlen(FRAME_GRE), FRAME_HLEN);
	CHECK_INT(frame_hlen(FRAME_GRE_UDP), 86);
	CHECK_INT(frame_hlen(FRAME_TCP), 54);
	s.encap = FRAME_GRE_UDP;
	CHECK_INT(frame_build(f, sizeof(f), &s), 1514);
	CHECK_INT(outer[IPV4_PROTO_OFF], IPPROTO_UDP);
	CHECK_INT(load_be16(outer + IPV4_TOT_LEN_OFF), 1500);
	CHECK_INT(inet_csum(outer, IPV4_HLEN), 0);
	CHECK_INT(load_be16(udp + UDP_DPORT_OFF), 4754);
	CHECK_INT(load_be16(udp + UDP_LEN_OFF), 1480);
	CHECK_INT(load_be16(udp + UDP_CSUM_OFF), 0);
	CHECK_INT(load_be16(udp + UDP_HLEN), 0);
	CHECK_INT(load_be16(udp + UDP_HLEN + GRE_PROTO_OFF), GRE_PROTO_IPV4);
	CHECK_INT(load_be16(f + 46 + IPV4_TOT_LEN_OFF), 1468);
	CHECK_INT(inet_csum(f + 46, IPV4_HLEN), 0);
	CHECK_INT(frame_parse(f, 1514, 1514, &fi), 0);
	CHECK(fi.encap == FRAME_GRE_UDP && fi.l4_off == 66 && fi.hlen == 86);
	CHECK_INT(frame_check(f, 1514, false), 0);
	CHECK_INT(frame_check(f, 1514, true), -EBADMSG);
	/* Another port, or a UDP length that disagrees: not ours. */
	store_be16(f + 36, 4789);
	CHECK_INT(frame_check(f, 1514, false), -EPROTO);
	store_be16(f + 36, 4754);
	store_be16(f + 38, 1479);
	CHECK_INT(frame_check(f, 1514, false), -EPROTO);

	s.encap = FRAME_TCP;
	CHECK_INT(frame_build(f, sizeof(f), &s), 1514);
	CHECK_INT(outer[IPV4_PROTO_OFF], IPPROTO_TCP);
	CHECK_INT(load_be16(outer + IPV4_TOT_LEN_OFF), 1500);
	CHECK_INT(inet_csum(outer, IPV4_HLEN), 0);
	CHECK_INT(outer[IPV4_HLEN + TCP_FLAGS_OFF], TCP_F_ACK);
	/* No tunnel: a receiver takes it for none of its frames. */
	CHECK_INT(frame_check(f, 1514, false), -EPROTO);
}

/*
 * Superpackets of 45 segments of 1514-byte frames, as send --via tap writes them, and their
 * virtio headers; the partial checksum is over the whole TCP length, as the kernel's own TSO
 * packets have it, for segmentation to correct segment by segment.
 */
static void test_superpackets(void)
{
	enum { VNET = sizeof(struct virtio_net_hdr_v1_hash_tunnel) };
	static uint8_t f[FRAME_LEN_MAX + 1];
	const uint8_t in_src[4] = { 198, 19, 0, 1 }, in_dst[4] = { 198, 19, 0, 2 };
	struct frame_spec s = spec;
	struct virtio_net_hdr_v1_hash_tunnel h;
	const struct virtio_net_hdr_v1 *v = &h.hash_hdr.hdr;
	struct frame_info fi;

	CHECK_INT(VNET, 24);
	CHECK_INT(frame_segs_max(FRAME_GRE_UDP, 1514), 45);
	CHECK_INT(frame_segs_max(FRAME_GRE, 1514), 45);
	CHECK_INT(frame_segs_max(FRAME_GRE, 1000), 71);
	CHECK_INT(frame_segs_max(FRAME_GRE_UDP, 86), 0);

	/* GRE-in-UDP: 86 bytes of headers and 45 x 1428, 64346 bytes. */
	s.encap = FRAME_GRE_UDP;
	s.len = 86 + 45 * 1428;
	CHECK_INT(frame_build(f, sizeof(f), &s), 64346);
	CHECK_INT(load_be16(f + FRAME_OUTER_OFF + IPV4_TOT_LEN_OFF), 64332);
	CHECK_INT(load_be16(f + 38), 64312);
	CHECK_INT(load_be16(f + 46 + IPV4_TOT_LEN_OFF), 64300);
	CHECK_INT(load_be16(f + 66 + TCP_CSUM_OFF),
		  (uint16_t)~inet_csum_fold(
			  inet_pseudo_sum(AF_INET, in_src, in_dst, IPPROTO_TCP, 64280)));
	CHECK_INT(frame_vnet_build(&h, &s, 1428), 0);
	CHECK_INT(v->flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_INT(v->gso_type, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4);
	CHECK_INT(le16toh(v->gso_size), 1428);
	CHECK_INT(le16toh(v->csum_start), 66);
	CHECK_INT(le16toh(v->csum_offset), 16);
	CHECK_INT(le16toh(v->hdr_len), 86);
	CHECK_INT(le16toh(h.outer_th_offset), 34);
	CHECK_INT(le16toh(h.inner_nh_offset), 46);
	/* What the kernel asks of the offsets (virtio_net_hdr_tnl_to_skb). */
	CHECK(le16toh(h.outer_th_offset) >= ETH_HLEN + IPV4_HLEN);
	CHECK(le16toh(h.inner_nh_offset) >= le16toh(h.outer_th_offset) + UDP_HLEN);
	CHECK(le16toh(v->csum_start) >= le16toh(h.inner_nh_offset) + IPV4_HLEN);
	/* A ring's slot of 1552 bytes: the headers, and the length it had on the link. */
	CHECK_INT(frame_parse(f, 1552, 64346, &fi), 0);
	CHECK(fi.encap == FRAME_GRE_UDP && fi.hlen == 86);
	CHECK_INT(frame_parse(f, 85, 64346, &fi), -EPROTO);
	CHECK_INT(frame_parse(f, 1552, 64345, &fi), -EPROTO);
	CHECK_INT(frame_parse(f, 1552, 1500, &fi), -EPROTO);

	/* The TCP superpacket for GRE: 54 bytes of headers and 45 x 1436, plain TCPV4. */
	s.encap = FRAME_TCP;
	s.len = 54 + 45 * 1436;
	CHECK_INT(frame_build(f, sizeof(f), &s), 64674);
	CHECK_INT(frame_vnet_build(&h, &s, 1436), 0);
	CHECK_INT(v->gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	CHECK_INT(le16toh(v->gso_size), 1436);
	CHECK_INT(le16toh(v->csum_start), 34);
	CHECK_INT(le16toh(h.outer_th_offset), 0);
	/* One segment's payload or less is no superpacket: no GSO type, the checksum partial. */
	s.len = 54 + 1436;
	CHECK_INT(frame_vnet_build(&h, &s, 1436), 0);
	CHECK_INT(v->gso_type, VIRTIO_NET_HDR_GSO_NONE);
	CHECK_INT(v->flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	/* Refused: GRE itself (nothing in the header cuts it), no gso_size, a length past IPv4's. */
	s.encap = FRAME_GRE;
	CHECK_INT(frame_vnet_build(&h, &s, 1436), -EINVAL);
	s.encap = FRAME_TCP;
	CHECK_INT(frame_vnet_build(&h, &s, 0), -EINVAL);
	s.len = FRAME_LEN_MAX + 1;
	CHECK_INT(frame_build(f, sizeof(f), &s), -EINVAL);
	s.len = FRAME_LEN_MAX;
	CHECK_INT(frame_build(f, sizeof(f), &s), FRAME_LEN_MAX);
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
	CHECK_INT(frame_build(f, sizeof(f), &s), -ENOSPC);
	CHECK_INT(frame_build(f, 1513, &spec), -ENOSPC);
	CHECK_INT(frame_build_headers(f, FRAME_HLEN - 1, &spec), -ENOSPC);

	test_shapes();
	test_superpackets();
	return check_done("test_fb_frame");
}
