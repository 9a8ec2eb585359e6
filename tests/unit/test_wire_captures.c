/*
 * tunbed-wire against crafted captures: frames with known defects are written with libpcap's
 * dump API, tunbed-wire --read --json audits them, and every count must be exact. Also: the
 * pcap it writes with --write audits the same, bad input gives one line and exit 1, -v says
 * what it did, the live capture's kernel filter lets the tunnel's frames through, and GSO
 * super-frames with checksums left to offload count as the datagrams they carry. Ends
 * outside the benchmarking ranges are refused without --any-address and audited with it.
 * Usage: test_wire_captures PATH-TO-tunbed-wire
 */
#include <errno.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gre.h"
#include "pkt.h"
/* For WIRE_FILTER_FMT, the live capture's kernel filter: the one the binary compiles. */
#include "wire_capture.h"

enum {
	FRAME_MAX = 8192, /* room for a crafted frame, GSO super-frames included */
	ETH = 14,	  /* an Ethernet header (link type 1), not IP: its length */
	ETH_TYPE = 12,	  /* and where its EtherType lies */
};

static const char *wire_bin;
static char dir[] = "/tmp/test_wire_captures.XXXXXX";

/* One crafted frame: outer header, GRE or GRE-in-UDP, inner packet, and a defect or two. */
struct frame {
	int family; /* outer: AF_INET or AF_INET6 */
	const char *src, *dst;
	bool udp;
	uint16_t sport, dport;
	bool bad_udp_csum;
	bool udp_csum_partial; /* the UDP checksum left to offload: the pseudo-header sum */
	unsigned segs;	       /* GSO: GRE packets in the frame (0 or 1: one) */
	size_t last_payload;   /* GSO: the last packet's inner payload (0: as the others) */
	bool last_bad_key;     /* GSO: the last packet's key is off by one */
	size_t trailing;       /* zero bytes after the last GRE packet */
	unsigned gre_flags;
	uint32_t key, seq;
	uint16_t gre_proto;   /* 0: the inner family's */
	unsigned gre_version; /* nonzero: a defect */
	bool bad_gre_csum;
	struct pkt_spec inner;
	bool inner_wrong_family; /* GRE says IPv4, an IPv6 packet follows */
	uint16_t frag;		 /* outer IPv4 MF/offset */
	bool v6_frag;		 /* outer IPv6 fragment header */
	bool v6_dstopts;	 /* outer IPv6 destination options header (8 bytes) */
	size_t cut;		 /* outer IP length stops this many bytes into the GRE header */
	size_t snap;		 /* the capture keeps only this many bytes */
	size_t wire_len;	 /* the frame itself ends after this many bytes */
	bool not_ip;		 /* an ARP frame instead */
	bool bad_ip_csum;	 /* outer IPv4 header checksum wrong */
	uint8_t ip_version;	 /* nonzero: the outer version field */
	uint8_t ihl; /* nonzero: the outer IPv4 header length field (the header is 20) */
	uint8_t outer_ds, inner_ds;   /* DS fields (DSCP and ECN) */
	uint8_t outer_ttl, inner_ttl; /* nonzero: the TTL or hop limit (else 64) */
};

static const char *const A = "198.18.0.1", *const B = "198.18.0.2";

/* The frame's inner DS field and TTL into the inner IPv4 or IPv6 header at in. */
static void inner_ds_ttl(uint8_t *in, const struct frame *f)
{
	if (f->inner.family == AF_INET6) {
		store_be16(in, (uint16_t)(0x6000 | f->inner_ds << IPV6_TCLASS_SHIFT));
		if (f->inner_ttl)
			in[IPV6_HOPS_OFF] = f->inner_ttl;
		return;
	}
	in[IPV4_TOS_OFF] = f->inner_ds;
	if (f->inner_ttl)
		in[IPV4_TTL_OFF] = f->inner_ttl;
	store_be16(in + IPV4_CSUM_OFF, 0);
	store_be16(in + IPV4_CSUM_OFF, inet_csum(in, IPV4_HLEN));
}

static size_t build(const struct frame *f, int link, uint8_t *out)
{
	size_t l2 = link == 1 ? ETH : 0, ohl, off, ghl, inner_len, l4len;
	uint8_t *ip = out + l2, *l4, *g;
	struct gre_info gi = { .flags = f->gre_flags, .key = f->key, .seq = f->seq };

	memset(out, 0, FRAME_MAX);
	if (link == 1) {
		memcpy(out, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
		store_be16(out + ETH_TYPE, f->not_ip		   ? 0x0806
					   : f->family == AF_INET6 ? 0x86dd
								   : 0x0800);
		if (f->not_ip)
			return 60;
	}
	ohl = f->family == AF_INET6 ? IPV6_HLEN + (f->v6_frag || f->v6_dstopts ? 8 : 0) : IPV4_HLEN;
	l4 = ip + ohl;
	off = f->udp ? UDP_HLEN : 0;
	g = l4 + off;
	gi.proto = f->gre_proto ? f->gre_proto
				: (f->inner.family == AF_INET6 ? GRE_PROTO_IPV6 : GRE_PROTO_IPV4);
	ghl = (size_t)gre_build(g, 64, &gi);
	if (f->gre_version)
		g[1] |= (uint8_t)f->gre_version;
	inner_len = pkt_build(&f->inner, g + ghl);
	inner_ds_ttl(g + ghl, f);
	if (f->inner_wrong_family)
		store_be16(g + GRE_PROTO_OFF, GRE_PROTO_IPV4);
	if (f->gre_flags & GRE_F_CSUM)
		gre_csum_fill(g, ghl + inner_len);
	if (f->bad_gre_csum)
		g[GRE_CSUM_OFF] ^= 0x55;
	l4len = off + ghl + inner_len;
	/* GSO: the next sequence numbers and TCP segments, as one UDP_SEGMENT send packs them. */
	for (unsigned i = 1; i < f->segs; i++) {
		struct gre_info si = gi;
		struct pkt_spec in = f->inner;
		uint8_t *s = l4 + l4len;
		size_t n;

		si.seq = f->seq + i;
		if (i + 1 == f->segs && f->last_bad_key)
			si.key++;
		in.tcp_seq = (uint32_t)(f->inner.tcp_seq + i * f->inner.payload);
		if (i + 1 == f->segs && f->last_payload)
			in.payload = f->last_payload;
		n = (size_t)gre_build(s, 64, &si);
		n += pkt_build(&in, s + n);
		if (si.flags & GRE_F_CSUM)
			gre_csum_fill(s, n);
		l4len += n;
	}
	l4len += f->trailing;
	if (f->cut)
		l4len = off + f->cut;
	if (f->family == AF_INET6) {
		uint8_t l4proto = f->udp ? IPPROTO_UDP : IPPROTO_GRE_NUM;

		store_be16(ip, (uint16_t)(0x6000 | f->outer_ds << IPV6_TCLASS_SHIFT));
		store_be16(ip + IPV6_PLEN_OFF, (uint16_t)(ohl - IPV6_HLEN + l4len));
		ip[IPV6_NEXT_OFF] = f->v6_frag	    ? IPPROTO_FRAGMENT
				    : f->v6_dstopts ? IPPROTO_DSTOPTS
						    : l4proto;
		ip[IPV6_HOPS_OFF] = f->outer_ttl ? f->outer_ttl : 64;
		inet_pton(AF_INET6, f->src, ip + IPV6_SRC_OFF);
		inet_pton(AF_INET6, f->dst, ip + IPV6_DST_OFF);
		/* The extension header's next header, and the fragment header's offset field. */
		if (f->v6_frag || f->v6_dstopts)
			ip[IPV6_HLEN] = l4proto;
		if (f->v6_frag)
			store_be16(ip + IPV6_HLEN + 2, 1); /* offset 0, more fragments */
	} else {
		ip[0] = 0x45;
		store_be16(ip + IPV4_TOT_LEN_OFF, (uint16_t)(ohl + l4len));
		store_be16(ip + IPV4_FRAG_OFF, f->frag ? f->frag : IPV4_DF);
		ip[IPV4_TOS_OFF] = f->outer_ds;
		ip[IPV4_TTL_OFF] = f->outer_ttl ? f->outer_ttl : 64;
		ip[IPV4_PROTO_OFF] = f->udp ? IPPROTO_UDP : IPPROTO_GRE_NUM;
		inet_pton(AF_INET, f->src, ip + IPV4_SRC_OFF);
		inet_pton(AF_INET, f->dst, ip + IPV4_DST_OFF);
		if (f->ihl)
			ip[0] = 0x40 | f->ihl;
		store_be16(ip + IPV4_CSUM_OFF, inet_csum(ip, IPV4_HLEN));
		if (f->bad_ip_csum)
			ip[IPV4_CSUM_OFF] ^= 0x55;
	}
	if (f->ip_version)
		ip[0] = (uint8_t)(f->ip_version << 4 | (ip[0] & 0x0f));
	if (f->udp) {
		store_be16(l4 + UDP_SPORT_OFF, f->sport);
		store_be16(l4 + UDP_DPORT_OFF, f->dport ? f->dport : 4754);
		store_be16(l4 + UDP_LEN_OFF, (uint16_t)l4len);
		store_be16(l4 + UDP_CSUM_OFF, pkt_l4_csum(f->family, ip, l4, l4len, IPPROTO_UDP));
		if (f->udp_csum_partial)
			store_be16(l4 + UDP_CSUM_OFF, (uint16_t)~inet_csum_fold(inet_pseudo_sum(
							      f->family, ip + ip_src_off(f->family),
							      ip + ip_dst_off(f->family),
							      IPPROTO_UDP, (uint32_t)l4len)));
		if (f->bad_udp_csum)
			l4[UDP_CSUM_OFF] ^= 0x01;
	}
	return l2 + ohl + l4len;
}

static pcap_dumper_t *dump_open(const char *path, pcap_t *dead)
{
	pcap_dumper_t *d = pcap_dump_open(dead, path);

	if (!d) {
		fprintf(stderr, "%s: %s\n", path, pcap_geterr(dead));
		exit(1);
	}
	return d;
}

/* Writes f as frame i (from 0) of a capture: ten frames a second. */
static void dump_frame(pcap_dumper_t *d, int link, const struct frame *f, size_t i)
{
	static uint8_t buf[FRAME_MAX];
	struct pcap_pkthdr h = { .ts = { 1000 + (long)i / 10, (long)(i % 10) * 100000 } };

	h.len = (bpf_u_int32)build(f, link, buf);
	if (f->wire_len)
		h.len = (bpf_u_int32)f->wire_len;
	h.caplen = f->snap ? (bpf_u_int32)f->snap : h.len;
	pcap_dump((u_char *)d, &h, buf);
}

static void write_pcap(const char *path, int link, const struct frame *frames, size_t n)
{
	pcap_t *dead = pcap_open_dead(link, 65535);
	pcap_dumper_t *d = dump_open(path, dead);

	for (size_t i = 0; i < n; i++)
		dump_frame(d, link, &frames[i], i);
	pcap_dump_close(d);
	pcap_close(dead);
}

/* Runs tunbed-wire with args; returns its exit status with its stdout in *out (JSON or not). */
static int run_wire(const char *args, char **out)
{
	char cmd[2048], *buf = NULL;
	size_t size = 0;
	FILE *p, *mem = open_memstream(&buf, &size);
	int c, st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>%s/stderr", wire_bin, args, dir);
	p = popen(cmd, "r");
	while ((c = fgetc(p)) != EOF)
		fputc(c, mem);
	st = pclose(p);
	fclose(mem);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *audit(const char *args, int want_status)
{
	char *out;
	json_error_t err;
	json_t *doc;
	int st = run_wire(args, &out);

	CHECK_INT(st, want_status);
	doc = json_loads(out, 0, &err);
	if (!doc) {
		fprintf(stderr, "tunbed-wire %s: not JSON (%s):\n%s\n", args, err.text, out);
		exit(1);
	}
	free(out);
	return doc;
}

/* The value at a path of object keys and array indexes ("directions.0.seq.missing"). */
static const json_t *at(const json_t *doc, const char *path)
{
	char buf[256], *save, *tok;
	const json_t *v = doc;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(tok, NULL, 10))
				     : json_object_get(v, tok);
	if (!v)
		fprintf(stderr, "no %s in the report\n", path);
	return v;
}

#define CHECK_AT(doc, path, want) CHECK_INT(json_integer_value(at(doc, path)), want)

static void check_first(const json_t *doc, const char *kind, long long frame)
{
	char path[128];

	snprintf(path, sizeof(path), "violations.%s.count", kind);
	CHECK_AT(doc, path, 1);
	snprintf(path, sizeof(path), "violations.%s.first_frames.0", kind);
	CHECK_AT(doc, path, frame);
}

#define TCP_A(s, n)                                                                                \
	{                                                                                          \
		.family = AF_INET, .src = "198.18.1.2", .dst = "198.18.3.2", .proto = IPPROTO_TCP, \
		.sport = 40000, .dport = 9400, .tcp_flags = TCP_F_ACK, .tcp_seq = (s),             \
		.payload = (n)                                                                     \
	}
#define ACK_B                                                                                      \
	{                                                                                          \
		.family = AF_INET, .src = "198.18.3.2", .dst = "198.18.1.2", .proto = IPPROTO_TCP, \
		.sport = 9400, .dport = 40000, .tcp_flags = TCP_F_ACK                              \
	}
#define GOOD4(sq)                                                                               \
	.family = AF_INET, .src = A, .dst = B, .gre_flags = GRE_F_CSUM | GRE_F_KEY | GRE_F_SEQ, \
	.key = 7, .seq = (sq), .inner = TCP_A((sq)*1000, 1000)

/* IPv4 GRE on Ethernet, expecting key 7, sequence numbers, checksums, MTU 1400. */
static const struct frame gre4[] = {
	/* 1 */ { GOOD4(1) },
	/* 2 */ { GOOD4(2) },
	/* 3 */ { GOOD4(3), .key = 8 },
	/* 4 */ { GOOD4(4), .bad_gre_csum = true },
	/* 5 */ { GOOD4(5), .cut = 10 },
	/* 6 */ { GOOD4(7) },
	/* 7 */ { GOOD4(9) },
	/* 8 */ { GOOD4(8) },
	/* 9 */ { GOOD4(9) },
	/* 10 */ { GOOD4(10), .inner = TCP_A(10000, 1410) },
	/* 11 */ { GOOD4(11), .frag = IPV4_MF },
	/* 12 */ { GOOD4(12), .gre_flags = GRE_F_CSUM | GRE_F_SEQ },
	/* 13 */ { GOOD4(13), .src = "198.18.0.9" },
	/* 14 */ { GOOD4(14), .gre_proto = 0x6558 },
	/* 15 */
	{ GOOD4(15),
	  .inner = { .family = AF_INET6,
		     .src = "2001:2::1",
		     .dst = "2001:2::2",
		     .proto = IPPROTO_UDP,
		     .sport = 1,
		     .dport = 2,
		     .payload = 100 },
	  .inner_wrong_family = true },
	/* 16 */ { .not_ip = true },
	/* 17 */ { GOOD4(1), .src = B, .dst = A, .inner = ACK_B },
	/* 18 */
	{ GOOD4(2), .src = B, .dst = A, .gre_flags = GRE_F_KEY | GRE_F_SEQ, .inner = ACK_B },
	/* 19 */ { GOOD4(16), .gre_version = 1 },
	/* 20 */ { GOOD4(16), .snap = 60 },
	/* 21 */ { GOOD4(17), .gre_flags = GRE_F_CSUM | GRE_F_KEY },
};

static void test_gre4(void)
{
	char path[256], args[1024], copy[256];
	json_t *doc, *again;

	snprintf(path, sizeof(path), "%s/gre4.pcap", dir);
	snprintf(copy, sizeof(copy), "%s/gre4-copy.pcap", dir);
	write_pcap(path, DLT_EN10MB, gre4, sizeof(gre4) / sizeof(gre4[0]));
	snprintf(args, sizeof(args),
		 "--read %s --json --local %s --remote %s --key 7 --seq --csum --mtu 1400 "
		 "--write %s --check",
		 path, A, B, copy);
	doc = audit(args, 3);
	CHECK_AT(doc, "frames", 21);
	CHECK_AT(doc, "other_frames", 1);
	CHECK_AT(doc, "tunnel_frames", 20);
	CHECK_AT(doc, "snapped_frames", 1);
	CHECK_AT(doc, "violation_frames", 12);
	CHECK(json_is_false(at(doc, "clean")));
	check_first(doc, "bad_key", 3);
	check_first(doc, "bad_csum", 4);
	check_first(doc, "truncated", 5);
	check_first(doc, "inner_too_big", 10);
	check_first(doc, "fragment", 11);
	check_first(doc, "no_key", 12);
	check_first(doc, "bad_peer", 13);
	check_first(doc, "bad_proto", 14);
	check_first(doc, "bad_inner", 15);
	check_first(doc, "no_csum", 18);
	check_first(doc, "bad_gre", 19);
	check_first(doc, "no_seq", 21);
	CHECK_AT(doc, "violations.bad_outer.count", 0);
	CHECK_AT(doc, "violations.bad_udp.count", 0);
	CHECK_AT(doc, "violations.unexpected_seq.count", 0);
	CHECK_AT(doc, "violations.unexpected_csum.count", 0);
	/* Direction 0 is every frame from A to B but the one from 198.18.0.9 and the ARP. */
	CHECK_AT(doc, "directions.0.frames", 17);
	CHECK_AT(doc, "directions.1.frames", 2);
	/*
	 * Sequence numbers read from A to B: 1 2 3 4 7 9 8 9 10 12 14 15 16; 5 was truncated,
	 * 11 fragmented, 13 from a stranger, 19's GRE unreadable, 21 had none. Missing: 5 6, 11,
	 * 13 (4 numbers in 3 gaps); 8 came late; 9 twice.
	 */
	CHECK_AT(doc, "directions.0.seq.frames", 13);
	CHECK_AT(doc, "directions.0.seq.missing", 4);
	CHECK_AT(doc, "directions.0.seq.gaps", 3);
	CHECK_AT(doc, "directions.0.seq.reordered", 1);
	CHECK_AT(doc, "directions.0.seq.duplicates", 1);
	CHECK_AT(doc, "directions.0.seq.flow_reordered", 1);
	CHECK_AT(doc, "directions.1.seq.frames", 2);
	CHECK_AT(doc, "directions.1.seq.missing", 0);
	/*
	 * Inner packets read from A to B: frames 1-4, 6-10, 12, 21 carry TCP of flow A
	 * (1040 bytes each; frame 10 1450); 14's GRE proto and 15's family hide theirs, 20 was
	 * snapped inside the inner header. TCP payload 10 x 1000 + 1410; frame 8 fills the
	 * hole 9 left (reordered), frame 9 again brings nothing new (retransmitted).
	 */
	CHECK_AT(doc, "directions.0.inner_frames", 11);
	CHECK_AT(doc, "directions.0.inner_bytes", 10 * 1040 + 1450);
	CHECK_AT(doc, "directions.0.overhead_bytes", 11 * 36 - 4 * 2);
	CHECK_AT(doc, "directions.0.tcp.payload_bytes", 10 * 1000 + 1410);
	CHECK_AT(doc, "directions.0.tcp.retransmitted_bytes", 1000);
	CHECK_AT(doc, "directions.0.tcp.late_bytes", 1000);
	CHECK_AT(doc, "directions.0.tcp.late_resent_bytes", 0);
	CHECK_AT(doc, "directions.0.tcp.late_unresolved_bytes", 0);
	CHECK_AT(doc, "directions.0.tcp.new_bytes", 9 * 1000 + 1410);
	CHECK_AT(doc, "directions.1.inner_bytes", 2 * 40);
	/* Frame sizes: 14 + 20 + 16 + 1040 = 1090 for most; 44 cut; 198 with the IPv6 inner. */
	CHECK_AT(doc, "directions.0.sizes.5.frames", 17 - 2);
	CHECK_AT(doc, "directions.0.sizes.0.frames", 1);
	CHECK_AT(doc, "directions.0.sizes.2.frames", 1);
	CHECK_AT(doc, "flows.tracked", 2);
	CHECK_AT(doc, "flows.top.0.sport", 40000);
	CHECK_AT(doc, "flows.top.0.frames", 11);
	/* What --write kept audits the same. */
	snprintf(args, sizeof(args),
		 "--read %s --json --local %s --remote %s --key 7 --seq --csum --mtu 1400", copy, A,
		 B);
	again = audit(args, 0);
	CHECK(json_equal(json_object_get(doc, "violations"), json_object_get(again, "violations")));
	CHECK(json_equal(json_object_get(doc, "directions"), json_object_get(again, "directions")));
	json_decref(again);
	json_decref(doc);
}

#define FLOW6(sp)                                                                  \
	{                                                                          \
		.family = AF_INET6, .src = "2001:2:1::2", .dst = "2001:2:3::2",    \
		.proto = IPPROTO_UDP, .sport = (sp), .dport = 9400, .payload = 500 \
	}
#define GOOD6(port, flow)                                                                         \
	.family = AF_INET6, .src = "2001:2::1", .dst = "2001:2::2", .udp = true, .sport = (port), \
	.inner = FLOW6(flow)

/* IPv6 GRE-in-UDP, raw IP link, ends learned, no key, no sequence numbers, no checksums. */
static const struct frame udp6[] = {
	/* 1 */ { GOOD6(50001, 1) },
	/* 2 */ { GOOD6(50002, 2) },
	/* 3 */ { GOOD6(50003, 1) },
	/* 4 */ { GOOD6(50001, 1), .gre_flags = GRE_F_SEQ, .seq = 4 },
	/* 5 */ { GOOD6(50001, 1), .gre_flags = GRE_F_CSUM },
	/* 6 */ { GOOD6(50001, 1), .gre_flags = GRE_F_KEY, .key = 1 },
	/* 7 */ { GOOD6(50001, 1), .bad_udp_csum = true },
	/* 8 */ { GOOD6(50001, 1), .dport = 53 },
	/* 9 */ { GOOD6(50001, 1), .v6_frag = true },
	/* 10 */ { GOOD6(50004, 3), .src = "2001:2::2", .dst = "2001:2::1" },
};

static void test_udp6(void)
{
	char path[256], args[1024];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/udp6.pcap", dir);
	write_pcap(path, DLT_RAW, udp6, sizeof(udp6) / sizeof(udp6[0]));
	snprintf(args, sizeof(args), "--read %s --json --no-key --no-seq --no-csum", path);
	doc = audit(args, 0);
	CHECK_AT(doc, "frames", 10);
	CHECK_AT(doc, "other_frames", 1);
	CHECK_AT(doc, "violation_frames", 5);
	CHECK(json_is_true(at(doc, "expect.peers_learned")));
	CHECK(!strcmp(json_string_value(at(doc, "expect.local")), "2001:2::1"));
	check_first(doc, "unexpected_seq", 4);
	check_first(doc, "unexpected_csum", 5);
	check_first(doc, "bad_key", 6);
	check_first(doc, "bad_udp", 7);
	check_first(doc, "fragment", 9);
	CHECK_AT(doc, "directions.0.frames", 8);
	CHECK_AT(doc, "directions.0.gre_udp_frames", 8);
	CHECK_AT(doc, "directions.1.frames", 1);
	/* Flow 1 came on 50001 and 50003, flow 2 on 50002: three ports, one flow split. */
	CHECK_AT(doc, "directions.0.udp_ports.ports", 3);
	CHECK_AT(doc, "directions.0.udp_ports.flows", 2);
	CHECK_AT(doc, "directions.0.udp_ports.flows_on_several_ports", 1);
	CHECK_AT(doc, "directions.0.udp_ports.max_flows_per_port", 1);
	CHECK_AT(doc, "directions.1.udp_ports.flows", 1);
	/* Inner: 40 + 8 + 500 bytes; outer overhead 40 + 8 + 4 (+4 per option) per frame. */
	CHECK_AT(doc, "directions.0.inner_frames", 7);
	CHECK_AT(doc, "directions.0.inner_bytes", 7 * 548);
	CHECK_AT(doc, "directions.0.overhead_bytes", 7 * 52 + 3 * 4);
	json_decref(doc);
}

/*
 * A frame is the tunnel's only when what can be read of it says GRE: a DNS packet with a bad
 * IPv4 checksum, an IP version 5 packet and a frame cut inside its IP header are other
 * frames. GRE with a bad outer header is the tunnel's; unread addresses get no bad_peer.
 */
static const struct frame not_tunnel[] = {
	/* 1 */ { GOOD4(1) },
	/* 2 */ { GOOD4(2), .udp = true, .dport = 53, .bad_ip_csum = true },
	/* 3 */ { GOOD4(3), .ip_version = 5 },
	/* 4 */ { GOOD4(4), .wire_len = 14 + 10 },
	/* 5 */ { GOOD4(5), .bad_ip_csum = true },
	/* 6 */ { GOOD4(6), .ihl = 4 },
};

static void test_not_tunnel(void)
{
	char path[256], args[1024];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/not-tunnel.pcap", dir);
	write_pcap(path, DLT_EN10MB, not_tunnel, sizeof(not_tunnel) / sizeof(not_tunnel[0]));
	snprintf(args, sizeof(args), "--read %s --json --local %s --remote %s", path, A, B);
	doc = audit(args, 0);
	CHECK_AT(doc, "frames", 6);
	CHECK_AT(doc, "other_frames", 3);
	CHECK_AT(doc, "tunnel_frames", 3);
	CHECK_AT(doc, "violation_frames", 2);
	CHECK_AT(doc, "violations.bad_outer.count", 2);
	CHECK_AT(doc, "violations.bad_outer.first_frames.0", 5);
	CHECK_AT(doc, "violations.bad_outer.first_frames.1", 6);
	CHECK_AT(doc, "violations.bad_peer.count", 0);
	CHECK_AT(doc, "violations.truncated.count", 0);
	/* Frame 6's addresses were not read: it counts in the totals only. */
	CHECK_AT(doc, "directions.0.frames", 2);
	json_decref(doc);
	/* Learning the ends: not from the frame whose addresses were not read. */
	write_pcap(path, DLT_EN10MB, not_tunnel + 5, 1);
	snprintf(args, sizeof(args), "--read %s --json", path);
	doc = audit(args, 0);
	CHECK_AT(doc, "tunnel_frames", 1);
	CHECK(json_is_null(at(doc, "expect.local")));
	json_decref(doc);
}

/*
 * Outer source ports per flow: counted while they fit in the 4 kept, then "more". Flow 1
 * comes on 5 ports, the fifth four times; flow 2 on exactly 4, each more than once.
 */
static const struct frame ports[] = {
	{ GOOD6(50001, 1) }, { GOOD6(50002, 1) }, { GOOD6(50003, 1) }, { GOOD6(50004, 1) },
	{ GOOD6(50005, 1) }, { GOOD6(50005, 1) }, { GOOD6(50005, 1) }, { GOOD6(50005, 1) },
	{ GOOD6(50001, 2) }, { GOOD6(50002, 2) }, { GOOD6(50003, 2) }, { GOOD6(50004, 2) },
	{ GOOD6(50001, 2) }, { GOOD6(50004, 2) },
};

static void test_flow_ports(void)
{
	char path[256], args[1024];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/ports.pcap", dir);
	write_pcap(path, DLT_RAW, ports, sizeof(ports) / sizeof(ports[0]));
	snprintf(args, sizeof(args), "--read %s --json", path);
	doc = audit(args, 0);
	CHECK_AT(doc, "flows.top.0.frames", 8);
	CHECK_AT(doc, "flows.top.0.udp_ports", 4);
	CHECK(json_is_true(at(doc, "flows.top.0.udp_ports_more")));
	CHECK_AT(doc, "flows.top.0.udp_port", 50001);
	CHECK_AT(doc, "flows.top.1.frames", 6);
	CHECK_AT(doc, "flows.top.1.udp_ports", 4);
	CHECK(json_is_false(at(doc, "flows.top.1.udp_ports_more")));
	CHECK_AT(doc, "directions.0.udp_ports.ports", 5);
	CHECK_AT(doc, "directions.0.udp_ports.flows_on_several_ports", 2);
	CHECK_AT(doc, "directions.0.udp_ports.max_flows_per_port", 2);
	json_decref(doc);
}

/*
 * More inner flows than the table holds: 65536 flows of one 10-byte TCP segment fill it; the
 * next flow's two segments (the second a retransmission) are untracked. Their payload is
 * counted apart, not as retransmitted.
 */
static void test_untracked(void)
{
	struct frame f = { .family = AF_INET,
			   .src = A,
			   .dst = B,
			   .inner = { .family = AF_INET,
				      .src = "198.18.1.2",
				      .dst = "198.18.3.2",
				      .proto = IPPROTO_TCP,
				      .tcp_flags = TCP_F_ACK,
				      .payload = 10 } };
	char path[256], args[1024];
	pcap_t *dead = pcap_open_dead(DLT_RAW, 65535);
	pcap_dumper_t *d;
	json_t *doc;
	size_t i;

	snprintf(path, sizeof(path), "%s/untracked.pcap", dir);
	d = dump_open(path, dead);
	for (i = 0; i <= WIRE_FLOWS_MAX + 1; i++) {
		size_t flow = i <= WIRE_FLOWS_MAX ? i : WIRE_FLOWS_MAX;

		f.inner.sport = (uint16_t)(1 + flow % 65535);
		f.inner.dport = (uint16_t)(9400 + flow / 65535);
		dump_frame(d, DLT_RAW, &f, i);
	}
	pcap_dump_close(d);
	pcap_close(dead);
	snprintf(args, sizeof(args), "--read %s --json --top 0", path);
	doc = audit(args, 0);
	CHECK_AT(doc, "frames", WIRE_FLOWS_MAX + 2);
	CHECK_AT(doc, "flows.tracked", WIRE_FLOWS_MAX);
	CHECK_AT(doc, "flows.untracked_frames", 2);
	CHECK_AT(doc, "directions.0.tcp.payload_bytes", WIRE_FLOWS_MAX * 10);
	CHECK_AT(doc, "directions.0.tcp.new_bytes", WIRE_FLOWS_MAX * 10);
	CHECK_AT(doc, "directions.0.tcp.retransmitted_bytes", 0);
	CHECK_AT(doc, "directions.0.tcp.untracked_bytes", 20);
	json_decref(doc);
}

/* Inner IPv6 has no identification: late data is unresolved, neither resent nor reordered. */
#define TCP6(s)                                                     \
	.family = AF_INET6, .src = "2001:2::1", .dst = "2001:2::2", \
	.inner = { .family = AF_INET6,                              \
		   .src = "2001:2:1::2",                            \
		   .dst = "2001:2:3::2",                            \
		   .proto = IPPROTO_TCP,                            \
		   .sport = 40000,                                  \
		   .dport = 9400,                                   \
		   .tcp_flags = TCP_F_ACK,                          \
		   .tcp_seq = (s),                                  \
		   .payload = 100 }

static const struct frame late6[] = { { TCP6(1000) }, { TCP6(1200) }, { TCP6(1100) } };

static void test_late6(void)
{
	char path[256], args[1024];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/late6.pcap", dir);
	write_pcap(path, DLT_RAW, late6, sizeof(late6) / sizeof(late6[0]));
	snprintf(args, sizeof(args), "--read %s --json", path);
	doc = audit(args, 0);
	CHECK_AT(doc, "directions.0.tcp.payload_bytes", 300);
	CHECK_AT(doc, "directions.0.tcp.late_bytes", 100);
	CHECK_AT(doc, "directions.0.tcp.late_resent_bytes", 0);
	CHECK_AT(doc, "directions.0.tcp.late_unresolved_bytes", 100);
	json_decref(doc);
}

/*
 * GRE-in-UDP as gregw sends it with UDP GSO, captured on veth: super-frames of several GRE
 * packets, UDP checksums left to offload. Each GRE packet counts as the datagram a segmenting
 * NIC would send; violations count once, under the captured frame's number. Plain GRE is not
 * split: a second GRE packet in its payload is payload.
 */
#define GSO4(sq, n)                                                                          \
	.family = AF_INET, .src = A, .dst = B, .udp = true, .sport = 50001,                  \
	.gre_flags = GRE_F_CSUM | GRE_F_KEY | GRE_F_SEQ, .key = 7, .seq = (sq), .segs = (n), \
	.udp_csum_partial = true, .inner = TCP_A((sq)*1000, 1000)

static const struct frame gso4[] = {
	/* 1 */ { GSO4(1, 3) },
	/* 2 */ { GSO4(4, 1) },
	/* 3 */ { GSO4(5, 1), .udp_csum_partial = false },
	/* 4 */ { GSO4(6, 1), .udp_csum_partial = false, .bad_udp_csum = true },
	/* 5 */ { GSO4(7, 2), .last_bad_key = true },
	/* 6 */ { GSO4(9, 2), .last_payload = 600, .trailing = 7 },
	/* 7 */ { GSO4(1, 2), .src = B, .dst = A, .inner = ACK_B },
	/* 8 */ { GSO4(11, 2), .udp = false },
	/* 9 */ { GSO4(12, 2), .key = 8 },
};

static void test_gso4(void)
{
	char path[256], args[1024], *out;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/gso4.pcap", dir);
	write_pcap(path, DLT_EN10MB, gso4, sizeof(gso4) / sizeof(gso4[0]));
	snprintf(args, sizeof(args),
		 "--read %s --json --local %s --remote %s --key 7 --seq --csum --mtu 1400 --check",
		 path, A, B);
	doc = audit(args, 3);
	/*
	 * Captured frames: 9, three with a violation (4: the UDP checksum, 5: its second key,
	 * 9: both keys, counted once).
	 */
	CHECK_AT(doc, "frames", 9);
	CHECK_AT(doc, "tunnel_frames", 9);
	CHECK_AT(doc, "violation_frames", 3);
	check_first(doc, "bad_udp", 4);
	CHECK_AT(doc, "violations.bad_key.count", 2);
	CHECK_AT(doc, "violations.bad_key.first_frames.0", 5);
	CHECK_AT(doc, "violations.bad_key.first_frames.1", 9);
	CHECK_AT(doc, "violations.bad_csum.count", 0);
	CHECK_AT(doc, "violations.inner_too_big.count", 0);
	/* A to B: 3 + 1 + 1 + 1 + 2 + 2 + 2 datagrams in GRE-in-UDP, and the plain GRE frame. */
	CHECK_AT(doc, "directions.0.frames", 13);
	CHECK_AT(doc, "directions.0.gre_udp_frames", 12);
	CHECK_AT(doc, "directions.0.gre_frames", 1);
	CHECK_AT(doc, "directions.0.gso_frames", 4);
	CHECK_AT(doc, "directions.0.gso_datagrams", 9);
	CHECK_AT(doc, "directions.0.udp_csum_offloaded", 5);
	CHECK_AT(doc, "directions.1.frames", 2);
	CHECK_AT(doc, "directions.1.gso_frames", 1);
	CHECK_AT(doc, "directions.1.gso_datagrams", 2);
	CHECK_AT(doc, "directions.1.udp_csum_offloaded", 1);
	/* Sequence numbers 1 to 13, every one read once (frame 8 hides a 12 in its payload). */
	CHECK_AT(doc, "directions.0.seq.frames", 13);
	CHECK_AT(doc, "directions.0.seq.missing", 0);
	CHECK_AT(doc, "directions.0.seq.reordered", 0);
	CHECK_AT(doc, "directions.0.seq.duplicates", 0);
	CHECK_AT(doc, "directions.1.seq.frames", 2);
	/*
	 * Datagrams of 14 + 20 + 8 + 16 + 1040 = 1098 bytes but two: frame 6's last carries
	 * 600 bytes of TCP payload and the 7 trailing bytes (705), frame 8 is one frame of
	 * 14 + 20 + 2 x 1056 = 2146 bytes.
	 */
	CHECK_AT(doc, "directions.0.bytes", 11 * 1098 + 705 + 2146);
	CHECK_AT(doc, "directions.0.ip_bytes", 11 * 1084 + 691 + 2132);
	CHECK_AT(doc, "directions.0.sizes.5.frames", 11);
	CHECK_AT(doc, "directions.0.sizes.4.frames", 1);
	CHECK_AT(doc, "directions.0.sizes.6.frames", 1);
	CHECK_AT(doc, "directions.0.inner_frames", 13);
	CHECK_AT(doc, "directions.0.inner_bytes", 12 * 1040 + 640);
	CHECK_AT(doc, "directions.0.overhead_bytes", 12 * 44 + 7 + 2132 - 1040);
	CHECK_AT(doc, "directions.0.tcp.payload_bytes", 12 * 1000 + 600);
	CHECK_AT(doc, "directions.0.tcp.new_bytes", 12 * 1000 + 600);
	CHECK_AT(doc, "directions.1.bytes", 2 * (14 + 28 + 16 + 40));
	CHECK_AT(doc, "directions.1.inner_bytes", 2 * 40);
	CHECK_AT(doc, "flows.top.0.frames", 13);
	CHECK_AT(doc, "flows.top.0.udp_ports", 1);
	json_decref(doc);
	snprintf(args, sizeof(args), "--read %s --local %s --remote %s", path, A, B);
	CHECK_INT(run_wire(args, &out), 0);
	CHECK(strstr(out, "  offload: 4 GSO frames split into 9 of those frames; 5 UDP checksums "
			  "left to the device\n") != NULL);
	free(out);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

/* -v says what it read and what it counted; without it, a clean run says nothing. */
static void test_verbose(void)
{
	char args[1024], errpath[256], *out, *err;

	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	snprintf(args, sizeof(args), "--read %s/gre4.pcap", dir);
	CHECK_INT(run_wire(args, &out), 0);
	free(out);
	CHECK_STR(slurp(errpath), "");
	snprintf(args, sizeof(args), "--read %s/gre4.pcap -v", dir);
	CHECK_INT(run_wire(args, &out), 0);
	free(out);
	err = slurp(errpath);
	CHECK(strstr(err, "tunbed-wire: reading ") == err);
	CHECK(strstr(err, "gre4.pcap: link EN10MB, nanosecond timestamps\n") != NULL);
	CHECK(strstr(err, "tunbed-wire: 21 frames: 20 tunnel, 1 other, 1 snapped; 7 with a "
			  "violation\n") != NULL);
}

/*
 * The live capture's kernel filter, compiled as the binary compiles it, against frames on
 * Ethernet: the tunnel's pass, also behind an IPv6 extension header; others do not.
 */
static void test_filter(void)
{
	static const struct {
		const char *name;
		struct frame f;
		bool pass;
	} rows[] = {
		{ "IPv4 GRE", { GOOD4(1) }, true },
		{ "IPv4 GRE-in-UDP", { GOOD4(1), .udp = true }, true },
		{ "IPv4 later UDP fragment",
		  { GOOD4(1), .udp = true, .dport = 53, .frag = 100 },
		  true },
		{ "IPv4 DNS", { GOOD4(1), .udp = true, .dport = 53 }, false },
		{ "IPv6 GRE-in-UDP", { GOOD6(50001, 1) }, true },
		{ "IPv6 GRE", { GOOD6(50001, 1), .udp = false }, true },
		{ "IPv6 GRE-in-UDP behind destination options",
		  { GOOD6(50001, 1), .v6_dstopts = true },
		  true },
		{ "IPv6 GRE behind destination options",
		  { GOOD6(50001, 1), .udp = false, .v6_dstopts = true },
		  true },
		{ "IPv6 fragment", { GOOD6(50001, 1), .v6_frag = true }, true },
		{ "IPv6 DNS", { GOOD6(50001, 1), .dport = 53 }, false },
		{ "ARP", { .not_ip = true }, false },
	};
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 262144);
	static uint8_t buf[FRAME_MAX];
	struct bpf_program prog;
	char expr[256];

	snprintf(expr, sizeof(expr), WIRE_FILTER_FMT, GRE_UDP_PORT);
	if (pcap_compile(dead, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0) {
		fprintf(stderr, "filter \"%s\": %s\n", expr, pcap_geterr(dead));
		exit(1);
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pcap_pkthdr h = { .len = (bpf_u_int32)build(&rows[i].f, DLT_EN10MB, buf) };

		h.caplen = h.len;
		CHECK_ROW((pcap_offline_filter(&prog, &h, buf) != 0) == rows[i].pass, rows[i].name);
	}
	pcap_freecode(&prog);
	pcap_close(dead);
}

/* Bad input: one line on stderr, exit 1 (2 for bad usage), no report. */
static void test_bad_input(void)
{
	char path[256], args[1024], *out, line[512];
	uint8_t junk[100];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/text.pcap", dir);
	f = fopen(path, "w");
	fputs("this is not a capture file, it is text long enough to fill a header\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "--read %s", path);
	CHECK_INT(run_wire(args, &out), 1);
	CHECK_INT(strlen(out), 0);
	free(out);
	/* A capture cut in the middle of a frame. */
	snprintf(args, sizeof(args), "%s/gre4.pcap", dir);
	f = fopen(args, "r");
	n = fread(junk, 1, sizeof(junk), f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/cut.pcap", dir);
	f = fopen(path, "w");
	fwrite(junk, 1, n, f);
	fclose(f);
	snprintf(args, sizeof(args), "--read %s", path);
	CHECK_INT(run_wire(args, &out), 1);
	free(out);
	snprintf(line, sizeof(line), "%s/stderr", dir);
	f = fopen(line, "r");
	CHECK(fgets(line, sizeof(line), f) != NULL);
	CHECK(strstr(line, "truncated") != NULL);
	CHECK(fgets(line, sizeof(line), f) == NULL);
	fclose(f);
	snprintf(args, sizeof(args), "--read %s/absent.pcap", dir);
	CHECK_INT(run_wire(args, &out), 1);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --iface eth0", &out), 2);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --time 3", &out), 2);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --local 198.18.0.1", &out), 2);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --seq --no-seq", &out), 2);
	free(out);
	CHECK_INT(run_wire("", &out), 2);
	free(out);
}

/* A tunnel between real addresses, as a hosts-mode run on a real network would capture it. */
static const struct frame real[] = {
	{ GOOD4(1), .src = "10.0.0.1", .dst = "10.0.0.2" },
	{ GOOD4(2), .src = "10.0.0.1", .dst = "10.0.0.2" },
	{ GOOD4(1), .src = "10.0.0.2", .dst = "10.0.0.1", .inner = ACK_B },
};

/*
 * --local and --remote outside the benchmarking ranges: refused before the file is opened
 * (exit 2, one line naming --any-address), audited with --any-address. --read sends nothing.
 */
static void test_any_address(void)
{
	char path[256], args[1024], errpath[256], *out;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/real.pcap", dir);
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	write_pcap(path, DLT_EN10MB, real, sizeof(real) / sizeof(real[0]));
	snprintf(args, sizeof(args), "--read %s --json --local 10.0.0.1 --remote 10.0.0.2", path);
	CHECK_INT(run_wire(args, &out), 2);
	CHECK_STR(out, "");
	free(out);
	CHECK_STR(slurp(errpath),
		  "tunbed-wire: --local 10.0.0.1 is outside the benchmarking "
		  "ranges 198.18.0.0/15 and 2001:2::/48 (--any-address allows it)\n");
	snprintf(args, sizeof(args), "--read %s --local 2001:2::1 --remote 2001:db8::2", path);
	CHECK_INT(run_wire(args, &out), 2);
	free(out);
	CHECK_STR(slurp(errpath),
		  "tunbed-wire: --remote 2001:db8::2 is outside the benchmarking "
		  "ranges 198.18.0.0/15 and 2001:2::/48 (--any-address allows it)\n");

	snprintf(args, sizeof(args),
		 "--read %s --json --local 10.0.0.1 --remote 10.0.0.2 --any-address --key 7 --seq "
		 "--csum --check",
		 path);
	doc = audit(args, 0);
	CHECK_STR(slurp(errpath), "");
	CHECK_AT(doc, "tunnel_frames", 3);
	CHECK_AT(doc, "violation_frames", 0);
	CHECK_AT(doc, "directions.0.frames", 2);
	CHECK_AT(doc, "directions.1.frames", 1);
	CHECK(!strcmp(json_string_value(at(doc, "expect.local")), "10.0.0.1"));
	CHECK(!strcmp(json_string_value(at(doc, "expect.remote")), "10.0.0.2"));
	json_decref(doc);
	/* Without --local and --remote the ends are learned from the file, whatever they are. */
	snprintf(args, sizeof(args), "--read %s --json", path);
	doc = audit(args, 0);
	CHECK(!strcmp(json_string_value(at(doc, "expect.local")), "10.0.0.1"));
	json_decref(doc);
}

/*
 * The outer header against each inner packet (RFC 6040 and RFC 2983): IPv4 GRE with key 7,
 * sequence numbers and checksums, one violation of each kind among good frames (the IPv6
 * traffic class: test_wire_decode).
 * DSCP 46 is EF; ECN codepoints Not-ECT 0, ECT(1) 1, ECT(0) 2, CE 3.
 */
#define EF(ecn) (46 << 2 | (ecn))
static const struct frame tos4[] = {
	/* 1 */ { GOOD4(1), .outer_ds = EF(2), .inner_ds = EF(2) },
	/* 2 */ { GOOD4(2), .outer_ds = EF(0), .inner_ds = EF(2) },
	/* 3 */ { GOOD4(3), .outer_ds = EF(2), .inner_ds = EF(3) },
	/* 4 */ { GOOD4(4), .outer_ds = EF(1), .inner_ds = EF(0) },
	/* 5 */ { GOOD4(5), .outer_ds = EF(3), .inner_ds = EF(1) },
	/* 6 */ { GOOD4(6), .outer_ds = 2, .inner_ds = EF(2) },
	/* 7 */ { GOOD4(7), .outer_ds = EF(2), .inner_ds = EF(2), .inner_ttl = 17 },
	/* 8 */ { GOOD4(1), .src = B, .dst = A, .inner = ACK_B },
};

static void test_tos4(void)
{
	char path[256], args[1024], *out;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/tos4.pcap", dir);
	write_pcap(path, DLT_EN10MB, tos4, sizeof(tos4) / sizeof(tos4[0]));
	snprintf(args, sizeof(args),
		 "--read %s --json --local %s --remote %s --key 7 --seq --csum --expect-tos "
		 "inherit --expect-ttl inherit --check",
		 path, A, B);
	doc = audit(args, 3);
	CHECK_AT(doc, "violation_frames", 5);
	check_first(doc, "ecn_not_copied", 2);
	check_first(doc, "ecn_ce_reset", 3);
	check_first(doc, "ecn_mismatch", 4);
	check_first(doc, "bad_dscp", 6);
	check_first(doc, "bad_ttl", 7);
	CHECK(!strcmp(json_string_value(at(doc, "expect.ecn")), "normal"));
	CHECK(!strcmp(json_string_value(at(doc, "expect.tos")), "inherit"));
	CHECK(!strcmp(json_string_value(at(doc, "expect.ttl")), "inherit"));
	/* What crossed, by inner and outer codepoint: frame 5's CE was set on the way. */
	CHECK_AT(doc, "directions.0.tos.ecn.ect0.ect0", 3);
	CHECK_AT(doc, "directions.0.tos.ecn.ect0.not-ect", 1);
	CHECK_AT(doc, "directions.0.tos.ecn.ce.ect0", 1);
	CHECK_AT(doc, "directions.0.tos.ecn.not-ect.ect1", 1);
	CHECK_AT(doc, "directions.0.tos.ecn.ect1.ce", 1);
	CHECK_AT(doc, "directions.0.tos.ecn.not-ect.not-ect", 0);
	CHECK_AT(doc, "directions.0.tos.dscp_marked", 7);
	CHECK_AT(doc, "directions.0.tos.dscp_copied", 6);
	CHECK_AT(doc, "directions.1.tos.ecn.not-ect.not-ect", 1);
	CHECK_AT(doc, "directions.1.tos.dscp_marked", 0);
	json_decref(doc);

	/* Fixed values: the outer DSCP 46 and TTL 64 are what was asked of every frame. */
	snprintf(args, sizeof(args),
		 "--read %s --json --local %s --remote %s --expect-ecn any --expect-tos 46 "
		 "--expect-ttl 64",
		 path, A, B);
	doc = audit(args, 0);
	CHECK_AT(doc, "violation_frames", 2); /* 6's DSCP 0; 8's, from B, DSCP 0 */
	CHECK_AT(doc, "violations.bad_dscp.count", 2);
	CHECK_AT(doc, "violations.bad_ttl.count", 0);
	CHECK_AT(doc, "violations.ecn_not_copied.count", 0);
	CHECK(json_is_null(at(doc, "expect.ecn")));
	CHECK_AT(doc, "expect.tos", 46);
	CHECK_AT(doc, "expect.ttl", 64);
	json_decref(doc);

	/* The text says what was expected and what crossed. */
	snprintf(args, sizeof(args), "--read %s --expect-tos inherit --expect-ttl 64", path);
	CHECK_INT(run_wire(args, &out), 0);
	CHECK(strstr(out, ", tos inherit, ttl 64\n") != NULL);
	CHECK(strstr(out,
		     "  tos: ecn (inner>outer) not-ect>ect1 1, ect1>ce 1, ect0>not-ect 1, "
		     "ect0>ect0 3, ce>ect0 1; dscp 7 marked inside, 6 carried outside\n") != NULL);
	CHECK(strstr(out, "  ecn_ce_reset ") != NULL);
	free(out);

	/* Values out of range: one line, exit 2. */
	CHECK_INT(run_wire("--read x.pcap --expect-tos 64", &out), 2);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --expect-ttl 0", &out), 2);
	free(out);
	CHECK_INT(run_wire("--read x.pcap --expect-ecn compat", &out), 2);
	free(out);
}

/* --tunnels: gwa's three tunnels, two to B (keys 7 and 8), one to 198.18.0.3 (key 7). */
static const char tunnel_file[] =
	"[tunnel a]\npeer = 198.18.0.2\nkey = 7\nseq = yes\ncsum = yes\nprefixes = "
	"198.18.128.0/32\n"
	"[tunnel b]\npeer = 198.18.0.2\nkey = 8\nprefixes = 198.18.128.1/32\n"
	"[tunnel c]\npeer = 198.18.0.3\nkey = 7\nseq = yes\nprefixes = 198.18.128.2/32\n";

static const struct frame tunnels4[] = {
	/* 1: a's */ { GOOD4(1) },
	/* 2: a's, back */ { GOOD4(2), .src = B, .dst = A, .inner = ACK_B },
	/* 3: b's */ { GOOD4(3), .gre_flags = GRE_F_KEY, .key = 8 },
	/* 4: b's, with numbers b has not */
	{ GOOD4(4), .gre_flags = GRE_F_KEY | GRE_F_SEQ, .key = 8 },
	/* 5: a key of no tunnel of B's */ { GOOD4(5), .gre_flags = GRE_F_KEY, .key = 9 },
	/* 6: c's, a's key at another peer */
	{ GOOD4(6), .dst = "198.18.0.3", .gre_flags = GRE_F_KEY | GRE_F_SEQ },
	/* 7: no tunnel's peer */ { GOOD4(7), .dst = "198.18.0.9" },
};

/* --tunnels: each frame held to its tunnel; per tunnel its frames both ways and its
 * violations by kind; a direction's sequence accounting off with more than one tunnel. */
static void test_tunnels(void)
{
	char path[256], tpath[256], args[1024], *out;
	FILE *f;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/tunnels4.pcap", dir);
	snprintf(tpath, sizeof(tpath), "%s/gwa.tunnels", dir);
	write_pcap(path, DLT_EN10MB, tunnels4, sizeof(tunnels4) / sizeof(tunnels4[0]));
	f = fopen(tpath, "w");
	CHECK(f && fputs(tunnel_file, f) >= 0 && fclose(f) == 0);
	snprintf(args, sizeof(args), "--read %s --json --tunnels %s --local %s --check", path,
		 tpath, A);
	doc = audit(args, 3);
	CHECK_AT(doc, "expect.tunnels", 3);
	CHECK(json_is_null(at(doc, "expect.remote")));
	CHECK_AT(doc, "tunnels.count", 3);
	CHECK_AT(doc, "tunnels.both_ways", 1);
	CHECK_AT(doc, "tunnels.with_violations", 1);
	CHECK_AT(doc, "tunnels.no_tunnel_frames", 1);
	CHECK_STR(json_string_value(at(doc, "tunnels.list.0.name")), "a");
	CHECK_STR(json_string_value(at(doc, "tunnels.list.0.peer")), "198.18.0.2");
	CHECK_AT(doc, "tunnels.list.0.frames.0", 1);
	CHECK_AT(doc, "tunnels.list.0.frames.1", 1);
	CHECK_AT(doc, "tunnels.list.0.violation_frames", 0);
	CHECK_INT(json_object_size(at(doc, "tunnels.list.0.violations")), 0);
	CHECK_AT(doc, "tunnels.list.1.frames.0", 2);
	CHECK_AT(doc, "tunnels.list.1.violation_frames", 1);
	CHECK_AT(doc, "tunnels.list.1.violations.unexpected_seq", 1);
	CHECK_INT(json_object_size(at(doc, "tunnels.list.1.violations")), 1);
	CHECK_AT(doc, "tunnels.list.2.frames.0", 1);
	CHECK_AT(doc, "tunnels.list.2.frames.1", 0);
	check_first(doc, "unexpected_seq", 4);
	check_first(doc, "bad_key", 5);
	check_first(doc, "bad_peer", 7);
	CHECK_AT(doc, "violation_frames", 3);
	CHECK_AT(doc, "directions.0.frames", 5);     /* to B and to 198.18.0.3 */
	CHECK_AT(doc, "directions.0.seq.frames", 0); /* each tunnel numbers its own */
	json_decref(doc);
	/* --remote beside --tunnels: one line, exit 2. */
	snprintf(args, sizeof(args), "--read %s --tunnels %s --local %s --remote %s", path, tpath,
		 A, B);
	CHECK_INT(run_wire(args, &out), 2);
	free(out);
}

int main(int argc, char **argv)
{
	char cmd[256];

	if (argc != 2) {
		fprintf(stderr, "usage: test_wire_captures PATH-TO-tunbed-wire\n");
		return 2;
	}
	wire_bin = argv[1];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_gre4();
	test_udp6();
	test_not_tunnel();
	test_flow_ports();
	test_untracked();
	test_late6();
	test_gso4();
	test_tos4();
	test_verbose();
	test_filter();
	test_bad_input();
	test_any_address();
	test_tunnels();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (getenv("KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_done("test_wire_captures");
}
