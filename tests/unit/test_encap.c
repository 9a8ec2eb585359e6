/*
 * Unit tests for GRE (common/gre.c), checksums (common/inet.c) and the gateway's
 * encapsulation and decapsulation (gateway/encap.c): every flag combination over both outer
 * families, and every drop reason, each made from a good packet by one change; the inner
 * sources a gateway takes from its peer and the tunnel loop, from a table of inner packets.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "encap_prefix.h"
#include "encap.h"
#include "netaddr.h"
#include "pkt.h"

/* With all three GRE options, the key follows the checksum and the sequence number the key. */
enum {
	KEY_OFF = GRE_HLEN_MIN + GRE_OPT_LEN,
	SEQ_OFF = KEY_OFF + GRE_OPT_LEN,
};

/* Sources from anywhere: the drop rows are about the outer and GRE headers. */
static void allow_all(struct encap_cfg *c)
{
	struct encap_prefix all[] = { prefix("0.0.0.0/0"), prefix("::/0") };

	encap_sources(c, all, 2, NULL, 0);
}

static void cfg_init(struct encap_cfg *c, int family, unsigned flags)
{
	memset(c, 0, sizeof(*c));
	allow_all(c);
	c->family = family;
	if (family == AF_INET6) {
		inet_pton(AF_INET6, "2001:2::1", c->local);
		inet_pton(AF_INET6, "2001:2::2", c->remote);
	} else {
		inet_pton(AF_INET, "198.18.0.1", c->local);
		inet_pton(AF_INET, "198.18.0.2", c->remote);
	}
	c->gre_flags = flags;
	c->key = 0xdeadbeef;
	c->ttl = 64;
	tos_cfg_init(&c->tos);
	c->mtu = 1500 - encap_overhead(family, flags, false);
	encap_cfg_finish(c);
}

/* The peer's view of c: local and remote swapped, so our packets are its input. */
static void cfg_peer(const struct encap_cfg *c, struct encap_cfg *p)
{
	*p = *c;
	memcpy(p->local, c->remote, 16);
	memcpy(p->remote, c->local, 16);
	encap_cfg_finish(p);
}

static void test_csum(void)
{
	/* RFC 1071 section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2, so the checksum is
	 * its complement. */
	static const uint8_t rfc1071[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t odd[] = { 0x01, 0x02, 0x03 };
	uint8_t word[4] = { 0x12, 0x34, 0x56, 0x78 };
	uint16_t c;

	CHECK_INT(inet_csum(rfc1071, sizeof(rfc1071)), 0x220d);
	/* An odd length pads with a zero byte: 0102 + 0300 = 0402. */
	CHECK_INT(inet_csum(odd, 3), (uint16_t)~0x0402);
	/* Incremental update equals recomputation (RFC 1624). */
	c = inet_csum(word, 4);
	store_be16(word, 0xabcd);
	CHECK_INT(inet_csum_replace16(c, 0x1234, 0xabcd), inet_csum(word, 4));
}

static void test_gre(void)
{
	uint8_t b[32];
	struct gre_info in = { .flags = GRE_F_CSUM | GRE_F_KEY | GRE_F_SEQ,
			       .proto = 0x86dd,
			       .key = 7,
			       .seq = 0x01020304 };
	struct gre_info out;

	CHECK_INT(gre_hlen(0), 4);
	CHECK_INT(gre_hlen(GRE_F_KEY), 8);
	CHECK_INT(gre_hlen(GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM), 16);
	CHECK_INT(gre_build(b, 15, &in), -ENOSPC);
	CHECK_INT(gre_build(b, sizeof(b), &in), 16);
	/* C, K and S set, version 0, then checksum 0, reserved 0, key, sequence. */
	CHECK_INT(load_be16(b), 0xb000);
	CHECK_INT(load_be16(b + GRE_PROTO_OFF), 0x86dd);
	CHECK_INT(load_be32(b + KEY_OFF), 7);
	CHECK_INT(load_be32(b + SEQ_OFF), 0x01020304);
	CHECK_INT(gre_parse(b, 16, &out), 16);
	CHECK_INT(out.flags, in.flags);
	CHECK_INT(out.key, 7);
	CHECK_INT(out.seq, 0x01020304);
	/* The flags promise 16 bytes: 15 is truncated, whatever the first 4 say. */
	CHECK_INT(gre_parse(b, 15, &out), -ENODATA);
	CHECK_INT(gre_parse(b, 3, &out), -ENODATA);
	b[1] = 1; /* version 1: PPTP */
	CHECK_INT(gre_parse(b, 16, &out), -EPROTONOSUPPORT);
	b[1] = 0;
	for (unsigned bit = 0; bit < 16; bit++) {
		uint16_t v = (uint16_t)(1u << bit);
		int want;

		if (v & (GRE_BIT_C | GRE_BIT_K | GRE_BIT_S))
			continue;
		want = (v & GRE_VERSION) ? -EPROTONOSUPPORT : -EINVAL;
		store_be16(b, 0xb000 | v);
		CHECK_INT(gre_parse(b, 16, &out), want);
	}
	store_be16(b, 0x0000);
	CHECK_INT(gre_parse(b, 4, &out), 4);
	CHECK_INT(out.flags, 0);
}

static size_t inner_packet(int family, uint8_t *buf, size_t payload)
{
	struct pkt_spec s = {
		.family = family,
		.src = family == AF_INET6 ? "2001:2:0:1::2" : "198.18.1.2",
		.dst = family == AF_INET6 ? "2001:2:0:3::2" : "198.18.3.2",
		.proto = IPPROTO_UDP,
		.sport = 1234,
		.dport = 5678,
		.payload = payload,
		.df = true,
	};

	return pkt_build(&s, buf);
}

/* Every GRE flag combination, both outer families, both inner families, odd sizes. */
static void test_roundtrip(void)
{
	static const unsigned flag_sets[] = {
		0,
		GRE_F_KEY,
		GRE_F_SEQ,
		GRE_F_CSUM,
		GRE_F_KEY | GRE_F_SEQ,
		GRE_F_KEY | GRE_F_CSUM,
		GRE_F_SEQ | GRE_F_CSUM,
		GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM,
	};
	static const int families[] = { AF_INET, AF_INET6 };
	static const size_t sizes[] = { 0, 1, 7, 100, 1396 }; /* 1396: fills the smallest MTU */
	uint8_t buf[ENCAP_HEADROOM + 2048], copy[2048];

	for (size_t f = 0; f < 2; f++) {
		for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
			for (size_t in = 0; in < 2; in++) {
				for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
					struct encap_cfg c, p;
					struct decap_result r;
					struct ip_info ip;
					uint8_t *inner = buf + ENCAP_HEADROOM, *outer;
					size_t len = inner_packet(families[in], inner, sizes[z]);
					size_t olen;
					char row[96];

					snprintf(row, sizeof(row),
						 "outer %d flags %u inner %d size %zu", families[f],
						 flag_sets[i], families[in], sizes[z]);
					cfg_init(&c, families[f], flag_sets[i]);
					cfg_peer(&c, &p);
					memcpy(copy, inner, len);
					CHECK_ROW(encap_check(&c, inner, len, &ip) == DROP_NONE,
						  row);
					outer = encap_build(&c, NULL, inner, len,
							    0xfffffffe + (uint32_t)z);
					olen = c.outer_hlen + len;
					CHECK_ROW(outer == inner - c.outer_hlen, row);
					CHECK_ROW(decap(&p, NULL, outer, olen, olen, &r) ==
							  DROP_NONE,
						  row);
					CHECK_ROW(r.inner_len == len &&
							  memcmp(r.inner, copy, len) == 0,
						  row);
					CHECK_ROW(r.has_seq == !!(flag_sets[i] & GRE_F_SEQ), row);
					if (r.has_seq)
						CHECK_ROW(r.seq == 0xfffffffe + (uint32_t)z, row);
					CHECK_ROW(r.proto == (families[in] == AF_INET6
								      ? GRE_PROTO_IPV6
								      : GRE_PROTO_IPV4),
						  row);
					/* The outer header is well formed and self-consistent. */
					CHECK_ROW(ip_parse(outer, olen, true, &ip) > 0 &&
							  ip.tot_len == olen &&
							  ip.proto == IPPROTO_GRE_NUM && ip.df,
						  row);
				}
			}
		}
	}
}

/* The outer header's DS field and TTL (encap_tos): the DSCP copied or fixed, the ECN field
 * copied whatever --tos says (RFC 6040 normal mode), the TTL copied or fixed; an IPv4 outer
 * checksum right after them. Over UDP the socket writes them: encap_tos alone. */
static void test_outer_tos(void)
{
	static const struct {
		const char *name;
		bool dscp_inherit;
		uint8_t dscp;
		uint8_t ttl; /* 0: inherit */
		uint8_t inner_ds, inner_ttl, want_ds, want_ttl;
	} rows[] = {
		{ "inherit, EF ECT(0)", true, 0, 64, 0xba, 17, 0xba, 64 },
		{ "inherit, CE", true, 0, 64, 0x03, 17, 0x03, 64 },
		{ "inherit, Not-ECT", true, 0, 64, 0x00, 17, 0x00, 64 },
		{ "fixed 10, ECT(1) copied", false, 10, 64, 0xb9, 17, 10 << 2 | 1, 64 },
		{ "fixed 0, CE copied", false, 0, 64, 0xbb, 17, 0x03, 64 },
		{ "ttl inherit", true, 0, 0, 0x00, 17, 0x00, 17 },
		{ "ttl 200", true, 0, 200, 0x48, 9, 0x48, 200 },
	};
	static const int families[] = { AF_INET, AF_INET6 };
	uint8_t buf[ENCAP_HEADROOM + 2048];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (size_t f = 0; f < 2; f++) {
			for (size_t in = 0; in < 2; in++) {
				struct encap_cfg c;
				struct ip_info ip;
				struct tos_fields got;
				uint8_t *inner = buf + ENCAP_HEADROOM, *outer;
				size_t len = inner_packet(families[in], inner, 100), olen;
				char row[96];

				snprintf(row, sizeof(row), "%s: outer %d inner %d", rows[i].name,
					 families[f], families[in]);
				cfg_init(&c, families[f], GRE_F_KEY);
				c.tos.dscp_inherit = rows[i].dscp_inherit;
				c.tos.dscp = rows[i].dscp;
				c.tos.ttl_inherit = rows[i].ttl == 0;
				c.tos.ttl = rows[i].ttl;
				tos_write(
					inner, len,
					(struct tos_fields){ rows[i].inner_ds, rows[i].inner_ttl });
				outer = encap_build(&c, NULL, inner, len, 0);
				olen = c.outer_hlen + len;
				CHECK_ROW(ip_parse(outer, olen, true, &ip) > 0 &&
						  ip.tot_len == olen,
					  row);
				CHECK_ROW(tos_read(outer, olen, &got) == 0, row);
				CHECK_INT(got.ds, rows[i].want_ds);
				CHECK_INT(got.ttl, rows[i].want_ttl);
				if (families[f] == AF_INET6)
					CHECK_ROW((load_be32(outer) & 0xfffff) == 0, row);
				c.udp = true;
				encap_cfg_finish(&c);
				got = encap_tos(&c, inner);
				CHECK_ROW(got.ds == rows[i].want_ds && got.ttl == rows[i].want_ttl,
					  row);
			}
		}
	}
}

static size_t good_packet(struct encap_cfg *c, struct encap_cfg *p, int family, unsigned flags,
			  uint8_t *buf, uint8_t **outer)
{
	uint8_t *inner = buf + ENCAP_HEADROOM;
	size_t len = inner_packet(AF_INET, inner, 64);

	cfg_init(c, family, flags);
	cfg_peer(c, p);
	*outer = encap_build(c, NULL, inner, len, 42);
	return c->outer_hlen + len;
}

static void fix_ipv4(uint8_t *o)
{
	store_be16(o + IPV4_CSUM_OFF, 0);
	store_be16(o + IPV4_CSUM_OFF, inet_csum(o, IPV4_HLEN));
}

/* Each row changes one thing of a good packet and names the reason it must be dropped for. */
enum mutation {
	M_NONE,
	M_CAPLEN_SHORT, /* the ring holds less than the wire had */
	M_CUT_GRE,	/* outer length ends inside the GRE header */
	M_CUT_OPTIONS,	/* outer length ends inside the GRE options */
	M_EMPTY,	/* outer length ends with the outer header: no GRE at all */
	M_IP_CSUM,	/* outer IPv4 header checksum wrong */
	M_IP_PROTO,	/* outer protocol is not GRE */
	M_IP_VERSION,	/* outer version nibble 5 */
	M_MF,		/* outer more-fragments */
	M_FRAG_OFFSET,	/* outer fragment offset */
	M_V6_FRAG,	/* an IPv6 fragment header naming GRE after the fixed header */
	M_V6_FRAG_UDP,	/* an IPv6 fragment header naming UDP */
	M_V6_FRAG_CUT,	/* next header 44, but the packet ends before the fragment header does */
	M_V6_DSTOPT,	/* the kernel's ip6gre: a destination options header with the limit */
	M_V6_DSTOPT_16, /* 16 bytes of options: one unknown that may be skipped, PadN */
	M_V6_DSTOPT_DISCARD, /* an unknown option whose type says to discard the packet */
	M_V6_DSTOPT_OVERRUN, /* an option longer than the header */
	M_V6_DSTOPT_CUT,     /* the packet ends inside the options header */
	M_V6_DSTOPT_UDP,     /* the options header names UDP */
	M_SRC,		     /* outer source is not the peer */
	M_DST,		     /* outer destination is not us */
	M_GRE_VERSION,	     /* GRE version 1 */
	M_GRE_ROUTING,	     /* GRE R bit */
	M_GRE_RESERVED,	     /* GRE reserved bit 12 */
	M_KEY_VALUE,	     /* key differs */
	M_PROTO_ARP,	     /* payload EtherType 0x0806 */
	M_PAYLOAD,	     /* one payload byte flipped (breaks the GRE checksum) */
	M_INNER_GARBAGE,     /* inner version nibble 0 */
	M_INNER_LONGER,	     /* inner total length beyond the payload */
	M_INNER_FAMILY,	     /* GRE says IPv6, the payload is IPv4 */
	M_PAD,		     /* bytes after the outer packet (Ethernet padding): ignored */
	M_INNER_PAD,	     /* GRE payload longer than the inner packet: trimmed to it */
};

struct drop_row {
	const char *name;
	int family;
	unsigned flags;	 /* what the sender uses */
	unsigned expect; /* what the receiver requires (UINT32_MAX: the same) */
	enum mutation m;
	enum drop_reason want;
};

static void mutate(uint8_t *o, size_t *len, size_t *cap, int family, const struct encap_cfg *c,
		   enum mutation m)
{
	unsigned ihl = ip_fixed_hlen(family), alen = ip_addr_len(family);
	uint8_t *gre = o + ihl, *inner = o + c->outer_hlen;

	switch (m) {
	case M_NONE:
		break;
	case M_CAPLEN_SHORT:
		*cap = *len - 1;
		break;
	case M_CUT_GRE:
	case M_CUT_OPTIONS:
	case M_EMPTY: {
		size_t keep = ihl + (m == M_EMPTY ? 0 : m == M_CUT_GRE ? 3 : GRE_HLEN_MIN + 2);

		if (family == AF_INET6)
			store_be16(o + IPV6_PLEN_OFF, (uint16_t)(keep - IPV6_HLEN));
		else
			store_be16(o + IPV4_TOT_LEN_OFF, (uint16_t)keep);
		*len = *cap = keep;
		break;
	}
	case M_IP_CSUM:
		o[IPV4_CSUM_OFF] ^= 0xff;
		return;
	case M_IP_PROTO:
		o[ip_proto_off(family)] = 4;
		break;
	case M_IP_VERSION:
		o[0] = (uint8_t)(0x50 | (o[0] & 0x0f));
		break;
	case M_MF:
		store_be16(o + IPV4_FRAG_OFF, IPV4_MF);
		break;
	case M_FRAG_OFFSET:
		store_be16(o + IPV4_FRAG_OFF, 100);
		break;
	case M_V6_FRAG:
	case M_V6_FRAG_UDP:
	case M_V6_FRAG_CUT:
		/* The first fragment of all there is: offset 0, M clear, identification 7. */
		memmove(o + IPV6_HLEN + IPV6_FRAG_HLEN, o + IPV6_HLEN, *len - IPV6_HLEN);
		memset(o + IPV6_HLEN, 0, IPV6_FRAG_HLEN);
		o[IPV6_HLEN + IPV6_FRAG_NEXT_OFF] =
			m == M_V6_FRAG_UDP ? IPPROTO_UDP : IPPROTO_GRE_NUM;
		o[IPV6_HLEN + 7] = 7;
		o[IPV6_NEXT_OFF] = IPPROTO_FRAGMENT;
		*len = *cap = m == M_V6_FRAG_CUT ? IPV6_HLEN + 4 : *len + IPV6_FRAG_HLEN;
		store_be16(o + IPV6_PLEN_OFF, (uint16_t)(*len - IPV6_HLEN));
		break;
	case M_V6_DSTOPT:
	case M_V6_DSTOPT_16:
	case M_V6_DSTOPT_DISCARD:
	case M_V6_DSTOPT_OVERRUN:
	case M_V6_DSTOPT_CUT:
	case M_V6_DSTOPT_UDP: {
		/* As the kernel sends it: the limit (4 left), then PadN of one byte. */
		uint8_t opt[16] = {
			IPPROTO_GRE_NUM, 0, IPV6_OPT_TUNNEL_LIMIT, 1, 4, IPV6_OPT_PADN, 1, 0
		};
		size_t olen = m == M_V6_DSTOPT_16 ? 16 : 8;

		if (m == M_V6_DSTOPT_16) {
			static const uint8_t more[14] = { 0x1e, 4, 1, 2, 3, 4, IPV6_OPT_PADN, 6 };

			opt[IPV6_EXT_LEN_OFF] = 1;
			memcpy(opt + 2, more, sizeof(more));
		}
		if (m == M_V6_DSTOPT_DISCARD)
			opt[2] = 0x44;
		if (m == M_V6_DSTOPT_OVERRUN)
			opt[3] = 5;
		if (m == M_V6_DSTOPT_UDP)
			opt[IPV6_EXT_NEXT_OFF] = IPPROTO_UDP;
		memmove(o + IPV6_HLEN + olen, o + IPV6_HLEN, *len - IPV6_HLEN);
		memcpy(o + IPV6_HLEN, opt, olen);
		o[IPV6_NEXT_OFF] = IPPROTO_DSTOPTS;
		*len = *cap = m == M_V6_DSTOPT_CUT ? IPV6_HLEN + 4 : *len + olen;
		store_be16(o + IPV6_PLEN_OFF, (uint16_t)(*len - IPV6_HLEN));
		break;
	}
	case M_SRC: /* the address's last byte */
		o[ip_src_off(family) + alen - 1] ^= 0x40;
		break;
	case M_DST:
		o[ip_dst_off(family) + alen - 1] ^= 0x40;
		break;
	case M_GRE_VERSION:
		gre[1] |= 1;
		break;
	case M_GRE_ROUTING:
		gre[0] |= 0x40;
		break;
	case M_GRE_RESERVED:
		gre[1] |= 0x08;
		break;
	case M_KEY_VALUE:
		/* The key's last byte: the key follows the checksum, if any. */
		gre[GRE_HLEN_MIN + ((c->gre_flags & GRE_F_CSUM) ? GRE_OPT_LEN : 0) + 3] ^= 1;
		break;
	case M_PROTO_ARP:
		store_be16(gre + GRE_PROTO_OFF, 0x0806);
		break;
	case M_PAYLOAD:
		inner[30] ^= 0x10;
		break;
	case M_INNER_GARBAGE:
		inner[0] = 0x05;
		break;
	case M_INNER_LONGER:
		store_be16(inner + IPV4_TOT_LEN_OFF,
			   (uint16_t)(load_be16(inner + IPV4_TOT_LEN_OFF) + 1));
		break;
	case M_INNER_FAMILY:
		store_be16(gre + GRE_PROTO_OFF, GRE_PROTO_IPV6);
		break;
	case M_PAD:
		memset(o + *len, 0xee, 6);
		*len += 6;
		*cap = *len;
		break;
	case M_INNER_PAD:
		memset(o + *len, 0xee, 6);
		*len += 6;
		*cap = *len;
		if (family == AF_INET6)
			store_be16(o + IPV6_PLEN_OFF, (uint16_t)(*len - IPV6_HLEN));
		else
			store_be16(o + IPV4_TOT_LEN_OFF, (uint16_t)*len);
		break;
	}
	if (family == AF_INET)
		fix_ipv4(o);
}

#define ALL  (GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM)
#define SAME UINT32_MAX

static const struct drop_row drop_rows[] = {
	{ "good v4", AF_INET, ALL, SAME, M_NONE, DROP_NONE },
	{ "good v6", AF_INET6, ALL, SAME, M_NONE, DROP_NONE },
	{ "frame padding ignored", AF_INET, ALL, SAME, M_PAD, DROP_NONE },
	{ "payload padding trimmed", AF_INET6, GRE_F_KEY, SAME, M_INNER_PAD, DROP_NONE },
	{ "capture short", AF_INET, 0, SAME, M_CAPLEN_SHORT, DROP_TRUNCATED },
	{ "cut in GRE header", AF_INET, 0, SAME, M_CUT_GRE, DROP_TRUNCATED },
	{ "cut in GRE options", AF_INET, ALL, SAME, M_CUT_OPTIONS, DROP_TRUNCATED },
	{ "cut in GRE options v6", AF_INET6, ALL, SAME, M_CUT_OPTIONS, DROP_TRUNCATED },
	{ "no GRE at all", AF_INET, ALL, SAME, M_EMPTY, DROP_ZERO_LENGTH },
	{ "no GRE at all v6", AF_INET6, 0, SAME, M_EMPTY, DROP_ZERO_LENGTH },
	{ "outer checksum", AF_INET, 0, SAME, M_IP_CSUM, DROP_BAD_OUTER },
	{ "outer protocol", AF_INET, 0, SAME, M_IP_PROTO, DROP_BAD_OUTER },
	{ "outer protocol v6", AF_INET6, 0, SAME, M_IP_PROTO, DROP_BAD_OUTER },
	{ "outer version", AF_INET, 0, SAME, M_IP_VERSION, DROP_BAD_OUTER },
	{ "outer MF", AF_INET, 0, SAME, M_MF, DROP_OUTER_FRAGMENT },
	{ "outer offset", AF_INET, 0, SAME, M_FRAG_OFFSET, DROP_OUTER_FRAGMENT },
	{ "outer v6 fragment header", AF_INET6, ALL, SAME, M_V6_FRAG, DROP_OUTER_FRAGMENT },
	{ "outer v6 fragment of UDP", AF_INET6, 0, SAME, M_V6_FRAG_UDP, DROP_BAD_OUTER },
	{ "outer v6 fragment header cut", AF_INET6, 0, SAME, M_V6_FRAG_CUT, DROP_TRUNCATED },
	{ "v6 destination options: the limit", AF_INET6, ALL, SAME, M_V6_DSTOPT, DROP_NONE },
	{ "v6 destination options: 16 bytes", AF_INET6, 0, SAME, M_V6_DSTOPT_16, DROP_NONE },
	{ "v6 destination option to discard", AF_INET6, 0, SAME, M_V6_DSTOPT_DISCARD,
	  DROP_BAD_OUTER },
	{ "v6 destination option overruns", AF_INET6, 0, SAME, M_V6_DSTOPT_OVERRUN,
	  DROP_BAD_OUTER },
	{ "v6 destination options cut", AF_INET6, 0, SAME, M_V6_DSTOPT_CUT, DROP_TRUNCATED },
	{ "v6 destination options of UDP", AF_INET6, 0, SAME, M_V6_DSTOPT_UDP, DROP_BAD_OUTER },
	{ "unknown source", AF_INET, 0, SAME, M_SRC, DROP_UNKNOWN_PEER },
	{ "unknown source v6", AF_INET6, 0, SAME, M_SRC, DROP_UNKNOWN_PEER },
	{ "not our address", AF_INET, 0, SAME, M_DST, DROP_UNKNOWN_PEER },
	{ "GRE version 1", AF_INET, 0, SAME, M_GRE_VERSION, DROP_BAD_VERSION },
	{ "GRE routing bit", AF_INET, 0, SAME, M_GRE_ROUTING, DROP_BAD_FLAGS },
	{ "GRE reserved bit", AF_INET6, 0, SAME, M_GRE_RESERVED, DROP_BAD_FLAGS },
	{ "wrong key", AF_INET, GRE_F_KEY, SAME, M_KEY_VALUE, DROP_BAD_KEY },
	{ "wrong key with csum", AF_INET, ALL, GRE_F_KEY | GRE_F_SEQ, M_KEY_VALUE, DROP_BAD_KEY },
	{ "missing key", AF_INET, 0, GRE_F_KEY, M_NONE, DROP_BAD_KEY },
	{ "unexpected key", AF_INET, GRE_F_KEY, 0, M_NONE, DROP_BAD_KEY },
	{ "missing seq", AF_INET, GRE_F_KEY, GRE_F_KEY | GRE_F_SEQ, M_NONE, DROP_NO_SEQ },
	{ "unexpected seq is fine", AF_INET, GRE_F_SEQ, 0, M_NONE, DROP_NONE },
	{ "missing csum", AF_INET6, 0, GRE_F_CSUM, M_NONE, DROP_NO_CSUM },
	{ "unasked csum is checked", AF_INET, GRE_F_CSUM, 0, M_PAYLOAD, DROP_BAD_CSUM },
	{ "unasked csum, right", AF_INET, GRE_F_CSUM, 0, M_NONE, DROP_NONE },
	{ "bad csum", AF_INET, ALL, SAME, M_PAYLOAD, DROP_BAD_CSUM },
	{ "bad csum v6", AF_INET6, GRE_F_CSUM, SAME, M_PAYLOAD, DROP_BAD_CSUM },
	{ "payload ARP", AF_INET, 0, SAME, M_PROTO_ARP, DROP_BAD_PROTO },
	{ "inner garbage", AF_INET, 0, SAME, M_INNER_GARBAGE, DROP_BAD_INNER },
	{ "inner longer than payload", AF_INET, 0, SAME, M_INNER_LONGER, DROP_BAD_INNER },
	{ "inner family mismatch", AF_INET, 0, SAME, M_INNER_FAMILY, DROP_BAD_INNER },
};

static void test_drops(void)
{
	for (size_t i = 0; i < sizeof(drop_rows) / sizeof(drop_rows[0]); i++) {
		const struct drop_row *d = &drop_rows[i];
		uint8_t buf[ENCAP_HEADROOM + 2048] = { 0 }, *o;
		struct encap_cfg c, p;
		struct decap_result r;
		size_t len, cap;
		enum drop_reason got;

		len = good_packet(&c, &p, d->family, d->flags, buf, &o);
		cap = len;
		if (d->expect != SAME) {
			p.gre_flags = d->expect;
			encap_cfg_finish(&p);
		}
		mutate(o, &len, &cap, d->family, &c, d->m);
		got = decap(&p, NULL, o, cap, len, &r);
		CHECK_ROW(got == d->want, d->name);
		if (got != d->want)
			fprintf(stderr, "  got %s, want %s\n", drop_name(got), drop_name(d->want));
		if ((d->m == M_PAD || d->m == M_INNER_PAD || d->m == M_V6_DSTOPT ||
		     d->m == M_V6_DSTOPT_16) &&
		    got == DROP_NONE)
			CHECK_ROW(r.inner_len == 92 && r.inner[0] >> 4 == 4, d->name);
		/* A superpacket the kernel merged passes the same checks, but for the GRE
		 * checksum, which the kernel checked on each packet it merged. */
		if (cap == len) {
			enum drop_reason want = d->want == DROP_BAD_CSUM ? DROP_NONE : d->want;

			got = decap_merged(&p, NULL, o, len, &r);
			CHECK_ROW(got == want, d->name);
			if (got != want)
				fprintf(stderr, "  merged: got %s, want %s\n", drop_name(got),
					drop_name(want));
		}
	}
}

static void test_check(void)
{
	struct encap_cfg c;
	struct ip_info ip;
	uint8_t buf[2048];
	size_t len;

	cfg_init(&c, AF_INET, GRE_F_KEY);
	CHECK_INT(c.mtu, 1472);
	CHECK_INT(encap_overhead(AF_INET6, ALL, false), 56);
	CHECK_INT(encap_overhead(AF_INET6, ALL, true), 64);
	CHECK_INT(encap_overhead(AF_INET, GRE_F_KEY, true), 36);
	len = inner_packet(AF_INET, buf, c.mtu - IPV4_HLEN - UDP_HLEN);
	CHECK_INT(encap_check(&c, buf, len, &ip), DROP_NONE);
	len = inner_packet(AF_INET, buf, c.mtu - IPV4_HLEN - UDP_HLEN + 1);
	CHECK_INT(encap_check(&c, buf, len, &ip), DROP_TX_TOO_BIG);
	CHECK(ip.df);
	len = inner_packet(AF_INET6, buf, 100);
	CHECK_INT(encap_check(&c, buf, len - 1, &ip), DROP_TX_BAD_INNER);
	buf[0] = 0x20;
	CHECK_INT(encap_check(&c, buf, len, &ip), DROP_TX_BAD_INNER);
	CHECK_INT(encap_check(&c, buf, 0, &ip), DROP_TX_BAD_INNER);
}

/* An inner packet and what gwb of ras.topo (its own LAN 198.18.3.0/24, tunnel address
 * 198.19.0.2/24, routes to 198.18.1.0/24) does with it from the tunnel. */
struct src_row {
	const char *name;
	int family;
	const char *src, *dst;
	uint8_t proto;	   /* IPPROTO_UDP, IPPROTO_ICMP or IPPROTO_ICMPV6 */
	uint8_t icmp_type; /* ICMP: the type; an error quotes a packet from qsrc to qdst */
	const char *qsrc, *qdst;
	bool allow_any; /* --allow-from 0.0.0.0/0 --allow-from ::/0 */
	enum drop_reason want;
};

#define V4    AF_INET
#define V6    AF_INET6
#define UDP   IPPROTO_UDP
#define ICMP  IPPROTO_ICMP
#define ICMP6 IPPROTO_ICMPV6

static const struct src_row src_rows[] = {
	{ "from behind the peer", V4, "198.18.1.2", "198.18.3.2", UDP, 0, 0, 0, false, DROP_NONE },
	{ "from the peer's tunnel address", V4, "198.19.0.1", "198.19.0.2", UDP, 0, 0, 0, false,
	  DROP_NONE },
	{ "from our own LAN", V4, "198.18.3.66", "198.18.3.2", UDP, 0, 0, 0, false,
	  DROP_SPOOFED_SOURCE },
	{ "from our own tunnel address", V4, "198.19.0.2", "198.18.3.2", UDP, 0, 0, 0, false,
	  DROP_SPOOFED_SOURCE },
	{ "from our own transit", V4, "198.18.0.7", "198.18.3.2", UDP, 0, 0, 0, false,
	  DROP_SPOOFED_SOURCE },
	{ "from an address routed nowhere", V4, "198.18.99.1", "198.18.3.2", UDP, 0, 0, 0, false,
	  DROP_SPOOFED_SOURCE },
	{ "v6 from behind the peer", V6, "2001:2:0:1::2", "2001:2:0:3::2", UDP, 0, 0, 0, false,
	  DROP_NONE },
	{ "v6 from our own LAN", V6, "2001:2:0:3::66", "2001:2:0:3::2", UDP, 0, 0, 0, false,
	  DROP_SPOOFED_SOURCE },
	{ "v6 from our own tunnel address", V6, "2001:2:0:ff::2", "2001:2:0:3::2", UDP, 0, 0, 0,
	  false, DROP_SPOOFED_SOURCE },
	{ "v6 from the peer's tunnel address", V6, "2001:2:0:ff::1", "2001:2:0:ff::2", UDP, 0, 0, 0,
	  false, DROP_NONE },
	{ "v6 from the peer's link-local address", V6, "fe80::1", "ff02::16", ICMP6, 143, 0, 0,
	  false, DROP_NONE },
	/* ICMP errors from routers beyond the peer, about our packets sent to behind it. */
	{ "time exceeded from beyond the peer", V4, "198.18.99.1", "198.18.3.2", ICMP, 11,
	  "198.18.3.2", "198.18.1.2", false, DROP_NONE },
	{ "unreachable (frag needed) from beyond", V4, "198.18.99.1", "198.18.3.2", ICMP, 3,
	  "198.18.3.2", "198.18.1.2", false, DROP_NONE },
	{ "parameter problem from beyond", V4, "198.18.99.1", "198.18.3.2", ICMP, 12, "198.18.3.2",
	  "198.18.1.2", false, DROP_NONE },
	{ "a redirect from beyond", V4, "198.18.99.1", "198.18.3.2", ICMP, 5, "198.18.3.2",
	  "198.18.1.2", false, DROP_SPOOFED_SOURCE },
	{ "an echo request from beyond", V4, "198.18.99.1", "198.18.3.2", ICMP, 8, "198.18.3.2",
	  "198.18.1.2", false, DROP_SPOOFED_SOURCE },
	{ "an error about a packet to nowhere routed", V4, "198.18.99.1", "198.18.3.2", ICMP, 11,
	  "198.18.3.2", "198.18.99.9", false, DROP_SPOOFED_SOURCE },
	{ "an error to another host than the quote's", V4, "198.18.99.1", "198.18.3.2", ICMP, 11,
	  "198.18.3.7", "198.18.1.2", false, DROP_SPOOFED_SOURCE },
	{ "an error from our own LAN", V4, "198.18.3.66", "198.18.3.2", ICMP, 11, "198.18.3.2",
	  "198.18.1.2", false, DROP_SPOOFED_SOURCE },
	{ "v6 packet too big from beyond", V6, "2001:2:0:99::1", "2001:2:0:3::2", ICMP6, 2,
	  "2001:2:0:3::2", "2001:2:0:1::2", false, DROP_NONE },
	{ "v6 echo request from beyond", V6, "2001:2:0:99::1", "2001:2:0:3::2", ICMP6, 128,
	  "2001:2:0:3::2", "2001:2:0:1::2", false, DROP_SPOOFED_SOURCE },
	/* Everything allowed: still never our own. */
	{ "allowed from anywhere: an address routed nowhere", V4, "198.18.99.1", "198.18.3.2", UDP,
	  0, 0, 0, true, DROP_NONE },
	{ "allowed from anywhere: never our own LAN", V4, "198.18.3.66", "198.18.3.2", UDP, 0, 0, 0,
	  true, DROP_SPOOFED_SOURCE },
	{ "allowed from anywhere: never our tunnel address", V6, "2001:2:0:ff::2", "2001:2:0:3::2",
	  UDP, 0, 0, 0, true, DROP_SPOOFED_SOURCE },
	/* The tunnel subnet holds only us and the peer; anything else there would loop. */
	{ "to an unused address of the tunnel subnet", V4, "198.18.1.2", "198.19.0.77", UDP, 0, 0,
	  0, false, DROP_TUNNEL_LOOP },
	{ "to our own tunnel address", V4, "198.18.1.2", "198.19.0.2", UDP, 0, 0, 0, false,
	  DROP_NONE },
	{ "v6 to an unused address of the tunnel subnet", V6, "2001:2:0:1::2", "2001:2:0:ff::77",
	  UDP, 0, 0, 0, false, DROP_TUNNEL_LOOP },
	{ "the loop is judged after the source", V4, "198.18.3.66", "198.19.0.77", UDP, 0, 0, 0,
	  false, DROP_SPOOFED_SOURCE },
};

/* gwb's sources: by default the route and the tunnel subnets; its own addresses, as
 * allow_plan would read them from the namespace (lo, transit, lan-b and the TUN's). */
static void gwb_sources(struct encap_cfg *c, bool allow_any)
{
	struct encap_prefix dflt[] = { prefix("198.18.1.0/24"), prefix("2001:2:0:1::/64"),
				       prefix("198.19.0.2/24"), prefix("2001:2:0:ff::2/64"),
				       prefix("fe80::/10") };
	struct encap_prefix any[] = { prefix("0.0.0.0/0"), prefix("::/0") };
	struct encap_prefix own[] = { prefix("198.19.0.2/32"),	 prefix("2001:2:0:ff::2/128"),
				      prefix("127.0.0.1/8"),	 prefix("::1/128"),
				      prefix("198.18.0.2/24"),	 prefix("198.18.3.1/24"),
				      prefix("2001:2:0:3::1/64") };

	CHECK_INT(allow_any ? encap_sources(c, any, 2, own, 7) : encap_sources(c, dflt, 5, own, 7),
		  0);
	c->has_addr4 = c->has_addr6 = true;
	inet_pton(AF_INET, "198.19.0.2", c->addr4);
	inet_pton(AF_INET6, "2001:2:0:ff::2", c->addr6);
	c->addr4_len = 24;
	c->addr6_len = 64;
}

static void test_sources(void)
{
	struct encap_cfg c, p;
	struct encap_prefix two[ENCAP_ALLOW_MAX + 1];

	printf("case: inner sources and the tunnel loop\n");
	for (size_t i = 0; i < sizeof(src_rows) / sizeof(src_rows[0]); i++) {
		const struct src_row *r = &src_rows[i];
		struct pkt_spec s = { .family = r->family,
				      .src = r->src,
				      .dst = r->dst,
				      .proto = r->proto,
				      .sport = 9,
				      .dport = 9,
				      .payload = 64,
				      .icmp_type = r->icmp_type };
		uint8_t buf[ENCAP_HEADROOM + 512] = { 0 }, *inner = buf + ENCAP_HEADROOM, *o;
		struct decap_result res;
		enum drop_reason got;
		size_t len = pkt_build(&s, inner);

		if (r->qsrc) {
			/* The quote: the start of the packet the error is about, after the ICMP
			 * header. */
			struct pkt_spec q = { .family = r->family,
					      .src = r->qsrc,
					      .dst = r->qdst,
					      .proto = IPPROTO_UDP,
					      .payload = 8 };

			pkt_build(&q, inner + ip_fixed_hlen(r->family) + ICMP_HLEN);
		}
		cfg_init(&c, AF_INET, GRE_F_KEY);
		cfg_peer(&c, &p);
		gwb_sources(&p, r->allow_any);
		o = encap_build(&c, NULL, inner, len, 0);
		got = decap(&p, NULL, o, c.outer_hlen + len, c.outer_hlen + len, &res);
		CHECK_ROW(got == r->want, r->name);
		if (got != r->want)
			fprintf(stderr, "  got %s, want %s\n", drop_name(got), drop_name(r->want));
	}
	/* Our own prefixes that reach into an allowed one come first: only they can match an
	 * allowed source; the others are for ICMP errors from any router. */
	memset(&p, 0, sizeof(p));
	gwb_sources(&p, false);
	CHECK_INT(p.nown, 7);
	CHECK_INT(p.nown_near, 2); /* the TUN's own addresses, in the tunnel subnets */
	CHECK_INT(p.own[0].len, 32);
	CHECK_INT(p.own[1].len, 128);
	memset(&p, 0, sizeof(p));
	gwb_sources(&p, true);
	CHECK_INT(p.nown_near, 7);
	for (unsigned i = 0; i <= ENCAP_ALLOW_MAX; i++)
		two[i] = prefix("198.18.1.0/24");
	CHECK_INT(encap_sources(&p, two, ENCAP_ALLOW_MAX + 1, NULL, 0), -ENOSPC);
	CHECK_INT(encap_sources(&p, two, ENCAP_ALLOW_MAX, NULL, 0), 0);
}

/* With TUNBED_DUMP_VECTORS set, prints a built packet as hex, for re-checking with tshark. */
static void dump_vector(const uint8_t *p, size_t len)
{
	if (!getenv("TUNBED_DUMP_VECTORS"))
		return;
	for (size_t i = 0; i < len; i++)
		printf("%02x%s", p[i], i + 1 == len ? "\n" : "");
}

/*
 * Packets built by encap_build, decoded once by an independent decoder and kept as fixed
 * bytes: the builder must go on producing exactly them. Decoded with tshark 4.0 (Debian 12)
 * from a LINKTYPE_RAW capture of these bytes: `tshark -r vectors.pcap -o
 * ip.check_checksum:TRUE -o udp.check_checksum:TRUE -T fields -e ip.checksum.status -e
 * gre.flags_and_version -e gre.checksum.status -e gre.key -e gre.sequence_number -e
 * gre.proto -e udp.checksum.status` printed "1,1 0xb000 1 0xdeadbeef 42 0x0800 1" for the
 * first (both IPv4 header checksums, the GRE checksum and the UDP checksum good) and
 * "0x0000 0x86dd 1" for the second. TUNBED_DUMP_VECTORS=1 prints what the builder makes.
 */
static void test_vectors(void)
{
	/* IPv4 198.18.0.1 -> 198.18.0.2, DF, TTL 64; GRE C K S, checksum 0x3a7e, key
	 * 0xdeadbeef, sequence 42, IPv4; inner UDP 198.18.1.2:1234 -> 198.18.3.2:5678. */
	static const uint8_t v4_all[] = {
		0x45, 0x00, 0x00, 0x44, 0x00, 0x00, 0x40, 0x00, 0x40, 0x2f, 0xae, 0x63, 0xc6, 0x12,
		0x00, 0x01, 0xc6, 0x12, 0x00, 0x02, 0xb0, 0x00, 0x08, 0x00, 0x3a, 0x7e, 0x00, 0x00,
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x2a, 0x45, 0x00, 0x00, 0x20, 0x12, 0x34,
		0x40, 0x00, 0x40, 0x11, 0x98, 0x70, 0xc6, 0x12, 0x01, 0x02, 0xc6, 0x12, 0x03, 0x02,
		0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0c, 0x40, 0x8b, 0x03, 0x0a, 0x11, 0x18,
	};
	/* IPv6 2001:2::1 -> 2001:2::2, hop limit 64; GRE without options, IPv6; inner UDP
	 * [2001:2:0:1::2]:1234 -> [2001:2:0:3::2]:5678. */
	static const uint8_t v6_plain[] = {
		0x60, 0x00, 0x00, 0x00, 0x00, 0x38, 0x2f, 0x40, 0x20, 0x01, 0x00, 0x02, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
		0x86, 0xdd, 0x60, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x11, 0x40, 0x20, 0x01, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01,
		0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
		0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0c, 0x90, 0xa6, 0x03, 0x0a, 0x11, 0x18,
	};
	uint8_t buf[ENCAP_HEADROOM + 256], *inner = buf + ENCAP_HEADROOM, *o;
	struct encap_cfg c;
	size_t len;

	cfg_init(&c, AF_INET, ALL);
	len = inner_packet(AF_INET, inner, 4);
	o = encap_build(&c, NULL, inner, len, 42);
	CHECK_INT(c.outer_hlen + len, sizeof(v4_all));
	CHECK(memcmp(o, v4_all, sizeof(v4_all)) == 0);
	dump_vector(o, c.outer_hlen + len);
	cfg_init(&c, AF_INET6, 0);
	len = inner_packet(AF_INET6, inner, 4);
	o = encap_build(&c, NULL, inner, len, 0);
	CHECK_INT(c.outer_hlen + len, sizeof(v6_plain));
	CHECK(memcmp(o, v6_plain, sizeof(v6_plain)) == 0);
	dump_vector(o, c.outer_hlen + len);
}

/* GRE-in-UDP: encap_build writes the GRE header alone; decap_gre takes it back. */
static void test_udp(void)
{
	struct encap_cfg c;
	struct decap_result r;
	uint8_t buf[ENCAP_HEADROOM + 2048], *inner = buf + ENCAP_HEADROOM, *out;
	size_t len;

	printf("case: GRE-in-UDP\n");
	memset(&c, 0, sizeof(c));
	allow_all(&c);
	c.family = AF_INET;
	c.udp = true;
	c.udp_port = GRE_UDP_PORT;
	c.gre_flags = GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM;
	c.key = 7;
	c.mtu = 1500 - encap_overhead(AF_INET, c.gre_flags, true);
	encap_cfg_finish(&c);
	CHECK_INT(c.outer_hlen, 16);
	CHECK_INT(c.mtu, 1456);
	len = inner_packet(AF_INET6, inner, 300);
	out = encap_build2(&c, NULL, inner, IPV6_HLEN, inner + IPV6_HLEN, len - IPV6_HLEN, 99);
	CHECK(out == inner - 16);
	CHECK_INT(load_be16(out), 0xb000); /* C, K, S */
	CHECK_INT(load_be16(out + GRE_PROTO_OFF), GRE_PROTO_IPV6);
	CHECK_INT(load_be32(out + KEY_OFF), 7);
	CHECK_INT(load_be32(out + SEQ_OFF), 99);
	CHECK_INT(inet_csum(out, 16 + len), 0);
	CHECK_INT(decap_gre(&c, NULL, c.remote, out, 16 + len, &r), DROP_NONE);
	CHECK(r.inner == inner && r.inner_len == len && r.has_seq && r.seq == 99);
	/* An empty datagram is a datagram: counted as one, with no GRE header at all. */
	CHECK_INT(decap_gre(&c, NULL, c.remote, out, 0, &r), DROP_ZERO_LENGTH);
	CHECK_INT(decap_gre(&c, NULL, c.remote, out, 3, &r), DROP_TRUNCATED);
	/* The socket takes datagrams from anyone: without a table, only the one peer's. */
	CHECK_INT(decap_gre(&c, NULL, (const uint8_t[]){ 198, 18, 0, 9 }, out, 16 + len, &r),
		  DROP_UNKNOWN_PEER);
	out[KEY_OFF + 1] ^= 1;
	CHECK_INT(decap_gre(&c, NULL, c.remote, out, 16 + len, &r), DROP_BAD_KEY);
}

/*
 * GRE-in-UDP from a packet ring: decap reads the outer IP and UDP headers (port, length)
 * before GRE, IPv4 and IPv6, also behind IPv6's destination options header, and a
 * superpacket merged or sent whole (decap_merged); anything else is refused by its reason.
 */
static void test_udp_ring(void)
{
	for (int family = AF_INET; family != -1; family = family == AF_INET ? AF_INET6 : -1) {
		struct encap_cfg c, p;
		struct decap_result r;
		uint8_t buf[ENCAP_HEADROOM + 2048], *inner = buf + ENCAP_HEADROOM, *gre, *udp, *ip;
		unsigned iphl = ip_fixed_hlen(family);
		size_t len, ulen, tot;

		printf("case: GRE-in-UDP from a ring, %s\n", family == AF_INET ? "IPv4" : "IPv6");
		cfg_init(&c, family, GRE_F_KEY);
		c.udp = true;
		c.udp_port = GRE_UDP_PORT;
		encap_cfg_finish(&c);
		cfg_peer(&c, &p);
		len = inner_packet(AF_INET, inner, 200);
		gre = encap_build(&p, NULL, inner, len, 0);
		udp = gre - UDP_HLEN;
		ip = udp - iphl;
		ulen = UDP_HLEN + p.outer_hlen + len;
		tot = iphl + ulen;
		memset(ip, 0, iphl + UDP_HLEN);
		if (family == AF_INET6) {
			ip[0] = 0x60;
			store_be16(ip + IPV6_PLEN_OFF, (uint16_t)ulen);
			ip[IPV6_NEXT_OFF] = IPPROTO_UDP;
			ip[IPV6_HOPS_OFF] = 64;
		} else {
			ip[0] = 0x45;
			store_be16(ip + IPV4_TOT_LEN_OFF, (uint16_t)tot);
			ip[IPV4_TTL_OFF] = 64;
			ip[IPV4_PROTO_OFF] = IPPROTO_UDP;
		}
		memcpy(ip + ip_src_off(family), p.local, ip_addr_len(family));
		memcpy(ip + ip_dst_off(family), p.remote, ip_addr_len(family));
		if (family == AF_INET)
			store_be16(ip + IPV4_CSUM_OFF, inet_csum(ip, IPV4_HLEN));
		store_be16(udp + UDP_SPORT_OFF, 49152);
		store_be16(udp + UDP_DPORT_OFF, GRE_UDP_PORT);
		store_be16(udp + UDP_LEN_OFF, (uint16_t)ulen);
		CHECK_INT(decap(&c, NULL, ip, tot, tot, &r), DROP_NONE);
		CHECK(r.inner == inner && r.inner_len == len);
		CHECK_INT(decap_merged(&c, NULL, ip, tot, &r), DROP_NONE);
		CHECK_INT(decap(&c, NULL, ip, iphl + 4, iphl + 4, &r), DROP_TRUNCATED);
		store_be16(udp + UDP_LEN_OFF, (uint16_t)(ulen - 1));
		CHECK_INT(decap(&c, NULL, ip, tot, tot, &r), DROP_BAD_OUTER);
		store_be16(udp + UDP_LEN_OFF, (uint16_t)ulen);
		store_be16(udp + UDP_DPORT_OFF, 4789);
		CHECK_INT(decap(&c, NULL, ip, tot, tot, &r), DROP_BAD_OUTER);
		store_be16(udp + UDP_DPORT_OFF, GRE_UDP_PORT);
		/* Plain GRE where UDP is wanted: not ours. */
		c.udp = false;
		encap_cfg_finish(&c);
		CHECK_INT(decap(&c, NULL, ip, tot, tot, &r), DROP_BAD_OUTER);
	}
}

int main(void)
{
	test_csum();
	test_gre();
	test_roundtrip();
	test_outer_tos();
	test_drops();
	test_check();
	test_vectors();
	test_udp();
	test_udp_ring();
	test_sources();
	return check_done("test_encap");
}
