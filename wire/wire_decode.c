/*
 * Frame decoding for the wire audit (see wire_decode.h): Ethernet/SLL/raw link headers,
 * outer IPv4 (RFC 791) and IPv6 (RFC 8200), GRE (RFC 2784, RFC 2890), GRE-in-UDP (RFC 8086)
 * with its GSO super-frames split into datagrams.
 * Every length is checked before it is read; a frame the capture cut short (snapped) is told
 * apart from one that was short on the wire (truncated).
 */
#include "wire_decode.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

/* The link headers in front of IP, and where each keeps the EtherType of what follows. */
enum {
	ETH_HLEN_ = 14, /* IEEE 802.3: destination, source, EtherType */
	ETH_TYPE_OFF_ = 12,
	VLAN_HLEN_ = 4, /* IEEE 802.1Q: tag control, then the EtherType */
	VLAN_TYPE_OFF_ = 2,
	SLL_HLEN_ = 16, /* Linux cooked capture v1: the protocol last */
	SLL_TYPE_OFF_ = 14,
	SLL2_HLEN_ = 20, /* Linux cooked capture v2: the protocol first */
	SLL2_TYPE_OFF_ = 0,
	NULL_HLEN_ = 4, /* BSD loopback: the address family */
	ETHERTYPE_IPV4_ = 0x0800,
	ETHERTYPE_IPV6_ = 0x86dd,
	ETHERTYPE_VLAN_ = 0x8100,
	ETHERTYPE_QINQ_ = 0x88a8,
};

/* The IPv6 fragment header beyond what common/inet.h names (RFC 8200, 4.5). */
enum {
	IPV6_FRAG_OFFSET_OFF = 2, /* offset (high 13 bits), M flag (bit 0) */
	IPV6_FRAG_OFFMASK = 0xfff8,
};

static const char *const violation_names[WIRE_V_MAX] = {
	[WIRE_V_TRUNCATED] = "truncated",
	[WIRE_V_BAD_OUTER] = "bad_outer",
	[WIRE_V_FRAGMENT] = "fragment",
	[WIRE_V_BAD_PEER] = "bad_peer",
	[WIRE_V_BAD_UDP] = "bad_udp",
	[WIRE_V_BAD_GRE] = "bad_gre",
	[WIRE_V_NO_KEY] = "no_key",
	[WIRE_V_BAD_KEY] = "bad_key",
	[WIRE_V_NO_SEQ] = "no_seq",
	[WIRE_V_UNEXPECTED_SEQ] = "unexpected_seq",
	[WIRE_V_NO_CSUM] = "no_csum",
	[WIRE_V_UNEXPECTED_CSUM] = "unexpected_csum",
	[WIRE_V_BAD_CSUM] = "bad_csum",
	[WIRE_V_BAD_PROTO] = "bad_proto",
	[WIRE_V_BAD_INNER] = "bad_inner",
	[WIRE_V_INNER_TOO_BIG] = "inner_too_big",
	[WIRE_V_ECN_NOT_COPIED] = "ecn_not_copied",
	[WIRE_V_ECN_CE_RESET] = "ecn_ce_reset",
	[WIRE_V_ECN_MISMATCH] = "ecn_mismatch",
	[WIRE_V_BAD_DSCP] = "bad_dscp",
	[WIRE_V_BAD_TTL] = "bad_ttl",
};

const char *wire_violation_name(enum wire_violation v)
{
	return (unsigned)v < WIRE_V_MAX ? violation_names[v] : "?";
}

const char *wire_link_name(int link)
{
	switch (link) {
	case WIRE_LINK_NULL:
		return "NULL";
	case WIRE_LINK_ETHER:
		return "EN10MB";
	case WIRE_LINK_RAW:
		return "RAW";
	case WIRE_LINK_LINUX_SLL:
		return "LINUX_SLL";
	case WIRE_LINK_IPV4:
		return "IPV4";
	case WIRE_LINK_IPV6:
		return "IPV6";
	case WIRE_LINK_LINUX_SLL2:
		return "LINUX_SLL2";
	}
	return NULL;
}

void wire_expect_init(struct wire_expect *e)
{
	memset(e, 0, sizeof(*e));
	e->udp_port = GRE_UDP_PORT;
	e->ecn = true;
}

/*
 * A span of the frame: len bytes on the wire, of which cap were captured (cap <= len). Every
 * read goes through need(), which says whether n bytes are there and, if not, whether the
 * wire or the capture is to blame.
 */
struct span {
	const uint8_t *p;
	size_t cap, len;
};

enum need_result {
	NEED_OK,
	NEED_SNAPPED,
	NEED_TRUNCATED,
};

static enum need_result need(const struct span *s, size_t n)
{
	if (n <= s->cap)
		return NEED_OK;
	return n <= s->len ? NEED_SNAPPED : NEED_TRUNCATED;
}

static struct span span_sub(const struct span *s, size_t off, size_t len)
{
	struct span r = { s->p + off, 0, len };

	/* The caller has checked off <= s->len and off + len <= s->len. */
	r.cap = off < s->cap ? s->cap - off : 0;
	if (r.cap > len)
		r.cap = len;
	return r;
}

/* Marks the frame for a failed need(): true if decoding must stop. */
static bool short_frame(struct wire_frame *f, enum need_result r)
{
	if (r == NEED_OK)
		return false;
	if (r == NEED_SNAPPED)
		f->snapped = true;
	else
		f->violations |= 1u << WIRE_V_TRUNCATED;
	return true;
}

/*
 * Skips the link header. Returns the offset of the IP header, -ENOENT if the frame carries
 * something else, -ENODATA if it stops short (the frame is marked), or -EPROTONOSUPPORT.
 */
static int link_skip(int link, const struct span *s, struct wire_frame *f)
{
	size_t off;
	uint16_t type;

	switch (link) {
	case WIRE_LINK_RAW:
	case WIRE_LINK_IPV4:
	case WIRE_LINK_IPV6:
		return 0;
	case WIRE_LINK_NULL:
		/* The family is in host order of the capturing machine: trust the IP version. */
		return short_frame(f, need(s, NULL_HLEN_)) ? -ENODATA : NULL_HLEN_;
	case WIRE_LINK_LINUX_SLL:
		if (short_frame(f, need(s, SLL_HLEN_)))
			return -ENODATA;
		type = load_be16(s->p + SLL_TYPE_OFF_);
		off = SLL_HLEN_;
		break;
	case WIRE_LINK_LINUX_SLL2:
		if (short_frame(f, need(s, SLL2_HLEN_)))
			return -ENODATA;
		type = load_be16(s->p + SLL2_TYPE_OFF_);
		off = SLL2_HLEN_;
		break;
	case WIRE_LINK_ETHER:
		if (short_frame(f, need(s, ETH_HLEN_)))
			return -ENODATA;
		type = load_be16(s->p + ETH_TYPE_OFF_);
		off = ETH_HLEN_;
		for (int i = 0;
		     i < WIRE_VLAN_MAX && (type == ETHERTYPE_VLAN_ || type == ETHERTYPE_QINQ_);
		     i++) {
			if (short_frame(f, need(s, off + VLAN_HLEN_)))
				return -ENODATA;
			type = load_be16(s->p + off + VLAN_TYPE_OFF_);
			off += VLAN_HLEN_;
		}
		break;
	default:
		return -EPROTONOSUPPORT;
	}
	return type == ETHERTYPE_IPV4_ || type == ETHERTYPE_IPV6_ ? (int)off : -ENOENT;
}

/* What the outer header says: where its payload starts and how long it is. */
struct outer {
	bool proto_known; /* the fixed header was read: proto (and for IPv4 hlen) are set */
	uint8_t proto;
	size_t hlen; /* with IPv6 extension headers */
	bool fragment;
	bool first_fragment; /* offset 0: the next header is there */
};

/* Reads the outer IP header of s (s->len is the rest of the frame). Returns false to stop. */
static bool outer_parse(struct span *s, struct wire_frame *f, struct outer *o)
{
	unsigned v;
	size_t tot;

	if (short_frame(f, need(s, 1)))
		return false;
	v = s->p[0] >> 4;
	if (v == 4) {
		uint16_t frag;

		if (short_frame(f, need(s, IPV4_HLEN)))
			return false;
		o->hlen = (s->p[0] & 0x0f) * 4u;
		o->proto = s->p[IPV4_PROTO_OFF];
		o->proto_known = true;
		tot = load_be16(s->p + IPV4_TOT_LEN_OFF);
		if (o->hlen < IPV4_HLEN || tot < o->hlen) {
			f->violations |= 1u << WIRE_V_BAD_OUTER;
			return false;
		}
		if (short_frame(f, need(s, o->hlen)))
			return false;
		if (inet_csum(s->p, o->hlen) != 0)
			f->violations |= 1u << WIRE_V_BAD_OUTER;
		f->outer_ttl = s->p[IPV4_TTL_OFF];
		f->src.family = f->dst.family = AF_INET;
		memcpy(f->src.bytes, s->p + IPV4_SRC_OFF, 4);
		memcpy(f->dst.bytes, s->p + IPV4_DST_OFF, 4);
		frag = load_be16(s->p + IPV4_FRAG_OFF);
		o->fragment = (frag & (IPV4_MF | IPV4_OFFMASK)) != 0;
		o->first_fragment = (frag & IPV4_OFFMASK) == 0;
	} else if (v == 6) {
		unsigned nh;

		if (short_frame(f, need(s, IPV6_HLEN)))
			return false;
		tot = IPV6_HLEN + (size_t)load_be16(s->p + IPV6_PLEN_OFF);
		f->outer_ttl = s->p[IPV6_HOPS_OFF];
		f->src.family = f->dst.family = AF_INET6;
		memcpy(f->src.bytes, s->p + IPV6_SRC_OFF, 16);
		memcpy(f->dst.bytes, s->p + IPV6_DST_OFF, 16);
		nh = s->p[IPV6_NEXT_OFF];
		o->hlen = IPV6_HLEN;
		o->fragment = false;
		o->first_fragment = true;
		/* Extension headers are walked within the payload length the header claims. */
		for (int i = 0; i < WIRE_IPV6_EXT_MAX; i++) {
			struct span t = *s;

			if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING &&
			    nh != IPPROTO_DSTOPTS && nh != IPPROTO_FRAGMENT)
				break;
			if (t.len > tot)
				t.len = tot;
			if (t.cap > t.len)
				t.cap = t.len;
			if (short_frame(f, need(&t, o->hlen + IPV6_EXT_UNIT)))
				return false;
			if (nh == IPPROTO_FRAGMENT) {
				o->fragment = true;
				o->first_fragment =
					(load_be16(s->p + o->hlen + IPV6_FRAG_OFFSET_OFF) &
					 IPV6_FRAG_OFFMASK) == 0;
				nh = s->p[o->hlen + IPV6_EXT_NEXT_OFF];
				o->hlen += IPV6_EXT_UNIT;
				break;
			}
			nh = s->p[o->hlen + IPV6_EXT_NEXT_OFF];
			o->hlen += ((size_t)s->p[o->hlen + IPV6_EXT_LEN_OFF] + 1) * IPV6_EXT_UNIT;
		}
		o->proto = (uint8_t)nh;
		o->proto_known = true;
		if (o->hlen > tot) {
			f->violations |= 1u << WIRE_V_TRUNCATED;
			return false;
		}
	} else {
		f->violations |= 1u << WIRE_V_BAD_OUTER;
		return false;
	}
	f->has_outer_ds = true;
	f->outer_ds = ip_dsfield(s->p);
	/* Ethernet pads short frames: bytes past the IP length are the link's, not ours. */
	if (tot > s->len) {
		f->violations |= 1u << WIRE_V_TRUNCATED;
		return false;
	}
	s->len = tot;
	if (s->cap > tot)
		s->cap = tot;
	f->outer_len = (unsigned)tot;
	return true;
}

static void peer_check(const struct wire_expect *e, struct wire_frame *f)
{
	/* A header too broken to trust its length leaves the addresses unread: nothing to judge. */
	if (!e->has_peers || !f->src.family)
		return;
	if (e->tunnels) {
		if (netaddr_equal(&f->src, &e->local) && wire_tunnels_has_peer(e->tunnels, &f->dst))
			f->dir = 0;
		else if (netaddr_equal(&f->dst, &e->local) &&
			 wire_tunnels_has_peer(e->tunnels, &f->src))
			f->dir = 1;
		else
			f->violations |= 1u << WIRE_V_BAD_PEER;
		return;
	}
	if (netaddr_equal(&f->src, &e->local) && netaddr_equal(&f->dst, &e->remote))
		f->dir = 0;
	else if (netaddr_equal(&f->src, &e->remote) && netaddr_equal(&f->dst, &e->local))
		f->dir = 1;
	else
		f->violations |= 1u << WIRE_V_BAD_PEER;
}

/* The inner packet's L4 ports and, for TCP, sequence and payload length. */
static void inner_l4(const struct span *in, size_t hlen, bool later_fragment, struct wire_frame *f)
{
	struct span l4;

	if (later_fragment || hlen > in->len)
		return;
	l4 = span_sub(in, hlen, f->inner_len - hlen);
	if (f->flow.proto == IPPROTO_TCP) {
		size_t doff;

		if (need(&l4, TCP_HLEN) != NEED_OK)
			return;
		f->flow.port[0] = load_be16(l4.p + TCP_SPORT_OFF);
		f->flow.port[1] = load_be16(l4.p + TCP_DPORT_OFF);
		doff = (l4.p[TCP_DOFF_OFF] >> 4) * 4u;
		if (doff < TCP_HLEN || doff > l4.len)
			return;
		f->has_tcp = true;
		f->tcp_seq = load_be32(l4.p + TCP_SEQ_OFF);
		f->tcp_flags = l4.p[TCP_FLAGS_OFF];
		f->tcp_payload = (uint32_t)(l4.len - doff);
	} else if (f->flow.proto == IPPROTO_UDP) {
		if (need(&l4, L4_PORTS_LEN) != NEED_OK)
			return;
		f->flow.port[0] = load_be16(l4.p + UDP_SPORT_OFF);
		f->flow.port[1] = load_be16(l4.p + UDP_DPORT_OFF);
	}
}

/* Checks the inner packet (in: the GRE payload) against the family GRE names and the MTU. */
static void inner_parse(const struct wire_expect *e, const struct span *in, uint16_t proto,
			struct wire_frame *f)
{
	size_t hlen, tot;
	bool later_fragment = false;
	unsigned v;

	if (short_frame(f, need(in, 1)))
		return;
	v = in->p[0] >> 4;
	if ((proto == GRE_PROTO_IPV4 && v != 4) || (proto == GRE_PROTO_IPV6 && v != 6)) {
		f->violations |= 1u << WIRE_V_BAD_INNER;
		return;
	}
	hlen = v == 4 ? IPV4_HLEN : IPV6_HLEN;
	if (need(in, hlen) == NEED_TRUNCATED) {
		f->violations |= 1u << WIRE_V_BAD_INNER;
		return;
	}
	if (short_frame(f, need(in, hlen)))
		return;
	if (v == 4) {
		hlen = (in->p[0] & 0x0f) * 4u;
		tot = load_be16(in->p + IPV4_TOT_LEN_OFF);
		/* A header shorter than 20, longer than the packet, or not in the GRE payload. */
		if (hlen < IPV4_HLEN || tot < hlen || tot > in->len) {
			f->violations |= 1u << WIRE_V_BAD_INNER;
			return;
		}
		if (short_frame(f, need(in, hlen)))
			return;
		if (inet_csum(in->p, hlen) != 0) {
			f->violations |= 1u << WIRE_V_BAD_INNER;
			return;
		}
		f->flow.family = AF_INET;
		f->flow.proto = in->p[IPV4_PROTO_OFF];
		memcpy(f->flow.addr[0], in->p + IPV4_SRC_OFF, 4);
		memcpy(f->flow.addr[1], in->p + IPV4_DST_OFF, 4);
		later_fragment = (load_be16(in->p + IPV4_FRAG_OFF) & IPV4_OFFMASK) != 0;
		f->has_ip_id = true;
		f->ip_id = load_be16(in->p + IPV4_ID_OFF);
	} else {
		tot = IPV6_HLEN + (size_t)load_be16(in->p + IPV6_PLEN_OFF);
		if (tot > in->len) {
			f->violations |= 1u << WIRE_V_BAD_INNER;
			return;
		}
		f->flow.family = AF_INET6;
		f->flow.proto = in->p[IPV6_NEXT_OFF];
		memcpy(f->flow.addr[0], in->p + IPV6_SRC_OFF, 16);
		memcpy(f->flow.addr[1], in->p + IPV6_DST_OFF, 16);
	}
	f->has_inner = true;
	f->inner_len = (unsigned)tot;
	f->inner_ds = ip_dsfield(in->p);
	f->inner_ttl = in->p[v == 4 ? IPV4_TTL_OFF : IPV6_HOPS_OFF];
	if (e->mtu && tot > e->mtu)
		f->violations |= 1u << WIRE_V_INNER_TOO_BIG;
	inner_l4(in, hlen, later_fragment, f);
}

/*
 * The outer header against the inner packet it carries, as the encapsulator must have built
 * it: the ECN field copied (RFC 6040, 4.1, normal mode), the DSCP inherited (RFC 2983) or the
 * one given, the TTL likewise. A CE outer header over an ECT inner packet is a router's mark on
 * the way, not the encapsulator's doing, and passes; no router marks a Not-ECT packet, or turns
 * one ECT codepoint into the other.
 */
static void tos_check(const struct wire_expect *e, struct wire_frame *f)
{
	unsigned in = f->inner_ds & IP_ECN_MASK, out = f->outer_ds & IP_ECN_MASK;
	unsigned dscp = e->dscp == WIRE_FIELD_INHERIT ? (unsigned)f->inner_ds >> IP_DSCP_SHIFT
						      : e->dscp_value;
	unsigned ttl = e->ttl == WIRE_FIELD_INHERIT ? f->inner_ttl : e->ttl_value;

	if (!f->has_inner || !f->has_outer_ds)
		return;
	if (e->ecn && in != out) {
		if (out == IP_ECN_NOT_ECT)
			f->violations |= 1u << WIRE_V_ECN_NOT_COPIED;
		else if (in == IP_ECN_CE && out == IP_ECN_ECT0)
			f->violations |= 1u << WIRE_V_ECN_CE_RESET;
		else if (out != IP_ECN_CE || in == IP_ECN_NOT_ECT)
			f->violations |= 1u << WIRE_V_ECN_MISMATCH;
	}
	if (e->dscp != WIRE_FIELD_ANY && (unsigned)f->outer_ds >> IP_DSCP_SHIFT != dscp)
		f->violations |= 1u << WIRE_V_BAD_DSCP;
	if (e->ttl != WIRE_FIELD_ANY && f->outer_ttl != ttl)
		f->violations |= 1u << WIRE_V_BAD_TTL;
}

static void want_check(enum wire_want w, bool present, enum wire_violation absent,
		       enum wire_violation unexpected, struct wire_frame *f)
{
	if (w == WIRE_WANT_YES && !present)
		f->violations |= 1u << absent;
	else if (w == WIRE_WANT_NO && present)
		f->violations |= 1u << unexpected;
}

/*
 * --tunnels: the frame's tunnel, by its far end (dir says which address that is) and its key,
 * and what that tunnel carries: its key (found or not), sequence numbers and checksums.
 */
static void tunnel_check(const struct wire_tunnels *w, struct wire_frame *f)
{
	bool has_key = f->gre.flags & GRE_F_KEY, keyed;
	const struct wire_tunnel *t;

	if (f->dir < 0)
		return; /* bad_peer already: no tunnel to hold it to */
	f->tunnel =
		wire_tunnels_find(w, f->dir == 0 ? &f->dst : &f->src, has_key, f->gre.key, &keyed);
	if (f->tunnel < 0) {
		f->violations |= 1u << (!has_key && keyed ? WIRE_V_NO_KEY : WIRE_V_BAD_KEY);
		return;
	}
	t = &w->t[f->tunnel];
	want_check(t->gre_flags & GRE_F_SEQ ? WIRE_WANT_YES : WIRE_WANT_NO,
		   f->gre.flags & GRE_F_SEQ, WIRE_V_NO_SEQ, WIRE_V_UNEXPECTED_SEQ, f);
	want_check(t->gre_flags & GRE_F_CSUM ? WIRE_WANT_YES : WIRE_WANT_NO,
		   f->gre.flags & GRE_F_CSUM, WIRE_V_NO_CSUM, WIRE_V_UNEXPECTED_CSUM, f);
}

/* The inner packet's total length by its header, if it can be read and fits in in; else 0. */
static size_t inner_tot(const struct span *in, uint16_t proto)
{
	size_t tot;

	if (proto == GRE_PROTO_IPV4 && need(in, IPV4_HLEN) == NEED_OK && in->p[0] >> 4 == 4)
		tot = load_be16(in->p + IPV4_TOT_LEN_OFF);
	else if (proto == GRE_PROTO_IPV6 && need(in, IPV6_HLEN) == NEED_OK && in->p[0] >> 4 == 6)
		tot = IPV6_HLEN + (size_t)load_be16(in->p + IPV6_PLEN_OFF);
	else
		return 0;
	/* Below a header, the next packet could start inside this one's: no progress. */
	return tot >= IPV4_HLEN && tot <= in->len ? tot : 0;
}

/*
 * GRE-in-UDP: the length of the GRE packet at the head of g (its header hl long, read into
 * f->gre) when another GRE header of the same flags and protocol type follows its inner
 * packet: a GSO super-frame. Else g->len: what follows the inner packet is then the GRE
 * payload's, as in any GRE packet. The protocol type must match too, or a payload padded with
 * zeros would read as a GRE header without options.
 */
static size_t gso_len(const struct span *g, size_t hl, struct wire_frame *f)
{
	struct span in = span_sub(g, hl, g->len - hl), rest;
	struct gre_info next;
	size_t tot = inner_tot(&in, f->gre.proto), end = hl + tot;
	int nhl;

	if (!tot || end >= g->len)
		return g->len;
	rest = span_sub(g, end, g->len - end);
	nhl = gre_parse(rest.p, rest.cap, &next);
	if (nhl == -ENODATA && need(&rest, gre_hlen(f->gre.flags)) == NEED_SNAPPED) {
		/* The capture ends where the next header would be: the rest cannot be told. */
		f->snapped = true;
		return g->len;
	}
	if (nhl < 0 || next.flags != f->gre.flags || next.proto != f->gre.proto)
		return g->len;
	return end;
}

/*
 * Reads the GRE header and its payload in g (as long as IP or UDP says); with gso, g may hold
 * several GRE packets (gso_len). Returns the length of the GRE packet read: g->len but for
 * the first of several.
 */
static size_t gre_decode(const struct wire_expect *e, const struct span *g, bool gso,
			 struct wire_frame *f)
{
	struct span payload;
	size_t glen = g->len;
	int hl;

	hl = gre_parse(g->p, g->cap, &f->gre);
	if (hl == -ENODATA) {
		/* gre_parse saw the capture end: the announced options decide who cut it short. */
		size_t want = GRE_HLEN_MIN;

		if (g->cap >= GRE_HLEN_MIN)
			want = gre_hlen(((load_be16(g->p) & GRE_BIT_C) ? GRE_F_CSUM : 0) |
					((load_be16(g->p) & GRE_BIT_K) ? GRE_F_KEY : 0) |
					((load_be16(g->p) & GRE_BIT_S) ? GRE_F_SEQ : 0));
		short_frame(f, need(g, want));
		return glen;
	}
	if (hl < 0) {
		f->violations |= 1u << WIRE_V_BAD_GRE;
		return glen;
	}
	f->has_gre = true;
	if (e->tunnels) {
		tunnel_check(e->tunnels, f);
	} else {
		want_check(e->key, f->gre.flags & GRE_F_KEY, WIRE_V_NO_KEY, WIRE_V_BAD_KEY, f);
		if (e->key == WIRE_WANT_YES && (f->gre.flags & GRE_F_KEY) &&
		    f->gre.key != e->key_value)
			f->violations |= 1u << WIRE_V_BAD_KEY;
		want_check(e->seq, f->gre.flags & GRE_F_SEQ, WIRE_V_NO_SEQ, WIRE_V_UNEXPECTED_SEQ,
			   f);
		want_check(e->csum, f->gre.flags & GRE_F_CSUM, WIRE_V_NO_CSUM,
			   WIRE_V_UNEXPECTED_CSUM, f);
	}
	if (gso)
		glen = gso_len(g, (size_t)hl, f);
	/* A GSO segment's checksum covers that segment only, as the sender computed it. */
	if (f->gre.flags & GRE_F_CSUM) {
		if (g->cap < glen)
			f->snapped = true;
		else if (!gre_csum_ok(g->p, glen))
			f->violations |= 1u << WIRE_V_BAD_CSUM;
	}
	if (f->gre.proto != GRE_PROTO_IPV4 && f->gre.proto != GRE_PROTO_IPV6) {
		f->violations |= 1u << WIRE_V_BAD_PROTO;
		return glen;
	}
	payload = span_sub(g, (size_t)hl, glen - (size_t)hl);
	inner_parse(e, &payload, f->gre.proto, f);
	tos_check(e, f);
	return glen;
}

/*
 * A GRE packet of outer bytes of headers (outer IP, UDP, GRE) holding a TCP packet too long for
 * the link (e->link_mtu): a superpacket the sender left whole for the device to segment (the
 * kernel's tunnels, gregw's TAP, over a veth pair that carries it so). It stands for the
 * segments a NIC would cut to fit the link, each with the same headers, which the sender's TCP
 * fills unless a smaller MTU lies beyond the tunnel; the MTU check applies to a segment's
 * inner packet.
 */
static void tcp_superpacket(const struct wire_expect *e, unsigned outer, struct wire_frame *f)
{
	unsigned inner_hdr, mss;

	if (!e->link_mtu || !f->has_tcp || outer + f->inner_len <= e->link_mtu)
		return;
	inner_hdr = f->inner_len - f->tcp_payload;
	if (outer + inner_hdr >= e->link_mtu)
		return;
	mss = e->link_mtu - outer - inner_hdr;
	f->segs = (f->tcp_payload + mss - 1) / mss;
	f->seg_outer = outer;
	f->seg_inner = inner_hdr;
	f->seg_mss = mss;
	if (e->mtu) {
		f->violations &= ~(1u << WIRE_V_INNER_TOO_BIG);
		if (inner_hdr + mss > e->mtu)
			f->violations |= 1u << WIRE_V_INNER_TOO_BIG;
	}
}

/* GRE-in-UDP: checks the UDP header of u (the outer payload) and returns the GRE span. */
static bool udp_decode(const struct span *u, struct wire_frame *f, struct span *g)
{
	size_t ulen;
	uint16_t csum;

	ulen = load_be16(u->p + UDP_LEN_OFF);
	csum = load_be16(u->p + UDP_CSUM_OFF);
	if (ulen < UDP_HLEN || ulen > u->len) {
		f->violations |= 1u << WIRE_V_BAD_UDP;
		if (ulen < UDP_HLEN)
			return false;
		ulen = u->len;
	} else if (ulen != u->len) {
		f->violations |= 1u << WIRE_V_BAD_UDP;
	}
	/* A zero checksum means none (IPv4), or one allowed by RFC 6935 for tunnels (IPv6). */
	if (csum != 0) {
		uint32_t sum = inet_pseudo_sum(f->src.family, f->src.bytes, f->dst.bytes,
					       IPPROTO_UDP, (uint32_t)ulen);
		/*
		 * A sender that leaves the checksum to the device (CHECKSUM_PARTIAL: veth, or
		 * any NIC with offload) stores the folded pseudo-header sum, not complemented;
		 * the capture sees it before the device completes it. A right checksum that
		 * happens to equal it is still right.
		 */
		bool partial = (csum ^ inet_csum_fold(sum)) == 0xffff;

		if (u->cap < ulen) {
			if (partial)
				f->udp_csum_offloaded = true;
			else
				f->snapped = true;
		} else if (inet_csum_fold(inet_csum_add(sum, u->p, ulen)) != 0) {
			if (partial)
				f->udp_csum_offloaded = true;
			else
				f->violations |= 1u << WIRE_V_BAD_UDP;
		}
	}
	*g = span_sub(u, UDP_HLEN, ulen - UDP_HLEN);
	return true;
}

/* Tells tunnel traffic from other traffic when the outer packet could not be fully read. */
static enum wire_encap classify(const struct wire_expect *e, const struct span *s,
				const struct outer *o)
{
	if (o->proto == IPPROTO_GRE_NUM)
		return WIRE_ENCAP_GRE;
	if (o->proto != IPPROTO_UDP || !o->first_fragment || o->hlen < IPV4_HLEN ||
	    s->cap < o->hlen + L4_PORTS_LEN ||
	    load_be16(s->p + o->hlen + UDP_DPORT_OFF) != e->udp_port)
		return WIRE_ENCAP_NONE;
	return WIRE_ENCAP_GRE_UDP;
}

/* Decodes the frame in s (link header first); sets out->encap once it is known to be GRE. */
static int frame_decode(const struct wire_expect *e, int link, struct span *s,
			struct wire_frame *out)
{
	struct span l4, g;
	struct outer o;
	size_t glen;
	int off;

	off = link_skip(link, s, out);
	if (off < 0)
		return off == -EPROTONOSUPPORT ? off : 0;
	*s = span_sub(s, (size_t)off, s->len - (size_t)off);
	memset(&o, 0, sizeof(o));
	if (!outer_parse(s, out, &o)) {
		/* A broken packet is the tunnel's if what can be read of it says so. */
		if (!o.proto_known)
			return 0;
		out->encap = classify(e, s, &o);
		if (out->encap == WIRE_ENCAP_NONE)
			out->snapped = false;
		else
			peer_check(e, out);
		return 0;
	}
	l4 = span_sub(s, o.hlen, s->len - o.hlen);
	if (o.proto == IPPROTO_GRE_NUM) {
		out->encap = WIRE_ENCAP_GRE;
	} else if (o.proto == IPPROTO_UDP && o.first_fragment) {
		enum need_result r = need(&l4, UDP_HLEN);

		if (r == NEED_SNAPPED) {
			out->snapped = true;
			return 0;
		}
		if (r != NEED_OK || load_be16(l4.p + UDP_DPORT_OFF) != e->udp_port)
			return 0;
		out->encap = WIRE_ENCAP_GRE_UDP;
		out->has_sport = true;
		out->udp_sport = load_be16(l4.p + UDP_SPORT_OFF);
	} else if (o.proto == IPPROTO_UDP && e->has_peers) {
		/* A later fragment shows no port: between the tunnel's ends it is the tunnel's. */
		peer_check(e, out);
		if (out->dir < 0)
			return 0;
		out->encap = WIRE_ENCAP_GRE_UDP;
	} else {
		return 0;
	}
	peer_check(e, out);
	if (o.fragment) {
		out->violations |= 1u << WIRE_V_FRAGMENT;
		return 0;
	}
	if (out->encap == WIRE_ENCAP_GRE) {
		/* An IP packet carries one GRE packet: what follows its inner packet is its own. */
		gre_decode(e, &l4, false, out);
		if (out->has_inner)
			tcp_superpacket(e, out->outer_len - out->inner_len, out);
		return 0;
	}
	if (!udp_decode(&l4, out, &g))
		return 0;
	glen = gre_decode(e, &g, true, out);
	if (glen < g.len) {
		/* The later GRE packets are the later datagrams': this one ends with its own. */
		out->link_hlen = (unsigned)off;
		out->outer_hlen = (unsigned)(o.hlen + UDP_HLEN);
		out->next = (size_t)off + o.hlen + UDP_HLEN + glen;
		out->next_len = g.len - glen;
		out->frame_len -= (unsigned)out->next_len;
		out->outer_len -= (unsigned)out->next_len;
	} else if (out->has_inner) {
		tcp_superpacket(e, out->outer_len - out->inner_len, out);
	}
	return 0;
}

int wire_decode(const struct wire_expect *e, int link, const uint8_t *p, size_t caplen, size_t len,
		struct wire_frame *out)
{
	struct span s = { p, caplen < len ? caplen : len, len };
	int rc;

	memset(out, 0, sizeof(*out));
	out->dir = -1;
	out->tunnel = -1;
	out->frame_len = (unsigned)len;
	rc = frame_decode(e, link, &s, out);
	/*
	 * Only the tunnel's frames answer to its rules. A DNS packet with a bad IPv4 checksum, or
	 * a frame too broken to name its protocol, is not the tunnel's to judge: it is other.
	 */
	if (out->encap == WIRE_ENCAP_NONE) {
		out->violations = 0;
		out->dir = -1;
	}
	return rc;
}

int wire_decode_next(const struct wire_expect *e, const uint8_t *p, size_t caplen, size_t len,
		     const struct wire_frame *prev, struct wire_frame *out)
{
	struct span s = { p, caplen < len ? caplen : len, len }, g;
	struct wire_frame f;
	size_t glen;

	if (!prev->next || prev->next > len || prev->next_len > len - prev->next)
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	f.encap = prev->encap;
	f.dir = prev->dir;
	f.tunnel = -1;
	f.src = prev->src;
	f.dst = prev->dst;
	f.has_outer_ds = prev->has_outer_ds;
	f.outer_ds = prev->outer_ds;
	f.outer_ttl = prev->outer_ttl;
	f.has_sport = prev->has_sport;
	f.udp_sport = prev->udp_sport;
	f.link_hlen = prev->link_hlen;
	f.outer_hlen = prev->outer_hlen;
	g = span_sub(&s, prev->next, prev->next_len);
	glen = gre_decode(e, &g, true, &f);
	f.outer_len = f.outer_hlen + (unsigned)glen;
	f.frame_len = f.link_hlen + f.outer_len;
	if (glen < g.len) {
		f.next = prev->next + glen;
		f.next_len = g.len - glen;
	}
	*out = f;
	return 0;
}
