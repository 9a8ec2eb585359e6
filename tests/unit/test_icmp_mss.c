/*
 * Unit tests for the ICMP errors gregw sends for packets too big for the tunnel
 * (gateway/icmp.c) and for TCP MSS clamping (gateway/mss.c).
 */
#include <sys/socket.h>

#include "check.h"
#include "icmp.h"
#include "mss.h"
#include "pkt.h"

static void cfg(struct encap_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	c->mtu = 1476;
	c->has_addr4 = true;
	c->has_addr6 = true;
	inet_pton(AF_INET, "198.19.0.1", c->addr4);
	inet_pton(AF_INET6, "2001:2:0:ff::1", c->addr6);
}

static void test_frag_needed(void)
{
	struct pkt_spec s = { .family = AF_INET,
			      .src = "198.18.1.2",
			      .dst = "198.18.3.2",
			      .proto = IPPROTO_TCP,
			      .sport = 40000,
			      .dport = 5201,
			      .tcp_flags = TCP_F_ACK,
			      .payload = 1460,
			      .df = true };
	uint8_t pkt[1600], out[1600];
	struct encap_cfg c;
	struct ip_info ip, oip;
	size_t len, n;

	cfg(&c);
	len = pkt_build(&s, pkt);
	CHECK_INT(ip_parse(pkt, len, true, &ip), IPV4_HLEN);
	n = icmp_too_big(&c, pkt, len, &ip, out, sizeof(out));
	/* RFC 1812: the whole error within 576 bytes, quoting as much as fits. */
	CHECK_INT(n, 576);
	CHECK_INT(ip_parse(out, n, true, &oip), IPV4_HLEN);
	CHECK_INT(oip.tot_len, 576);
	CHECK_INT(oip.proto, IPPROTO_ICMP);
	CHECK(memcmp(oip.src, c.addr4, 4) == 0);
	CHECK(memcmp(oip.dst, ip.src, 4) == 0);
	CHECK_INT(out[IPV4_HLEN + ICMP_TYPE_OFF], 3); /* destination unreachable */
	CHECK_INT(out[IPV4_HLEN + ICMP_CODE_OFF], 4); /* fragmentation needed and DF set */
	CHECK_INT(load_be16(out + IPV4_HLEN + ICMP4_MTU_OFF), 1476);
	CHECK_INT(inet_csum(out + IPV4_HLEN, n - IPV4_HLEN), 0);
	CHECK(memcmp(out + IPV4_HLEN + ICMP_HLEN, pkt, 576 - IPV4_HLEN - ICMP_HLEN) == 0);

	/* A short packet is quoted whole. */
	s.payload = 10;
	len = pkt_build(&s, pkt);
	ip_parse(pkt, len, true, &ip);
	CHECK_INT(icmp_too_big(&c, pkt, len, &ip, out, sizeof(out)), IPV4_HLEN + ICMP_HLEN + len);

	/* No room, no error. */
	CHECK_INT(icmp_too_big(&c, pkt, len, &ip, out, 40), 0);
	/* No IPv4 address on the TUN: nothing to send it from. */
	c.has_addr4 = false;
	CHECK_INT(icmp_too_big(&c, pkt, len, &ip, out, sizeof(out)), 0);
}

static void test_icmp_refusals(void)
{
	static const struct {
		const char *name;
		struct pkt_spec s;
		bool sent;
	} rows[] = {
		{ "udp",
		  { .family = AF_INET,
		    .src = "198.18.1.2",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_UDP,
		    .payload = 100,
		    .df = true },
		  true },
		{ "echo request",
		  { .family = AF_INET,
		    .src = "198.18.1.2",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_ICMP,
		    .icmp_type = 8,
		    .payload = 100,
		    .df = true },
		  true },
		{ "an error about an error",
		  { .family = AF_INET,
		    .src = "198.18.1.2",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_ICMP,
		    .icmp_type = 3,
		    .payload = 100,
		    .df = true },
		  false },
		{ "time exceeded",
		  { .family = AF_INET,
		    .src = "198.18.1.2",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_ICMP,
		    .icmp_type = 11,
		    .payload = 100,
		    .df = true },
		  false },
		{ "multicast source",
		  { .family = AF_INET,
		    .src = "224.0.0.1",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_UDP,
		    .payload = 100,
		    .df = true },
		  false },
		{ "zero source",
		  { .family = AF_INET,
		    .src = "0.0.0.0",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_UDP,
		    .payload = 100,
		    .df = true },
		  false },
		{ "later fragment",
		  { .family = AF_INET,
		    .src = "198.18.1.2",
		    .dst = "198.18.3.2",
		    .proto = IPPROTO_UDP,
		    .payload = 100,
		    .df = true,
		    .frag = 100 },
		  false },
		{ "v6 udp",
		  { .family = AF_INET6,
		    .src = "2001:2:0:1::2",
		    .dst = "2001:2:0:3::2",
		    .proto = IPPROTO_UDP,
		    .payload = 100 },
		  true },
		{ "v6 echo request",
		  { .family = AF_INET6,
		    .src = "2001:2:0:1::2",
		    .dst = "2001:2:0:3::2",
		    .proto = IPPROTO_ICMPV6,
		    .icmp_type = 128,
		    .payload = 100 },
		  true },
		{ "v6 an error about an error",
		  { .family = AF_INET6,
		    .src = "2001:2:0:1::2",
		    .dst = "2001:2:0:3::2",
		    .proto = IPPROTO_ICMPV6,
		    .icmp_type = 2,
		    .payload = 100 },
		  false },
		{ "v6 multicast source",
		  { .family = AF_INET6,
		    .src = "ff02::1",
		    .dst = "2001:2:0:3::2",
		    .proto = IPPROTO_UDP,
		    .payload = 100 },
		  false },
		{ "v6 unspecified source",
		  { .family = AF_INET6,
		    .src = "::",
		    .dst = "2001:2:0:3::2",
		    .proto = IPPROTO_UDP,
		    .payload = 100 },
		  false },
	};
	uint8_t pkt[1600], out[1600];
	struct encap_cfg c;

	cfg(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct ip_info ip;
		size_t len = pkt_build(&rows[i].s, pkt);

		CHECK_ROW(ip_parse(pkt, len, false, &ip) > 0, rows[i].name);
		CHECK_ROW((icmp_too_big(&c, pkt, len, &ip, out, sizeof(out)) > 0) == rows[i].sent,
			  rows[i].name);
	}
}

static void test_packet_too_big(void)
{
	struct pkt_spec s = { .family = AF_INET6,
			      .src = "2001:2:0:1::2",
			      .dst = "2001:2:0:3::2",
			      .proto = IPPROTO_UDP,
			      .sport = 1,
			      .dport = 2,
			      .payload = 1600 };
	uint8_t pkt[1800], out[1800];
	struct encap_cfg c;
	struct ip_info ip, oip;
	size_t len, n;

	cfg(&c);
	len = pkt_build(&s, pkt);
	CHECK_INT(ip_parse(pkt, len, false, &ip), IPV6_HLEN);
	n = icmp_too_big(&c, pkt, len, &ip, out, sizeof(out));
	/* RFC 4443 2.4(c): as much of the packet as fits in 1280 bytes. */
	CHECK_INT(n, 1280);
	CHECK_INT(ip_parse(out, n, false, &oip), IPV6_HLEN);
	CHECK_INT(oip.tot_len, 1280);
	CHECK_INT(oip.proto, IPPROTO_ICMPV6);
	CHECK(memcmp(oip.src, c.addr6, 16) == 0);
	CHECK(memcmp(oip.dst, ip.src, 16) == 0);
	CHECK_INT(out[IPV6_HLEN + ICMP_TYPE_OFF], 2); /* packet too big */
	CHECK_INT(out[IPV6_HLEN + ICMP_CODE_OFF], 0);
	CHECK_INT(load_be32(out + IPV6_HLEN + ICMP6_MTU_OFF), 1476);
	CHECK_INT(pkt_l4_csum(AF_INET6, out, out + IPV6_HLEN, n - IPV6_HLEN, IPPROTO_ICMPV6), 0);
	CHECK(memcmp(out + IPV6_HLEN + ICMP_HLEN, pkt, 1280 - IPV6_HLEN - ICMP_HLEN) == 0);
	c.has_addr6 = false;
	CHECK_INT(icmp_too_big(&c, pkt, len, &ip, out, sizeof(out)), 0);
}

static uint16_t tcp_mss(const uint8_t *pkt, unsigned hlen, unsigned at)
{
	return load_be16(pkt + hlen + TCP_HLEN + at);
}

static void test_mss(void)
{
	static const uint8_t mss_first[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 }; /* MSS 1460 */
	static const uint8_t mss_odd[] = { 1, 2, 4, 0x05, 0xb4, 1, 1, 0 };   /* NOP, MSS at 21 */
	static const uint8_t mss_small[] = { 2, 4, 0x05, 0x00, 0, 0, 0, 0 }; /* MSS 1280 */
	static const uint8_t bad_len[] = { 3, 9, 0, 0, 2, 4, 0x05, 0xb4 };   /* length past end */
	static const uint8_t zero_len[] = { 8, 0, 2, 4, 0x05, 0xb4, 0, 0 };  /* length 0 */
	static const struct {
		const char *name;
		int family;
		uint8_t flags;
		const uint8_t *opts;
		unsigned mss_at; /* offset of the MSS value in the options */
		bool changed;
		uint16_t want;
	} rows[] = {
		{ "syn", AF_INET, TCP_F_SYN, mss_first, 2, true, 1436 },
		{ "syn-ack", AF_INET, TCP_F_SYN | TCP_F_ACK, mss_first, 2, true, 1436 },
		{ "odd offset", AF_INET, TCP_F_SYN, mss_odd, 3, true, 1436 },
		{ "v6 syn", AF_INET6, TCP_F_SYN, mss_first, 2, true, 1416 },
		{ "v6 odd offset", AF_INET6, TCP_F_SYN, mss_odd, 3, true, 1416 },
		{ "already small", AF_INET, TCP_F_SYN, mss_small, 2, false, 1280 },
		{ "not a syn", AF_INET, TCP_F_ACK, mss_first, 2, false, 1460 },
		{ "bad option length", AF_INET, TCP_F_SYN, bad_len, 6, false, 1460 },
		{ "zero option length", AF_INET, TCP_F_SYN, zero_len, 4, false, 1460 },
	};

	CHECK_INT(mss_for_mtu(AF_INET, 1476), 1436);
	CHECK_INT(mss_for_mtu(AF_INET6, 1476), 1416);
	CHECK_INT(mss_for_mtu(AF_INET, 30), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pkt_spec s = {
			.family = rows[i].family,
			.src = rows[i].family == AF_INET6 ? "2001:2:0:1::2" : "198.18.1.2",
			.dst = rows[i].family == AF_INET6 ? "2001:2:0:3::2" : "198.18.3.2",
			.proto = IPPROTO_TCP,
			.sport = 40000,
			.dport = 5201,
			.tcp_flags = rows[i].flags,
			.opts = rows[i].opts,
			.opts_len = 8,
			.payload = 3,
		};
		uint8_t pkt[256];
		size_t len = pkt_build(&s, pkt);
		struct ip_info ip;
		unsigned hlen = ip_fixed_hlen(rows[i].family);
		unsigned max = mss_for_mtu(rows[i].family, 1476);

		ip_parse(pkt, len, false, &ip);
		CHECK_ROW(mss_clamp(pkt, len, &ip, max, false) == rows[i].changed, rows[i].name);
		CHECK_ROW(tcp_mss(pkt, hlen, rows[i].mss_at) == rows[i].want, rows[i].name);
		/* The incremental update leaves a checksum a receiver accepts. */
		CHECK_ROW(pkt_l4_csum(rows[i].family, pkt, pkt + hlen, len - hlen, IPPROTO_TCP) ==
				  0,
			  rows[i].name);
		/* Left partial, the field holds the pseudo-header's sum, which the MSS is not
		 * part of: the clamp leaves it. */
		pkt_build(&s, pkt);
		store_be16(pkt + hlen + TCP_CSUM_OFF, 0x1234);
		CHECK_ROW(mss_clamp(pkt, len, &ip, max, true) == rows[i].changed, rows[i].name);
		CHECK_ROW(tcp_mss(pkt, hlen, rows[i].mss_at) == rows[i].want, rows[i].name);
		CHECK_ROW(load_be16(pkt + hlen + TCP_CSUM_OFF) == 0x1234, rows[i].name);
	}
}

int main(void)
{
	test_frag_needed();
	test_icmp_refusals();
	test_packet_too_big();
	test_mss();
	return check_done("test_icmp_mss");
}
