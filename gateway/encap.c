/*
 * Encapsulation and decapsulation: GRE (RFC 2784, RFC 2890) over IPv4 (RFC 791) and IPv6
 * (RFC 8200). Every length is checked before it is trusted (see decap).
 */
#include "encap.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"

unsigned encap_overhead(int family, unsigned gre_flags, bool udp)
{
	return ip_fixed_hlen(family) + (udp ? UDP_HLEN : 0) + (unsigned)gre_hlen(gre_flags);
}

unsigned encap_outer_hlen(const struct encap_cfg *c, const struct tunnel *tn)
{
	if (!tn)
		return c->outer_hlen;
	return (c->udp ? 0 : ip_fixed_hlen(c->family)) + (unsigned)gre_hlen(tn->gre_flags);
}

void encap_ip_template(const struct encap_cfg *c, uint8_t proto, uint8_t *t)
{
	memset(t, 0, ip_fixed_hlen(c->family));
	if (c->family == AF_INET6) {
		t[0] = 0x60;
		t[IPV6_NEXT_OFF] = proto;
		t[IPV6_HOPS_OFF] = c->ttl;
	} else {
		t[0] = 0x45;
		/* DF: the tunnel never fragments its outer packets; the inner MTU accounts. */
		store_be16(t + IPV4_FRAG_OFF, IPV4_DF);
		t[IPV4_TTL_OFF] = c->ttl;
		t[IPV4_PROTO_OFF] = proto;
	}
	memcpy(t + ip_src_off(c->family), c->local, ip_addr_len(c->family));
	memcpy(t + ip_dst_off(c->family), c->remote, ip_addr_len(c->family));
}

struct tos_fields encap_tos(const struct encap_cfg *c, const uint8_t *inner)
{
	int family = (inner[0] >> 4) == 6 ? AF_INET6 : AF_INET;
	struct tos_fields f = { .ds = ip_dsfield(inner), .ttl = inner[ip_ttl_off(family)] };

	return tos_encap(&c->tos, f);
}

void encap_cfg_finish(struct encap_cfg *c)
{
	struct gre_info g = { .flags = c->gre_flags, .key = c->key };
	uint8_t *t = c->outer_tmpl;
	unsigned ip_hlen = ip_fixed_hlen(c->family);

	memset(t, 0, sizeof(c->outer_tmpl));
	g.proto = GRE_PROTO_IPV4; /* rewritten per packet */
	if (c->udp) {
		c->outer_hlen = (unsigned)gre_hlen(c->gre_flags);
		gre_build(t, sizeof(c->outer_tmpl), &g);
		return;
	}
	c->outer_hlen = encap_overhead(c->family, c->gre_flags, false);
	encap_ip_template(c, IPPROTO_GRE_NUM, t);
	gre_build(t + ip_hlen, sizeof(c->outer_tmpl) - ip_hlen, &g);
}

bool encap_prefix_has(const struct encap_prefix *p, int family, const uint8_t *addr)
{
	unsigned whole = p->len / 8u, rest = p->len % 8u;

	if (p->family != family)
		return false;
	if (memcmp(p->addr, addr, whole) != 0)
		return false;
	return !rest || ((p->addr[whole] ^ addr[whole]) & (0xffu << (8 - rest)) & 0xffu) == 0;
}

/* Whether two prefixes share an address: the shorter holds the longer's start. */
static bool overlap(const struct encap_prefix *a, const struct encap_prefix *b)
{
	const struct encap_prefix *outer = a->len <= b->len ? a : b, *inner = outer == a ? b : a;

	return encap_prefix_has(outer, inner->family, inner->addr);
}

int encap_sources(struct encap_cfg *c, const struct encap_prefix *allow, unsigned nallow,
		  const struct encap_prefix *own, unsigned nown)
{
	unsigned far = 0;

	if (nallow > ENCAP_ALLOW_MAX || nown > ENCAP_OWN_MAX)
		return -ENOSPC;
	memcpy(c->allow, allow, nallow * sizeof(*allow));
	c->nallow = nallow;
	c->nown = nown;
	c->nown_near = 0;
	/* Near ones from the front, the others from the back. */
	for (unsigned i = 0; i < nown; i++) {
		bool reach = false;

		for (unsigned k = 0; k < nallow && !reach; k++)
			reach = overlap(&own[i], &allow[k]);
		if (reach)
			c->own[c->nown_near++] = own[i];
		else
			c->own[nown - ++far] = own[i];
	}
	return 0;
}

static bool in_any(const struct encap_prefix *list, unsigned n, int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < n; i++) {
		if (encap_prefix_has(&list[i], family, addr))
			return true;
	}
	return false;
}

/*
 * An ICMP error about a packet that went into the tunnel: from a router on the way to a
 * host behind the peer, whose own address may lie outside the prefixes routed to the peer
 * (without these, path MTU discovery through the tunnel would fail). Its quote must be of a
 * packet to an allowed address, from the host the error goes to. Only its first fragment
 * holds the ICMP header.
 */
static bool icmp_error_about_ours(const struct encap_cfg *c, const struct tunnels *t,
				  const struct tunnel *tn, const uint8_t *p,
				  const struct ip_info *ip)
{
	bool v6 = ip->family == AF_INET6;
	const uint8_t *q = p + ip->hlen + ICMP_HLEN;
	uint8_t type;

	if (ip->proto != (v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP) ||
	    ip->tot_len < ip->hlen + ICMP_HLEN + ip_fixed_hlen(ip->family))
		return false;
	if (!v6 && (load_be16(p + IPV4_FRAG_OFF) & IPV4_OFFMASK))
		return false;
	type = p[ip->hlen + ICMP_TYPE_OFF];
	/* Destination unreachable (fragmentation needed among them), time exceeded, parameter
	 * problem; ICMPv6's packet too big too. Never a redirect: no router beyond the peer may
	 * redirect us. */
	if (v6 ? !(type >= 1 && type <= 4) : !(type == 3 || type == 11 || type == 12))
		return false;
	if (q[0] >> 4 != (v6 ? 6 : 4))
		return false;
	if (memcmp(q + ip_src_off(ip->family), ip->dst, ip_addr_len(ip->family)) != 0)
		return false;
	/* With tunnel sources, a quote to one of a tunnel's prefixes must be to this one's. */
	if (t && c->tunnel_sources) {
		uint32_t i = tunnels_encap(t, ip->family, q + ip_dst_off(ip->family));

		if (i != TUNNELS_NONE)
			return tunnels_at(t, i) == tn;
	}
	return in_any(c->allow, c->nallow, ip->family, q + ip_dst_off(ip->family));
}

/* Whose prefix holds an inner source: the tunnel's it came through, another's, or none's. */
enum tunnel_src { TUNNEL_SRC_NONE, TUNNEL_SRC_OWN, TUNNEL_SRC_OTHER };

static enum tunnel_src tunnel_src(const struct encap_cfg *c, const struct tunnels *t,
				  const struct tunnel *tn, const struct ip_info *ip)
{
	uint32_t i;

	if (!t || !c->tunnel_sources)
		return TUNNEL_SRC_NONE;
	i = tunnels_encap(t, ip->family, ip->src);
	if (i == TUNNELS_NONE)
		return TUNNEL_SRC_NONE;
	return tunnels_at(t, i) == tn ? TUNNEL_SRC_OWN : TUNNEL_SRC_OTHER;
}

/* The inner packet's addresses, once its header is known good: a source the peer may send
 * from (with c->tunnel_sources, one of tn's prefixes, or allowed and no tunnel's), and a
 * destination that does not lead back into the tunnel. */
static enum drop_reason check_inner(const struct encap_cfg *c, const struct tunnels *t,
				    const struct tunnel *tn, const uint8_t *p,
				    const struct ip_info *ip)
{
	enum tunnel_src tn_src = tunnel_src(c, t, tn, ip);
	bool v6 = ip->family == AF_INET6;
	const uint8_t *own = v6 ? c->addr6 : c->addr4;
	unsigned alen = ip_addr_len(ip->family);

	/* A tenant's sources are its own: one of another tunnel's prefixes is never allowed
	 * from this one, one of its own is (but our own addresses, below). */
	if (tn_src == TUNNEL_SRC_OTHER ||
	    (tn_src == TUNNEL_SRC_OWN && in_any(c->own, c->nown, ip->family, ip->src)))
		return DROP_SPOOFED_SOURCE;
	if (tn_src == TUNNEL_SRC_OWN) {
		/* checked above against all of our own */
	} else if (in_any(c->allow, c->nallow, ip->family, ip->src)) {
		if (in_any(c->own, c->nown_near, ip->family, ip->src))
			return DROP_SPOOFED_SOURCE;
	} else if (in_any(c->own, c->nown, ip->family, ip->src) ||
		   !icmp_error_about_ours(c, t, tn, p, ip)) {
		return DROP_SPOOFED_SOURCE;
	}
	/* The TUN holds the subnet: anything for it but our own address would go back in, and
	 * between two gateways on and on until its TTL ran out. */
	if ((v6 ? c->has_addr6 : c->has_addr4) && memcmp(ip->dst, own, alen) != 0) {
		struct encap_prefix net = { .family = (uint8_t)ip->family,
					    .len = v6 ? c->addr6_len : c->addr4_len };

		memcpy(net.addr, own, alen);
		if (encap_prefix_has(&net, ip->family, ip->dst))
			return DROP_TUNNEL_LOOP;
	}
	return DROP_NONE;
}

enum drop_reason encap_check(const struct encap_cfg *c, const uint8_t *inner, size_t len,
			     struct ip_info *ip)
{
	/* TUN hands over whole packets, but a local raw socket can write anything into it. */
	if (ip_parse(inner, len, false, ip) < 0 || ip->tot_len != len)
		return DROP_TX_BAD_INNER;
	if (len > c->mtu)
		return DROP_TX_TOO_BIG;
	return DROP_NONE;
}

uint8_t *encap_build2(const struct encap_cfg *c, const struct tunnel *tn, uint8_t *inner,
		      size_t len, const uint8_t *tail, size_t tail_len, uint32_t seq)
{
	unsigned flags = tn ? tn->gre_flags : c->gre_flags, hlen = encap_outer_hlen(c, tn);
	uint8_t *out = inner - hlen, *gre;
	unsigned ip_hlen = c->udp ? 0 : ip_fixed_hlen(c->family);
	size_t gre_len = hlen - ip_hlen + len + tail_len;
	size_t off = GRE_HLEN_MIN;

	if (tn) {
		struct gre_info g = { .flags = flags, .key = tn->key, .proto = GRE_PROTO_IPV4 };

		/* The template's outer IP header (our address, TTL, DF), to the tunnel's peer;
		 * its own GRE header. */
		memcpy(out, c->outer_tmpl, ip_hlen);
		if (ip_hlen)
			memcpy(out + ip_dst_off(c->family), tn->peer, ip_addr_len(c->family));
		gre_build(out + ip_hlen, hlen - ip_hlen, &g);
	} else {
		memcpy(out, c->outer_tmpl, hlen);
	}
	gre = out + ip_hlen;
	store_be16(gre + GRE_PROTO_OFF, (inner[0] >> 4) == 6 ? GRE_PROTO_IPV6 : GRE_PROTO_IPV4);
	if (!c->udp)
		tos_write(out, ip_hlen, encap_tos(c, inner));
	if (c->udp) {
		/* The UDP socket writes the outer headers. */
	} else if (c->family == AF_INET6) {
		store_be16(out + IPV6_PLEN_OFF, (uint16_t)gre_len);
	} else {
		/* The sending socket has the kernel write the outer IP header (tx_packet.c);
		 * the bytes here stand alone all the same, as encap.h promises. The template's
		 * checksum was no sum to update: it is made whole. */
		store_be16(out + IPV4_TOT_LEN_OFF, (uint16_t)(IPV4_HLEN + gre_len));
		store_be16(out + IPV4_CSUM_OFF, 0);
		store_be16(out + IPV4_CSUM_OFF, inet_csum(out, IPV4_HLEN));
	}
	if (flags & GRE_F_CSUM)
		off += GRE_OPT_LEN;
	if (flags & GRE_F_KEY)
		off += GRE_OPT_LEN;
	if (flags & GRE_F_SEQ)
		store_be32(gre + off, seq);
	if (flags & GRE_F_CSUM) {
		/* The GRE header and the inner headers have even lengths: the sum chains. */
		uint32_t sum;

		store_be16(gre + GRE_CSUM_OFF, 0);
		sum = inet_csum_add(0, gre, (size_t)(inner - gre) + len);
		sum = inet_csum_add(sum, tail, tail_len);
		store_be16(gre + GRE_CSUM_OFF, inet_csum_fold(sum));
	}
	return out;
}

uint8_t *encap_build(const struct encap_cfg *c, const struct tunnel *tn, uint8_t *inner, size_t len,
		     uint32_t seq)
{
	return encap_build2(c, tn, inner, len, NULL, 0, seq);
}

static enum drop_reason gre_drop(int rc)
{
	switch (rc) {
	case -ENODATA:
		return DROP_TRUNCATED;
	case -EPROTONOSUPPORT:
		return DROP_BAD_VERSION;
	}
	return DROP_BAD_FLAGS;
}

/*
 * The length of an IPv6 destination options header (RFC 8200, 4.6) at p, within len bytes:
 * the kernel's ip6gre puts one before GRE by default, holding RFC 2473's tunnel
 * encapsulation limit, which only a tunnel entry point acts on. Options a node that does not
 * know them may skip (Pad1, PadN and the limit among them) are passed over; one whose type
 * says to discard the packet is not ours to ignore. Returns -ENODATA when the packet ends
 * inside the header, -EINVAL when an option runs past it or says to discard.
 */
static int dstopts_len(const uint8_t *p, size_t len)
{
	size_t hlen, i = 2;

	if (len < IPV6_EXT_UNIT)
		return -ENODATA;
	hlen = ((size_t)p[IPV6_EXT_LEN_OFF] + 1) * IPV6_EXT_UNIT;
	if (len < hlen)
		return -ENODATA;
	while (i < hlen) {
		if (p[i] == IPV6_OPT_PAD1) {
			i++;
			continue;
		}
		if (hlen - i < 2 || hlen - i - 2 < p[i + 1] || p[i] >> IPV6_OPT_ACTION_SHIFT)
			return -EINVAL;
		i += 2 + (size_t)p[i + 1];
	}
	return (int)hlen;
}

static enum drop_reason gre_part(const struct encap_cfg *c, const struct tunnels *t,
				 const uint8_t *src, const uint8_t *gre, size_t gre_len,
				 bool merged, struct decap_result *r);

/*
 * GRE-in-UDP from a packet ring (RFC 8086): the UDP header of the outer payload (len bytes at
 * u), to our port, its length the payload's (a shorter one would leave bytes outside the
 * datagram, a longer one claims bytes that are not there); its checksum is the transport's to
 * check (rx_ring.c), as the kernel checks it for a socket. Then GRE.
 */
static enum drop_reason udp_part(const struct encap_cfg *c, const struct tunnels *t,
				 const uint8_t *src, const uint8_t *u, size_t len, bool merged,
				 struct decap_result *r)
{
	size_t ulen;

	if (len < UDP_HLEN)
		return DROP_TRUNCATED;
	ulen = load_be16(u + UDP_LEN_OFF);
	if (load_be16(u + UDP_DPORT_OFF) != c->udp_port || ulen != len)
		return DROP_BAD_OUTER;
	return gre_part(c, t, src, u + UDP_HLEN, ulen - UDP_HLEN, merged, r);
}

static enum drop_reason outer_part(const struct encap_cfg *c, const struct tunnels *t,
				   const uint8_t *pkt, size_t caplen, size_t wirelen, bool merged,
				   struct decap_result *r)
{
	struct ip_info outer;
	unsigned alen = ip_addr_len(c->family);
	int hlen;

	/* A capture cut short (snaplen, or a GRO packet larger than a ring frame) is not the
	 * packet: decapsulating it would deliver a truncated inner packet. */
	if (caplen < wirelen)
		return DROP_TRUNCATED;
	hlen = ip_parse(pkt, caplen, true, &outer);
	if (hlen == -ENODATA)
		return DROP_TRUNCATED;
	if (hlen < 0 || outer.family != c->family)
		return DROP_BAD_OUTER;
	/* The tunnel sets DF and never fragments: a fragment on the wire is an attack or a
	 * misconfigured path, never reassembled here. An IPv6 one carries a fragment header that
	 * names GRE. */
	if (outer.family == AF_INET6 && outer.proto == IPPROTO_FRAGMENT) {
		if (outer.tot_len < IPV6_HLEN + IPV6_FRAG_HLEN)
			return DROP_TRUNCATED;
		if (pkt[IPV6_HLEN + IPV6_FRAG_NEXT_OFF] == IPPROTO_GRE_NUM)
			return DROP_OUTER_FRAGMENT;
	}
	if (outer.family == AF_INET6 && outer.proto == IPPROTO_DSTOPTS) {
		int olen = dstopts_len(pkt + hlen, outer.tot_len - (size_t)hlen);

		if (olen == -ENODATA)
			return DROP_TRUNCATED;
		if (olen < 0)
			return DROP_BAD_OUTER;
		outer.proto = pkt[hlen + IPV6_EXT_NEXT_OFF];
		hlen += olen;
	}
	if (outer.family == AF_INET6 && outer.proto == IPPROTO_FRAGMENT && c->udp) {
		if (outer.tot_len < IPV6_HLEN + IPV6_FRAG_HLEN)
			return DROP_TRUNCATED;
		if (pkt[IPV6_HLEN + IPV6_FRAG_NEXT_OFF] == IPPROTO_UDP)
			return DROP_OUTER_FRAGMENT;
	}
	if (outer.proto != (c->udp ? IPPROTO_UDP : IPPROTO_GRE_NUM))
		return DROP_BAD_OUTER;
	if (outer.fragment)
		return DROP_OUTER_FRAGMENT;
	/* Anyone can send GRE to us; only a tunnel's peer may enter the TUN (with a table,
	 * tunnels_decap says whether the source is one, once the key is known). */
	if (memcmp(outer.dst, c->local, alen) != 0 ||
	    (!t && memcmp(outer.src, c->remote, alen) != 0))
		return DROP_UNKNOWN_PEER;
	/* Ethernet pads short frames: the outer header's length is the packet's, not caplen. */
	if (c->udp)
		return udp_part(c, t, outer.src, pkt + hlen, outer.tot_len - (size_t)hlen, merged,
				r);
	return gre_part(c, t, outer.src, pkt + hlen, outer.tot_len - (size_t)hlen, merged, r);
}

enum drop_reason decap(const struct encap_cfg *c, const struct tunnels *t, const uint8_t *pkt,
		       size_t caplen, size_t wirelen, struct decap_result *r)
{
	r->tn = NULL;
	return outer_part(c, t, pkt, caplen, wirelen, false, r);
}

enum drop_reason decap_merged(const struct encap_cfg *c, const struct tunnels *t,
			      const uint8_t *pkt, size_t len, struct decap_result *r)
{
	r->tn = NULL;
	return outer_part(c, t, pkt, len, len, true, r);
}

enum drop_reason decap_gre(const struct encap_cfg *c, const struct tunnels *t, const uint8_t *src,
			   const uint8_t *gre, size_t gre_len, struct decap_result *r)
{
	r->tn = NULL;
	/* The socket takes datagrams from anyone: without a table, only c's peer may send. */
	if (!t && memcmp(src, c->remote, ip_addr_len(c->family)) != 0)
		return DROP_UNKNOWN_PEER;
	return gre_part(c, t, src, gre, gre_len, false, r);
}

/* The tunnel of the outer source src and the GRE header g: with a table, its lookup (*tn, or
 * DROP_UNKNOWN_PEER, DROP_BAD_KEY); without, c's own key (its peer was checked before). */
static enum drop_reason find_tunnel(const struct encap_cfg *c, const struct tunnels *t,
				    const uint8_t *src, const struct gre_info *g,
				    const struct tunnel **tn)
{
	enum drop_reason why;
	uint32_t i;

	*tn = NULL;
	if (!t)
		return (g->flags & GRE_F_KEY) != (c->gre_flags & GRE_F_KEY) ||
				       ((g->flags & GRE_F_KEY) && g->key != c->key)
			       ? DROP_BAD_KEY
			       : DROP_NONE;
	why = tunnels_decap(t, c->family, src, g->flags & GRE_F_KEY, g->key, &i);
	if (why == DROP_NONE)
		*tn = tunnels_at(t, i);
	return why;
}

/* The GRE header and what follows; merged: a GRO superpacket, whose GRE checksum the kernel
 * checked on each packet before it merged them (the merged header's is the first one's). */
static enum drop_reason gre_part(const struct encap_cfg *c, const struct tunnels *t,
				 const uint8_t *src, const uint8_t *gre, size_t gre_len,
				 bool merged, struct decap_result *r)
{
	struct gre_info g;
	enum drop_reason why;
	unsigned flags;
	int rc;

	/* An empty GRE-in-UDP datagram, or an outer packet that ends with its header: not a GRE
	 * packet cut short, but none at all. */
	if (gre_len == 0)
		return DROP_ZERO_LENGTH;
	rc = gre_parse(gre, gre_len, &g);
	if (rc < 0)
		return gre_drop(rc);
	why = find_tunnel(c, t, src, &g, &r->tn);
	if (why != DROP_NONE)
		return why;
	flags = r->tn ? r->tn->gre_flags : c->gre_flags;
	if ((flags & GRE_F_SEQ) && !(g.flags & GRE_F_SEQ))
		return DROP_NO_SEQ;
	if ((flags & GRE_F_CSUM) && !(g.flags & GRE_F_CSUM))
		return DROP_NO_CSUM;
	if ((g.flags & GRE_F_CSUM) && !merged && !gre_csum_ok(gre, gre_len))
		return DROP_BAD_CSUM;
	if (g.proto != GRE_PROTO_IPV4 && g.proto != GRE_PROTO_IPV6)
		return DROP_BAD_PROTO;
	r->inner = gre + rc;
	r->inner_len = gre_len - (size_t)rc;
	/* The inner header must agree with the GRE protocol and fit in the payload; bytes past
	 * its total length are padding and stay behind. */
	if (ip_parse(r->inner, r->inner_len, false, &r->ip) < 0 ||
	    (r->ip.family == AF_INET6) != (g.proto == GRE_PROTO_IPV6))
		return DROP_BAD_INNER;
	r->inner_len = r->ip.tot_len;
	why = check_inner(c, t, r->tn, r->inner, &r->ip);
	if (why != DROP_NONE)
		return why;
	r->proto = g.proto;
	r->has_seq = g.flags & GRE_F_SEQ;
	r->seq = g.seq;
	return DROP_NONE;
}
