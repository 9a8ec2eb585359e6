/*
 * The packet ring's geometry (common/pktring.c): what gregw's receive rings and
 * tunbed-framebench's ring receiver ask the kernel for. TPACKET_V2 frames of the link's MTU
 * and their headers, whole in blocks of a page (or the smallest power of two that holds one),
 * 4096 of them or the next whole block; TPACKET_V3's fixed blocks.
 */
#include <linux/if_packet.h>

#include "check.h"
#include "pktring.h"

struct row {
	const char *name;
	unsigned frame_max, page;
	unsigned frame, block, per_block, blocks, frames;
};

static const struct row rows[] = {
	/* A 1500-byte link: 1628 bytes a frame, aligned to 16; two to a 4 KiB page. */
	{ "mtu 1500", 1500, 4096, 1632, 4096, 2, 2048, 4096 },
	/* Jumbo frames: a block of 16 KiB holds one. */
	{ "mtu 9000", 9000, 4096, 9136, 16384, 1, 4096, 4096 },
	/* A frame that fills a page to the byte. */
	{ "page exactly", 4096 - 128, 4096, 4096, 4096, 1, 4096, 4096 },
	/* 64 KiB pages (arm64, ppc64): 40 frames a block, the last block whole. */
	{ "64k pages", 1500, 65536, 1632, 65536, 40, 103, 4120 },
};

int main(void)
{
	struct tpacket_req3 req;

	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		unsigned per = pktring_geometry(PKTRING_V2, r->frame_max, r->page, &req);

		CHECK_ROW(req.tp_frame_size == r->frame, r->name);
		CHECK_ROW(req.tp_block_size == r->block, r->name);
		CHECK_ROW(per == r->per_block, r->name);
		CHECK_ROW(req.tp_block_nr == r->blocks, r->name);
		CHECK_ROW(req.tp_frame_nr == r->frames, r->name);
		/* What the kernel checks (packet_set_ring): frames whole in blocks, the count
		 * frames per block times blocks, at least PKTRING_V2_FRAMES of them. */
		CHECK_ROW(req.tp_frame_size % TPACKET_ALIGNMENT == 0, r->name);
		CHECK_ROW(req.tp_frame_size >= r->frame_max + PKTRING_FRAME_OVERHEAD, r->name);
		CHECK_ROW(req.tp_block_size / req.tp_frame_size == per, r->name);
		CHECK_ROW(req.tp_frame_nr == per * req.tp_block_nr, r->name);
		CHECK_ROW(req.tp_frame_nr >= PKTRING_V2_FRAMES, r->name);
		CHECK_ROW(req.tp_retire_blk_tov == 0 && req.tp_feature_req_word == 0, r->name);
	}

	/* V3: 16 blocks of 1 MiB, retired after 1 ms, with the kernel's flow hash. */
	CHECK_INT(pktring_geometry(PKTRING_V3, 1500, 4096, &req), 0);
	CHECK_INT(req.tp_block_size, 1 << 20);
	CHECK_INT(req.tp_block_nr, 16);
	CHECK_INT(req.tp_frame_size, 2048);
	CHECK_INT(req.tp_frame_nr, 16 * (1 << 20) / 2048);
	CHECK_INT(req.tp_retire_blk_tov, 1);
	CHECK_INT(req.tp_feature_req_word, TP_FT_REQ_FILL_RXHASH);
	return check_done("test_pktring");
}
