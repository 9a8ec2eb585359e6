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
#include "tcpjoin.h"

static bool csum_ok(const struct tcpjoin_seg *s)
{
	size_t l4len = s->len - s->l4_off;
	uint32_t sum =
		inet_pseudo_sum(s->family, s->pkt + ip_src_off(s->family),
				s->pkt + ip_dst_off(s->family), IPPROTO_TCP, (uint32_t)l4len);

	return inet_csum_fold(inet_csum_add(sum, s->pkt + s->l4_off, l4len)) == 0;
}

/* Whether s may be appended to f, as tcp_gro_receive and inet_gro_receive would: the
 * headers by tcpjoin's rules; no larger than the first segment; within 64 KB. */
static bool joins(const struct coalesce_flow *f, const struct tcpjoin_seg *s)
{
	return s->plen != 0 && s->plen <= f->mss && f->len + s->plen <= SUPERPACKET_MAX &&
	       tcpjoin_follows(f->buf, f->l4_off, f->hdr_len, s, f->next_seq, f->next_id,
			       TCPJOIN_GRO);
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
		/* Checksum partial: the kernel (or whoever segments) adds the rest per
		 * segment. */
		tcpjoin_finish(p, f->len, f->family, f->l4_off);
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
	struct tcpjoin_seg s;
	struct coalesce_flow *f = NULL;
	unsigned i, slot = COALESCE_FLOWS, oldest = COALESCE_FLOWS;

	g->clock++;
	if (!tcpjoin_parse(pkt, len, &s)) {
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
		if (tcpjoin_same_flow(g->flow[i].buf, g->flow[i].family, g->flow[i].l4_off, &s)) {
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
	if (!tcpjoin_opens(&s)) {
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
