/*
 * Merging a flow's TUN reads (gateway/merge.c, by gateway/tcpjoin.c's rules): reads the kernel's
 * GRO would merge (and those with a PSH, or a newer TCP timestamp) leave as one superpacket,
 * and cut as the kernel cuts it (each segment's checksum field derived from the superpacket's,
 * tcp_gso_segment's way, then completed as a device completes it) it gives, byte for byte and
 * in order, the segments the reads would have been cut into one by one, but for the first
 * read's timestamps on every one and a PSH on the last only; a read that breaks one of the
 * rules is not merged, and a merge stops at the room it is given.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gso.h"
#include "gw_limits.h"
#include "inet.h"
#include "merge.h"
#include "pkt.h"

enum {
	MSS = 1400,
	OPT_LEN = 12, /* NOP, NOP, timestamps: what Linux's TCP sends on every segment */
	MAXREADS = 6,
	MAXSEGS = 160,
	SEG_MAX = 2048,
};

/* A read as TUN hands it over: a superpacket (gso_size mss) or a packet (mss 0), its TCP
 * checksum left partial where csum says (start 0: complete). */
static struct rd {
	uint8_t pkt[65536];
	size_t len;
	unsigned mss;
	struct l4_csum csum;
} reads[MAXREADS];

static uint8_t slot_buf[65536];

/* Segments cut from what left (got) and from each read alone (want). */
static uint8_t got[MAXSEGS][SEG_MAX], want[MAXSEGS][SEG_MAX];
static size_t got_len[MAXSEGS], want_len[MAXSEGS];
static unsigned ngot, nwant, bad_fields;
static unsigned want_first[MAXREADS + 1]; /* read r's segments: want[want_first[r]...] */

/* The flow's bytes: a read's payload is the stream at its sequence offset. */
static uint8_t stream(size_t off)
{
	return (uint8_t)(off * 131 + off / 251 + 7);
}

/* What makes a read break a rule. */
enum edit {
	E_NONE,
	E_SEQ_GAP,
	E_ID,
	E_ACK,
	E_WINDOW,
	E_TOS,
	E_TTL,
	E_DF,
	E_TSVAL,
	E_TS_OLDER,
	E_TSECR,
	E_TSECR_OLDER,
	E_OPT,
	E_PORT,
	E_FLOW_LABEL,
	E_HOPS,
	E_COMPLETE,
	E_CSUM_ELSEWHERE,
	E_CWR,
	E_URG,
	E_RST,
	E_SYN,
	E_PSH,
	E_FIN,
	E_IP_OPTIONS,
	E_IP_CSUM,
	E_IP_LEN,
	E_MSS,
	E_UDP,
};

/* A read of a row: nseg segments of MSS (the last one last bytes, 0: MSS), a superpacket, or
 * a packet (gso false, nseg 1); edit breaks a rule. */
struct rd_spec {
	unsigned nseg;
	bool gso;
	unsigned last;
	enum edit edit;
};

/* The kernel's tcp_gso_segment: a segment's checksum field from the superpacket's, whose TCP
 * length was whole_l4, for a TCP length of seg_l4 (one's complement: less the one, plus the
 * other). */
static uint16_t kernel_field(uint16_t field, size_t whole_l4, size_t seg_l4)
{
	uint32_t sum = field + (uint32_t)(uint16_t) ~(uint16_t)whole_l4 + (uint32_t)seg_l4;

	return (uint16_t)~inet_csum_fold(sum);
}

/* The pseudo-header's sum a partial checksum field holds over l4len bytes of TCP. */
static uint16_t partial_field(const uint8_t *p, int family, size_t l4len)
{
	return (uint16_t)~inet_csum_fold(inet_pseudo_sum(family, p + ip_src_off(family),
							 p + ip_dst_off(family), IPPROTO_TCP,
							 (uint32_t)l4len));
}

/*
 * Cuts what leaves (pkt, len; mss its gso_size, 0: a packet; csum where its checksum was left
 * partial) as the kernel and the device would into out[*n...]: each segment's field the
 * kernel's adjustment of the superpacket's field (checked against the pseudo-header's sum of
 * the segment), then completed over the segment.
 */
static void cut_into(const uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum,
		     uint8_t (*out)[SEG_MAX], size_t *out_len, unsigned *n)
{
	int family = (pkt[0] >> 4) == 6 ? AF_INET6 : AF_INET;
	unsigned l4 = family == AF_INET6 ? IPV6_HLEN : (pkt[0] & 0x0fu) * 4u;
	struct gso_pkt g;
	struct virtio_net_hdr h = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type =
			family == AF_INET6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4,
		.gso_size = htole16((uint16_t)mss),
		.csum_start = htole16((uint16_t)l4),
		.csum_offset = htole16(TCP_CSUM_OFF),
	};

	if (!mss) {
		CHECK(*n < MAXSEGS && len <= SEG_MAX);
		if (*n >= MAXSEGS || len > SEG_MAX)
			return;
		memcpy(out[*n], pkt, len);
		if (csum.start)
			inet_csum_finish(out[*n] + csum.start, len - csum.start, NULL, 0, csum);
		out_len[(*n)++] = len;
		return;
	}
	CHECK_INT(gso_parse(&h, pkt, len, 65535, &g), DROP_NONE);
	if (g.nseg == 0)
		return;
	for (unsigned i = 0; i < g.nseg && *n < MAXSEGS; i++) {
		uint8_t *s = out[*n];
		size_t plen = gso_segment(&g, i, s, true);
		size_t seg_l4 = g.hdr_len - l4 + plen;

		if (load_be16(s + l4 + TCP_CSUM_OFF) !=
		    kernel_field(load_be16(pkt + l4 + TCP_CSUM_OFF), len - l4, seg_l4))
			bad_fields++;
		memcpy(s + g.hdr_len, pkt + g.hdr_len + (size_t)i * g.mss, plen);
		inet_csum_finish(s + l4, seg_l4, NULL, 0, gso_csum(&g));
		out_len[(*n)++] = g.hdr_len + plen;
	}
}

/*
 * Segments from..to-1 of want[], cut from reads that left merged, as the merged superpacket's
 * segments must differ from them: every one with the first one's timestamps (TSval and TSecr,
 * NOP NOP TS as these reads have it), and a PSH that any of them had on the last one only;
 * their checksums made again.
 */
static void as_merged(unsigned from, unsigned to)
{
	bool psh = false;

	for (unsigned i = from; i < to; i++) {
		uint8_t *p = want[i];
		int family = (p[0] >> 4) == 6 ? AF_INET6 : AF_INET;
		unsigned l4 = ip_fixed_hlen(family);
		uint8_t *th = p + l4;

		memcpy(th + TCP_HLEN + 4, want[from] + l4 + TCP_HLEN + 4, 8);
		psh = psh || (th[TCP_FLAGS_OFF] & TCP_F_PSH);
		th[TCP_FLAGS_OFF] &= (uint8_t)~TCP_F_PSH;
		if (i + 1 == to && psh)
			th[TCP_FLAGS_OFF] |= TCP_F_PSH;
		store_be16(th + TCP_CSUM_OFF, 0);
		store_be16(th + TCP_CSUM_OFF,
			   pkt_l4_csum(family, p, th, want_len[i] - l4, IPPROTO_TCP));
	}
}

/* Builds the reads of a row, one flow's in sequence, into reads[]. */
static void build(int family, const struct rd_spec *spec, unsigned n)
{
	static const uint8_t opts[OPT_LEN] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	size_t off = 0;
	uint16_t id = 0x1234;

	for (unsigned r = 0; r < n; r++) {
		const struct rd_spec *k = &spec[r];
		struct rd *d = &reads[r];
		size_t plen = (size_t)(k->nseg - 1) * MSS + (k->last ? k->last : MSS);
		struct pkt_spec s = { .family = family,
				      .src = family == AF_INET6 ? "2001:2::1" : "198.18.1.2",
				      .dst = family == AF_INET6 ? "2001:2:0:3::2" : "198.18.3.2",
				      .proto = IPPROTO_TCP,
				      .sport = 40000,
				      .dport = 9400,
				      .tcp_flags = TCP_F_ACK,
				      .opts = opts,
				      .opts_len = OPT_LEN,
				      .payload = plen,
				      .df = true };
		unsigned l4 = ip_fixed_hlen(family), hdr = l4 + TCP_HLEN + OPT_LEN;
		uint8_t *p = d->pkt, *th;

		if (k->edit == E_SEQ_GAP)
			off++;
		if (k->edit == E_ID)
			id++;
		if (k->edit == E_MSS) /* a superpacket's segments smaller, a packet larger */
			plen = k->gso ? (size_t)k->nseg * 1200 : MSS + 100;
		s.payload = plen;
		s.tcp_seq = (uint32_t)(1000 + off);
		d->len = pkt_build(&s, p);
		th = p + l4;
		for (size_t i = 0; i < plen; i++)
			p[hdr + i] = stream(off + i);
		if (family == AF_INET)
			store_be16(p + IPV4_ID_OFF, id);
		d->mss = k->gso ? (k->edit == E_MSS ? 1200 : MSS) : 0;
		d->csum = (struct l4_csum){ (uint16_t)l4, TCP_CSUM_OFF };
		off += plen;
		id = (uint16_t)(id + k->nseg);
		switch (k->edit) {
		case E_ACK:
			th[TCP_ACK_OFF + 3]++;
			break;
		case E_WINDOW:
			th[TCP_WINDOW_OFF + 1]++;
			break;
		case E_TOS:
			p[IPV4_TOS_OFF] = 0x02;
			break;
		case E_TTL:
			p[IPV4_TTL_OFF]--;
			break;
		case E_DF:
			store_be16(p + IPV4_FRAG_OFF, 0);
			break;
		case E_TSVAL: /* NOP, NOP, kind, length, then TSval and TSecr */
			th[TCP_HLEN + 7]++;
			break;
		case E_TS_OLDER:
			th[TCP_HLEN + 7]--;
			break;
		case E_TSECR:
			th[TCP_HLEN + 11]++;
			break;
		case E_TSECR_OLDER:
			th[TCP_HLEN + 11]--;
			break;
		case E_OPT:
			th[TCP_HLEN + 1] = 0; /* NOP, EOL, then the timestamps */
			break;
		case E_PORT:
			th[TCP_SPORT_OFF + 1]++;
			break;
		case E_FLOW_LABEL:
			p[3] = 0x01;
			break;
		case E_HOPS:
			p[IPV6_HOPS_OFF]--;
			break;
		case E_CWR:
			th[TCP_FLAGS_OFF] |= TCP_F_CWR;
			break;
		case E_URG:
			th[TCP_FLAGS_OFF] |= TCP_F_URG;
			break;
		case E_RST:
			th[TCP_FLAGS_OFF] |= TCP_F_RST;
			break;
		case E_SYN:
			th[TCP_FLAGS_OFF] |= TCP_F_SYN;
			break;
		case E_PSH:
			th[TCP_FLAGS_OFF] |= TCP_F_PSH;
			break;
		case E_FIN:
			th[TCP_FLAGS_OFF] |= TCP_F_FIN;
			break;
		case E_IP_LEN:
			d->len--; /* the read is a byte short of what its header says */
			break;
		case E_UDP:
			p[IPV4_PROTO_OFF] = IPPROTO_UDP;
			break;
		default:
			break;
		}
		if (family == AF_INET) {
			store_be16(p + IPV4_CSUM_OFF, 0);
			store_be16(p + IPV4_CSUM_OFF, inet_csum(p, IPV4_HLEN));
			if (k->edit == E_IP_CSUM)
				p[IPV4_CSUM_OFF] ^= 0x01;
		}
		/* Partial, as the sender's TCP leaves it: the pseudo-header's sum. */
		store_be16(th + TCP_CSUM_OFF, partial_field(p, family, d->len - l4));
		if (k->edit == E_COMPLETE) {
			store_be16(th + TCP_CSUM_OFF, 0);
			store_be16(th + TCP_CSUM_OFF,
				   pkt_l4_csum(family, p, th, d->len - l4, IPPROTO_TCP));
			d->csum = (struct l4_csum){ 0 };
		}
		if (k->edit == E_CSUM_ELSEWHERE)
			d->csum.offset = 0;
		if (k->edit == E_IP_OPTIONS) {
			/* Four option bytes (NOP NOP NOP EOL) between the header and TCP. */
			memmove(p + IPV4_HLEN + 4, p + IPV4_HLEN, d->len - IPV4_HLEN);
			memcpy(p + IPV4_HLEN, "\x01\x01\x01\x00", 4);
			p[0] = 0x46;
			d->len += 4;
			store_be16(p + IPV4_TOT_LEN_OFF, (uint16_t)d->len);
			store_be16(p + IPV4_CSUM_OFF, 0);
			store_be16(p + IPV4_CSUM_OFF, inet_csum(p, 24));
			d->csum.start = 24;
		}
	}
}

/*
 * The reads 0..n-1 handed out in a row, merged as gateway/tun.c merges them: each one that
 * opens a superpacket takes the ones after it while they join. groups[] gets how many reads
 * each thing that left held; what left is cut into got[]. Returns how many left.
 */
static unsigned run(unsigned n, size_t room, unsigned *groups)
{
	unsigned i = 0, left = 0;

	ngot = 0;
	while (i < n) {
		struct merge m;
		unsigned j = i + 1;

		memcpy(slot_buf, reads[i].pkt, reads[i].len);
		if (!merge_open(&m, slot_buf, reads[i].len, reads[i].mss, reads[i].csum, room)) {
			cut_into(slot_buf, reads[i].len, reads[i].mss, reads[i].csum, got, got_len,
				 &ngot);
			groups[left++] = 1;
			i++;
			continue;
		}
		while (j < n &&
		       merge_add(&m, reads[j].pkt, reads[j].len, reads[j].mss, reads[j].csum))
			j++;
		CHECK_INT(m.reads, j - i);
		merge_finish(&m);
		CHECK(m.len <= room);
		if (m.reads > 1) {
			int family = m.family;
			unsigned segs = 0;

			/* The lengths and the partial field are the superpacket's. */
			if (family == AF_INET) {
				CHECK_INT(load_be16(slot_buf + IPV4_TOT_LEN_OFF), m.len);
				CHECK_INT(inet_csum(slot_buf, IPV4_HLEN), 0);
			} else {
				CHECK_INT(load_be16(slot_buf + IPV6_PLEN_OFF), m.len - IPV6_HLEN);
			}
			CHECK_INT(load_be16(slot_buf + m.l4_off + TCP_CSUM_OFF),
				  partial_field(slot_buf, family, m.len - m.l4_off));
			for (unsigned k = i; k < j; k++)
				segs += reads[k].mss ? (unsigned)((reads[k].len - m.hdr_len +
								   reads[k].mss - 1) /
								  reads[k].mss)
						     : 1;
			CHECK_INT(m.nseg, segs);
		}
		cut_into(slot_buf, m.len, m.reads > 1 ? m.mss : reads[i].mss,
			 m.reads > 1 ? (struct l4_csum){ (uint16_t)m.l4_off, TCP_CSUM_OFF }
				     : reads[i].csum,
			 got, got_len, &ngot);
		groups[left++] = m.reads;
		i = j;
	}
	return left;
}

/* A read of a row: a superpacket of n segments (the last of last bytes), a packet (of MSS, or
 * last bytes); with an edit. */
/* clang-format off */
#define SP(n) { n, true, 0, E_NONE }
#define SPL(n, last) { n, true, last, E_NONE }
#define SPE(n, e) { n, true, 0, e }
#define PK { 1, false, 0, E_NONE }
#define PKL(last) { 1, false, last, E_NONE }
#define PKE(e) { 1, false, 0, e }
/* clang-format on */

static const struct row {
	const char *name;
	int family;
	struct rd_spec rd[MAXREADS];
	unsigned groups[MAXREADS]; /* reads in each thing that left, 0 after the last */
	size_t room;		   /* 0: TX_MERGE_MAX */
} rows[] = {
	{ .name = "superpackets and a packet of one flow: one superpacket",
	  .family = AF_INET,
	  .rd = { SP(4), SP(4), SP(3), PK, SPL(2, 700) },
	  .groups = { 5 } },
	{ .name = "the same over IPv6",
	  .family = AF_INET6,
	  .rd = { SP(4), SP(4), SP(3), PK, SPL(2, 700) },
	  .groups = { 5 } },
	{ .name = "packets: the first one's payload is the segment size",
	  .family = AF_INET,
	  .rd = { PK, PK, SP(3) },
	  .groups = { 3 } },
	{ .name = "a packet smaller than the superpacket's segments after it",
	  .family = AF_INET,
	  .rd = { PKL(1000), SP(3) },
	  .groups = { 1, 1 } },
	{ .name = "a short packet joins and closes",
	  .family = AF_INET,
	  .rd = { SP(2), PKL(700), SP(2) },
	  .groups = { 2, 1 } },
	{ .name = "a superpacket ending short opens nothing",
	  .family = AF_INET,
	  .rd = { SPL(2, 700), SP(2) },
	  .groups = { 1, 1 } },
	{ .name = "another gso_size",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_MSS) },
	  .groups = { 1, 1 } },
	{ .name = "a packet larger than the segments before it",
	  .family = AF_INET,
	  .rd = { SP(2), PKE(E_MSS) },
	  .groups = { 1, 1 } },
	{ .name = "PSH on the first: what follows joins, the PSH goes to the end",
	  .family = AF_INET,
	  .rd = { SPE(2, E_PSH), SP(2) },
	  .groups = { 2 } },
	{ .name = "PSH on a later one: it joins, and what follows",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_PSH), SP(2) },
	  .groups = { 3 } },
	{ .name = "FIN on a later one: it joins and closes",
	  .family = AF_INET6,
	  .rd = { SP(2), SPE(2, E_FIN), SP(2) },
	  .groups = { 2, 1 } },
	{ .name = "a gap in the sequence",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_SEQ_GAP) },
	  .groups = { 1, 1 } },
	{ .name = "the IPv4 identification does not follow",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_ID) },
	  .groups = { 1, 1 } },
	{ .name = "another ACK number",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_ACK) },
	  .groups = { 1, 1 } },
	{ .name = "another window",
	  .family = AF_INET6,
	  .rd = { SP(2), SPE(2, E_WINDOW) },
	  .groups = { 1, 1 } },
	{ .name = "another TOS",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_TOS) },
	  .groups = { 1, 1 } },
	{ .name = "another TTL",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_TTL) },
	  .groups = { 1, 1 } },
	{ .name = "DF cleared",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_DF) },
	  .groups = { 1, 1 } },
	{ .name = "a newer TSval: merged, every segment with the first one's",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_TSVAL), SP(1) },
	  .groups = { 3 } },
	{ .name = "a newer TSecr: merged, every segment with the first one's",
	  .family = AF_INET6,
	  .rd = { PK, PKE(E_TSECR) },
	  .groups = { 2 } },
	{ .name = "an older TSval",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_TS_OLDER) },
	  .groups = { 1, 1 } },
	{ .name = "an older TSecr",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_TSECR_OLDER) },
	  .groups = { 1, 1 } },
	{ .name = "another option byte besides the timestamps",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_OPT) },
	  .groups = { 1, 1 } },
	{ .name = "another flow between",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_PORT), SP(2) },
	  .groups = { 1, 1, 1 } },
	{ .name = "another IPv6 flow label",
	  .family = AF_INET6,
	  .rd = { SP(2), SPE(2, E_FLOW_LABEL) },
	  .groups = { 1, 1 } },
	{ .name = "another hop limit",
	  .family = AF_INET6,
	  .rd = { SP(2), SPE(2, E_HOPS) },
	  .groups = { 1, 1 } },
	{ .name = "a checksum complete, not partial: first",
	  .family = AF_INET,
	  .rd = { PKE(E_COMPLETE), SP(2) },
	  .groups = { 1, 1 } },
	{ .name = "a checksum complete, not partial: later",
	  .family = AF_INET,
	  .rd = { SP(2), PKE(E_COMPLETE) },
	  .groups = { 1, 1 } },
	{ .name = "a checksum left partial elsewhere",
	  .family = AF_INET,
	  .rd = { SP(2), PKE(E_CSUM_ELSEWHERE) },
	  .groups = { 1, 1 } },
	{ .name = "CWR on the first",
	  .family = AF_INET,
	  .rd = { SPE(2, E_CWR), SP(2) },
	  .groups = { 1, 1 } },
	{ .name = "CWR on a later one",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_CWR) },
	  .groups = { 1, 1 } },
	{ .name = "URG on the first",
	  .family = AF_INET,
	  .rd = { SPE(2, E_URG), SP(2) },
	  .groups = { 1, 1 } },
	{ .name = "RST on the first",
	  .family = AF_INET,
	  .rd = { PKE(E_RST), PK },
	  .groups = { 1, 1 } },
	{ .name = "SYN on the first",
	  .family = AF_INET,
	  .rd = { PKE(E_SYN), PK },
	  .groups = { 1, 1 } },
	{ .name = "IPv4 options on a later one",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_IP_OPTIONS) },
	  .groups = { 1, 1 } },
	{ .name = "IPv4 header checksum wrong on a later one",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_IP_CSUM) },
	  .groups = { 1, 1 } },
	{ .name = "an IP length other than the read's",
	  .family = AF_INET,
	  .rd = { SP(2), SPE(2, E_IP_LEN) },
	  .groups = { 1, 1 } },
	{ .name = "not TCP", .family = AF_INET, .rd = { SP(2), PKE(E_UDP) }, .groups = { 1, 1 } },
	{ .name = "up to 64 KB: 40 and 6 segments fit",
	  .family = AF_INET,
	  .rd = { SP(40), SP(6) },
	  .groups = { 2 } },
	{ .name = "up to 64 KB: 40 and 7 segments do not",
	  .family = AF_INET,
	  .rd = { SP(40), SP(7) },
	  .groups = { 1, 1 } },
	{ .name = "the room given: one more segment fits, two do not",
	  .family = AF_INET,
	  .rd = { SP(2), PK, PK },
	  .groups = { 2, 1 },
	  .room = IPV4_HLEN + TCP_HLEN + OPT_LEN + 3 * MSS },
};

int main(void)
{
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		const struct row *k = &rows[r];
		unsigned n = 0, ng = 0, groups[MAXREADS] = { 0 }, left;
		bool same = true, odd = false;

		while (n < MAXREADS && k->rd[n].nseg) {
			/* A read shorter than its header says, or its checksum's place wrong:
			 * cut, it is no valid packet, merged or not. */
			odd = odd || k->rd[n].edit == E_IP_LEN || k->rd[n].edit == E_CSUM_ELSEWHERE;
			n++;
		}
		while (ng < MAXREADS && k->groups[ng])
			ng++;
		build(k->family, k->rd, n);
		nwant = 0;
		for (unsigned i = 0; i < n; i++) {
			want_first[i] = nwant;
			cut_into(reads[i].pkt, reads[i].len, reads[i].mss, reads[i].csum, want,
				 want_len, &nwant);
		}
		want_first[n] = nwant;
		bad_fields = 0;
		left = run(n, k->room ? k->room : TX_MERGE_MAX, groups);
		CHECK_ROW(left == ng, k->name);
		for (unsigned i = 0, first = 0; i < ng && i < left; first += groups[i++]) {
			CHECK_ROW(groups[i] == k->groups[i], k->name);
			if (groups[i] > 1)
				as_merged(want_first[first], want_first[first + groups[i]]);
		}
		/* Whatever merged: the segments the kernel cuts are the reads' own, in order. */
		CHECK_ROW(ngot == nwant, k->name);
		for (unsigned i = 0; i < ngot && i < nwant; i++)
			same = same && got_len[i] == want_len[i] &&
			       memcmp(got[i], want[i], want_len[i]) == 0;
		CHECK_ROW(same, k->name);
		CHECK_ROW(bad_fields == 0, k->name);
		/* And those segments are valid packets with right checksums (the builder's own
		 * check: a test of nothing otherwise). */
		for (unsigned i = 0; i < nwant; i++) {
			int family = (want[i][0] >> 4) == 6 ? AF_INET6 : AF_INET;
			unsigned l4 = family == AF_INET6 ? IPV6_HLEN : (want[i][0] & 0x0fu) * 4u;

			if (want[i][ip_proto_off(family)] == IPPROTO_TCP && !odd)
				CHECK_ROW(pkt_l4_csum(family, want[i], want[i] + l4,
						      want_len[i] - l4, IPPROTO_TCP) == 0,
					  k->name);
		}
		printf("row: %s: %u read(s) left as %u\n", k->name, n, left);
	}
	return check_done("test_merge");
}
