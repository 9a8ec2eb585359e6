/*
 * Receive-side coalescing (see coalesce.h).
 */
#include "coalesce.h"

#include <endian.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

/* A TCP segment as coalescing reads it. */
struct seg {
	const uint8_t *pkt;
	size_t len;
	int family;
	unsigned l4_off, hdr_len;
	size_t plen; /* payload */
	uint8_t flags;
	uint32_t seq;
	bool mergeable; /* IPv4 without options and with its header checksum right, or IPv6
			 * with TCP next; sane TCP header */
};

/* Parses enough of a TCP packet; returns false for anything that is not TCP. */
static bool parse(const uint8_t *pkt, size_t len, struct seg *s)
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
		/* A merged segment's IPv4 header is dropped or rewritten, so it must be right
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

static bool csum_ok(const struct seg *s)
{
	size_t l4len = s->len - s->l4_off;
	uint32_t sum =
		inet_pseudo_sum(s->family, s->pkt + ip_src_off(s->family),
				s->pkt + ip_dst_off(s->family), IPPROTO_TCP, (uint32_t)l4len);

	return inet_csum_fold(inet_csum_add(sum, s->pkt + s->l4_off, l4len)) == 0;
}

/* Same addresses and ports: the flow. Both addresses at once: the destination follows the
 * source; each family's length a constant, so that the comparison is inlined. */
static bool same_flow(const struct coalesce_flow *f, const struct seg *s)
{
	const uint8_t *a = f->buf, *b = s->pkt;
	const uint8_t *pa = a + f->l4_off + L4_SPORT_OFF, *pb = b + s->l4_off + L4_SPORT_OFF;

	if (f->family != s->family)
		return false;
	if (s->family == AF_INET)
		return memcmp(a + IPV4_SRC_OFF, b + IPV4_SRC_OFF, 2 * 4) == 0 &&
		       memcmp(pa, pb, L4_PORTS_LEN) == 0;
	return memcmp(a + IPV6_SRC_OFF, b + IPV6_SRC_OFF, 2 * 16) == 0 &&
	       memcmp(pa, pb, L4_PORTS_LEN) == 0;
}

/* Whether s may be appended to f, as tcp_gro_receive and inet_gro_receive would. */
static bool joins(const struct coalesce_flow *f, const struct seg *s)
{
	const uint8_t *a = f->buf, *b = s->pkt;
	const uint8_t *ta = a + f->l4_off, *tb = b + s->l4_off;

	if (!s->mergeable || s->hdr_len != f->hdr_len || s->plen == 0 || s->plen > f->mss ||
	    f->len + s->plen > SUPERPACKET_MAX || s->seq != f->next_seq || (s->flags & TCP_F_CWR))
		return false;
	if (s->family == AF_INET) {
		/* TOS, DF, TTL; the identification counts up. */
		if (a[IPV4_TOS_OFF] != b[IPV4_TOS_OFF] ||
		    (load_be16(a + IPV4_FRAG_OFF) ^ load_be16(b + IPV4_FRAG_OFF)) ||
		    a[IPV4_TTL_OFF] != b[IPV4_TTL_OFF] || load_be16(b + IPV4_ID_OFF) != f->next_id)
			return false;
	} else if (memcmp(a, b, IPV6_PLEN_OFF) != 0 || a[IPV6_HOPS_OFF] != b[IPV6_HOPS_OFF]) {
		return false; /* traffic class, flow label (all before the length), hop limit */
	}
	/* ACK number; data offset, flags but PSH and FIN, window; every option byte. */
	if (memcmp(ta + TCP_ACK_OFF, tb + TCP_ACK_OFF, 4) != 0 ||
	    ta[TCP_DOFF_OFF] != tb[TCP_DOFF_OFF] ||
	    ((ta[TCP_FLAGS_OFF] ^ tb[TCP_FLAGS_OFF]) & (uint8_t) ~(TCP_F_PSH | TCP_F_FIN)) ||
	    memcmp(ta + TCP_WINDOW_OFF, tb + TCP_WINDOW_OFF, 2) != 0 ||
	    memcmp(ta + TCP_HLEN, tb + TCP_HLEN, f->hdr_len - f->l4_off - TCP_HLEN) != 0)
		return false;
	return true;
}

/* The virtio header of one packet: its checksum left partial, verified, or neither. */
static struct virtio_net_hdr one_hdr(struct l4_csum csum, bool verified)
{
	if (csum.start)
		return (struct virtio_net_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
						.csum_start = htole16(csum.start),
						.csum_offset = htole16(csum.offset) };
	return (struct virtio_net_hdr){ .flags = verified ? VIRTIO_NET_HDR_F_DATA_VALID : 0 };
}

static void emit_one(const uint8_t *pkt, size_t len, struct l4_csum csum, bool verified,
		     coalesce_emit_fn *emit, void *ctx)
{
	struct virtio_net_hdr h = one_hdr(csum, verified);

	emit(ctx, &h, pkt, len, 1);
}

static void emit_flow(struct coalescer *g, unsigned i, coalesce_emit_fn *emit, void *ctx)
{
	struct coalesce_flow *f = &g->flow[i];
	uint8_t *p = f->buf, *th = p + f->l4_off;
	struct virtio_net_hdr h = one_hdr(f->csum, true);

	g->open &= ~(1u << i);
	if (f->nseg > 1) {
		uint32_t sum;

		if (f->family == AF_INET) {
			store_be16(p + IPV4_TOT_LEN_OFF, (uint16_t)f->len);
			store_be16(p + IPV4_CSUM_OFF, 0);
			store_be16(p + IPV4_CSUM_OFF, inet_csum(p, IPV4_HLEN));
		} else {
			store_be16(p + IPV6_PLEN_OFF, (uint16_t)(f->len - IPV6_HLEN));
		}
		/* Checksum partial: the field holds the pseudo-header sum, the kernel (or
		 * whoever segments) adds the rest per segment. */
		sum = inet_pseudo_sum(f->family, p + ip_src_off(f->family),
				      p + ip_dst_off(f->family), IPPROTO_TCP,
				      (uint32_t)(f->len - f->l4_off));
		store_be16(th + TCP_CSUM_OFF, (uint16_t)~inet_csum_fold(sum));
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.gso_type =
			f->family == AF_INET6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		if (th[TCP_FLAGS_OFF] & TCP_F_CWR)
			h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
		h.hdr_len = htole16((uint16_t)f->hdr_len);
		h.gso_size = htole16((uint16_t)f->mss);
		h.csum_start = htole16((uint16_t)f->l4_off);
		h.csum_offset = htole16(TCP_CSUM_OFF);
	}
	emit(ctx, &h, p, f->len, f->nseg);
}

/*
 * Before a TCP packet coalescing cannot read goes on (a fragment, TCP behind an IPv6
 * extension header), what is held between the same two addresses goes first: the packet
 * may belong to a held flow, which must not be reordered. Other protocols pass held flows
 * (over IPv6: anything not TCP and not behind an extension header).
 */
static void flush_hosts(struct coalescer *g, const uint8_t *pkt, size_t len, coalesce_emit_fn *emit,
			void *ctx)
{
	int family = 0;
	unsigned off, alen;
	uint8_t next = len >= IPV6_HLEN ? pkt[IPV6_NEXT_OFF] : 0;

	if (len >= IPV4_HLEN && (pkt[0] >> 4) == 4 && pkt[IPV4_PROTO_OFF] == IPPROTO_TCP)
		family = AF_INET;
	else if (len >= IPV6_HLEN && (pkt[0] >> 4) == 6 &&
		 (next == IPPROTO_TCP || next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING ||
		  next == IPPROTO_FRAGMENT || next == IPPROTO_DSTOPTS || next == IPPROTO_AH))
		family = AF_INET6;
	off = ip_src_off(family);
	alen = 2 * ip_addr_len(family);
	for (unsigned i = 0; family && i < COALESCE_FLOWS; i++)
		if ((g->open & (1u << i)) && g->flow[i].family == family &&
		    memcmp(g->flow[i].buf + off, pkt + off, alen) == 0)
			emit_flow(g, i, emit, ctx);
}

void coalesce_init(struct coalescer *g, uint8_t *mem)
{
	memset(g, 0, sizeof(*g));
	for (unsigned i = 0; i < COALESCE_FLOWS; i++)
		g->flow[i].buf = mem + (size_t)i * COALESCE_BUF;
}

enum coalesce_result coalesce_add(struct coalescer *g, const uint8_t *pkt, size_t len,
				  struct l4_csum csum, coalesce_emit_fn *emit, void *ctx)
{
	struct seg s;
	struct coalesce_flow *f = NULL;
	unsigned i, slot = COALESCE_FLOWS, oldest = COALESCE_FLOWS;

	g->clock++;
	if (!parse(pkt, len, &s)) {
		flush_hosts(g, pkt, len, emit, ctx);
		emit_one(pkt, len, csum, false, emit, ctx);
		return COALESCE_PASSED;
	}
	for (i = 0; i < COALESCE_FLOWS; i++) {
		if (!(g->open & (1u << i))) {
			if (slot == COALESCE_FLOWS)
				slot = i;
			continue;
		}
		if (same_flow(&g->flow[i], &s)) {
			f = &g->flow[i];
			break;
		}
		if (oldest == COALESCE_FLOWS || g->flow[i].age < g->flow[oldest].age)
			oldest = i;
	}
	/* Only payload is merged, and only after its checksum is known right: a merged
	 * segment gets a fresh checksum, which would hide corruption. One left partial comes
	 * from this host, unchanged since (the kernel, too, takes CHECKSUM_PARTIAL as right). */
	if (s.plen && s.mergeable && !csum.start && !csum_ok(&s)) {
		if (f)
			emit_flow(g, i, emit, ctx);
		emit_one(pkt, len, csum, false, emit, ctx);
		return COALESCE_BAD_CSUM;
	}
	if (f) {
		if (joins(f, &s)) {
			memcpy(f->buf + f->len, s.pkt + s.hdr_len, s.plen);
			f->len += s.plen;
			f->nseg++;
			f->next_seq += (uint32_t)s.plen;
			f->next_id++;
			f->buf[f->l4_off + TCP_FLAGS_OFF] |= s.flags & (TCP_F_PSH | TCP_F_FIN);
			if (s.plen < f->mss || (s.flags & (TCP_F_PSH | TCP_F_FIN)))
				emit_flow(g, i, emit, ctx);
			return COALESCE_MERGED;
		}
		emit_flow(g, i, emit, ctx);
		slot = i;
	}
	if (!s.mergeable || s.plen == 0 ||
	    (s.flags & (TCP_F_SYN | TCP_F_FIN | TCP_F_RST | TCP_F_URG | TCP_F_PSH))) {
		emit_one(pkt, len, csum, s.plen && s.mergeable, emit, ctx);
		return COALESCE_PASSED;
	}
	if (slot == COALESCE_FLOWS) {
		slot = oldest;
		emit_flow(g, slot, emit, ctx);
	}
	f = &g->flow[slot];
	memcpy(f->buf, pkt, len);
	f->len = len;
	f->nseg = 1;
	f->hdr_len = s.hdr_len;
	f->l4_off = s.l4_off;
	f->mss = (unsigned)s.plen;
	f->next_seq = s.seq + (uint32_t)s.plen;
	f->next_id = (uint16_t)(s.family == AF_INET ? load_be16(pkt + IPV4_ID_OFF) + 1 : 0);
	f->family = s.family;
	f->csum = csum;
	f->age = g->clock;
	f->opened_ns = g->now_ns;
	g->open |= 1u << slot;
	return COALESCE_HELD;
}

void coalesce_flush(struct coalescer *g, coalesce_emit_fn *emit, void *ctx)
{
	for (unsigned i = 0; i < COALESCE_FLOWS; i++)
		if (g->open & (1u << i))
			emit_flow(g, i, emit, ctx);
}

void coalesce_flush_older(struct coalescer *g, uint64_t before_ns, coalesce_emit_fn *emit,
			  void *ctx)
{
	for (unsigned i = 0; i < COALESCE_FLOWS; i++)
		if ((g->open & (1u << i)) && g->flow[i].opened_ns < before_ns)
			emit_flow(g, i, emit, ctx);
}
