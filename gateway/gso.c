/*
 * Segmentation of TUN superpackets (see gso.h). The rules are the kernel's
 * (net/ipv4/tcp_offload.c tcp_gso_segment, net/ipv4/udp_offload.c __udp_gso_segment,
 * include/linux/virtio_net.h virtio_net_hdr_to_skb), restated here, not copied.
 */
#include "gso.h"

#include <endian.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

/* A partial checksum (its field holds the pseudo-header's sum) of a packet not to segment:
 * its field must lie within the packet. */
static enum drop_reason csum_partial(size_t len, unsigned start, unsigned off, struct gso_pkt *g)
{
	if (start == 0 || start >= len || off > len - start || len - start - off < 2)
		return DROP_TX_BAD_INNER;
	g->csum = (struct l4_csum){ (uint16_t)start, (uint16_t)off };
	return DROP_NONE;
}

enum drop_reason gso_parse(const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
			   unsigned mtu, struct gso_pkt *g)
{
	uint8_t type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	unsigned start = le16toh(h->csum_start), off = le16toh(h->csum_offset);
	unsigned l4hlen, iphlen;

	memset(g, 0, sizeof(*g));
	if (type == VIRTIO_NET_HDR_GSO_NONE) {
		if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
			return csum_partial(len, start, off, g);
		return DROP_NONE;
	}
	/* Segmentation needs the transport header located and its checksum left partial. */
	if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || len < 1)
		return DROP_TX_BAD_INNER;
	if ((pkt[0] >> 4) != 4 && (pkt[0] >> 4) != 6)
		return DROP_TX_BAD_INNER;
	g->pkt = pkt;
	g->len = len;
	g->family = (pkt[0] >> 4) == 6 ? AF_INET6 : AF_INET;
	g->ecn = h->gso_type & VIRTIO_NET_HDR_GSO_ECN;
	g->mss = le16toh(h->gso_size);
	g->l4_off = start;
	iphlen = g->family == AF_INET6 ? IPV6_HLEN : (pkt[0] & 0x0fu) * 4u;
	if (iphlen < IPV4_HLEN)
		return DROP_TX_BAD_INNER;
	switch (type) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
	case VIRTIO_NET_HDR_GSO_TCPV6:
		if ((type == VIRTIO_NET_HDR_GSO_TCPV6) != (g->family == AF_INET6))
			return DROP_TX_BAD_INNER;
		g->l4 = IPPROTO_TCP;
		if (off != TCP_CSUM_OFF || start + TCP_HLEN > len)
			return DROP_TX_BAD_INNER;
		l4hlen = (pkt[start + TCP_DOFF_OFF] >> 4) * 4u;
		if (l4hlen < TCP_HLEN)
			return DROP_TX_BAD_INNER;
		break;
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		g->l4 = IPPROTO_UDP;
		if (off != UDP_CSUM_OFF)
			return DROP_TX_BAD_INNER;
		l4hlen = UDP_HLEN;
		break;
	default:
		return DROP_TX_BAD_INNER; /* UFO (IP fragments) and anything newer */
	}
	/* The transport header follows the IP header (and IPv6's extension headers). */
	if (start < iphlen || (g->family == AF_INET && start != iphlen))
		return DROP_TX_BAD_INNER;
	/* The IP header names the transport the type says (IPv6: directly when the transport
	 * follows the fixed header; behind extension headers, the first is not the transport
	 * itself, and the kernel's word is taken for the rest). */
	if (len < iphlen ||
	    (g->family == AF_INET ? pkt[IPV4_PROTO_OFF] != g->l4
				  : (pkt[IPV6_NEXT_OFF] == g->l4) != (start == IPV6_HLEN)))
		return DROP_TX_BAD_INNER;
	g->hdr_len = start + l4hlen;
	if (g->hdr_len > GSO_HDR_MAX || g->hdr_len >= len || g->mss == 0)
		return DROP_TX_BAD_INNER;
	if (g->hdr_len + g->mss > mtu)
		return DROP_TX_TOO_BIG;
	g->nseg = (unsigned)((len - g->hdr_len + g->mss - 1) / g->mss);
	return DROP_NONE;
}

size_t gso_segment(const struct gso_pkt *g, unsigned i, uint8_t *hdr, bool partial)
{
	size_t done = (size_t)i * g->mss;
	size_t plen = g->len - g->hdr_len - done;
	const uint8_t *payload = g->pkt + g->hdr_len + done;
	uint8_t *l4 = hdr + g->l4_off;
	unsigned l4len;
	uint32_t sum;

	if (plen > g->mss)
		plen = g->mss;
	memcpy(hdr, g->pkt, g->hdr_len);
	l4len = g->hdr_len - g->l4_off + (unsigned)plen;
	if (g->family == AF_INET6) {
		store_be16(hdr + IPV6_PLEN_OFF, (uint16_t)(g->hdr_len - IPV6_HLEN + plen));
	} else {
		store_be16(hdr + IPV4_TOT_LEN_OFF, (uint16_t)(g->hdr_len + plen));
		store_be16(hdr + IPV4_ID_OFF, (uint16_t)(load_be16(g->pkt + IPV4_ID_OFF) + i));
		store_be16(hdr + IPV4_CSUM_OFF, 0);
		store_be16(hdr + IPV4_CSUM_OFF, inet_csum(hdr, g->l4_off));
	}
	if (g->l4 == IPPROTO_TCP) {
		store_be32(l4 + TCP_SEQ_OFF, load_be32(l4 + TCP_SEQ_OFF) + (uint32_t)done);
		if (i + 1 < g->nseg)
			l4[TCP_FLAGS_OFF] &= (uint8_t) ~(TCP_F_FIN | TCP_F_PSH);
		if (i > 0 && g->ecn)
			l4[TCP_FLAGS_OFF] &= (uint8_t)~TCP_F_CWR;
		store_be16(l4 + TCP_CSUM_OFF, 0);
	} else {
		store_be16(l4 + UDP_LEN_OFF, (uint16_t)l4len);
		store_be16(l4 + UDP_CSUM_OFF, 0);
	}
	sum = inet_pseudo_sum(g->family, hdr + ip_src_off(g->family), hdr + ip_dst_off(g->family),
			      g->l4, l4len);
	if (partial) {
		store_be16(l4 + gso_csum(g).offset, (uint16_t)~inet_csum_fold(sum));
		return plen;
	}
	sum = inet_csum_add(sum, l4, g->hdr_len - g->l4_off);
	sum = inet_csum_add(sum, payload, plen);
	{
		uint16_t c = inet_csum_fold(sum);

		if (g->l4 == IPPROTO_UDP && c == 0)
			c = 0xffff;
		store_be16(l4 + (g->l4 == IPPROTO_TCP ? TCP_CSUM_OFF : UDP_CSUM_OFF), c);
	}
	return plen;
}
