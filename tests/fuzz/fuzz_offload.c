/*
 * libFuzzer harness for gregw's offload parsers. The first byte picks the side:
 * even - a packet read from TUN: a virtio header (10 bytes) and the packet go through
 *        gso_parse; every segment gso_segment writes must be a well-formed packet of the
 *        expected size whose payload lies inside the input;
 * odd  - packets from the tunnel: 2-byte big-endian lengths, each followed by that many
 *        bytes, go through coalesce_add; whatever comes out must fit in 64 KB, and a superpacket
 *        cut again by gso must give back as many segments as were merged into it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "coalesce.h"
#include "gso.h"
#include "inet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t pkt[65536 + 16], seg[GSO_HDR_MAX + 65536], mem[COALESCE_FLOWS * COALESCE_BUF],
	again[65536];

/* Every segment: a whole IP packet of its length, its transport checksum right (once
 * completed, when partial). */
static void check_segments(const struct gso_pkt *g, bool partial)
{
	size_t total = 0;

	for (unsigned i = 0; i < g->nseg; i++) {
		size_t plen = gso_segment(g, i, seg, partial), len = g->hdr_len + plen;
		struct ip_info ip;
		uint32_t sum;

		if (plen == 0 || plen > g->mss)
			abort();
		total += plen;
		memcpy(seg + g->hdr_len, g->pkt + g->hdr_len + (size_t)i * g->mss, plen);
		if (partial)
			inet_csum_finish(seg + g->l4_off, len - g->l4_off, NULL, 0, gso_csum(g));
		if (ip_parse(seg, len, true, &ip) < 0 || ip.tot_len != len)
			abort();
		sum = inet_pseudo_sum(ip.family, ip.src, ip.dst, g->l4,
				      (uint32_t)(len - g->l4_off));
		if (inet_csum_fold(inet_csum_add(sum, seg + g->l4_off, len - g->l4_off)) != 0)
			abort();
	}
	if (total != g->len - g->hdr_len)
		abort();
}

static void emitted(void *ctx, const struct virtio_net_hdr *h, const uint8_t *p, size_t len,
		    unsigned nseg)
{
	struct gso_pkt g;

	(void)ctx;
	if (len > SUPERPACKET_MAX || nseg == 0)
		abort();
	if (nseg == 1)
		return;
	memcpy(again, p, len);
	if (gso_parse(h, again, len, 65535, &g) != DROP_NONE || g.nseg != nseg)
		abort();
	check_segments(&g, false);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct coalescer coal;
	struct l4_csum cs, partial = { 0 };

	if (size < 1)
		return 0;
	if (!(data[0] & 1)) {
		struct virtio_net_hdr h;
		struct gso_pkt g;

		if (size < 1 + sizeof(h) || size - 1 - sizeof(h) > 65536)
			return 0;
		memcpy(&h, data + 1, sizeof(h));
		size -= 1 + sizeof(h);
		memcpy(pkt, data + 1 + sizeof(h), size);
		if (gso_parse(&h, pkt, size, 1 + data[0] * 64u, &g) == DROP_NONE && g.nseg)
			check_segments(&g, data[0] & 4);
		return 0;
	}
	coalesce_init(&coal, mem);
	for (size_t off = 1; off + 2 <= size;) {
		size_t len = load_be16(data + off);

		off += 2;
		if (len > size - off)
			len = size - off;
		memcpy(pkt, data + off, len);
		/* Every other packet as if left partial by a sender on this host. */
		if ((data[0] & 2) && (off & 2)) {
			struct ip_info ip;

			if (ip_parse(pkt, len, false, &ip) >= 0 && inet_l4_csum_at(len, &ip, &cs))
				partial = cs;
		}
		coalesce_add(&coal, pkt, len, partial, emitted, NULL);
		partial = (struct l4_csum){ 0 };
		off += len;
	}
	coalesce_flush(&coal, emitted, NULL);
	return 0;
}
