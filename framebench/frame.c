/*
 * The test frame (see frame.h): built once per buffer, checked on receipt.
 */
#include "frame.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "byteorder.h"

const uint8_t frame_outer_src[4] = { 198, 18, 0, 1 }, frame_outer_dst[4] = { 198, 18, 0, 2 };
static const uint8_t inner_src[4] = { 198, 19, 0, 1 }, inner_dst[4] = { 198, 19, 0, 2 };

size_t frame_inner_off(enum frame_encap encap)
{
	switch (encap) {
	case FRAME_GRE:
		return FRAME_INNER_OFF;
	case FRAME_GRE_UDP:
		return FRAME_INNER_OFF + UDP_HLEN;
	case FRAME_TCP:
		break;
	}
	return ETH_HLEN;
}

size_t frame_hlen(enum frame_encap encap)
{
	return frame_inner_off(encap) + IPV4_HLEN + TCP_HLEN;
}

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

/* The sum of the inner TCP pseudo-header, tcp_len bytes of TCP header and payload. */
static uint32_t tcp_pseudo(size_t tcp_len)
{
	return inet_pseudo_sum(AF_INET, inner_src, inner_dst, IPPROTO_TCP, (uint32_t)tcp_len);
}

/* The outer IPv4 header and what follows it up to the inner one: GRE, or UDP and GRE. */
static void outer_build(uint8_t *p, size_t ip_len, enum frame_encap encap)
{
	const struct gre_info gre = { .proto = GRE_PROTO_IPV4 };
	uint8_t *l4 = p + IPV4_HLEN;

	if (encap == FRAME_GRE_UDP) {
		ipv4_build(p, ip_len, IPPROTO_UDP, frame_outer_src, frame_outer_dst);
		store_be16(l4 + UDP_SPORT_OFF, FRAME_UDP_SPORT);
		store_be16(l4 + UDP_DPORT_OFF, GRE_UDP_PORT);
		store_be16(l4 + UDP_LEN_OFF, (uint16_t)(ip_len - IPV4_HLEN));
		/* Zero: no checksum, as the kernel's fou sends over IPv4 (RFC 768). */
		store_be16(l4 + UDP_CSUM_OFF, 0);
		l4 += UDP_HLEN;
	} else {
		ipv4_build(p, ip_len, IPPROTO_GRE_NUM, frame_outer_src, frame_outer_dst);
	}
	gre_build(l4, GRE_HLEN_MIN, &gre);
}

int frame_build_headers(uint8_t *buf, size_t room, const struct frame_spec *spec)
{
	size_t len = spec->len, inner = frame_inner_off(spec->encap);
	size_t hlen = frame_hlen(spec->encap);
	uint8_t *tcp = buf + inner + IPV4_HLEN;

	if (len < hlen || len > FRAME_LEN_MAX)
		return -EINVAL;
	if (room < hlen)
		return -ENOSPC;
	memcpy(buf, spec->dst, ETH_ALEN);
	memcpy(buf + ETH_ALEN, spec->src, ETH_ALEN);
	store_be16(buf + ETH_TYPE_OFF, ETH_P_IP);
	if (spec->encap != FRAME_TCP)
		outer_build(buf + ETH_HLEN, len - ETH_HLEN, spec->encap);
	ipv4_build(buf + inner, len - inner, IPPROTO_TCP, inner_src, inner_dst);
	memset(tcp, 0, TCP_HLEN);
	store_be16(tcp + TCP_SPORT_OFF, 40000);
	store_be16(tcp + TCP_DPORT_OFF, 5201);
	tcp[TCP_DOFF_OFF] = (TCP_HLEN / 4) << 4;
	tcp[TCP_FLAGS_OFF] = TCP_F_ACK;
	store_be16(tcp + TCP_WINDOW_OFF, 0xffff);
	/* The field of a checksum left partial holds the pseudo-header's sum, not inverted; of a
	 * superpacket, over its whole length, which segmentation corrects for each segment. */
	store_be16(tcp + TCP_CSUM_OFF,
		   (uint16_t)~inet_csum_fold(tcp_pseudo(len - inner - IPV4_HLEN)));
	return (int)hlen;
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
	frame_payload_fill(buf + rc, spec->len - (size_t)rc);
	return (int)spec->len;
}

void frame_csum_complete(uint8_t *hdr, const uint8_t *payload, size_t payload_len)
{
	const struct l4_csum c = { .start = IPV4_HLEN, .offset = TCP_CSUM_OFF };
	uint8_t *tcp = hdr + FRAME_L4_OFF;

	/* Again partial first, so that completing twice gives the same field. */
	store_be16(tcp + TCP_CSUM_OFF,
		   (uint16_t)~inet_csum_fold(tcp_pseudo(TCP_HLEN + payload_len)));
	/* As a device does: the sum from the start, over the field's pseudo-header sum. */
	inet_csum_finish(tcp, TCP_HLEN, payload, payload_len, c);
}

int frame_vnet_build(struct virtio_net_hdr_v1_hash_tunnel *h, const struct frame_spec *spec,
		     unsigned gso_size)
{
	struct virtio_net_hdr_v1 *v = &h->hash_hdr.hdr;
	size_t l4 = frame_inner_off(spec->encap) + IPV4_HLEN;

	if (spec->encap == FRAME_GRE || !gso_size)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	/* A TAP's header is little-endian (virtio 1.0), as every TAP is on this host. */
	v->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	v->csum_start = htole16((uint16_t)l4);
	v->csum_offset = htole16(TCP_CSUM_OFF);
	v->hdr_len = htole16((uint16_t)(l4 + TCP_HLEN));
	if (spec->len - l4 - TCP_HLEN <= gso_size)
		return 0;
	v->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	v->gso_size = htole16((uint16_t)gso_size);
	if (spec->encap == FRAME_GRE_UDP) {
		/* The kernel checks only that these offsets are in order (virtio_net.h,
		 * virtio_net_hdr_tnl_to_skb): outer IP, then UDP, then the inner IP, then TCP. */
		v->gso_type |= VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4;
		h->outer_th_offset = htole16(ETH_HLEN + IPV4_HLEN);
		h->inner_nh_offset = htole16((uint16_t)frame_inner_off(FRAME_GRE_UDP));
	}
	return 0;
}

unsigned frame_segs_max(enum frame_encap encap, size_t seg_len)
{
	size_t hlen = frame_hlen(encap);

	if (seg_len <= hlen)
		return 0;
	return (unsigned)((FRAME_LEN_MAX - hlen) / (seg_len - hlen));
}

int frame_parse(const uint8_t *f, size_t caplen, size_t len, struct frame_info *out)
{
	const uint8_t *outer = f + FRAME_OUTER_OFF, *gre = outer + IPV4_HLEN, *inner, *tcp;
	enum frame_encap encap = FRAME_GRE;
	size_t off, thlen;

	/* Up to GRE's protocol field, which a GRE-in-UDP frame has 8 bytes further on. */
	if (caplen > len || caplen < FRAME_INNER_OFF + UDP_HLEN ||
	    load_be16(f + ETH_TYPE_OFF) != ETH_P_IP || outer[0] != 0x45 ||
	    load_be16(outer + IPV4_TOT_LEN_OFF) != len - FRAME_OUTER_OFF)
		return -EPROTO;
	if (outer[IPV4_PROTO_OFF] == IPPROTO_UDP) {
		if (load_be16(gre + UDP_DPORT_OFF) != GRE_UDP_PORT ||
		    load_be16(gre + UDP_LEN_OFF) != len - FRAME_OUTER_OFF - IPV4_HLEN)
			return -EPROTO;
		encap = FRAME_GRE_UDP;
		gre += UDP_HLEN;
	} else if (outer[IPV4_PROTO_OFF] != IPPROTO_GRE_NUM) {
		return -EPROTO;
	}
	off = frame_inner_off(encap);
	inner = f + off;
	tcp = inner + IPV4_HLEN;
	if (caplen < off + IPV4_HLEN + TCP_HLEN || load_be16(gre + GRE_PROTO_OFF) != GRE_PROTO_IPV4)
		return -EPROTO;
	thlen = (size_t)(tcp[TCP_DOFF_OFF] >> 4) * 4;
	if (inner[0] != 0x45 || inner[IPV4_PROTO_OFF] != IPPROTO_TCP ||
	    load_be16(inner + IPV4_TOT_LEN_OFF) != len - off || thlen < TCP_HLEN ||
	    off + IPV4_HLEN + thlen > len)
		return -EPROTO;
	out->encap = encap;
	out->l4_off = off + IPV4_HLEN;
	out->hlen = out->l4_off + thlen;
	return 0;
}

int frame_check(const uint8_t *f, size_t len, bool verify)
{
	struct frame_info fi;

	if (frame_parse(f, len, len, &fi))
		return -EPROTO;
	if (verify && inet_csum_fold(inet_csum_add(tcp_pseudo(len - fi.l4_off), f + fi.l4_off,
						   len - fi.l4_off)))
		return -EBADMSG;
	return 0;
}
