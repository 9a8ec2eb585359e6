/*
 * Unit tests of wire_decode on frames built in memory: each link type the audit reads, VLAN
 * tags, IPv6 extension headers, snapped against truncated, Ethernet padding, and the
 * classification of traffic that is not the tunnel's, broken or not.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "gre.h"
#include "pkt.h"
#include "wire_decode.h"

static const struct pkt_spec inner = { .family = AF_INET,
				       .src = "198.18.1.2",
				       .dst = "198.18.3.2",
				       .proto = 6,
				       .sport = 40000,
				       .dport = 9400,
				       .tcp_flags = 0x10,
				       .payload = 100 };

/* Outer IPv4 + GRE (key 7, seq) + inner at ip; returns the IP packet's length. */
static size_t gre_ip4(uint8_t *ip, uint32_t seq)
{
	struct gre_info gi = {
		.flags = GRE_F_KEY | GRE_F_SEQ, .proto = GRE_PROTO_IPV4, .key = 7, .seq = seq
	};
	size_t n;

	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[8] = 64;
	ip[9] = 47;
	store_be16(ip + 6, IPV4_DF);
	inet_pton(AF_INET, "198.18.0.1", ip + 12);
	inet_pton(AF_INET, "198.18.0.2", ip + 16);
	n = 20 + (size_t)gre_build(ip + 20, 16, &gi);
	n += pkt_build(&inner, ip + n);
	store_be16(ip + 2, (uint16_t)n);
	store_be16(ip + 10, inet_csum(ip, 20));
	return n;
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
	CHECK_INT(f->flow.sport, 40000);
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

	memset(buf, 0, 18);
	store_be16(buf + 12, 0x8100);
	store_be16(buf + 16, 0x0800);
	n = 18 + gre_ip4(buf + 18, 5);
	wire_decode(&e, WIRE_LINK_ETHER, buf, n, n, &f);
	check_good(&f, "ethernet, one VLAN tag");
	/* Padding past the IP length is the link's (a short frame padded to 60 bytes). */
	wire_decode(&e, WIRE_LINK_ETHER, buf, n + 30, n + 30, &f);
	check_good(&f, "ethernet, padded");
	CHECK_INT(f.frame_len, n + 30);

	memset(buf, 0, 16);
	store_be16(buf + 14, 0x0800);
	n = 16 + gre_ip4(buf + 16, 5);
	wire_decode(&e, WIRE_LINK_LINUX_SLL, buf, n, n, &f);
	check_good(&f, "sll");

	memset(buf, 0, 20);
	store_be16(buf, 0x0800);
	n = 20 + gre_ip4(buf + 20, 5);
	wire_decode(&e, WIRE_LINK_LINUX_SLL2, buf, n, n, &f);
	check_good(&f, "sll2");

	memset(buf, 0, 4);
	buf[0] = AF_INET;
	n = 4 + gre_ip4(buf + 4, 5);
	wire_decode(&e, WIRE_LINK_NULL, buf, n, n, &f);
	check_good(&f, "null");

	/* ARP on Ethernet is not the tunnel's, and not a violation. */
	memset(buf, 0, 60);
	store_be16(buf + 12, 0x0806);
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
	buf[9] = 6;
	store_be16(buf + 10, 0);
	store_be16(buf + 10, inet_csum(buf, 20));
	wire_decode(&e, WIRE_LINK_RAW, buf, n - 1, n - 1, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	/* An outer IPv4 header checksum that is wrong. */
	n = gre_ip4(buf, 5);
	buf[10] ^= 1;
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
	memset(buf, 0, 48);
	buf[0] = 0x60;
	buf[6] = 60; /* destination options */
	buf[7] = 64;
	inet_pton(AF_INET6, "2001:2::1", buf + 8);
	inet_pton(AF_INET6, "2001:2::2", buf + 24);
	buf[40] = 47;
	buf[41] = 0; /* 8 bytes */
	n = 48 + (size_t)gre_build(buf + 48, 16, &gi);
	n += pkt_build(&inner, buf + n);
	store_be16(buf + 4, (uint16_t)(n - 40));
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK(f.has_inner);
	CHECK_INT(f.outer_len, n);
	/* Later fragment of UDP between the ends: the tunnel's (GRE-in-UDP), a violation. */
	buf[6] = 44;
	buf[40] = 17;
	store_be16(buf + 42, 100 << 3);
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

/* Fixes up an outer IPv4 header changed by a test: checksum right again, then off by flip. */
static void ip4_csum(uint8_t *ip, size_t hlen, uint8_t flip)
{
	store_be16(ip + 10, 0);
	store_be16(ip + 10, inet_csum(ip, hlen));
	ip[10] ^= flip;
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
	buf[9] = 17;
	store_be16(buf + 20, 5353);
	store_be16(buf + 22, 53);
	ip4_csum(buf, 20, 1);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_NONE);
	CHECK_INT(f.violations, 0);
	CHECK_INT(f.dir, -1);
	/* TCP with a header length below 20. */
	n = gre_ip4(buf, 5);
	buf[9] = 6;
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
	store_be16(buf + 2, 16);
	ip4_csum(buf, 20, 0);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE);
	CHECK_INT(f.violations, 1u << WIRE_V_BAD_OUTER);
	CHECK_INT(f.dir, -1);
	/* GRE-in-UDP with a wrong IPv4 header checksum is still the tunnel's. */
	n = gre_ip4(buf, 5);
	buf[9] = 17;
	store_be16(buf + 20, 5353);
	store_be16(buf + 22, WIRE_GRE_UDP_PORT);
	ip4_csum(buf, 20, 1);
	wire_decode(&e, WIRE_LINK_RAW, buf, n, n, &f);
	CHECK_INT(f.encap, WIRE_ENCAP_GRE_UDP);
	CHECK(f.violations & (1u << WIRE_V_BAD_OUTER));
	CHECK_INT(f.dir, 0);
}

int main(void)
{
	test_links();
	test_short();
	test_ipv6_ext();
	test_not_tunnel();
	return check_done("test_wire_decode");
}
