/*
 * AF_XDP (see xsk.h): the socket, its umem and rings set up with setsockopt and mmap, and the
 * redirect program written out as eBPF instructions (ebpf.h).
 */
#include "xsk.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ebpf.h"
#include "fb_limits.h"

/* xdp_md's rx_queue_index (uapi/linux/bpf.h): the key of the frame's socket in the map. */
enum { XDP_MD_RX_QUEUE_OFF = 16 };

static int map_ring(int fd, const struct xdp_ring_offset *o, size_t entry, off_t pgoff,
		    struct xsk_ring *r)
{
	uint8_t *m;

	r->map_len = o->desc + (size_t)FB_XSK_FRAMES * entry;
	m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
	if (m == MAP_FAILED)
		return -errno;
	r->map = m;
	r->producer = (uint32_t *)(m + o->producer);
	r->consumer = (uint32_t *)(m + o->consumer);
	r->entries = m + o->desc;
	return 0;
}

static void unmap_ring(struct xsk_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
}

static int set_ring(int fd, int opt)
{
	int n = FB_XSK_FRAMES;

	return setsockopt(fd, SOL_XDP, opt, &n, sizeof(n)) < 0 ? -errno : 0;
}

/* The socket's rings: fill and completion always (the kernel binds no umem without both). */
static int rings(struct xsk *x, enum xsk_dir dir)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	int rc;

	rc = set_ring(x->fd, XDP_UMEM_FILL_RING);
	if (!rc)
		rc = set_ring(x->fd, XDP_UMEM_COMPLETION_RING);
	if (!rc)
		rc = set_ring(x->fd, dir == XSK_RX ? XDP_RX_RING : XDP_TX_RING);
	if (rc)
		return rc;
	if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len) < 0)
		return -errno;
	rc = map_ring(x->fd, &off.fr, sizeof(uint64_t), (off_t)XDP_UMEM_PGOFF_FILL_RING, &x->fill);
	if (!rc)
		rc = map_ring(x->fd, &off.cr, sizeof(uint64_t),
			      (off_t)XDP_UMEM_PGOFF_COMPLETION_RING, &x->comp);
	if (!rc && dir == XSK_RX)
		rc = map_ring(x->fd, &off.rx, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING, &x->rx);
	if (!rc && dir == XSK_TX)
		rc = map_ring(x->fd, &off.tx, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING, &x->tx);
	return rc;
}

int xsk_open(struct xsk *x, int ifindex, enum xsk_dir dir)
{
	struct xdp_umem_reg reg = { .chunk_size = FB_XSK_CHUNK };
	struct sockaddr_xdp sxdp = {
		.sxdp_family = AF_XDP,
		.sxdp_ifindex = (uint32_t)ifindex,
		.sxdp_flags = XDP_COPY,
	};
	int rc;

	memset(x, 0, sizeof(*x));
	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0)
		return -errno;
	x->umem_len = (size_t)FB_XSK_FRAMES * FB_XSK_CHUNK;
	x->umem = mmap(NULL, x->umem_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->umem == MAP_FAILED) {
		rc = -errno;
		x->umem = NULL;
		goto fail;
	}
	reg.addr = (uint64_t)(uintptr_t)x->umem;
	reg.len = x->umem_len;
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = rings(x, dir);
	if (rc)
		goto fail;
	if (dir == XSK_RX) {
		for (uint32_t i = 0; i < FB_XSK_FRAMES; i++)
			*XSK_ENTRY(&x->fill, uint64_t, i) = (uint64_t)i * FB_XSK_CHUNK;
		xsk_store(x->fill.producer, FB_XSK_FRAMES);
	}
	if (bind(x->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)) < 0) {
		rc = -errno;
		goto fail;
	}
	return 0;
fail:
	xsk_close(x);
	return rc;
}

void xsk_close(struct xsk *x)
{
	unmap_ring(&x->tx);
	unmap_ring(&x->rx);
	unmap_ring(&x->comp);
	unmap_ring(&x->fill);
	if (x->umem)
		munmap(x->umem, x->umem_len);
	x->umem = NULL;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

/* bpf_redirect_map(map, ctx->rx_queue_index, XDP_PASS): a frame of a queue without a socket
 * goes on to the stack. Returns the program's fd or -errno. */
static int redirect_prog(int map)
{
	const struct bpf_insn p[] = {
		EBPF_LDX_MEM(BPF_W, BPF_REG_2, BPF_REG_1, XDP_MD_RX_QUEUE_OFF),
		EBPF_LD_MAP_FD(BPF_REG_1, map),
		EBPF_ALU64_IMM(BPF_MOV, BPF_REG_3, XDP_PASS),
		EBPF_CALL(BPF_FUNC_redirect_map),
		EBPF_EXIT(),
	};

	return ebpf_prog_load_for(BPF_PROG_TYPE_XDP, BPF_XDP, p, sizeof(p) / sizeof(p[0]));
}

int xsk_redirect_attach(int ifindex, const struct xsk *x, bool generic)
{
	uint32_t key = 0, value = (uint32_t)x->fd;
	int map, prog, rc;

	map = ebpf_map_create(BPF_MAP_TYPE_XSKMAP, sizeof(key), sizeof(value), 1);
	if (map < 0)
		return map;
	rc = ebpf_map_update(map, &key, &value);
	if (rc)
		goto out;
	prog = redirect_prog(map);
	if (prog < 0) {
		rc = prog;
		goto out;
	}
	rc = ebpf_link_create(prog, ifindex, BPF_XDP,
			      generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	close(prog); /* the link holds the program, the program the map */
out:
	close(map);
	return rc;
}
