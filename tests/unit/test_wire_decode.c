/*
 * Unit tests of wire_decode on frames built in memory: each link type the audit reads, VLAN
 * tags, IPv6 extension headers, snapped against truncated, Ethernet padding, the
 * classification of traffic that is not the tunnel's, broken or not, UDP checksums left to
 * offload, GSO super-frames of GRE-in-UDP split into their datagrams, a TCP superpacket in
 * one GRE packet counted as the segments a NIC would cut to fit the link, and the outer
 * header's ECN, DSCP and TTL against the inner packet's (RFC 6040, RFC 2983), each violation
 * kind; and with --tunnels, each frame against its tunnel by peer and key, in rows.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "gre.h"
#include "pkt.h"
#include "tunfile.h"
#include "wire_decode.h"

/* Link headers (not IP): their lengths and where each keeps the EtherType. */
enum {
	ETH = 14,
	ETH_TYPE = 12,
	VLAN = 4,
	VLAN_TYPE = 2,
	SLL = 16,
	SLL_TYPE = 14,
	SLL2 = 20,
	SLL2_TYPE = 0,
	NULL_LINK = 4,
};

/* With checksum and key, the key is the second option. */
enum { KEY_OFF = GRE_HLEN_MIN + GRE_OPT_LEN };

static const struct pkt_spec inner = { .family = AF_INET,
				       .src = "198.18.1.2",
				       .dst = "198.18.3.2",
				       .proto = IPPROTO_TCP,
				       .sport = 40000,
				       .dport = 9400,
				       .tcp_flags = TCP_F_ACK,
				       .payload = 100 };

/* An outer IPv4 GRE packet from src to dst with flags, key and seq, the inner packet after it;
 * returns the IP packet's length. */
static size_t gre_between(uint8_t *ip, const char *src, const char *dst, unsigned flags,
			  uint32_t key, uint32_t seq)
{
	struct gre_info gi = { .flags = flags, .proto = GRE_PROTO_IPV4, .key = key, .seq = seq };
	size_t n;
	int hl;

	memset(ip, 0, IPV4_HLEN);
	ip[0] = 0x45;
	ip[IPV4_TTL_OFF] = 64;
	ip[IPV4_PROTO_OFF] = IPPROTO_GRE_NUM;
	store_be16(ip + IPV4_FRAG_OFF, IPV4_DF);
	inet_pton(AF_INET, src, ip + IPV4_SRC_OFF);
	inet_pton(AF_INET, dst, ip + IPV4_DST_OFF);
	hl = gre_build(ip + IPV4_HLEN, GRE_HLEN_MAX, &gi);
	n = IPV4_HLEN + (size_t)hl;
	n += pkt_build(&inner, ip + n);
	if (flags & GRE_F_CSUM)
		gre_csum_fill(ip + IPV4_HLEN, n - IPV4_HLEN);
	store_be16(ip + IPV4_TOT_LEN_OFF, (uint16_t)n);
	store_be16(ip + IPV4_CSUM_OFF, inet_csum(ip, IPV4_HLEN));
	return n;
}

/* Outer IPv4 + GRE (key 7, seq) + inner at ip, from 198.18.0.1 to 198.18.0.2. */
static size_t gre_ip4(uint8_t *ip, uint32_t seq)
{
	return gre_between(ip, "198.18.0.1", "198.18.0.2", GRE_F_KEY | GRE_F_SEQ, 7, seq);
}

/* Fixes up an outer IPv4 header changed by a test: checksum right again, then off by flip. */
static void ip4_csum(uint8_t *ip, size_t hlen, uint8_t flip)
{
	store_be16(ip + IPV4_CSUM_OFF, 0);
	store_be16(ip + IPV4_CSUM_OFF, inet_csum(ip, hlen));
	ip[IPV4_CSUM_OFF] ^= flip;
}

static struct wire_expect expect(void)
{
	struct wire_expect e;

	wire_expect_init(&e);
	e.has_peers = true;
	netaddr_parse("198.18.0.1", &e.local);
	netaddr_parse("198.18.0.2", &e.remote);
	e.key = WIRE_WANT_YES;
	e.key_value = 7;
	e.seq = WIRE_WANT_YES;
	return e;
}

static void check_good(const struct wire_frame *f, const char *what)
{
	fprintf(stderr, "frame: %s\n", what);
	CHECK_INT(f->violations, 0);
	CHECK_INT(f->encap, WIRE_ENCAP_GRE);
	CHECK_INT(f->dir, 0);
	CHECK(f->has_inner);
	CHECK_INT(f->inner_len, 140);
	CHECK_INT(f->gre.seq, 5);
	CHECK(f->has_tcp);
	CHECK_INT(f->tcp_payload, 100);
	CHECK_INT(f->flow.port[0], 40000);
}

static void test_links(void)
{
	struct wire_expect e = expect();
	struct wire_frame f;
	uint8_t buf[512];
	size_t n;

	n = gre_ip4(buf, 5);
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	check_good(&f, "raw");
	CHECK_INT(wire_decode(&e, WIRE_LINK_IPV4, buf, n, n, &f), 0);
	check_good(&f, "ipv4");
	CHECK_INT(wire_decode(&e, 147, buf, n, n, &f), -EPROTONOSUPPORT);

	memset(buf, 0, ETH + VLAN);
	store_be16(buf + ETH_TYPE, 0x8100);
	store_be16(buf + ETH + VLAN_TYPE, 0x0800);
	n = ETH + VLAN + gre_ip4(buf + ETH + VLAN, 5);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	check_good(&f, "ethernet, one VLAN tag");
	/* Padding past the IP length is the link's (a short frame padded to 60 bytes). */
	wire_decode(&e, WIRE_LINK_ETHER, buf, n + 30, n + 30, &f);
	check_good(&f, "ethernet, padded");
	CHECK_INT(f.frame_len, n + 30);

	memset(buf, 0, SLL);
	store_be16(buf + SLL_TYPE, 0x0800);
	n = SLL + gre_ip4(buf + SLL, 5);
	wire_decode(&e, WIRE_LINK_LINUX_SLL, buf, n, n, &f);
	check_good(&f, "sll");

	memset(buf, 0, SLL2);
	store_be16(buf + SLL2_TYPE, 0x0800);
	n = SLL2 + gre_ip4(buf + SLL2, 5);
	wire_decode(&e, WIRE_LINK_LINUX_SLL2, buf, n, n, &f);
	check_good(&f, "sll2");

	memset(buf, 0, NULL_LINK);
	buf[0] = AF_INET;
	n = NULL_LINK + gre_ip4(buf + NULL_LINK, 5);
	wire_decode(&e, WIRE_LINK_NULL, buf, n, n, &f);
	check_good(&f, "null");

	/* ARP on Ethernet is not the tunnel's, and not a violation. */
	memset(buf, 0, 60);
	store_be16(buf + ETH_TYPE, 0x0806);
	wire_decode(&e, WIRE_LINK_ETHER, buf, 60, 60, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
}

static void test_short(void)
{
	struct wire_expect e = expect();
	struct wire_frame f;
	uint8_t buf[512];
	size_t n = gre_ip4(buf, 5);

	/* The capture kept 30 bytes of a whole frame: snapped, not truncated. */
	wire_decode(&e, WIRE_LINK_RAW, buf, 30, n, &f);
	CHECK(f.snapped);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK(!f.has_gre);
	/* 44 kept: GRE read, inner header cut. */
	wire_decode(&e, WIRE_LINK_RAW, buf, 44, n, &f);
	CHECK(f.snapped);
	CHECK(f.has_gre);
	CHECK(!f.has_inner);
	CHECK_INT(f.violations, 0);
	/* The frame itself ends early: the IP header claims more than the link carried. */
	wire_decode(&e, WIRE_LINK_RAW, buf, n - 1, n - 1, &f);
	CHECK(!f.snapped);
	CHECK_INT(f.violations, 1u << WIRE_V_TRUNCATED);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	/* A truncated frame of another protocol is not the tunnel's business. */
	buf[IPV4_PROTO_OFF] = IPPROTO_TCP;
	ip4_csum(buf, IPV4_HLEN, 0);
	wire_decode(&e, WIRE_LINK_RAW, buf, n - 1, n - 1, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	/* An outer IPv4 header checksum that is wrong. */
	n = gre_ip4(buf, 5);
	buf[IPV4_CSUM_OFF] ^= 1;
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_OUTER);
}

/* IPv6 outer with a destination options header before GRE; then a later fragment. */
static void test_ipv6_ext(void)
{
	struct wire_expect e;
	struct wire_frame f;
	struct gre_info gi = { .proto = GRE_PROTO_IPV4 };
	uint8_t buf[512];
	size_t n;

	wire_expect_init(&e);
	memset(buf, 0, IPV6_HLEN + 8);
	buf[0] = 0x60;
	buf[IPV6_NEXT_OFF] = IPPROTO_DSTOPTS;
	buf[IPV6_HOPS_OFF] = 64;
	inet_pton(AF_INET6, "2001:2::1", buf + IPV6_SRC_OFF);
	inet_pton(AF_INET6, "2001:2::2", buf + IPV6_DST_OFF);
	buf[IPV6_HLEN] = IPPROTO_GRE_NUM; /* its next header */
	buf[IPV6_HLEN + 1] = 0;		  /* its length: 8 bytes */
	n = IPV6_HLEN + 8 + (size_t)gre_build(buf + IPV6_HLEN + 8, GRE_HLEN_MAX, &gi);
	n += pkt_build(&inner, buf + n);
	store_be16(buf + IPV6_PLEN_OFF, (uint16_t)(n - IPV6_HLEN));
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK(f.has_inner);
	CHECK_INT(f.outer_len, n);
	/* Later fragment of UDP between the ends: the tunnel's (GRE-in-UDP), a violation. */
	buf[IPV6_NEXT_OFF] = IPPROTO_FRAGMENT;
	buf[IPV6_HLEN] = IPPROTO_UDP;
	store_be16(buf + IPV6_HLEN + 2, 100 << 3); /* fragment offset 100, M clear */
	e.has_peers = true;
	netaddr_parse("2001:2::1", &e.local);
	netaddr_parse("2001:2::2", &e.remote);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 1u << WIRE_V_FRAGMENT);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE_UDP);
	CHECK(!f.has_sport);
	/* The same between strangers: not ours. */
	netaddr_parse("2001:2::9", &e.remote);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
}

/*
 * Only what reads as GRE can break the tunnel's rules. Another protocol's broken packet, or
 * one too broken to say what it carries, is other; a broken GRE packet whose addresses were
 * not read is not judged against the peers.
 */
static void test_not_tunnel(void)
{
	struct wire_expect e = expect();
	struct wire_frame f;
	uint8_t buf[512];
	size_t n;

	/* DNS (UDP to port 53) with a wrong IPv4 header checksum. */
	n = gre_ip4(buf, 5);
	buf[IPV4_PROTO_OFF] = IPPROTO_UDP;
	store_be16(buf + IPV4_HLEN + UDP_SPORT_OFF, 5353);
	store_be16(buf + IPV4_HLEN + UDP_DPORT_OFF, 53);
	ip4_csum(buf, IPV4_HLEN, 1);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.dir, -1);
	/* TCP with a header length below 20. */
	n = gre_ip4(buf, 5);
	buf[IPV4_PROTO_OFF] = IPPROTO_TCP;
	buf[0] = 0x44;
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	/* IP version 5: what it carries cannot be read. */
	n = gre_ip4(buf, 5);
	buf[0] = 0x55;
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	/* Headers cut short on the wire, before the protocol: IPv4, IPv6, Ethernet. */
	n = gre_ip4(buf, 5);
	wire_decode(&e, WIRE_LINK_RAW, buf, 9, 9, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	buf[0] = 0x60;
	wire_decode(&e, WIRE_LINK_RAW, buf, 30, 30, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	wire_decode(&e, WIRE_LINK_ETHER, buf, 10, 10, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	/* GRE with a header length below 20: bad_outer, and no verdict on unread addresses. */
	n = gre_ip4(buf, 5);
	buf[0] = 0x44;
	ip4_csum(buf, 16, 0);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_OUTER);
	CHECK_INT(f.src.family, 0);
	CHECK_INT(f.dir, -1);
	/* GRE with a total length below its header: likewise. */
	n = gre_ip4(buf, 5);
	store_be16(buf + IPV4_TOT_LEN_OFF, 16);
	ip4_csum(buf, IPV4_HLEN, 0);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_OUTER);
	CHECK_INT(f.dir, -1);
	/* GRE-in-UDP with a wrong IPv4 header checksum is still the tunnel's. */
	n = gre_ip4(buf, 5);
	buf[IPV4_PROTO_OFF] = IPPROTO_UDP;
	store_be16(buf + IPV4_HLEN + UDP_SPORT_OFF, 5353);
	store_be16(buf + IPV4_HLEN + UDP_DPORT_OFF, GRE_UDP_PORT);
	ip4_csum(buf, IPV4_HLEN, 1);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE_UDP);
	CHECK(f.violations & (1u << WIRE_V_BAD_OUTER));
	CHECK_INT(f.dir, 0);
}

enum udp_csum {
	UDP_CSUM_RIGHT,
	UDP_CSUM_PARTIAL, /* the pseudo-header sum, as CHECKSUM_PARTIAL leaves it */
	UDP_CSUM_WRONG,
	UDP_CSUM_PARTIAL_LEN, /* a pseudo-header sum over another length */
};

/* GRE-in-UDP (or, with plain, GRE) carrying segs GRE packets back to back. */
struct udp_spec {
	int family; /* outer */
	bool plain; /* IP protocol 47, no UDP header */
	unsigned segs;
	unsigned flags;	      /* GRE flags of every packet; key 7, sequence numbers from 5 */
	size_t payload, last; /* inner TCP payload of each packet, of the last (0: payload) */
	size_t trailing;      /* zero bytes after the last GRE packet */
	enum udp_csum csum;
};

/* Builds u at ip; returns the IP packet's length. */
static size_t udp_build(const struct udp_spec *u, uint8_t *ip)
{
	bool v6 = u->family == AF_INET6;
	size_t ohl = ip_fixed_hlen(u->family), l4 = ohl + (u->plain ? 0 : UDP_HLEN), n = l4;
	uint8_t *src = ip + ip_src_off(u->family), *dst = ip + ip_dst_off(u->family);

	for (unsigned i = 0; i < u->segs; i++) {
		struct gre_info gi = {
			.flags = u->flags, .proto = GRE_PROTO_IPV4, .key = 7, .seq = 5 + i
		};
		struct pkt_spec in = inner;
		size_t gl;

		in.payload = i + 1 == u->segs && u->last ? u->last : u->payload;
		in.tcp_seq = (uint32_t)(1000 + i * u->payload);
		gl = (size_t)gre_build(ip + n, GRE_HLEN_MAX, &gi);
		gl += pkt_build(&in, ip + n + gl);
		if (u->flags & GRE_F_CSUM)
			gre_csum_fill(ip + n, gl);
		n += gl;
	}
	memset(ip + n, 0, u->trailing);
	n += u->trailing;
	memset(ip, 0, ohl);
	ip[ip_proto_off(u->family)] = u->plain ? IPPROTO_GRE_NUM : IPPROTO_UDP;
	if (v6) {
		ip[0] = 0x60;
		store_be16(ip + IPV6_PLEN_OFF, (uint16_t)(n - ohl));
		ip[IPV6_HOPS_OFF] = 64;
		inet_pton(AF_INET6, "2001:2::1", src);
		inet_pton(AF_INET6, "2001:2::2", dst);
	} else {
		ip[0] = 0x45;
		store_be16(ip + IPV4_TOT_LEN_OFF, (uint16_t)n);
		store_be16(ip + IPV4_FRAG_OFF, IPV4_DF);
		ip[IPV4_TTL_OFF] = 64;
		inet_pton(AF_INET, "198.18.0.1", src);
		inet_pton(AF_INET, "198.18.0.2", dst);
		store_be16(ip + IPV4_CSUM_OFF, inet_csum(ip, IPV4_HLEN));
	}
	if (u->plain)
		return n;
	store_be16(ip + ohl + UDP_SPORT_OFF, 50000);
	store_be16(ip + ohl + UDP_DPORT_OFF, GRE_UDP_PORT);
	store_be16(ip + ohl + UDP_LEN_OFF, (uint16_t)(n - ohl));
	store_be16(ip + ohl + UDP_CSUM_OFF, 0);
	if (u->csum == UDP_CSUM_PARTIAL || u->csum == UDP_CSUM_PARTIAL_LEN)
		store_be16(ip + ohl + UDP_CSUM_OFF,
			   (uint16_t)~inet_csum_fold(inet_pseudo_sum(
				   u->family, src, dst, IPPROTO_UDP,
				   (uint32_t)(n - ohl + (u->csum == UDP_CSUM_PARTIAL_LEN)))));
	else
		store_be16(ip + ohl + UDP_CSUM_OFF,
			   pkt_l4_csum(u->family, ip, ip + ohl, n - ohl, IPPROTO_UDP));
	if (u->csum == UDP_CSUM_WRONG)
		ip[ohl + UDP_CSUM_OFF + 1] ^= 1;
	return n;
}

/*
 * A sender that leaves the UDP checksum to the device (CHECKSUM_PARTIAL, as veth does) shows
 * the capture the pseudo-header sum: left to offload, not bad_udp. Any other wrong value is.
 */
static void test_udp_csum(void)
{
	static const struct {
		const char *name;
		int family;
		enum udp_csum csum;
		bool offloaded;
		unsigned violations;
	} rows[] = {
		{ "v4 right", AF_INET, UDP_CSUM_RIGHT, false, 0 },
		{ "v4 partial", AF_INET, UDP_CSUM_PARTIAL, true, 0 },
		{ "v4 wrong", AF_INET, UDP_CSUM_WRONG, false, 1u << WIRE_V_BAD_UDP },
		{ "v4 partial, other length", AF_INET, UDP_CSUM_PARTIAL_LEN, false,
		  1u << WIRE_V_BAD_UDP },
		{ "v6 right", AF_INET6, UDP_CSUM_RIGHT, false, 0 },
		{ "v6 partial", AF_INET6, UDP_CSUM_PARTIAL, true, 0 },
		{ "v6 wrong", AF_INET6, UDP_CSUM_WRONG, false, 1u << WIRE_V_BAD_UDP },
	};
	struct wire_expect e;
	struct wire_frame f;
	uint8_t buf[2048];

	wire_expect_init(&e);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct udp_spec u = { .family = rows[i].family,
				      .segs = 1,
				      .flags = GRE_F_SEQ,
				      .payload = 100,
				      .csum = rows[i].csum };
		size_t n = udp_build(&u, buf);

		fprintf(stderr, "udp checksum: %s\n", rows[i].name);
		CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
		CHECK_INT(f.encap, WIRE_ENCAP_GRE_UDP);
		CHECK_INT(f.violations, rows[i].violations);
		CHECK_INT(f.udp_csum_offloaded, rows[i].offloaded);
		CHECK(f.has_inner);
		CHECK_INT(f.next, 0);
		/* Snapped: a partial sum needs no payload to be told; another value does. */
		CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, 50, n, &f), 0);
		CHECK(f.snapped);
		CHECK_INT(f.violations, 0);
		CHECK_INT(f.udp_csum_offloaded, rows[i].csum == UDP_CSUM_PARTIAL);
	}
}

/* The datagrams of a GSO super-frame, as wire_decode and wire_decode_next see them. */
static void check_datagram(const struct wire_frame *f, uint32_t seq, unsigned inner_len,
			   unsigned outer_len, size_t next)
{
	CHECK_INT(f->encap, WIRE_ENCAP_GRE_UDP);
	CHECK_INT(f->dir, 0);
	CHECK(f->has_sport);
	CHECK_INT(f->udp_sport, 50000);
	CHECK(f->has_gre);
	CHECK_INT(f->gre.seq, seq);
	CHECK(f->has_inner);
	CHECK_INT(f->inner_len, inner_len);
	CHECK(f->has_tcp);
	CHECK_INT(f->tcp_seq, 1000 + (seq - 5) * 100);
	CHECK_INT(f->outer_len, outer_len);
	CHECK_INT(f->frame_len, 14 + outer_len);
	CHECK_INT(f->next, next);
}

/*
 * One UDP_SEGMENT send captured whole on veth: three GRE packets (the last shorter) behind one
 * Ethernet, IPv4 and UDP header. Each is a datagram, with the outer headers a segmenting NIC
 * would give it, and its own GRE checksum.
 */
static void test_gso(void)
{
	struct wire_expect e = expect();
	struct udp_spec u = { .family = AF_INET,
			      .segs = 3,
			      .flags = GRE_F_CSUM | GRE_F_KEY | GRE_F_SEQ,
			      .payload = 100,
			      .last = 60,
			      .csum = UDP_CSUM_PARTIAL };
	struct wire_frame f, g;
	uint8_t buf[2048], *gre2 = buf + 42 + 156; /* the second GRE packet */
	size_t n;

	e.csum = WIRE_WANT_YES;
	e.mtu = 140;
	memset(buf, 0, ETH);
	store_be16(buf + ETH_TYPE, 0x0800);
	/* GRE packets of 16 + 140 and 16 + 100 bytes behind 14 + 20 + 8. */
	n = ETH + udp_build(&u, buf + ETH);
	CHECK_INT(n, 42 + 2 * 156 + 116);
	CHECK_INT(wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f), 0);
	CHECK_INT(f.violations, 0);
	CHECK(!f.snapped);
	CHECK(f.udp_csum_offloaded);
	check_datagram(&f, 5, 140, 28 + 156, 42 + 156);
	CHECK_INT(f.next_len, 156 + 116);
	CHECK_INT(f.link_hlen, 14);
	CHECK_INT(f.outer_hlen, 28);
	CHECK_INT(wire_decode_next(&e, buf, n, n, &f, &g), 0);
	CHECK_INT(g.violations, 0);
	CHECK(!g.udp_csum_offloaded);
	check_datagram(&g, 6, 140, 28 + 156, 42 + 2 * 156);
	CHECK_INT(g.next_len, 116);
	/* out may be prev. */
	CHECK_INT(wire_decode_next(&e, buf, n, n, &g, &g), 0);
	CHECK_INT(g.violations, 0);
	check_datagram(&g, 7, 100, 28 + 116, 0);
	CHECK_INT(wire_decode_next(&e, buf, n, n, &g, &g), -EINVAL);

	/* The second packet's key is wrong: it is a datagram of its own, and alone guilty. */
	gre2[KEY_OFF] ^= 1;
	gre_csum_fill(gre2, 156);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(wire_decode_next(&e, buf, n, n, &f, &g), 0);
	CHECK_INT(g.violations, 1u << WIRE_V_BAD_KEY);
	check_datagram(&g, 6, 140, 28 + 156, 42 + 2 * 156);
	/* Its inner packet is ECT(0) in the frame's Not-ECT header: it alone is guilty of it. */
	gre2[16 + IPV4_TOS_OFF] = IP_ECN_ECT0;
	ip4_csum(gre2 + 16, IPV4_HLEN, 0);
	gre_csum_fill(gre2, 156);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	wire_decode_next(&e, buf, n, n, &f, &g);
	CHECK_INT(g.violations, (1u << WIRE_V_BAD_KEY) | (1u << WIRE_V_ECN_NOT_COPIED));
	gre2[16 + IPV4_TOS_OFF] = 0;
	ip4_csum(gre2 + 16, IPV4_HLEN, 0);
	gre_csum_fill(gre2, 156);
	/* Its checksum is its own: the first packet's stays right. */
	gre2[GRE_CSUM_OFF] ^= 1;
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	wire_decode_next(&e, buf, n, n, &f, &g);
	CHECK_INT(g.violations, (1u << WIRE_V_BAD_KEY) | (1u << WIRE_V_BAD_CSUM));
	gre2[GRE_CSUM_OFF] ^= 1;
	gre2[KEY_OFF] ^= 1;
	gre_csum_fill(gre2, 156);

	/* The capture ends inside the second packet's inner header: that datagram is snapped. */
	wire_decode(&e, WIRE_LINK_ETHER, buf, 42 + 156 + 16 + 10, n, &f);
	CHECK(!f.snapped);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.next, 42 + 156);
	wire_decode_next(&e, buf, 42 + 156 + 16 + 10, n, &f, &g);
	CHECK(g.snapped);
	CHECK(g.has_gre);
	CHECK(!g.has_inner);
	CHECK_INT(g.violations, 0);
	/* It ends where the second header would start: the rest cannot be told apart. */
	wire_decode(&e, WIRE_LINK_ETHER, buf, 42 + 156 + 2, n, &f);
	CHECK(f.snapped);
	CHECK_INT(f.next, 0);
	CHECK_INT(f.violations, 0);

	/*
	 * A later header of other flags or another protocol type: the rest is the first packet's
	 * payload, as in any GRE packet, and its checksum covers it (so it is now wrong).
	 */
	gre2[0] &= (uint8_t) ~(GRE_BIT_C >> 8);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	CHECK_INT(f.next, 0);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_CSUM);
	CHECK_INT(f.outer_len, n - 14);
	CHECK_INT(f.frame_len, n);
	CHECK_INT(f.inner_len, 140);
	gre2[0] |= GRE_BIT_C >> 8;
	store_be16(gre2 + GRE_PROTO_OFF, 0x6558);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	CHECK_INT(f.next, 0);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_CSUM);
	CHECK_INT(f.outer_len, n - 14);
}

/* What follows the last GRE packet and reads as none is its payload's, as it always was. */
static void test_gso_trailing(void)
{
	struct wire_expect e = expect();
	struct udp_spec u = { .family = AF_INET6,
			      .segs = 2,
			      .flags = GRE_F_KEY | GRE_F_SEQ,
			      .payload = 100,
			      .trailing = 16,
			      .csum = UDP_CSUM_PARTIAL };
	struct wire_frame f;
	uint8_t buf[2048];
	size_t n;

	e.has_peers = false;
	n = udp_build(&u, buf);
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	CHECK_INT(f.violations, 0);
	CHECK(f.udp_csum_offloaded);
	CHECK_INT(f.outer_len, 48 + 152);
	CHECK_INT(f.next, 48 + 152);
	CHECK_INT(wire_decode_next(&e, buf, n, n, &f, &f), 0);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.gre.seq, 6);
	CHECK_INT(f.inner_len, 140);
	CHECK_INT(f.outer_len, 48 + 152 + 16);
	CHECK_INT(f.frame_len, 48 + 152 + 16);
	CHECK_INT(f.next, 0);
	/* One packet without options and zeros: these read as a GRE header of protocol type 0. */
	u.segs = 1;
	u.flags = 0;
	e.seq = WIRE_WANT_ANY;
	e.key = WIRE_WANT_ANY;
	n = udp_build(&u, buf);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.next, 0);
	CHECK_INT(f.outer_len, n);
	/* Plain GRE: an IP packet carries one GRE packet, whatever follows its inner packet. */
	u.segs = 2;
	u.flags = GRE_F_KEY | GRE_F_SEQ;
	u.plain = true;
	u.family = AF_INET;
	n = udp_build(&u, buf);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.next, 0);
	CHECK_INT(f.outer_len, n);
	CHECK_INT(f.inner_len, 140);
}

/*
 * A GRE frame (gre_ip4: key 7, sequence number, no checksum) whose outer header carries DS
 * field ods and TTL ottl around an inner packet of ids and ittl, both checksums right.
 */
static size_t tos_frame(uint8_t *buf, uint8_t ods, uint8_t ottl, uint8_t ids, uint8_t ittl)
{
	size_t n = gre_ip4(buf, 5);
	uint8_t *in = buf + IPV4_HLEN + GRE_HLEN_MIN + 2 * GRE_OPT_LEN;

	in[IPV4_TOS_OFF] = ids;
	in[IPV4_TTL_OFF] = ittl;
	ip4_csum(in, IPV4_HLEN, 0);
	buf[IPV4_TOS_OFF] = ods;
	buf[IPV4_TTL_OFF] = ottl;
	ip4_csum(buf, IPV4_HLEN, 0);
	return n;
}

/* The codepoints by name, in the RFC's order, and their values (common/inet.h). */
static const char *const ecn_rfc[4] = { "Not-ECT", "ECT(0)", "ECT(1)", "CE" };
static const uint8_t ecn_cp[4] = { IP_ECN_NOT_ECT, IP_ECN_ECT0, IP_ECN_ECT1, IP_ECN_CE };

/*
 * The outer header against the inner packet: RFC 6040's normal mode copies the ECN field, so
 * that every pair but the equal ones and a CE mark on the way (over ECT) is a violation, each
 * of its kind; the DSCP and the TTL inherited or fixed.
 */
static void test_tos(void)
{
	/* Rows the inner codepoint, columns the outer, in the RFC's order. */
	static const unsigned want[4][4] = {
		{ 0, 1u << WIRE_V_ECN_MISMATCH, 1u << WIRE_V_ECN_MISMATCH,
		  1u << WIRE_V_ECN_MISMATCH },
		{ 1u << WIRE_V_ECN_NOT_COPIED, 0, 1u << WIRE_V_ECN_MISMATCH, 0 },
		{ 1u << WIRE_V_ECN_NOT_COPIED, 1u << WIRE_V_ECN_MISMATCH, 0, 0 },
		{ 1u << WIRE_V_ECN_NOT_COPIED, 1u << WIRE_V_ECN_CE_RESET, 1u << WIRE_V_ECN_MISMATCH,
		  0 },
	};
	/* Automatic, not static: the rows name the expectations' fields. */
	const struct {
		const char *name;
		enum wire_field dscp, ttl;
		uint8_t dscp_value, ttl_value;
		uint8_t ods, ottl, ids, ittl;
		unsigned violations;
	} rows[] = {
		{ "dscp inherit, carried", WIRE_FIELD_INHERIT, WIRE_FIELD_ANY, 0, 0, 46 << 2, 64,
		  46 << 2, 17, 0 },
		{ "dscp inherit, outer 0", WIRE_FIELD_INHERIT, WIRE_FIELD_ANY, 0, 0, 0, 64, 46 << 2,
		  17, 1u << WIRE_V_BAD_DSCP },
		{ "dscp inherit, outer another", WIRE_FIELD_INHERIT, WIRE_FIELD_ANY, 0, 0, 10 << 2,
		  64, 46 << 2, 17, 1u << WIRE_V_BAD_DSCP },
		{ "dscp 10, outer 10", WIRE_FIELD_FIXED, WIRE_FIELD_ANY, 10, 0, 10 << 2, 64,
		  46 << 2, 17, 0 },
		{ "dscp 10, outer the inner's", WIRE_FIELD_FIXED, WIRE_FIELD_ANY, 10, 0, 46 << 2,
		  64, 46 << 2, 17, 1u << WIRE_V_BAD_DSCP },
		{ "dscp not checked", WIRE_FIELD_ANY, WIRE_FIELD_ANY, 0, 0, 0, 64, 46 << 2, 17, 0 },
		{ "ttl inherit, carried", WIRE_FIELD_ANY, WIRE_FIELD_INHERIT, 0, 0, 0, 17, 0, 17,
		  0 },
		{ "ttl inherit, outer 64", WIRE_FIELD_ANY, WIRE_FIELD_INHERIT, 0, 0, 0, 64, 0, 17,
		  1u << WIRE_V_BAD_TTL },
		{ "ttl 64, outer 64", WIRE_FIELD_ANY, WIRE_FIELD_FIXED, 0, 64, 0, 64, 0, 17, 0 },
		{ "ttl 64, outer 63", WIRE_FIELD_ANY, WIRE_FIELD_FIXED, 0, 64, 0, 63, 0, 63,
		  1u << WIRE_V_BAD_TTL },
		{ "all three wrong at once", WIRE_FIELD_INHERIT, WIRE_FIELD_INHERIT, 0, 0,
		  IP_ECN_NOT_ECT, 64, 46 << 2 | IP_ECN_ECT0, 17,
		  (1u << WIRE_V_BAD_DSCP) | (1u << WIRE_V_BAD_TTL) |
			  (1u << WIRE_V_ECN_NOT_COPIED) },
	};
	struct wire_expect e = expect();
	struct wire_frame f;
	uint8_t buf[512];
	size_t n;

	for (int in = 0; in < 4; in++) {
		for (int out = 0; out < 4; out++) {
			char row[48];

			snprintf(row, sizeof(row), "inner %s, outer %s", ecn_rfc[in], ecn_rfc[out]);
			n = tos_frame(buf, ecn_cp[out], 64, ecn_cp[in], 64);
			CHECK_ROW(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f) == 0, row);
			CHECK_ROW(f.violations == want[in][out], row);
			CHECK_ROW(f.has_outer_ds && f.outer_ds == ecn_cp[out], row);
			CHECK_ROW(f.inner_ds == ecn_cp[in] && f.has_inner, row);
		}
	}
	/* --expect-ecn any: not checked. */
	e.ecn = false;
	n = tos_frame(buf, IP_ECN_NOT_ECT, 64, IP_ECN_CE, 64);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	e.ecn = true;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		e.dscp = rows[i].dscp;
		e.dscp_value = rows[i].dscp_value;
		e.ttl = rows[i].ttl;
		e.ttl_value = rows[i].ttl_value;
		n = tos_frame(buf, rows[i].ods, rows[i].ottl, rows[i].ids, rows[i].ittl);
		wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
		CHECK_ROW(f.violations == rows[i].violations, rows[i].name);
		CHECK_ROW(f.outer_ttl == rows[i].ottl && f.inner_ttl == rows[i].ittl, rows[i].name);
	}
	/* An inner header the capture cut off: nothing to hold the outer one against. */
	e.dscp = e.ttl = WIRE_FIELD_INHERIT;
	n = tos_frame(buf, 0, 64, 46 << 2 | IP_ECN_CE, 17);
	wire_decode(&e, WIRE_LINK_RAW, buf, 44, n, &f);
	CHECK(f.snapped && !f.has_inner);
	CHECK_INT(f.violations, 0);

	/* IPv6 in IPv6: the traffic classes straddle bytes 0 and 1; the hop limits. */
	{
		static const struct pkt_spec in6 = { .family = AF_INET6,
						     .src = "2001:2:0:1::2",
						     .dst = "2001:2:0:3::2",
						     .proto = IPPROTO_UDP,
						     .sport = 5000,
						     .dport = 9400,
						     .payload = 20 };
		struct gre_info gi = { .proto = GRE_PROTO_IPV6 };
		uint8_t *in = buf + IPV6_HLEN + GRE_HLEN_MIN;
		size_t m;

		wire_expect_init(&e);
		e.dscp = e.ttl = WIRE_FIELD_INHERIT;
		memset(buf, 0, IPV6_HLEN);
		/* Traffic class 0xba (DSCP 46, ECT(0)), flow label 0x12345. */
		store_be32(buf, 0x6ba12345);
		buf[IPV6_NEXT_OFF] = IPPROTO_GRE_NUM;
		buf[IPV6_HOPS_OFF] = 9;
		inet_pton(AF_INET6, "2001:2::1", buf + IPV6_SRC_OFF);
		inet_pton(AF_INET6, "2001:2::2", buf + IPV6_DST_OFF);
		gre_build(buf + IPV6_HLEN, GRE_HLEN_MAX, &gi);
		m = pkt_build(&in6, in);
		store_be32(in, 0x6ba00000);
		in[IPV6_HOPS_OFF] = 9;
		n = IPV6_HLEN + GRE_HLEN_MIN + m;
		store_be16(buf + IPV6_PLEN_OFF, (uint16_t)(n - IPV6_HLEN));
		wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
		CHECK_INT(f.violations, 0);
		CHECK_INT(f.outer_ds, 0xba);
		CHECK_INT(f.inner_ds, 0xba);
		CHECK_INT(f.outer_ttl, 9);
		buf[IPV6_HOPS_OFF] = 64;
		store_be32(buf, 0x6b812345); /* DSCP 46, Not-ECT */
		wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
		CHECK_INT(f.violations, (1u << WIRE_V_BAD_TTL) | (1u << WIRE_V_ECN_NOT_COPIED));
		store_be32(buf, 0x60b12345); /* DSCP 2, CE */
		buf[IPV6_HOPS_OFF] = 9;
		wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
		CHECK_INT(f.violations, 1u << WIRE_V_BAD_DSCP);
	}
}

/*
 * A TCP superpacket of 5000 bytes of payload in one GRE packet (outer 20 + 12, inner 40): on
 * a 1500-byte link, 4 segments of 1428 bytes (the last 716); the MTU check goes by the
 * segment's inner packet, 1468 bytes. Not a superpacket where the link carries it, or where
 * the link's MTU is not known.
 */
static void test_tcp_superpacket(void)
{
	static uint8_t buf[8192];
	struct pkt_spec big = inner;
	struct gre_info gi = {
		.flags = GRE_F_KEY | GRE_F_SEQ, .proto = GRE_PROTO_IPV4, .key = 7, .seq = 5
	};
	struct wire_expect e = expect();
	struct wire_frame f;
	size_t n;

	big.payload = 5000;
	memset(buf, 0, IPV4_HLEN);
	buf[0] = 0x45;
	buf[IPV4_TTL_OFF] = 64;
	buf[IPV4_PROTO_OFF] = IPPROTO_GRE_NUM;
	inet_pton(AF_INET, "198.18.0.1", buf + IPV4_SRC_OFF);
	inet_pton(AF_INET, "198.18.0.2", buf + IPV4_DST_OFF);
	n = IPV4_HLEN + (size_t)gre_build(buf + IPV4_HLEN, GRE_HLEN_MAX, &gi);
	n += pkt_build(&big, buf + n);
	store_be16(buf + IPV4_TOT_LEN_OFF, (uint16_t)n);
	ip4_csum(buf, IPV4_HLEN, 0);
	e.link_mtu = 1500;
	e.mtu = 1468;
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.segs, 4);
	CHECK_INT(f.seg_outer, 32);
	CHECK_INT(f.seg_inner, 40);
	CHECK_INT(f.seg_mss, 1428);
	CHECK_INT(f.tcp_payload, 5000);
	e.mtu = 1400;
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	CHECK_INT(f.violations, 1u << WIRE_V_INNER_TOO_BIG);
	e.mtu = 1468;
	e.link_mtu = 9000;
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	CHECK_INT(f.segs, 0);
	CHECK_INT(f.violations, 1u << WIRE_V_INNER_TOO_BIG);
	e.link_mtu = 0;
	CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
	CHECK_INT(f.segs, 0);
}

/* --tunnels: gwa's tunnels, as gregw's tunnel file has them. */
static const char wire_tunnel_file[] =
	"[tunnel a]\npeer = 198.18.0.2\nkey = 1\nseq = yes\nprefixes = 198.18.128.0/32\n"
	"[tunnel b]\npeer = 198.18.0.2\nkey = 2\nprefixes = 198.18.128.1/32\n"
	"[tunnel c]\npeer = 198.18.0.3\ncsum = yes\nprefixes = 198.18.128.2/32\n"
	"[tunnel d]\npeer = 198.18.0.4\nkey = 1\nprefixes = 198.18.128.3/32\n";

struct tunnel_row {
	const char *name;
	const char *src, *dst;
	unsigned flags;
	uint32_t key;
	unsigned want;	 /* violations */
	int tunnel, dir; /* the frame's tunnel (index in the file), -1: none */
};

static const struct tunnel_row tunnel_rows[] = {
	{ "a's frame", "198.18.0.1", "198.18.0.2", GRE_F_KEY | GRE_F_SEQ, 1, 0, 0, 0 },
	{ "a's frame back", "198.18.0.2", "198.18.0.1", GRE_F_KEY | GRE_F_SEQ, 1, 0, 0, 1 },
	{ "a's frame without its numbers", "198.18.0.1", "198.18.0.2", GRE_F_KEY, 1,
	  1u << WIRE_V_NO_SEQ, 0, 0 },
	{ "b's frame with numbers b has not", "198.18.0.2", "198.18.0.1", GRE_F_KEY | GRE_F_SEQ, 2,
	  1u << WIRE_V_UNEXPECTED_SEQ, 1, 1 },
	{ "a key none of the peer's tunnels has", "198.18.0.1", "198.18.0.2", GRE_F_KEY, 3,
	  1u << WIRE_V_BAD_KEY, -1, 0 },
	{ "a key below the peer's tunnels' keys", "198.18.0.2", "198.18.0.1", GRE_F_KEY, 0,
	  1u << WIRE_V_BAD_KEY, -1, 1 },
	{ "no key to a peer whose tunnels all have one", "198.18.0.1", "198.18.0.2", 0, 0,
	  1u << WIRE_V_NO_KEY, -1, 0 },
	{ "c's keyless frame with its checksum", "198.18.0.3", "198.18.0.1", GRE_F_CSUM, 0, 0, 2,
	  1 },
	{ "c's peer with a key", "198.18.0.1", "198.18.0.3", GRE_F_KEY | GRE_F_CSUM, 5,
	  1u << WIRE_V_BAD_KEY, -1, 0 },
	{ "c's frame without its checksum", "198.18.0.1", "198.18.0.3", 0, 0, 1u << WIRE_V_NO_CSUM,
	  2, 0 },
	{ "d: a's key from another peer", "198.18.0.4", "198.18.0.1", GRE_F_KEY, 1, 0, 3, 1 },
	{ "a peer no tunnel has", "198.18.0.1", "198.18.0.9", GRE_F_KEY, 1, 1u << WIRE_V_BAD_PEER,
	  -1, -1 },
	{ "between two peers, local neither", "198.18.0.2", "198.18.0.3", GRE_F_KEY, 1,
	  1u << WIRE_V_BAD_PEER, -1, -1 },
};

static void test_tunnels(void)
{
	struct tunfile tf;
	struct line_error err;
	struct wire_tunnels w;
	struct wire_expect e;

	printf("case: --tunnels: each frame against its tunnel, by peer and key\n");
	CHECK_INT(tunfile_parse(wire_tunnel_file, sizeof(wire_tunnel_file) - 1, false, &tf, &err),
		  0);
	CHECK_INT(wire_tunnels_init(&w, tf.specs, tf.n), 0);
	wire_expect_init(&e);
	e.has_peers = true;
	netaddr_parse("198.18.0.1", &e.local);
	e.tunnels = &w;
	for (size_t i = 0; i < sizeof(tunnel_rows) / sizeof(tunnel_rows[0]); i++) {
		const struct tunnel_row *r = &tunnel_rows[i];
		struct wire_frame f;
		uint8_t buf[512];
		size_t n = gre_between(buf, r->src, r->dst, r->flags, r->key, 9);

		CHECK_INT(wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f), 0);
		CHECK_ROW(f.violations == r->want && f.tunnel == r->tunnel && f.dir == r->dir,
			  r->name);
		if (f.violations != r->want || f.tunnel != r->tunnel || f.dir != r->dir)
			fprintf(stderr, "  got violations %#x, tunnel %d, dir %d\n", f.violations,
				f.tunnel, f.dir);
	}
	wire_tunnels_fini(&w);
	tunfile_free(&tf);
}

int main(void)
{
	test_links();
	test_short();
	test_ipv6_ext();
	test_not_tunnel();
	test_udp_csum();
	test_gso();
	test_gso_trailing();
	test_tos();
	test_tcp_superpacket();
	test_tunnels();
	return check_done("test_wire_decode");
}
