/*
 * The three receivers (see recv.h): packet(7)'s TPACKET_V2 ring, gregw's (pktring.h), with
 * tcx, and AF_XDP (Linux Documentation/networking/af_xdp.rst).
 */
#include "recv.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "inet.h"
#include "fb_limits.h"
#include "tcx.h"

/* Passes IPv4 GRE, keeps everything else out of the ring. */
static int attach_filter(int fd)
{
	struct sock_filter insn[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 3),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_NET_OFF + IPV4_PROTO_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_GRE_NUM, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UINT32_MAX),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(insn) / sizeof(insn[0]), .filter = insn };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

static int ring_open(struct recv *r, int ifindex)
{
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	int rc;

	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (r->fd < 0)
		return -errno;
	rc = attach_filter(r->fd);
	if (rc)
		return rc;
	/* gregw's ring for frames of the outer MTU, without virtio headers, as its rings have
	 * when the interface does not merge (GRO). */
	rc = pktring_map(&r->ring, r->fd, PKTRING_V2, ETH_DATA_LEN, false);
	if (rc)
		return rc;
	if (bind(r->fd, (struct sockaddr *)&ll, sizeof(ll)) < 0)
		return -errno;
	r->tcx_link = tcx_gre_drop_attach(ifindex, AF_INET, frame_outer_dst, frame_outer_src);
	return r->tcx_link < 0 ? r->tcx_link : 0;
}

int recv_open(struct recv *r, const struct recv_cfg *cfg)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->via = cfg->via;
	r->verify = cfg->verify;
	r->max = cfg->frames;
	r->fd = r->tcx_link = r->xdp_link = r->xsk.fd = -1;
	if (cfg->via == RECV_RING) {
		rc = ring_open(r, cfg->ifindex);
	} else {
		rc = xsk_open(&r->xsk, cfg->ifindex, XSK_RX);
		if (!rc) {
			r->xdp_link = xsk_redirect_attach(cfg->ifindex, &r->xsk,
							  cfg->via == RECV_XDP_GENERIC);
			rc = r->xdp_link < 0 ? r->xdp_link : 0;
		}
	}
	if (rc)
		recv_close(r);
	return rc;
}

void recv_close(struct recv *r)
{
	if (r->xdp_link >= 0)
		close(r->xdp_link);
	if (r->xsk.fd >= 0)
		xsk_close(&r->xsk);
	if (r->tcx_link >= 0)
		close(r->tcx_link);
	pktring_unmap(&r->ring);
	if (r->fd >= 0)
		close(r->fd);
	r->xdp_link = r->xsk.fd = r->tcx_link = r->fd = -1;
}

static void take(struct recv_result *res, const uint8_t *f, size_t len, bool verify)
{
	int rc = frame_check(f, len, verify);

	res->frames++;
	res->bytes += len;
	res->verified += verify && rc != -EPROTO;
	res->bad_csum += rc == -EBADMSG;
	res->not_ours += rc == -EPROTO;
}

/* Takes what the ring holds. Returns how many. */
static unsigned ring_drain(struct recv *r, struct recv_result *res)
{
	struct pktring_pkt p;
	unsigned n = 0;

	for (; pktring_next(&r->ring, &p); n++) {
		bool told = p.status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID);

		res->partial += !!(p.status & TP_STATUS_CSUMNOTREADY);
		take(res, p.mac, p.snaplen, r->verify && !told);
	}
	return n;
}

/* Takes what the socket's RX ring holds, every chunk back on the fill ring. */
static unsigned xsk_drain(struct recv *r, struct recv_result *res)
{
	struct xsk *x = &r->xsk;
	uint32_t cons = *x->rx.consumer, prod = xsk_load(x->rx.producer);
	uint32_t fill = *x->fill.producer, n = prod - cons;

	for (; cons != prod; cons++, fill++) {
		const struct xdp_desc *d = XSK_ENTRY(&x->rx, struct xdp_desc, cons);

		take(res, x->umem + d->addr, d->len, r->verify);
		*XSK_ENTRY(&x->fill, uint64_t, fill) = d->addr & ~(uint64_t)(FB_XSK_CHUNK - 1);
	}
	xsk_store(x->rx.consumer, cons);
	xsk_store(x->fill.producer, fill);
	return n;
}

static unsigned drain(struct recv *r, struct recv_result *res)
{
	return r->via == RECV_RING ? ring_drain(r, res) : xsk_drain(r, res);
}

static void count_drops(struct recv *r, struct recv_result *res)
{
	if (r->via == RECV_RING) {
		res->drops += pktring_drops(&r->ring);
	} else {
		struct xdp_statistics st = { 0 };
		socklen_t len = sizeof(st);

		/* rx_dropped counts a frame that found the fill ring empty. */
		if (getsockopt(r->xsk.fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0)
			res->drops += st.rx_dropped + st.rx_ring_full;
	}
}

int recv_run(struct recv *r, int stop_fd, struct recv_result *res)
{
	struct pollfd pfd[2] = {
		{ .fd = r->via == RECV_RING ? r->fd : r->xsk.fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN },
	};
	bool slept = false;

	for (;;) {
		if (drain(r, res)) {
			res->wakeups += slept;
			slept = false;
			if (r->max && res->frames >= r->max)
				break;
			continue;
		}
		if (poll(pfd, 2, FB_POLL_MS) < 0 && errno != EINTR)
			return -errno;
		if (pfd[1].revents)
			break;
		slept = true;
	}
	/* What came in with the stop. */
	drain(r, res);
	count_drops(r, res);
	return 0;
}
