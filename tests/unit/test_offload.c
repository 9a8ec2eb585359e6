/*
 * Segmentation of TUN superpackets (gateway/gso.c) and coalescing towards TUN
 * (gateway/coalesce.c): every segment a well-formed packet with the right lengths, identification,
 * sequence number, flags and checksums; odd sizes and the last short segment; ECN; IPv4
 * options; IPv6; UDP (USO); refusals; and coalescing: what segmentation cut is put back
 * together byte for byte, flows interleaved, and nothing merged that the kernel's GRO would
 * not merge (gaps, bad checksums, changed options, SYN, pure ACKs, other protocols).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coalesce.h"
#include "gso.h"
#include "inet.h"
#include "pkt.h"

/* An IPv4 TCP segment's headers, without options: where TCP starts, where its payload does. */
enum { TCP4 = IPV4_HLEN, HDRS4 = IPV4_HLEN + TCP_HLEN };

static uint8_t super[70000], seg[64][2048], hdr[GSO_HDR_MAX];
static size_t seg_len[64];

/* A packet from the client's LAN to the server's, DF set, as the tests' flows send. */
static struct pkt_spec lan_pkt(int family, uint8_t proto, uint16_t sport, uint16_t dport,
			       uint8_t tcp_flags, size_t payload)
{
	return (struct pkt_spec){ .family = family,
				  .src = family == AF_INET6 ? "2001:2::1" : "198.18.1.2",
				  .dst = family == AF_INET6 ? "2001:2:0:3::2" : "198.18.3.2",
				  .proto = proto,
				  .sport = sport,
				  .dport = dport,
				  .tcp_flags = tcp_flags,
				  .payload = payload,
				  .df = true };
}

/* The virtio header the kernel puts before a TCP superpacket. */
static struct virtio_net_hdr tso_hdr(int family, unsigned l4_off, unsigned mss, bool ecn)
{
	struct virtio_net_hdr h = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type =
			family == AF_INET6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4,
		.gso_size = htole16((uint16_t)mss),
		.csum_start = htole16((uint16_t)l4_off),
		.csum_offset = htole16(TCP_CSUM_OFF),
	};

	if (ecn)
		h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	return h;
}

/* Cuts super (len) into seg[]; returns the number of segments. */
static unsigned cut(const struct virtio_net_hdr *h, size_t len, unsigned mtu)
{
	struct gso_pkt g;

	if (gso_parse(h, super, len, mtu, &g) != DROP_NONE || g.nseg > 64)
		return 0;
	for (unsigned i = 0; i < g.nseg; i++) {
		size_t plen = gso_segment(&g, i, hdr, false);

		memcpy(seg[i], hdr, g.hdr_len);
		memcpy(seg[i] + g.hdr_len, super + g.hdr_len + (size_t)i * g.mss, plen);
		seg_len[i] = g.hdr_len + plen;
	}
	return g.nseg;
}

static bool valid(const uint8_t *p, size_t len)
{
	struct ip_info ip;
	int hlen = ip_parse(p, len, true, &ip);

	if (hlen < 0 || ip.tot_len != len)
		return false;
	return pkt_l4_csum(ip.family, p, p + hlen, len - (size_t)hlen, ip.proto) == 0;
}

static void test_tcp4(void)
{
	static const uint8_t ts[12] = { 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9 };
	struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_TCP, 40000, 9400,
				    TCP_F_ACK | TCP_F_PSH | TCP_F_FIN, 10000);
	struct virtio_net_hdr h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	size_t len, hl = HDRS4 + sizeof(ts); /* the headers, with the timestamps */
	unsigned n, bad = 0;

	s.opts = ts;
	s.opts_len = sizeof(ts);
	len = pkt_build(&s, super);
	n = cut(&h, len, 1476);

	printf("case: IPv4 TCP, 10000 bytes at MSS 1400 with timestamps\n");
	CHECK_INT(n, 8);
	for (unsigned i = 0; i < n; i++) {
		size_t plen = i < 7 ? 1400 : 200;

		if (!valid(seg[i], seg_len[i]) || seg_len[i] != hl + plen ||
		    load_be16(seg[i] + IPV4_ID_OFF) != 0x1234 + i ||
		    load_be16(seg[i] + IPV4_FRAG_OFF) != IPV4_DF ||
		    load_be32(seg[i] + TCP4 + TCP_SEQ_OFF) != 1000 + i * 1400 ||
		    seg[i][TCP4 + TCP_FLAGS_OFF] !=
			    (i == 7 ? (TCP_F_ACK | TCP_F_PSH | TCP_F_FIN) : TCP_F_ACK) ||
		    memcmp(seg[i] + TCP4 + TCP_HLEN, ts, sizeof(ts)) != 0 ||
		    memcmp(seg[i] + hl, super + hl + i * 1400, plen) != 0)
			bad++;
	}
	CHECK_INT(bad, 0);

	printf("case: the last segment one byte, and none short\n");
	s.payload = 1401;
	len = pkt_build(&s, super);
	CHECK_INT(cut(&h, len, 1476), 2);
	CHECK_INT(seg_len[1], hl + 1);
	CHECK(valid(seg[1], seg_len[1]));
	s.payload = 2800;
	len = pkt_build(&s, super);
	CHECK_INT(cut(&h, len, 1476), 2);
	CHECK_INT(seg_len[0], seg_len[1]);
	CHECK(valid(seg[0], seg_len[0]) && valid(seg[1], seg_len[1]));

	printf("case: odd MSS and payload\n");
	s.payload = 4999;
	len = pkt_build(&s, super);
	h = tso_hdr(AF_INET, IPV4_HLEN, 999, false);
	CHECK_INT(cut(&h, len, 1476), 6);
	CHECK_INT(seg_len[5], hl + 4);
	CHECK(valid(seg[0], seg_len[0]) && valid(seg[5], seg_len[5]));

	printf("case: ECN, CWR on the first segment only\n");
	s.payload = 3000;
	s.tcp_flags = TCP_F_ACK | TCP_F_CWR;
	len = pkt_build(&s, super);
	h = tso_hdr(AF_INET, IPV4_HLEN, 1400, true);
	CHECK_INT(cut(&h, len, 1476), 3);
	CHECK_INT(seg[0][TCP4 + TCP_FLAGS_OFF], TCP_F_ACK | TCP_F_CWR);
	CHECK_INT(seg[1][TCP4 + TCP_FLAGS_OFF], TCP_F_ACK);
	CHECK_INT(seg[2][TCP4 + TCP_FLAGS_OFF], TCP_F_ACK);
	CHECK(valid(seg[2], seg_len[2]));
}

static void test_ip_options_and_ipv6(void)
{
	struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_TCP, 1, 2, TCP_F_ACK, 3000);
	uint8_t plain[4000];
	size_t len = pkt_build(&s, plain);
	struct virtio_net_hdr h;

	printf("case: IPv4 with 4 bytes of options\n");
	memcpy(super, plain, IPV4_HLEN);
	memset(super + IPV4_HLEN, 1, 4); /* NOP options */
	memcpy(super + IPV4_HLEN + 4, plain + IPV4_HLEN, len - IPV4_HLEN);
	super[0] = 0x46;
	store_be16(super + IPV4_TOT_LEN_OFF, (uint16_t)(len + 4));
	store_be16(super + IPV4_CSUM_OFF, 0);
	store_be16(super + IPV4_CSUM_OFF, inet_csum(super, IPV4_HLEN + 4));
	h = tso_hdr(AF_INET, IPV4_HLEN + 4, 1400, false);
	CHECK_INT(cut(&h, len + 4, 1476), 3);
	CHECK_INT(seg_len[0], IPV4_HLEN + 4 + TCP_HLEN + 1400);
	CHECK(valid(seg[0], seg_len[0]) && valid(seg[2], seg_len[2]));
	CHECK(memcmp(seg[1] + IPV4_HLEN, super + IPV4_HLEN, 4) == 0);

	printf("case: IPv6\n");
	s = lan_pkt(AF_INET6, IPPROTO_TCP, 1, 2, TCP_F_ACK, 5000);
	len = pkt_build(&s, super);
	h = tso_hdr(AF_INET6, IPV6_HLEN, 1380, false);
	CHECK_INT(cut(&h, len, 1456), 4);
	CHECK_INT(load_be16(seg[0] + IPV6_PLEN_OFF), TCP_HLEN + 1380);
	CHECK_INT(load_be16(seg[3] + IPV6_PLEN_OFF), TCP_HLEN + 5000 - 3 * 1380);
	CHECK(valid(seg[0], seg_len[0]) && valid(seg[3], seg_len[3]));
	CHECK_INT(load_be32(seg[3] + IPV6_HLEN + TCP_SEQ_OFF), 1000 + 3 * 1380);
}

static void test_udp_and_refusals(void)
{
	struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_UDP, 5, 6, 0, 3000);
	size_t len;
	struct virtio_net_hdr h = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
				    .gso_type = VIRTIO_NET_HDR_GSO_UDP_L4,
				    .gso_size = htole16(1000),
				    .csum_start = htole16(IPV4_HLEN),
				    .csum_offset = htole16(UDP_CSUM_OFF) };
	struct gso_pkt g;

	s.df = false;
	len = pkt_build(&s, super);
	printf("case: UDP (USO), 3000 bytes in datagrams of 1000\n");
	CHECK_INT(cut(&h, len, 1476), 3);
	CHECK_INT(load_be16(seg[2] + IPV4_HLEN + UDP_LEN_OFF), UDP_HLEN + 1000);
	CHECK_INT(load_be16(seg[2] + IPV4_ID_OFF), 0x1234 + 2);
	CHECK(valid(seg[0], seg_len[0]) && valid(seg[2], seg_len[2]));

	printf("case: refusals\n");
	h.gso_type = VIRTIO_NET_HDR_GSO_UDP; /* UFO */
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	s.proto = IPPROTO_TCP;
	s.payload = 3000;
	len = pkt_build(&s, super);
	h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	h.flags = 0;
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h = tso_hdr(AF_INET6, IPV4_HLEN, 1400, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h = tso_hdr(AF_INET, IPV4_HLEN, 0, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h = tso_hdr(AF_INET, 60000, 1400, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h = tso_hdr(AF_INET, IPV4_HLEN + 4, 1400, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	h.csum_offset = htole16(UDP_CSUM_OFF);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	/* TCP segmentation of a packet whose IP header names UDP. */
	super[IPV4_PROTO_OFF] = IPPROTO_UDP;
	h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	super[IPV4_PROTO_OFF] = IPPROTO_TCP;
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	{
		/* IPv6: TCP6 segmentation of a packet whose next header is UDP, and one whose
		 * transport is said to start past the fixed header while TCP follows it. */
		struct pkt_spec s6 = lan_pkt(AF_INET6, IPPROTO_TCP, 1, 2, TCP_F_ACK, 3000);
		size_t len6 = pkt_build(&s6, super);

		h = tso_hdr(AF_INET6, IPV6_HLEN, 1400, false);
		CHECK_INT(gso_parse(&h, super, len6, 1476, &g), DROP_NONE);
		super[IPV6_NEXT_OFF] = IPPROTO_UDP;
		CHECK_INT(gso_parse(&h, super, len6, 1476, &g), DROP_TX_BAD_INNER);
		super[IPV6_NEXT_OFF] = IPPROTO_TCP;
		h = tso_hdr(AF_INET6, IPV6_HLEN + 8, 1400, false);
		CHECK_INT(gso_parse(&h, super, len6, 1476, &g), DROP_TX_BAD_INNER);
		len = pkt_build(&s, super);
	}
	h = tso_hdr(AF_INET, IPV4_HLEN, 1460, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_TOO_BIG);
	CHECK_INT(gso_parse(&h, super, len, 1500, &g), DROP_NONE);

	printf("case: a partial checksum completed\n");
	s.payload = 333;
	len = pkt_build(&s, super);
	store_be16(super + TCP4 + TCP_CSUM_OFF,
		   (uint16_t)~inet_csum_fold(inet_pseudo_sum(AF_INET, super + IPV4_SRC_OFF,
							     super + IPV4_DST_OFF, IPPROTO_TCP,
							     (uint32_t)(len - IPV4_HLEN))));
	CHECK(!valid(super, len));
	h = (struct virtio_net_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
				     .csum_start = htole16(IPV4_HLEN),
				     .csum_offset = htole16(TCP_CSUM_OFF) };
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	CHECK_INT(g.nseg, 0);
	inet_csum_finish(super + g.csum.start, len - g.csum.start, NULL, 0, g.csum);
	CHECK(valid(super, len));
	h.csum_start = htole16((uint16_t)len);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
}

/* What the coalescer emitted, in order. */
static struct out {
	struct virtio_net_hdr h;
	uint8_t pkt[COALESCE_BUF];
	size_t len;
	unsigned nseg;
} outs[16];
static unsigned nouts;

static void collect(void *ctx, const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
		    unsigned nseg)
{
	(void)ctx;
	if (nouts < 16) {
		outs[nouts].h = *h;
		memcpy(outs[nouts].pkt, pkt, len);
		outs[nouts].len = len;
		outs[nouts].nseg = nseg;
	}
	nouts++;
}

static uint8_t coal_mem[COALESCE_FLOWS * COALESCE_BUF];
static struct coalescer coal;
static unsigned results[COALESCE_BAD_CSUM + 1]; /* what coalesce_add said, since the last reset */

/* A fresh coalescer: nothing held, nothing emitted, nothing counted. */
static void coal_reset(void)
{
	coalesce_init(&coal, coal_mem);
	memset(results, 0, sizeof(results));
	nouts = 0;
}

static void add(const uint8_t *p, size_t len)
{
	results[coalesce_add(&coal, p, len, (struct l4_csum){ 0 }, collect, NULL)]++;
}

/* From a fresh coalescer: p1, then p2, then the flush. Returns what came out. */
static unsigned coalesce_pair(const uint8_t *p1, size_t l1, const uint8_t *p2, size_t l2)
{
	coal_reset();
	add(p1, l1);
	add(p2, l2);
	coalesce_flush(&coal, collect, NULL);
	return nouts;
}

/* Segments of a flow: count of payload bytes, mss, flags of the superpacket, and port. */
static unsigned flow_segments(int family, uint16_t sport, size_t payload, unsigned mss,
			      uint8_t flags)
{
	struct pkt_spec s = lan_pkt(family, IPPROTO_TCP, sport, 9400, flags, payload);
	size_t len = pkt_build(&s, super);
	struct virtio_net_hdr h = tso_hdr(family, ip_fixed_hlen(family), mss, false);

	return cut(&h, len, 1500);
}

/* Recomputes an IPv4 header's checksum and a TCP segment's, after a test edited them. */
static void refresh(uint8_t *p, size_t len)
{
	bool v6 = (p[0] >> 4) == 6;
	unsigned l4 = v6 ? IPV6_HLEN : (p[0] & 0x0fu) * 4u;

	if (!v6) {
		store_be16(p + IPV4_CSUM_OFF, 0);
		store_be16(p + IPV4_CSUM_OFF, inet_csum(p, l4));
	}
	store_be16(p + l4 + TCP_CSUM_OFF, 0);
	store_be16(p + l4 + TCP_CSUM_OFF,
		   pkt_l4_csum(v6 ? AF_INET6 : AF_INET, p, p + l4, len - l4, IPPROTO_TCP));
}

static void test_round_trip(int family)
{
	static uint8_t orig[64][2048];
	static size_t orig_len[64];
	unsigned n = flow_segments(family, 1, 9000, 1400, TCP_F_ACK | TCP_F_PSH), bad = 0;
	struct out o;

	printf("case: %s: 7 segments coalesced, then cut again byte for byte\n",
	       family == AF_INET6 ? "IPv6" : "IPv4");
	CHECK_INT(n, 7);
	for (unsigned i = 0; i < n; i++) {
		memcpy(orig[i], seg[i], seg_len[i]);
		orig_len[i] = seg_len[i];
	}
	coal_reset();
	for (unsigned i = 0; i < n; i++)
		add(orig[i], orig_len[i]);
	/* The short last segment with PSH closed it: out before any flush. */
	CHECK_INT(nouts, 1);
	o = outs[0];
	CHECK_INT(o.nseg, 7);
	CHECK_INT(o.h.gso_type,
		  family == AF_INET6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4);
	CHECK_INT(le16toh(o.h.gso_size), 1400);
	CHECK_INT(o.h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_INT(o.len, ip_fixed_hlen(family) + TCP_HLEN + 9000);
	memcpy(super, o.pkt, o.len);
	CHECK_INT(cut(&o.h, o.len, 1500), 7);
	for (unsigned i = 0; i < n; i++)
		if (seg_len[i] != orig_len[i] || memcmp(seg[i], orig[i], orig_len[i]) != 0)
			bad++;
	CHECK_INT(bad, 0);
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 1);
}

static void test_rules(void)
{
	static uint8_t a[8][2048], b[8][2048];
	static size_t alen[8], blen[8];
	unsigned na = flow_segments(AF_INET, 1, 5600, 1400, TCP_F_ACK), nb;

	for (unsigned i = 0; i < na; i++) {
		memcpy(a[i], seg[i], seg_len[i]);
		alen[i] = seg_len[i];
	}
	nb = flow_segments(AF_INET, 2, 5600, 1400, TCP_F_ACK);
	for (unsigned i = 0; i < nb; i++) {
		memcpy(b[i], seg[i], seg_len[i]);
		blen[i] = seg_len[i];
	}

	printf("case: two flows interleaved\n");
	coal_reset();
	for (unsigned i = 0; i < 4; i++) {
		add(a[i], alen[i]);
		add(b[i], blen[i]);
	}
	CHECK_INT(nouts, 0);
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 2);
	CHECK_INT(outs[0].nseg, 4);
	CHECK_INT(outs[1].nseg, 4);
	CHECK_INT(load_be16(outs[0].pkt + TCP4 + TCP_SPORT_OFF) +
			  load_be16(outs[1].pkt + TCP4 + TCP_SPORT_OFF),
		  3);
	CHECK_INT(results[COALESCE_MERGED], 6);
	CHECK_INT(results[COALESCE_HELD], 2);

	printf("case: a gap ends the superpacket\n");
	coal_reset();
	add(a[0], alen[0]);
	add(a[1], alen[1]);
	add(a[3], alen[3]);
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 2);
	CHECK_INT(outs[0].nseg, 2);
	CHECK_INT(outs[1].nseg, 1);
	CHECK_INT(outs[1].h.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	CHECK_INT(outs[1].h.flags, VIRTIO_NET_HDR_F_DATA_VALID);
	CHECK(memcmp(outs[1].pkt, a[3], alen[3]) == 0);

	printf("case: a wrong checksum is passed on alone, unverified\n");
	coal_reset();
	add(a[0], alen[0]);
	a[1][100] ^= 0x40;
	add(a[1], alen[1]);
	a[1][100] ^= 0x40;
	add(a[2], alen[2]);
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 3);
	CHECK_INT(outs[0].nseg, 1);
	CHECK_INT(outs[1].h.flags, 0);
	CHECK_INT(outs[1].pkt[100], a[1][100] ^ 0x40);
	CHECK_INT(outs[2].nseg, 1);
	CHECK_INT(results[COALESCE_BAD_CSUM], 1);

	printf("case: changed options, identification, SYN, pure ACK, UDP\n");
	{
		static const uint8_t ts1[12] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 9 };
		static const uint8_t ts2[12] = { 1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 9 };
		struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_TCP, 7, 8, TCP_F_ACK, 1000);
		uint8_t p1[1200], p2[1200], p3[1200];
		size_t l1, l2, l3;

		s.opts = ts1;
		s.opts_len = 12;
		l1 = pkt_build(&s, p1);
		s.opts = ts2;
		s.tcp_seq = 2000;
		l2 = pkt_build(&s, p2);
		CHECK_INT(coalesce_pair(p1, l1, p2, l2), 2);

		/* Same options and sequence, identification not one up. */
		s.opts = ts1;
		l2 = pkt_build(&s, p2);
		CHECK_INT(coalesce_pair(p1, l1, p2, l2), 2);

		/* One up: merged. */
		store_be16(p2 + IPV4_ID_OFF, 0x1235);
		refresh(p2, l2);
		CHECK_INT(coalesce_pair(p1, l1, p2, l2), 1);
		CHECK_INT(outs[0].nseg, 2);

		s.tcp_flags = TCP_F_SYN;
		s.payload = 0;
		l3 = pkt_build(&s, p3);
		coal_reset();
		add(p1, l1);
		add(p3, l3);
		CHECK_INT(nouts, 2); /* the flow first, then the SYN, at once */
		CHECK_INT(outs[0].nseg, 1);
		CHECK(memcmp(outs[1].pkt, p3, l3) == 0);

		s.tcp_flags = TCP_F_ACK;
		l3 = pkt_build(&s, p3);
		nouts = 0;
		add(p3, l3);
		CHECK_INT(nouts, 1);

		s.proto = IPPROTO_UDP;
		s.payload = 100;
		l3 = pkt_build(&s, p3);
		nouts = 0;
		add(p1, l1);
		add(p3, l3);
		CHECK_INT(nouts, 1);
		CHECK_INT(outs[0].len, l3);
		coalesce_flush(&coal, collect, NULL);
		CHECK_INT(nouts, 2);
	}

	printf("case: a segment larger than the first one starts anew\n");
	{
		struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_TCP, 9, 8, TCP_F_ACK, 500);
		uint8_t p1[1600], p2[1600];
		size_t l1 = pkt_build(&s, p1), l2;

		s.tcp_seq = 1500;
		s.payload = 1000;
		l2 = pkt_build(&s, p2);
		store_be16(p2 + IPV4_ID_OFF, 0x1235);
		refresh(p2, l2);
		CHECK_INT(coalesce_pair(p1, l1, p2, l2), 2);
	}

	printf("case: no more than 64 KB, and the oldest of 9 flows goes first\n");
	coal_reset();
	for (unsigned half = 0; half < 2; half++) {
		/* Two superpackets of 30 segments, one after the other in sequence. */
		unsigned n = flow_segments(AF_INET, 3, 30 * 1400, 1400, TCP_F_ACK);

		for (unsigned i = 0; i < n; i++) {
			store_be32(seg[i] + TCP4 + TCP_SEQ_OFF, 1000 + (half * 30 + i) * 1400);
			store_be16(seg[i] + IPV4_ID_OFF, (uint16_t)(0x1234 + half * 30 + i));
			refresh(seg[i], seg_len[i]);
			add(seg[i], seg_len[i]);
		}
	}
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 2);
	CHECK_INT(outs[0].nseg, (65535 - HDRS4) / 1400);
	CHECK(outs[0].len <= 65535);
	CHECK_INT(outs[0].nseg + outs[1].nseg, 60);
	coal_reset();
	for (uint16_t port = 10; port < 19; port++) {
		flow_segments(AF_INET, port, 2000, 1400, TCP_F_ACK);
		add(seg[0], seg_len[0]);
	}
	CHECK_INT(nouts, 1);
	CHECK_INT(load_be16(outs[0].pkt + TCP4 + TCP_SPORT_OFF), 10);
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 9);
}

/*
 * One edit to the middle segment of three, as tcp_gro_receive and inet_gro_receive /
 * ipv6_gro_receive judge it: merged means one superpacket of two or three segments;
 * refused means the edited segment leaves alone and unchanged. fix: checksums made right
 * again after the edit (else the edit is a corruption).
 */
enum edit {
	E_TOS,
	E_TTL,
	E_DF,
	E_ACK,
	E_WINDOW,
	E_URG,
	E_RST,
	E_CWR,
	E_FIN,
	E_PSH,
	E_IP_CSUM,
	E_IP_OPTIONS,
	E_TCP_CSUM,
	E_FLOW_LABEL,
	E_HOP_LIMIT,
	E_EXT_HEADER,
};

static const struct edit_case {
	const char *name;
	int family;
	enum edit edit;
	bool fix;
	unsigned outs;	/* after the flush */
	unsigned first; /* segments in the first output */
} edit_cases[] = {
	{ "IPv4 TOS changed", AF_INET, E_TOS, true, 3, 1 },
	{ "IPv4 TTL changed", AF_INET, E_TTL, true, 3, 1 },
	{ "IPv4 DF cleared", AF_INET, E_DF, true, 3, 1 },
	{ "ACK number changed", AF_INET, E_ACK, true, 3, 1 },
	{ "window changed", AF_INET, E_WINDOW, true, 3, 1 },
	{ "URG", AF_INET, E_URG, true, 3, 1 },
	{ "RST", AF_INET, E_RST, true, 3, 1 },
	{ "CWR", AF_INET, E_CWR, true, 3, 1 },
	{ "FIN: merged as the last one", AF_INET, E_FIN, true, 2, 2 },
	{ "PSH: merged as the last one", AF_INET, E_PSH, true, 2, 2 },
	{ "IPv4 header checksum wrong", AF_INET, E_IP_CSUM, false, 3, 1 },
	{ "IPv4 options", AF_INET, E_IP_OPTIONS, true, 3, 1 },
	{ "IPv6 TCP checksum wrong", AF_INET6, E_TCP_CSUM, false, 3, 1 },
	{ "IPv6 flow label changed", AF_INET6, E_FLOW_LABEL, true, 3, 1 },
	{ "IPv6 hop limit changed", AF_INET6, E_HOP_LIMIT, true, 3, 1 },
	{ "IPv6 extension header before TCP", AF_INET6, E_EXT_HEADER, false, 3, 1 },
	{ "nothing changed", AF_INET6, E_TOS + 100, true, 1, 3 },
};

/* Applies an edit to segment p (len bytes, room for 8 more); returns its new length. */
static size_t apply_edit(uint8_t *p, size_t len, int family, enum edit e)
{
	uint8_t *th = p + ip_fixed_hlen(family);

	switch (e) {
	case E_TOS:
		p[IPV4_TOS_OFF] ^= 0x10;
		break;
	case E_TTL:
		p[IPV4_TTL_OFF]--;
		break;
	case E_DF:
		store_be16(p + IPV4_FRAG_OFF, (uint16_t)(load_be16(p + IPV4_FRAG_OFF) & ~IPV4_DF));
		break;
	case E_ACK:
		th[TCP_ACK_OFF + 3]++;
		break;
	case E_WINDOW:
		th[TCP_WINDOW_OFF + 1]++;
		break;
	case E_URG:
		th[TCP_FLAGS_OFF] |= TCP_F_URG;
		store_be16(th + TCP_URG_OFF, 10);
		break;
	case E_RST:
		th[TCP_FLAGS_OFF] |= TCP_F_RST;
		break;
	case E_CWR:
		th[TCP_FLAGS_OFF] |= TCP_F_CWR;
		break;
	case E_FIN:
		th[TCP_FLAGS_OFF] |= TCP_F_FIN;
		break;
	case E_PSH:
		th[TCP_FLAGS_OFF] |= TCP_F_PSH;
		break;
	case E_IP_CSUM:
		p[IPV4_CSUM_OFF] ^= 0x01;
		break;
	case E_IP_OPTIONS:
		/* Four option bytes (NOP NOP NOP EOL) between the header and TCP. */
		memmove(p + IPV4_HLEN + 4, p + IPV4_HLEN, len - IPV4_HLEN);
		memcpy(p + IPV4_HLEN, "\x01\x01\x01\x00", 4);
		p[0] = 0x46;
		len += 4;
		store_be16(p + IPV4_TOT_LEN_OFF, (uint16_t)len);
		break;
	case E_TCP_CSUM:
		p[len - 1] ^= 0x01;
		break;
	case E_FLOW_LABEL:
		p[3] ^= 0x01;
		break;
	case E_HOP_LIMIT:
		p[IPV6_HOPS_OFF]--;
		break;
	case E_EXT_HEADER:
		/* An empty destination options header (8 bytes) in front of TCP. */
		memmove(p + IPV6_HLEN + 8, p + IPV6_HLEN, len - IPV6_HLEN);
		memset(p + IPV6_HLEN, 0, 8);
		p[IPV6_HLEN] = IPPROTO_TCP; /* its next header */
		p[IPV6_HLEN + 1] = 0;	    /* its length beyond the first 8 bytes */
		p[IPV6_HLEN + 2] = 1;	    /* PadN filling the rest */
		p[IPV6_HLEN + 3] = 4;
		p[IPV6_NEXT_OFF] = IPPROTO_DSTOPTS;
		len += 8;
		store_be16(p + IPV6_PLEN_OFF, (uint16_t)(len - IPV6_HLEN));
		break;
	default:
		break;
	}
	return len;
}

static void test_header_edits(void)
{
	for (size_t c = 0; c < sizeof(edit_cases) / sizeof(edit_cases[0]); c++) {
		const struct edit_case *k = &edit_cases[c];
		static uint8_t p[3][2048];
		size_t len[3];
		unsigned n =
			flow_segments(k->family, (uint16_t)(20 + c), 3 * 1400, 1400, TCP_F_ACK);

		printf("case: %s\n", k->name);
		CHECK_INT(n, 3);
		for (unsigned i = 0; i < 3; i++) {
			memcpy(p[i], seg[i], seg_len[i]);
			len[i] = seg_len[i];
		}
		len[1] = apply_edit(p[1], len[1], k->family, k->edit);
		if (k->fix)
			refresh(p[1], len[1]);
		coal_reset();
		for (unsigned i = 0; i < 3; i++)
			add(p[i], len[i]);
		coalesce_flush(&coal, collect, NULL);
		CHECK_INT(nouts, k->outs);
		CHECK_INT(outs[0].nseg, k->first);
		if (k->outs == 3) {
			/* Refused: the edited segment went on alone, byte for byte. */
			CHECK_INT(outs[1].nseg, 1);
			CHECK_INT(outs[1].len, len[1]);
			CHECK(memcmp(outs[1].pkt, p[1], len[1]) == 0);
			CHECK_INT(outs[1].h.gso_type, VIRTIO_NET_HDR_GSO_NONE);
		}
		if (k->outs == 2) /* merged as the last one: its flag is the superpacket's */
			CHECK_INT(outs[0].pkt[ip_fixed_hlen(k->family) + TCP_FLAGS_OFF] &
					  (k->edit == E_FIN ? TCP_F_FIN : TCP_F_PSH),
				  k->edit == E_FIN ? TCP_F_FIN : TCP_F_PSH);
	}
}

/*
 * Checksums left to the device (a packet socket's NEEDS_CSUM, tx_packet.c): a segment cut
 * partial holds the pseudo-header's sum, and completing it gives the segment cut whole; a
 * packet TUN hands over partial stays so with keep_partial; the coalescer takes partial
 * segments from the wire unverified and writes a lone one on with NEEDS_CSUM where it came.
 */
static void test_partial(void)
{
	static uint8_t whole[8][2048];
	struct pkt_spec s = lan_pkt(AF_INET, IPPROTO_TCP, 40000, 9400, TCP_F_ACK, 4000);
	struct virtio_net_hdr h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	size_t len = pkt_build(&s, super);
	struct gso_pkt g;
	unsigned bad = 0, field = TCP4 + TCP_CSUM_OFF;
	struct l4_csum c;

	printf("case: segments cut partial, completed, are the segments cut whole\n");
	CHECK_INT(cut(&h, len, 1476), 3);
	for (unsigned i = 0; i < 3; i++)
		memcpy(whole[i], seg[i], seg_len[i]);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	CHECK_INT(g.nseg, 3);
	c = gso_csum(&g);
	CHECK_INT(c.start, IPV4_HLEN);
	CHECK_INT(c.offset, TCP_CSUM_OFF);
	for (unsigned i = 0; i < 3; i++) {
		size_t plen = gso_segment(&g, i, hdr, true);
		uint32_t pseudo =
			inet_pseudo_sum(AF_INET, hdr + IPV4_SRC_OFF, hdr + IPV4_DST_OFF,
					IPPROTO_TCP, (uint32_t)(g.hdr_len - c.start + plen));

		uint16_t want = (uint16_t)~inet_csum_fold(pseudo);

		if (load_be16(hdr + field) != want)
			bad++;
		/* Completed over the headers here and the payload where it lies. */
		inet_csum_finish(hdr + c.start, g.hdr_len - c.start,
				 super + g.hdr_len + (size_t)i * g.mss, plen, c);
		if (memcmp(hdr, whole[i], g.hdr_len) != 0)
			bad++;
	}
	CHECK_INT(bad, 0);

	printf("case: a lone packet TUN hands over partial: where, the packet untouched; "
	       "completed\n");
	s = lan_pkt(AF_INET, IPPROTO_UDP, 5, 6, 0, 100);
	len = pkt_build(&s, super);
	memcpy(hdr, super, len); /* the packet as built: its checksum right */
	h = (struct virtio_net_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
				     .csum_start = htole16(IPV4_HLEN),
				     .csum_offset = htole16(UDP_CSUM_OFF) };
	{
		uint32_t pseudo =
			inet_pseudo_sum(AF_INET, super + IPV4_SRC_OFF, super + IPV4_DST_OFF,
					IPPROTO_UDP, (uint32_t)(len - IPV4_HLEN));

		store_be16(super + IPV4_HLEN + UDP_CSUM_OFF, (uint16_t)~inet_csum_fold(pseudo));
	}
	memcpy(seg[0], super, len);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	CHECK_INT(g.nseg, 0);
	CHECK_INT(g.csum.start, IPV4_HLEN);
	CHECK_INT(g.csum.offset, UDP_CSUM_OFF);
	CHECK(memcmp(super, seg[0], len) == 0);
	inet_csum_finish(super + g.csum.start, len - g.csum.start, NULL, 0, g.csum);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	CHECK_INT(g.csum.start, IPV4_HLEN); /* the header says where, whatever the packet holds */
	CHECK(memcmp(super, hdr, len) == 0);
	printf("case: a partial checksum whose field lies outside the packet, or at 0\n");
	h.csum_start = htole16((uint16_t)(len - 1));
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);
	h.csum_start = 0;
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_TX_BAD_INNER);

	printf("case: where a checksum lies: TCP and UDP right after the IP header only\n");
	{
		struct ip_info ip;

		ip_parse(whole[0], IPV4_HLEN + TCP_HLEN + 1400, false, &ip);
		CHECK(inet_l4_csum_at(IPV4_HLEN + TCP_HLEN + 1400, &ip, &c));
		CHECK_INT(c.start, IPV4_HLEN);
		CHECK_INT(c.offset, TCP_CSUM_OFF);
		CHECK(!inet_l4_csum_at(IPV4_HLEN + TCP_HLEN - 1, &ip, &c));
		ip.fragment = true;
		CHECK(!inet_l4_csum_at(IPV4_HLEN + TCP_HLEN + 1400, &ip, &c));
		ip.fragment = false;
		ip.proto = IPPROTO_ICMP;
		CHECK(!inet_l4_csum_at(IPV4_HLEN + TCP_HLEN + 1400, &ip, &c));
	}

	printf("case: partial segments from the wire merge unverified\n");
	s = lan_pkt(AF_INET, IPPROTO_TCP, 40000, 9400, TCP_F_ACK, 4200);
	len = pkt_build(&s, super);
	h = tso_hdr(AF_INET, IPV4_HLEN, 1400, false);
	CHECK_INT(gso_parse(&h, super, len, 1476, &g), DROP_NONE);
	c = gso_csum(&g);
	coal_reset();
	for (unsigned i = 0; i < 3; i++) {
		size_t plen = gso_segment(&g, i, whole[i], true);

		memcpy(whole[i] + g.hdr_len, super + g.hdr_len + (size_t)i * g.mss, plen);
		results[coalesce_add(&coal, whole[i], g.hdr_len + plen, c, collect, NULL)]++;
	}
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(results[COALESCE_BAD_CSUM], 0);
	CHECK_INT(nouts, 1);
	CHECK_INT(outs[0].nseg, 3);
	CHECK_INT(outs[0].h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);

	printf("case: a lone partial segment goes on with NEEDS_CSUM where it came\n");
	coal_reset();
	results[coalesce_add(&coal, whole[0], g.hdr_len + 1400, c, collect, NULL)]++;
	coalesce_flush(&coal, collect, NULL);
	CHECK_INT(nouts, 1);
	CHECK_INT(outs[0].nseg, 1);
	CHECK_INT(outs[0].h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_INT(le16toh(outs[0].h.csum_start), IPV4_HLEN);
	CHECK_INT(le16toh(outs[0].h.csum_offset), TCP_CSUM_OFF);
	CHECK(memcmp(outs[0].pkt, whole[0], g.hdr_len + 1400) == 0);
	printf("case: ... and one that opens no superpacket (SYN), and one coalescing cannot "
	       "read\n");
	coal_reset();
	whole[0][TCP4 + TCP_FLAGS_OFF] |= TCP_F_SYN;
	results[coalesce_add(&coal, whole[0], g.hdr_len + 1400, c, collect, NULL)]++;
	s = lan_pkt(AF_INET, IPPROTO_UDP, 5, 6, 0, 100);
	len = pkt_build(&s, super);
	results[coalesce_add(&coal, super, len, (struct l4_csum){ IPV4_HLEN, UDP_CSUM_OFF },
			     collect, NULL)]++;
	CHECK_INT(nouts, 2);
	CHECK_INT(outs[0].h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_INT(outs[1].h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_INT(le16toh(outs[1].h.csum_offset), UDP_CSUM_OFF);
}

int main(void)
{
	test_tcp4();
	test_ip_options_and_ipv6();
	test_udp_and_refusals();
	test_round_trip(AF_INET);
	test_round_trip(AF_INET6);
	test_rules();
	test_header_edits();
	test_partial();
	return check_done("test_offload");
}
