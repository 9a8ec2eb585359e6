/*
 * The packet socket's receive ring (see pktring.h; Linux
 * Documentation/networking/packet_mmap.rst).
 */
#include "pktring.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

unsigned pktring_geometry(enum pktring_kind kind, unsigned frame_max, unsigned page,
			  struct tpacket_req3 *req)
{
	unsigned frame, block, per_block;

	memset(req, 0, sizeof(*req));
	if (kind == PKTRING_V3) {
		req->tp_block_size = PKTRING_V3_BLOCK_SIZE;
		req->tp_block_nr = PKTRING_V3_BLOCKS;
		req->tp_frame_size = PKTRING_V3_FRAME;
		req->tp_frame_nr = PKTRING_V3_BLOCK_SIZE / PKTRING_V3_FRAME * PKTRING_V3_BLOCKS;
		req->tp_retire_blk_tov = PKTRING_V3_RETIRE_MS;
		req->tp_feature_req_word = TP_FT_REQ_FILL_RXHASH;
		return 0;
	}
	/* Frames may not straddle blocks: make a block a whole number of frames. */
	frame = TPACKET_ALIGN(frame_max + PKTRING_FRAME_OVERHEAD);
	block = page;
	while (block < frame)
		block <<= 1;
	per_block = block / frame;
	req->tp_frame_size = frame;
	req->tp_block_size = block;
	req->tp_block_nr = (PKTRING_V2_FRAMES + per_block - 1) / per_block;
	req->tp_frame_nr = req->tp_block_nr * per_block;
	return per_block;
}

int pktring_map(struct pktring *r, int fd, enum pktring_kind kind, unsigned frame_max,
		bool vnet_hdr)
{
	int version = kind == PKTRING_V3 ? TPACKET_V3 : TPACKET_V2;
	struct tpacket_req3 req;
	unsigned per_block;
	int rc;

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->fd = fd;
	r->vnet_hdr = vnet_hdr;
	per_block = pktring_geometry(kind, frame_max, (unsigned)getpagesize(), &req);
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0)
		return -errno;
	/* V2 takes the request's first four fields: a struct tpacket_req. */
	rc = kind == PKTRING_V3
		     ? setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req))
		     : setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(struct tpacket_req));
	if (rc < 0)
		return -errno;
	r->nblocks = req.tp_block_nr;
	r->block_size = req.tp_block_size;
	r->nframes = kind == PKTRING_V2 ? req.tp_frame_nr : 0;
	r->frame_size = kind == PKTRING_V2 ? req.tp_frame_size : 0;
	r->frames_per_block = per_block;
	r->map_len = (size_t)req.tp_block_size * req.tp_block_nr;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, fd, 0);
	if (r->map == MAP_FAILED) {
		/* MAP_LOCKED can fail under RLIMIT_MEMLOCK; the ring works unlocked too. */
		r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r->map == MAP_FAILED) {
			r->map = NULL;
			return -errno;
		}
	}
	return 0;
}

void pktring_unmap(struct pktring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
}

static uint32_t load_status(volatile uint32_t *s)
{
	return __atomic_load_n(s, __ATOMIC_ACQUIRE);
}

static void give_back(volatile uint32_t *s)
{
	__atomic_store_n(s, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

/*
 * A packet whose header starts at hdr: the kernel's offsets count from there (tp_mac, tp_net)
 * and its lengths from tp_mac. With virtio headers the kernel wrote one just before tp_mac.
 */
static void set_pkt(const struct pktring *r, struct pktring_pkt *p, uint8_t *hdr, unsigned mac,
		    unsigned net, uint32_t snaplen, uint32_t len, uint32_t status)
{
	p->mac = hdr + mac;
	p->mac_len = net > mac ? net - mac : 0;
	p->snaplen = snaplen;
	p->len = len;
	p->status = status;
	memset(&p->vnet, 0, sizeof(p->vnet));
	if (r->vnet_hdr && mac >= sizeof(p->vnet))
		memcpy(&p->vnet, hdr + mac - sizeof(p->vnet), sizeof(p->vnet));
}

static bool next_v3(struct pktring *r, struct pktring_pkt *p)
{
	struct tpacket_block_desc *bd;
	struct tpacket3_hdr *h;

	if (r->held && r->left == 0) {
		bd = (struct tpacket_block_desc *)(r->map + (size_t)r->cur * r->block_size);
		give_back(&bd->hdr.bh1.block_status);
		r->cur = (r->cur + 1) % r->nblocks;
		r->held = false;
	}
	if (!r->held) {
		bd = (struct tpacket_block_desc *)(r->map + (size_t)r->cur * r->block_size);
		if (!(load_status(&bd->hdr.bh1.block_status) & TP_STATUS_USER))
			return false;
		r->left = bd->hdr.bh1.num_pkts;
		r->next = (uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt;
		r->held = true;
		if (r->left == 0)
			return next_v3(r, p);
	}
	h = (struct tpacket3_hdr *)r->next;
	set_pkt(r, p, r->next, h->tp_mac, h->tp_net, h->tp_snaplen, h->tp_len, h->tp_status);
	p->rxhash = h->hv1.tp_rxhash;
	p->queued = (uint64_t)h->tp_sec * NSEC_PER_SEC + h->tp_nsec;
	r->next += h->tp_next_offset;
	r->left--;
	return true;
}

/* Frames fill each block from its start; a block's tail may be left unused. */
static struct tpacket2_hdr *frame_v2(const struct pktring *r, unsigned i)
{
	return (struct tpacket2_hdr *)(r->map + (size_t)(i / r->frames_per_block) * r->block_size +
				       (size_t)(i % r->frames_per_block) * r->frame_size);
}

static bool next_v2(struct pktring *r, struct pktring_pkt *p)
{
	struct tpacket2_hdr *h;

	if (r->held) {
		give_back(&frame_v2(r, r->cur)->tp_status);
		r->cur = (r->cur + 1) % r->nframes;
		r->held = false;
	}
	h = frame_v2(r, r->cur);
	if (!(load_status(&h->tp_status) & TP_STATUS_USER))
		return false;
	set_pkt(r, p, (uint8_t *)h, h->tp_mac, h->tp_net, h->tp_snaplen, h->tp_len, h->tp_status);
	p->rxhash = 0;
	p->queued = (uint64_t)h->tp_sec * NSEC_PER_SEC + h->tp_nsec;
	r->held = true;
	return true;
}

bool pktring_next(struct pktring *r, struct pktring_pkt *p)
{
	return r->kind == PKTRING_V3 ? next_v3(r, p) : next_v2(r, p);
}

uint64_t pktring_drops(const struct pktring *r)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		return 0;
	return st.tp_drops;
}
