/*
 * The kernel's GRO rules for TCP, restated (see tcpjoin.h); not copied.
 */
#include "tcpjoin.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

/* TCP option kinds (RFC 9293, 3.2; RFC 7323, 3). */
enum {
	TCP_OPT_EOL = 0,
	TCP_OPT_NOP = 1,
	TCP_OPT_TIMESTAMPS = 8,
	TCP_OPT_TIMESTAMPS_LEN = 10, /* kind, length, TSval, TSecr */
};

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

/* Where the values (TSval, then TSecr) of the timestamps option (RFC 7323, 3) lie in the TCP
 * header th of thlen bytes, as an offset into it; 0 when it has none. */
static unsigned ts_values_at(const uint8_t *th, unsigned thlen)
{
	unsigned i = TCP_HLEN;

	while (i < thlen && th[i] != TCP_OPT_EOL) {
		if (th[i] == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= thlen || th[i + 1] < 2 || th[i + 1] > thlen - i)
			return 0; /* a length that lies: compared byte for byte instead */
		if (th[i] == TCP_OPT_TIMESTAMPS && th[i + 1] == TCP_OPT_TIMESTAMPS_LEN)
			return i + 2;
		i += th[i + 1];
	}
	return 0;
}

/* The option bytes of a and b (TCP headers of thlen bytes, the same length): the same, or
 * with TCPJOIN_NEWER_TS the same but b's timestamps, neither older than a's (serial
 * arithmetic: they wrap). */
static bool same_options(const uint8_t *ta, const uint8_t *tb, unsigned thlen,
			 enum tcpjoin_rules rules)
{
	unsigned ts = rules & TCPJOIN_NEWER_TS ? ts_values_at(ta, thlen) : 0;

	if (!ts)
		return memcmp(ta + TCP_HLEN, tb + TCP_HLEN, thlen - TCP_HLEN) == 0;
	/* The bytes before the option are the same, so b's lies where a's does. */
	return memcmp(ta + TCP_HLEN, tb + TCP_HLEN, ts - TCP_HLEN) == 0 &&
	       memcmp(ta + ts + 8, tb + ts + 8, thlen - ts - 8) == 0 &&
	       (int32_t)(load_be32(tb + ts) - load_be32(ta + ts)) >= 0 &&
	       (int32_t)(load_be32(tb + ts + 4) - load_be32(ta + ts + 4)) >= 0;
}

bool tcpjoin_follows(const uint8_t *a, unsigned l4_off, unsigned hdr_len,
		     const struct tcpjoin_seg *s, uint32_t next_seq, uint16_t next_id,
		     enum tcpjoin_rules rules)
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
	       same_options(ta, tb, hdr_len - l4_off, rules);
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
