/*
 * AF_PACKET receive rings with fanout and a BPF filter (see rx.h; Linux
 * Documentation/networking/packet_mmap.rst).
 */
#include "rx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "byteorder.h"
#include "clock.h"
#include "inet.h"

enum {
	V3_BLOCK_SIZE = 1 << 20, /* holds a 64 KB GRO packet many times over */
	V3_BLOCKS = 16,		 /* 16 MiB per worker */
	V3_RETIRE_MS = 1,	 /* a partly filled block goes to the worker after 1 ms */
	V2_FRAMES = 4096,	 /* per worker; frames are sized to the outer MTU */
	FRAME_OVERHEAD = 128,	 /* tpacket2_hdr, sockaddr_ll and alignment before the data */
};

/*
 * Accepts IPv4 or IPv6 GRE addressed to local; everything else stays out of the ring. The
 * source is checked in userspace, so that GRE from an unknown peer is counted, not unseen.
 */
static int attach_filter(int fd, int family, const uint8_t *local)
{
	struct sock_filter v4[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x40, 0, 5),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_GRE_NUM, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 16),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_filter v6[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x60, 0, 11),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_GRE_NUM, 0, 9),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 24),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local), 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 28),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 4), 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 32),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 8), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 36),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, load_be32(local + 12), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {
		.len = family == AF_INET6 ? sizeof(v6) / sizeof(v6[0]) : sizeof(v4) / sizeof(v4[0]),
		.filter = family == AF_INET6 ? v6 : v4,
	};

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -errno;
	return 0;
}

static int setup_ring(struct rx_ring *r, const struct rx_cfg *cfg)
{
	int version = cfg->kind == RX_RING_V3 ? TPACKET_V3 : TPACKET_V2;

	if (setsockopt(r->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0)
		return -errno;
	if (cfg->kind == RX_RING_V3) {
		struct tpacket_req3 req = {
			.tp_block_size = V3_BLOCK_SIZE,
			.tp_block_nr = V3_BLOCKS,
			.tp_frame_size = 2048,
			.tp_frame_nr = V3_BLOCK_SIZE / 2048 * V3_BLOCKS,
			.tp_retire_blk_tov = V3_RETIRE_MS,
			.tp_feature_req_word = TP_FT_REQ_FILL_RXHASH,
		};

		if (setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
			return -errno;
		r->nblocks = req.tp_block_nr;
		r->block_size = req.tp_block_size;
		r->map_len = (size_t)req.tp_block_size * req.tp_block_nr;
	} else {
		struct tpacket_req req;
		unsigned frame = TPACKET_ALIGN(cfg->frame_max + FRAME_OVERHEAD);
		unsigned per_page, block;

		/* Frames may not straddle blocks: make a block a whole number of frames. */
		block = (unsigned)getpagesize();
		while (block < frame)
			block <<= 1;
		per_page = block / frame;
		req.tp_frame_size = frame;
		req.tp_block_size = block;
		req.tp_block_nr = (V2_FRAMES + per_page - 1) / per_page;
		req.tp_frame_nr = req.tp_block_nr * per_page;
		if (setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
			return -errno;
		r->nframes = req.tp_frame_nr;
		r->frame_size = frame;
		r->frames_per_block = per_page;
		r->block_size = block;
		r->nblocks = req.tp_block_nr;
		r->map_len = (size_t)req.tp_block_size * req.tp_block_nr;
	}
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, r->fd, 0);
	if (r->map == MAP_FAILED) {
		/* MAP_LOCKED can fail under RLIMIT_MEMLOCK; the ring works unlocked too. */
		r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->map == MAP_FAILED) {
			r->map = NULL;
			return -errno;
		}
	}
	return 0;
}

int rx_open(struct rx_ring *r, const struct rx_cfg *cfg)
{
	uint16_t proto = cfg->family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP;
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(proto),
		.sll_ifindex = cfg->ifindex,
	};
	int fanout, rc;

	memset(r, 0, sizeof(*r));
	r->kind = cfg->kind;
	/* SOCK_DGRAM: data starts at the network header. Bound to one protocol, the socket sits
	 * in ptype_base and sees received packets only, never our own transmissions. */
	r->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->fd < 0)
		return -errno;
	/* The filter goes on before the bind, so no unfiltered packet slips in between. */
	rc = attach_filter(r->fd, cfg->family, cfg->local);
	if (rc)
		goto err;
	rc = setup_ring(r, cfg);
	if (rc)
		goto err;
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		rc = -errno;
		goto err;
	}
	/* Outer fragments are reassembled before the hash, so both halves meet one worker. */
	fanout = (int)((cfg->fanout_group & 0xffffu) |
		       ((unsigned)(PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG) << 16));
	if (setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) < 0) {
		rc = -errno;
		goto err;
	}
	return 0;
err:
	rx_close(r);
	return rc;
}

void rx_close(struct rx_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	r->map = NULL;
	r->fd = -1;
}

static uint32_t load_status(volatile uint32_t *s)
{
	return __atomic_load_n(s, __ATOMIC_ACQUIRE);
}

static void give_back(volatile uint32_t *s)
{
	__atomic_store_n(s, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

static bool next_v3(struct rx_ring *r, struct rx_pkt *p)
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
	p->data = r->next + h->tp_net;
	p->caplen = h->tp_snaplen;
	p->wirelen = h->tp_len;
	p->rxhash = h->hv1.tp_rxhash;
	p->queued = (uint64_t)h->tp_sec * NSEC_PER_SEC + h->tp_nsec;
	r->next += h->tp_next_offset;
	r->left--;
	return true;
}

/* Frames fill each block from its start; a block's tail may be left unused. */
static struct tpacket2_hdr *frame_v2(const struct rx_ring *r, unsigned i)
{
	return (struct tpacket2_hdr *)(r->map + (size_t)(i / r->frames_per_block) * r->block_size +
				       (size_t)(i % r->frames_per_block) * r->frame_size);
}

static bool next_v2(struct rx_ring *r, struct rx_pkt *p)
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
	p->data = (uint8_t *)h + h->tp_net;
	p->caplen = h->tp_snaplen;
	p->wirelen = h->tp_len;
	p->rxhash = 0;
	p->queued = (uint64_t)h->tp_sec * NSEC_PER_SEC + h->tp_nsec;
	r->held = true;
	return true;
}

bool rx_next(struct rx_ring *r, struct rx_pkt *p)
{
	return r->kind == RX_RING_V3 ? next_v3(r, p) : next_v2(r, p);
}

uint64_t rx_ring_drops(struct rx_ring *r)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		return 0;
	return st.tp_drops;
}

int rx_sink_open(int family)
{
	struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = drop_all };
	int fd, one = 1;

	fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_GRE);
	if (fd < 0)
		return -errno;
	/* Refuse everything; nothing may queue up in a socket nobody reads. */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}
