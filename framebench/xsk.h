/*
 * An AF_XDP socket in copy mode on queue 0 of an interface (Linux
 * Documentation/networking/af_xdp.rst): its umem of FB_XSK_FRAMES chunks, the fill and
 * completion rings, a receive or a transmit ring; and the XDP program that redirects an
 * interface's frames to it, attached natively (the driver's hook) or generically (the
 * kernel's, after the skb is built).
 */
#ifndef TUNBED_FB_XSK_H
#define TUNBED_FB_XSK_H

#include <linux/if_xdp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fb_limits.h"

/* One of the four single-producer rings the kernel shares with us. */
struct xsk_ring {
	uint32_t *producer, *consumer;
	void *entries; /* struct xdp_desc (rx, tx) or uint64_t addresses (fill, completion) */
	void *map;
	size_t map_len;
};

struct xsk {
	int fd;
	uint8_t *umem;
	size_t umem_len;
	struct xsk_ring fill, comp, rx, tx;
};

enum xsk_dir {
	XSK_RX,
	XSK_TX,
};

/* The entry i of a ring of FB_XSK_FRAMES entries. */
#define XSK_ENTRY(ring, type, i) (&((type *)(ring)->entries)[(i) & (FB_XSK_FRAMES - 1)])

/*
 * Opens the socket for dir on queue 0 of ifindex, copy mode, its rings mapped; for XSK_RX
 * with every chunk on the fill ring. Returns 0 or -errno (EAFNOSUPPORT: a kernel without
 * AF_XDP). Releases what it took on failure.
 */
int xsk_open(struct xsk *x, int ifindex, enum xsk_dir dir);
void xsk_close(struct xsk *x);

/*
 * Attaches an XDP program to ifindex that redirects every frame of its receive queue 0 to the
 * socket of x (an XSKMAP of one entry), through the driver's hook, or the kernel's with
 * generic. Returns the BPF link's fd (closing it detaches) or -errno.
 */
int xsk_redirect_attach(int ifindex, const struct xsk *x, bool generic);

/* An acquire load of a ring's index the kernel writes; a release store of one we write. */
static inline uint32_t xsk_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void xsk_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#endif
