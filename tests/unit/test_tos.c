/*
 * Unit tests of gateway/tos.c: RFC 6040's table at decapsulation (all 16 pairs) and its normal
 * mode at encapsulation (all 4 codepoints), the DSCP inherited and fixed (RFC 2983), the TTL
 * inherited and fixed, the inner header rewritten with its IPv4 checksum updated as RFC 1624
 * says (checked against a full recomputation for every DS field), and the AQM's mark or drop.
 */
#include <errno.h>
#include <sys/socket.h>

#include "check.h"
#include "pkt.h"
#include "tos.h"

static const struct pkt_spec tcp4 = { .family = AF_INET,
				      .src = "198.18.1.2",
				      .dst = "198.18.3.2",
				      .proto = IPPROTO_TCP,
				      .sport = 40000,
				      .dport = 9400,
				      .tcp_flags = TCP_F_ACK,
				      .payload = 100,
				      .df = true };

static const struct pkt_spec udp6 = { .family = AF_INET6,
				      .src = "2001:2:0:1::2",
				      .dst = "2001:2:0:3::2",
				      .proto = IPPROTO_UDP,
				      .sport = 5000,
				      .dport = 9400,
				      .payload = 64 };

/*
 * RFC 6040, Figure 4, as the RFC prints it: rows the arriving inner header, columns the
 * arriving outer header, in the RFC's order (Not-ECT, ECT(0), ECT(1), CE); "!!!" where the RFC
 * has "(!!!)", "drop" for "<drop>". Written here apart from tos.c's table, by name.
 */
static const char *const rfc_order[4] = { "Not-ECT", "ECT(0)", "ECT(1)", "CE" };
static const unsigned rfc_cp[4] = { IP_ECN_NOT_ECT, IP_ECN_ECT0, IP_ECN_ECT1, IP_ECN_CE };
static const char *const figure4[4][4] = {
	{ "Not-ECT", "Not-ECT !!!", "Not-ECT !!!", "drop !!!" },
	{ "ECT(0)", "ECT(0)", "ECT(1)", "CE" },
	{ "ECT(1)", "ECT(1)", "ECT(1)", "CE" },
	{ "CE", "CE", "CE !!!", "CE" },
};

static void decap_table(void)
{
	unsigned cells = 0;

	for (int in = 0; in < 4; in++) {
		for (int out = 0; out < 4; out++) {
			struct tos_decap d = tos_ecn_decap(rfc_cp[out], rfc_cp[in]);
			const char *want = figure4[in][out];
			char got[32], row[48];

			snprintf(row, sizeof(row), "inner %s, outer %s", rfc_order[in],
				 rfc_order[out]);
			if (d.verdict == TOS_DROP) {
				snprintf(got, sizeof(got), "drop !!!");
			} else {
				int k = 0;

				while (rfc_cp[k] != d.ecn)
					k++;
				snprintf(got, sizeof(got), "%s%s", rfc_order[k],
					 d.verdict == TOS_FORWARD_ALARM ? " !!!" : "");
			}
			CHECK_ROW(strcmp(got, want) == 0, row);
			if (strcmp(got, want) != 0)
				fprintf(stderr, "  got '%s', want '%s'\n", got, want);
			cells++;
		}
	}
	CHECK_INT(cells, 16);
	/* Bits above the ECN field are not the table's business. */
	CHECK_INT(tos_ecn_decap(0xb8 | IP_ECN_CE, 0x28 | IP_ECN_ECT0).ecn, IP_ECN_CE);
}

/* RFC 6040, Figure 3, normal mode: the outer ECN field is the inner one, CE included. */
static void encap_ecn(void)
{
	static const struct tos_cfg cfgs[] = {
		{ .dscp_inherit = true, .ttl = 64 },
		{ .dscp_inherit = false, .dscp = 10, .ttl = 64 },
	};

	for (unsigned k = 0; k < sizeof(cfgs) / sizeof(cfgs[0]); k++) {
		for (int i = 0; i < 4; i++) {
			struct tos_fields in = { .ds = (uint8_t)(0xb8 | rfc_cp[i]), .ttl = 30 };
			struct tos_fields out = tos_encap(&cfgs[k], in);

			CHECK_ROW(tos_ecn_encap(rfc_cp[i]) == rfc_cp[i], rfc_order[i]);
			/* A fixed DSCP never fixes the ECN field. */
			CHECK_ROW((out.ds & IP_ECN_MASK) == rfc_cp[i], rfc_order[i]);
		}
	}
}

static void encap_dscp_ttl(void)
{
	struct tos_cfg c;
	struct tos_fields in = { .ds = 46 << IP_DSCP_SHIFT | IP_ECN_ECT1, .ttl = 17 }, out;

	/* The defaults: inherit the DSCP, a fixed TTL of 64 as gregw always sent. */
	tos_cfg_init(&c);
	CHECK(c.dscp_inherit);
	CHECK(!c.ttl_inherit);
	CHECK_INT(c.ttl, 64);
	out = tos_encap(&c, in);
	CHECK_INT(out.ds, 46 << IP_DSCP_SHIFT | IP_ECN_ECT1);
	CHECK_INT(out.ttl, 64);

	/* RFC 2983's pipe model: a fixed DSCP, 0 among them. */
	c.dscp_inherit = false;
	c.dscp = 10;
	out = tos_encap(&c, in);
	CHECK_INT(out.ds, 10 << IP_DSCP_SHIFT | IP_ECN_ECT1);
	c.dscp = 0;
	out = tos_encap(&c, in);
	CHECK_INT(out.ds, IP_ECN_ECT1);
	c.dscp = IP_DSCP_MAX;
	in.ds = IP_ECN_CE;
	out = tos_encap(&c, in);
	CHECK_INT(out.ds, 0xff);

	/* TTL inherited, fixed. */
	c.ttl_inherit = true;
	out = tos_encap(&c, in);
	CHECK_INT(out.ttl, 17);
	in.ttl = 255;
	CHECK_INT(tos_encap(&c, in).ttl, 255);
	c.ttl_inherit = false;
	c.ttl = 1;
	CHECK_INT(tos_encap(&c, in).ttl, 1);
}

/* A fresh IPv4 header's checksum over the header as it stands. */
static uint16_t full_csum(const uint8_t *ip)
{
	uint8_t h[IPV4_HLEN];

	memcpy(h, ip, sizeof(h));
	store_be16(h + IPV4_CSUM_OFF, 0);
	return inet_csum(h, sizeof(h));
}

/* The IPv4 header with DS field ds and TTL ttl, its checksum computed whole. */
static void ip4_with(uint8_t *ip, uint8_t ds, uint8_t ttl)
{
	ip[IPV4_TOS_OFF] = ds;
	ip[IPV4_TTL_OFF] = ttl;
	store_be16(ip + IPV4_CSUM_OFF, full_csum(ip));
}

static void read_write(void)
{
	uint8_t p[200], q[200];
	size_t n = pkt_build(&tcp4, p), n6;
	struct tos_fields f;

	ip4_with(p, 0x2a, 33);
	CHECK_INT(tos_read(p, n, &f), 0);
	CHECK_INT(f.ds, 0x2a);
	CHECK_INT(f.ttl, 33);
	/* Every DS field and some TTLs written over another: the checksum as a full one. */
	for (unsigned ds = 0; ds < 256; ds++) {
		for (unsigned ttl = 0; ttl < 256; ttl += 51) {
			memcpy(q, p, n);
			CHECK_INT(tos_write(q, n,
					    (struct tos_fields){ .ds = (uint8_t)ds,
								 .ttl = (uint8_t)ttl }),
				  0);
			CHECK_INT(q[IPV4_TOS_OFF], ds);
			CHECK_INT(q[IPV4_TTL_OFF], ttl);
			CHECK_INT(load_be16(q + IPV4_CSUM_OFF), full_csum(q));
			CHECK_INT(q[IPV4_PROTO_OFF], IPPROTO_TCP);
			CHECK(memcmp(q + IPV4_SRC_OFF, p + IPV4_SRC_OFF, n - IPV4_SRC_OFF) == 0);
		}
	}

	/* IPv6: the traffic class straddles bytes 0 and 1; version and flow label stay. */
	n6 = pkt_build(&udp6, p);
	p[0] = 0x6b;
	p[1] = 0x9f;
	p[2] = 0x12;
	p[3] = 0x34;
	p[IPV6_HOPS_OFF] = 9;
	CHECK_INT(tos_read(p, n6, &f), 0);
	CHECK_INT(f.ds, 0xb9);
	CHECK_INT(f.ttl, 9);
	memcpy(q, p, n6);
	CHECK_INT(tos_write(q, n6, (struct tos_fields){ .ds = 0x2e, .ttl = 200 }), 0);
	CHECK(q[0] == 0x62 && q[1] == 0xef && q[2] == 0x12 && q[3] == 0x34);
	CHECK_INT(q[IPV6_HOPS_OFF], 200);
	CHECK(memcmp(q + 4, p + 4, IPV6_HOPS_OFF - 4) == 0);
	CHECK(memcmp(q + IPV6_SRC_OFF, p + IPV6_SRC_OFF, n6 - IPV6_SRC_OFF) == 0);

	/* Neither IPv4 nor IPv6, or shorter than the fixed header. */
	CHECK_INT(tos_read(p, IPV6_HLEN - 1, &f), -EINVAL);
	CHECK_INT(tos_write(q, IPV6_HLEN - 1, f), -EINVAL);
	q[0] = 0x50;
	CHECK_INT(tos_read(q, n6, &f), -EINVAL);
	CHECK_INT(tos_set_ecn(q, n6, IP_ECN_CE), -EINVAL);
	CHECK_INT(tos_decap_apply(IP_ECN_CE, q, n6), -EINVAL);
	n = pkt_build(&tcp4, p);
	CHECK_INT(tos_read(p, IPV4_HLEN - 1, &f), -EINVAL);
}

/*
 * Decapsulation on real headers: every inner DS field under every outer ECN field. The ECN
 * field becomes what the table says, the DSCP and TTL stay, the IPv4 checksum equals a full
 * recomputation; a dropped packet is left as it was.
 */
static void decap_apply(void)
{
	uint8_t p[200], q[200];
	size_t n = pkt_build(&tcp4, p), n6;
	unsigned changed = 0, dropped = 0;

	for (unsigned ds = 0; ds < 256; ds++) {
		for (unsigned outer = 0; outer < 4; outer++) {
			struct tos_decap d = tos_ecn_decap(outer, ds & IP_ECN_MASK);
			int v;

			ip4_with(p, (uint8_t)ds, 61);
			memcpy(q, p, n);
			v = tos_decap_apply((uint8_t)(0xfc | outer), q, n);
			CHECK_INT(v, d.verdict);
			if (v == TOS_DROP) {
				CHECK(memcmp(q, p, n) == 0);
				dropped++;
				continue;
			}
			CHECK_INT(q[IPV4_TOS_OFF], (ds & ~3u) | d.ecn);
			CHECK_INT(q[IPV4_TTL_OFF], 61);
			CHECK_INT(load_be16(q + IPV4_CSUM_OFF), full_csum(q));
			CHECK_INT(inet_csum(q, IPV4_HLEN), 0);
			changed += q[IPV4_TOS_OFF] != ds;
		}
	}
	/* For each DSCP, 3 of the 16 pairs change the field (ECT(1) or CE on ECT(0), CE on
	 * ECT(1)) and 1 drops. */
	CHECK_INT(changed, 64 * 3);
	CHECK_INT(dropped, 64);

	/* IPv6: only the ECN bits of the traffic class move; the flow label stays. */
	n6 = pkt_build(&udp6, p);
	p[0] = 0x6b;
	p[1] = 0x8f; /* traffic class 0xb8: DSCP 46, Not-ECT */
	p[2] = 0x12;
	p[3] = 0x34;
	memcpy(q, p, n6);
	CHECK_INT(tos_decap_apply(IP_ECN_CE, q, n6), TOS_DROP);
	CHECK(memcmp(q, p, n6) == 0);
	p[1] = 0xaf; /* ECT(0) */
	memcpy(q, p, n6);
	CHECK_INT(tos_decap_apply(IP_ECN_CE, q, n6), TOS_FORWARD);
	CHECK(q[0] == 0x6b && q[1] == 0xbf && q[2] == 0x12 && q[3] == 0x34);
	CHECK(memcmp(q + 4, p + 4, n6 - 4) == 0);
	memcpy(q, p, n6);
	CHECK_INT(tos_decap_apply(IP_ECN_ECT1, q, n6), TOS_FORWARD);
	CHECK_INT(q[1], 0x9f);
	p[1] = 0x8f;
	memcpy(q, p, n6);
	CHECK_INT(tos_decap_apply(IP_ECN_ECT0, q, n6), TOS_FORWARD_ALARM);
	CHECK(memcmp(q, p, n6) == 0);
}

static void set_ecn(void)
{
	uint8_t p[200];
	size_t n = pkt_build(&tcp4, p);

	for (unsigned ds = 0; ds < 256; ds++) {
		for (unsigned ecn = 0; ecn < 4; ecn++) {
			ip4_with(p, (uint8_t)ds, 64);
			CHECK_INT(tos_set_ecn(p, n, ecn), 0);
			CHECK_INT(p[IPV4_TOS_OFF], (ds & ~3u) | ecn);
			CHECK_INT(load_be16(p + IPV4_CSUM_OFF), full_csum(p));
		}
	}
}

/* RFC 3168, 5 and RFC 8311: CE for what can take it, a drop for what cannot. */
static void aqm(void)
{
	CHECK_INT(tos_aqm_signal(IP_ECN_NOT_ECT), TOS_AQM_DROP);
	CHECK_INT(tos_aqm_signal(IP_ECN_ECT0), TOS_AQM_MARK);
	CHECK_INT(tos_aqm_signal(IP_ECN_ECT1), TOS_AQM_MARK);
	CHECK_INT(tos_aqm_signal(IP_ECN_CE), TOS_AQM_MARK);
	CHECK_INT(tos_aqm_signal(0xb8), TOS_AQM_DROP);
	CHECK_INT(tos_aqm_signal(0xba), TOS_AQM_MARK);
}

int main(void)
{
	decap_table();
	encap_ecn();
	encap_dscp_ttl();
	read_write();
	decap_apply();
	set_ecn();
	aqm();
	return check_done("test_tos");
}
