/*
 * The kernel's GRO rules for TCP, restated (see tcpjoin.h); not copied.
 */
#include "tcpjoin.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

bool tcpjoin_parse(const uint8_t *pkt, size_t len, struct tcpjoin_seg *s)
{
	unsigned thlen;

	memset(s, 0, sizeof(*s));
	s->pkt = pkt;
	s->len = len;
	if (len < 1)
		return false;
	if ((pkt[0] >> 4) == 4) {
		if (len < IPV4_HLEN || pkt[IPV4_PROTO_OFF] != IPPROTO_TCP ||
		    (load_be16(pkt + IPV4_FRAG_OFF) & (IPV4_MF | IPV4_OFFMASK)))
			return false;
		s->family = AF_INET;
		s->l4_off = (pkt[0] & 0x0fu) * 4u;
		/* A joining segment's IPv4 header is dropped or rewritten, so it must be right
		 * first (inet_gro_receive checks it too); a wrong one goes on as it came, for
		 * the kernel to drop. */
		s->mergeable = s->l4_off == IPV4_HLEN && inet_csum(pkt, IPV4_HLEN) == 0;
	} else {
		if (len < IPV6_HLEN || pkt[IPV6_NEXT_OFF] != IPPROTO_TCP)
			return false;
		s->family = AF_INET6;
		s->l4_off = IPV6_HLEN;
		s->mergeable = true;
	}
	if (len < s->l4_off + TCP_HLEN)
		return false;
	thlen = (pkt[s->l4_off + TCP_DOFF_OFF] >> 4) * 4u;
	if (thlen < TCP_HLEN || len < s->l4_off + thlen)
		return false;
	s->hdr_len = s->l4_off + thlen;
	s->plen = len - s->hdr_len;
	s->flags = pkt[s->l4_off + TCP_FLAGS_OFF];
	s->seq = load_be32(pkt + s->l4_off + TCP_SEQ_OFF);
	return true;
}

/* Both addresses at once: the destination follows the source; each family's length a
 * constant, so that the comparison is inlined. */
bool tcpjoin_same_flow(const uint8_t *a, int family, unsigned l4_off, const struct tcpjoin_seg *s)
{
	const uint8_t *b = s->pkt;
	const uint8_t *pa = a + l4_off + L4_SPORT_OFF, *pb = b + s->l4_off + L4_SPORT_OFF;

	if (family != s->family)
		return false;
	if (family == AF_INET)
		return memcmp(a + IPV4_SRC_OFF, b + IPV4_SRC_OFF, 2 * 4) == 0 &&
		       memcmp(pa, pb, L4_PORTS_LEN) == 0;
	return memcmp(a + IPV6_SRC_OFF, b + IPV6_SRC_OFF, 2 * 16) == 0 &&
	       memcmp(pa, pb, L4_PORTS_LEN) == 0;
}

bool tcpjoin_follows(const uint8_t *a, unsigned l4_off, unsigned hdr_len,
		     const struct tcpjoin_seg *s, uint32_t next_seq, uint16_t next_id)
{
	const uint8_t *b = s->pkt;
	const uint8_t *ta = a + l4_off, *tb = b + s->l4_off;

	if (!s->mergeable || s->hdr_len != hdr_len || s->seq != next_seq || (s->flags & TCP_F_CWR))
		return false;
	if (s->family == AF_INET) {
		/* TOS, DF, TTL; the identification counts up. */
		if (a[IPV4_TOS_OFF] != b[IPV4_TOS_OFF] ||
		    (load_be16(a + IPV4_FRAG_OFF) ^ load_be16(b + IPV4_FRAG_OFF)) ||
		    a[IPV4_TTL_OFF] != b[IPV4_TTL_OFF] || load_be16(b + IPV4_ID_OFF) != next_id)
			return false;
	} else if (memcmp(a, b, IPV6_PLEN_OFF) != 0 || a[IPV6_HOPS_OFF] != b[IPV6_HOPS_OFF]) {
		return false; /* traffic class, flow label (all before the length), hop limit */
	}
	/* ACK number; data offset, flags but PSH and FIN, window; every option byte. */
	return memcmp(ta + TCP_ACK_OFF, tb + TCP_ACK_OFF, 4) == 0 &&
	       ta[TCP_DOFF_OFF] == tb[TCP_DOFF_OFF] &&
	       !((ta[TCP_FLAGS_OFF] ^ tb[TCP_FLAGS_OFF]) & (uint8_t) ~(TCP_F_PSH | TCP_F_FIN)) &&
	       memcmp(ta + TCP_WINDOW_OFF, tb + TCP_WINDOW_OFF, 2) == 0 &&
	       memcmp(ta + TCP_HLEN, tb + TCP_HLEN, hdr_len - l4_off - TCP_HLEN) == 0;
}

void tcpjoin_finish(uint8_t *p, size_t len, int family, unsigned l4_off)
{
	uint32_t sum;

	if (family == AF_INET) {
		store_be16(p + IPV4_TOT_LEN_OFF, (uint16_t)len);
		store_be16(p + IPV4_CSUM_OFF, 0);
		store_be16(p + IPV4_CSUM_OFF, inet_csum(p, IPV4_HLEN));
	} else {
		store_be16(p + IPV6_PLEN_OFF, (uint16_t)(len - IPV6_HLEN));
	}
	sum = inet_pseudo_sum(family, p + ip_src_off(family), p + ip_dst_off(family), IPPROTO_TCP,
			      (uint32_t)(len - l4_off));
	store_be16(p + l4_off + TCP_CSUM_OFF, (uint16_t)~inet_csum_fold(sum));
}
