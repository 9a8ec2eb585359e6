/*
 * The four senders (see send.h): packet(7)'s sendmmsg and TX ring (Linux
 * Documentation/networking/packet_mmap.rst), AF_XDP's TX ring (af_xdp.rst), and a TAP with a
 * virtio header (Documentation/networking/tuntap.rst; what the kernel checks of the header:
 * drivers/net/tun_vnet.h and include/linux/virtio_net.h).
 */
#include "send.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "byteorder.h"
#include "clock.h"
#include "fd.h"
#include "fb_limits.h"
#include "tcx.h"
#include "uapi_newer.h"
#include "xsk.h"

enum { VNET_LEN = sizeof(struct virtio_net_hdr) };

/*
 * What a batch is cut from, as a gateway cuts segments from a superpacket it read: one frame's
 * headers, and FB_BATCH payloads one after the other.
 */
struct source {
	uint8_t hdr[FRAME_HLEN];
	uint8_t payload[FB_BATCH * (ETH_FRAME_LEN - FRAME_HLEN)];
	size_t plen; /* a frame's payload */
};

static const uint8_t *payload_of(const struct source *s, unsigned i)
{
	return s->payload + (size_t)i * s->plen;
}

static bool done(const struct send_cfg *c, const struct send_result *r)
{
	return (c->frames && r->frames >= c->frames) ||
	       (c->until_ns && clock_mono_ns() >= c->until_ns);
}

/* Frames to put in the next batch, sent already: FB_BATCH, or what is left of cfg->frames. */
static unsigned batch(const struct send_cfg *c, uint64_t sent)
{
	if (c->frames && c->frames - sent < FB_BATCH)
		return (unsigned)(c->frames - sent);
	return FB_BATCH;
}

/* The virtio header before a frame: its inner checksum partial, or complete. */
static void vnet_fill(uint8_t *p, bool partial)
{
	struct virtio_net_hdr h = { 0 };

	if (partial) {
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.csum_start = htole16(FRAME_L4_OFF);
		h.csum_offset = htole16(TCP_CSUM_OFF);
	}
	memcpy(p, &h, sizeof(h));
}

/* Writes frame i of a batch whole at p (a ring's slot): headers and a copy of its payload,
 * the checksum completed when asked. */
static void frame_put(uint8_t *p, const struct source *s, unsigned i, bool csum_full)
{
	memcpy(p, s->hdr, FRAME_HLEN);
	memcpy(p + FRAME_HLEN, payload_of(s, i), s->plen);
	if (csum_full)
		frame_csum_complete(p, p + FRAME_HLEN, s->plen);
}

static struct sockaddr_ll dest(const struct send_cfg *c)
{
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET,
		.sll_ifindex = c->ifindex,
		.sll_halen = ETH_ALEN,
	};

	memcpy(ll.sll_addr, c->frame.dst, ETH_ALEN);
	return ll;
}

/* sendmmsg as gregw does: each message's virtio and frame headers written before every call,
 * its payload where the source holds it (the kernel copies it). */
static int run_mmsg(const struct send_cfg *c, const struct source *src, struct send_result *r)
{
	static uint8_t hdrs[FB_BATCH][VNET_LEN + FRAME_HLEN];
	struct mmsghdr msgs[FB_BATCH];
	struct iovec iov[FB_BATCH][2];
	struct sockaddr_ll ll = dest(c);
	int fd, one = 1, rc = 0;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0)
		return fd_close_err(fd);
	for (unsigned i = 0; i < FB_BATCH; i++) {
		vnet_fill(hdrs[i], !c->csum_full);
		iov[i][0] = (struct iovec){ hdrs[i], sizeof(hdrs[i]) };
		iov[i][1] = (struct iovec){ (void *)payload_of(src, i), src->plen };
		msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &ll,
							 .msg_namelen = sizeof(ll),
							 .msg_iov = iov[i],
							 .msg_iovlen = 2 } };
	}
	while (!done(c, r)) {
		unsigned n = batch(c, r->frames);
		int sent;

		for (unsigned i = 0; i < n; i++) {
			uint8_t *hdr = hdrs[i] + VNET_LEN;

			memcpy(hdr, src->hdr, FRAME_HLEN);
			if (c->csum_full)
				frame_csum_complete(hdr, payload_of(src, i), src->plen);
		}
		sent = sendmmsg(fd, msgs, n, 0);
		if (sent < 0 && errno != EINTR && errno != ENOBUFS) {
			rc = -errno;
			break;
		}
		r->calls++;
		if (sent > 0)
			r->frames += (uint64_t)sent;
	}
	close(fd);
	return rc;
}

/* The TX ring's slot i: its header, and where the data goes (after the virtio header). */
static struct tpacket2_hdr *slot(uint8_t *map, unsigned i)
{
	return (struct tpacket2_hdr *)(map + (size_t)i * FB_TXRING_FRAME);
}

static uint8_t *slot_data(struct tpacket2_hdr *h)
{
	return (uint8_t *)h + TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
}

static int txring_open(size_t *map_len, uint8_t **map, int ifindex)
{
	struct tpacket_req req = {
		.tp_block_size = 2 * FB_TXRING_FRAME,
		.tp_block_nr = FB_TXRING_FRAMES / 2,
		.tp_frame_size = FB_TXRING_FRAME,
		.tp_frame_nr = FB_TXRING_FRAMES,
	};
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_ifindex = ifindex };
	int fd, one = 1, version = TPACKET_V2;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Options before the ring: the kernel refuses them once it exists. */
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0 ||
	    bind(fd, (struct sockaddr *)&ll, sizeof(ll)) < 0)
		return fd_close_err(fd);
	*map_len = (size_t)FB_TXRING_FRAMES * FB_TXRING_FRAME;
	*map = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (*map == MAP_FAILED)
		return fd_close_err(fd);
	return fd;
}

/* The TX ring: up to FB_BATCH free slots written, then one send for all. A blocking send
 * returns once the kernel has sent them, so every slot is free again. */
static int run_txring(const struct send_cfg *c, const struct source *src, struct send_result *r)
{
	uint8_t *map;
	size_t map_len;
	unsigned cur = 0;
	int fd, rc = 0;

	fd = txring_open(&map_len, &map, c->ifindex);
	if (fd < 0)
		return fd;
	while (!done(c, r)) {
		unsigned n = 0, want = batch(c, r->frames);

		for (; n < want; n++) {
			struct tpacket2_hdr *h = slot(map, cur);
			uint8_t *d = slot_data(h);

			if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE)
				break;
			vnet_fill(d, !c->csum_full);
			frame_put(d + VNET_LEN, src, n, c->csum_full);
			h->tp_len = (uint32_t)(VNET_LEN + c->frame.len);
			__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
			cur = (cur + 1) % FB_TXRING_FRAMES;
		}
		if (send(fd, NULL, 0, 0) < 0 && errno != EINTR && errno != ENOBUFS) {
			rc = -errno;
			break;
		}
		r->calls++;
		r->frames += n;
	}
	munmap(map, map_len);
	close(fd);
	return rc;
}

/* AF_XDP: chunks come back on the completion ring, are written and queued on the TX ring,
 * and one kick a batch makes the kernel send them (copy mode: it builds an skb of each). */
static int run_xsk(const struct send_cfg *c, const struct source *src, struct send_result *r)
{
	static uint64_t free_chunks[FB_XSK_FRAMES];
	struct xsk x;
	uint32_t nfree = FB_XSK_FRAMES, tx_prod, comp_cons;
	uint64_t queued = 0;
	int rc;

	rc = xsk_open(&x, c->ifindex, XSK_TX);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < FB_XSK_FRAMES; i++)
		free_chunks[i] = (uint64_t)i * FB_XSK_CHUNK;
	tx_prod = *x.tx.producer;
	comp_cons = *x.comp.consumer;
	while (!done(c, r)) {
		uint32_t comp_prod = xsk_load(x.comp.producer);
		unsigned n = 0, want = batch(c, queued);

		r->frames += comp_prod - comp_cons;
		for (; comp_cons != comp_prod; comp_cons++)
			free_chunks[nfree++] = *XSK_ENTRY(&x.comp, uint64_t, comp_cons);
		xsk_store(x.comp.consumer, comp_cons);
		for (; n < want && nfree; n++, tx_prod++) {
			uint64_t addr = free_chunks[--nfree];

			frame_put(x.umem + addr, src, n, c->csum_full);
			*XSK_ENTRY(&x.tx, struct xdp_desc, tx_prod) =
				(struct xdp_desc){ .addr = addr, .len = (uint32_t)c->frame.len };
		}
		xsk_store(x.tx.producer, tx_prod);
		queued += n;
		/* EAGAIN and EBUSY: the kernel is still sending an earlier batch. */
		if (sendto(x.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
			rc = -errno;
			break;
		}
		r->calls++;
	}
	xsk_close(&x);
	return rc;
}

/* Attaches to the TAP of ifindex (an existing one: TUNSETIFF would make a new one of an
 * unknown name, and main checked the name) with the tunnel-sized virtio header. */
static int tap_open(int ifindex)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int fd, sz = sizeof(struct virtio_net_hdr_v1_hash_tunnel);

	if (!if_indextoname((unsigned)ifindex, ifr.ifr_name))
		return -errno;
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETVNETHDRSZ, &sz) < 0)
		return fd_close_err(fd);
	return fd;
}

unsigned send_gso_size(const struct send_cfg *c)
{
	return (unsigned)(c->frame.len - frame_hlen(c->frame.encap));
}

struct frame_spec send_tap_spec(const struct send_cfg *c)
{
	struct frame_spec s = c->frame;

	/* Plain GRE goes in as the TCP packet inside: the TAP's program puts GRE before it. */
	s.encap = c->frame.encap == FRAME_GRE_UDP ? FRAME_GRE_UDP : FRAME_TCP;
	s.len = frame_hlen(s.encap) + (size_t)c->segs * send_gso_size(c);
	return s;
}

/* The TAP: one superpacket built once, a write a superpacket. Where it goes from the TAP's
 * ingress is the tcx program's business, or the stack's. */
static int run_tap(const struct send_cfg *c, struct send_result *r)
{
	enum { VNET_TNL_LEN = sizeof(struct virtio_net_hdr_v1_hash_tunnel) };
	static uint8_t buf[VNET_TNL_LEN + FRAME_LEN_MAX];
	const struct frame_spec s = send_tap_spec(c);
	struct tcx_tap prog = {
		.redirect = c->redirect,
		.gre = c->frame.encap == FRAME_GRE,
		.family = AF_INET,
	};
	int fd, link = -1, rc;

	rc = frame_vnet_build((struct virtio_net_hdr_v1_hash_tunnel *)buf, &s, send_gso_size(c));
	if (rc == 0)
		rc = frame_build(buf + VNET_TNL_LEN, sizeof(buf) - VNET_TNL_LEN, &s);
	if (rc < 0)
		return rc;
	fd = tap_open(c->ifindex);
	if (fd < 0)
		return fd;
	if (prog.redirect || prog.gre) {
		memcpy(prog.src, frame_outer_src, 4);
		memcpy(prog.dst, frame_outer_dst, 4);
		link = tcx_tap_attach(c->ifindex, &prog);
		if (link < 0) {
			close(fd);
			return link;
		}
	}
	rc = 0;
	while (!done(c, r)) {
		ssize_t n = write(fd, buf, VNET_TNL_LEN + s.len);

		r->calls++;
		if (n == (ssize_t)(VNET_TNL_LEN + s.len)) {
			r->frames++;
		} else if (n >= 0 || errno != EINTR) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
	}
	if (link >= 0)
		close(link);
	close(fd);
	return rc;
}

bool send_can_partial(enum send_via via)
{
	return via != SEND_XSK;
}

bool send_can_full(enum send_via via)
{
	return via != SEND_TAP;
}

int send_run(const struct send_cfg *cfg, struct send_result *res)
{
	static struct source src;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((!cfg->csum_full && !send_can_partial(cfg->via)) ||
	    (cfg->csum_full && !send_can_full(cfg->via)))
		return -EINVAL;
	if (cfg->via == SEND_TAP)
		return run_tap(cfg, res);
	rc = frame_build_headers(src.hdr, sizeof(src.hdr), &cfg->frame);
	if (rc < 0)
		return rc;
	src.plen = cfg->frame.len - FRAME_HLEN;
	frame_payload_fill(src.payload, FB_BATCH * src.plen);
	switch (cfg->via) {
	case SEND_MMSG:
		return run_mmsg(cfg, &src, res);
	case SEND_TXRING:
		return run_txring(cfg, &src, res);
	case SEND_XSK:
		return run_xsk(cfg, &src, res);
	case SEND_TAP:
		break;
	}
	return -EINVAL;
}
