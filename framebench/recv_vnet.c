/*
 * The superpacket receiver (see recv_vnet.h): packet(7)'s TPACKET_V2 ring (Linux
 * Documentation/networking/packet_mmap.rst) with PACKET_VNET_HDR.
 */
#include "recv_vnet.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "inet.h"
#include "fb_limits.h"
#include "progs.h"

/* Passes IPv4 GRE and IPv4 UDP to port 4754, keeps everything else out of the ring. */
static int attach_filter(int fd)
{
	struct sock_filter insn[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 7),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_NET_OFF + IPV4_PROTO_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_GRE_NUM, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 4),
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, (uint32_t)ETH_HLEN),
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, (uint32_t)(ETH_HLEN + UDP_DPORT_OFF)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GRE_UDP_PORT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UINT32_MAX),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(insn) / sizeof(insn[0]), .filter = insn };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

static int ring_open(struct recv_vnet *r, int ifindex, bool drop)
{
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	int one = 1, rc;

	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (r->fd < 0)
		return -errno;
	rc = attach_filter(r->fd);
	if (rc)
		return rc;
	/* The virtio header before the ring: the kernel refuses it once the ring exists. */
	if (setsockopt(r->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0)
		return -errno;
	/* gregw's geometry, the virtio header in the room it leaves before the frame. */
	rc = pktring_map(&r->ring, r->fd, PKTRING_V2, ETH_DATA_LEN, true);
	if (rc)
		return rc;
	if (bind(r->fd, (struct sockaddr *)&ll, sizeof(ll)) < 0)
		return -errno;
	if (!drop)
		return 0;
	r->tcx_link = progs_drop_attach(ifindex);
	return r->tcx_link < 0 ? r->tcx_link : 0;
}

int recv_vnet_open(struct recv_vnet *r, int ifindex, bool drop)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = r->tcx_link = -1;
	rc = ring_open(r, ifindex, drop);
	if (rc)
		recv_vnet_close(r);
	return rc;
}

void recv_vnet_close(struct recv_vnet *r)
{
	if (r->tcx_link >= 0)
		close(r->tcx_link);
	pktring_unmap(&r->ring);
	if (r->fd >= 0)
		close(r->fd);
	r->tcx_link = r->fd = -1;
}

/* Counts one frame: f its first cap of len bytes, v the virtio header the kernel wrote. */
static void take(struct recv_vnet_result *res, const uint8_t *f, size_t cap, size_t len,
		 const struct virtio_net_hdr *v)
{
	struct frame_info fi;
	unsigned gso_size = v->gso_size; /* host order: legacy virtio, as af_packet writes it */

	res->frames++;
	res->bytes += len;
	if (!res->len_min || len < res->len_min)
		res->len_min = len;
	if (len > res->len_max)
		res->len_max = len;
	if (frame_parse(f, cap, len, &fi)) {
		res->not_ours++;
		return;
	}
	res->gre += fi.encap == FRAME_GRE;
	res->gre_udp += fi.encap == FRAME_GRE_UDP;
	if (v->gso_type == VIRTIO_NET_HDR_GSO_NONE || !gso_size)
		return;
	res->gso++;
	res->gso_tcpv4 += (v->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) == VIRTIO_NET_HDR_GSO_TCPV4;
	if (!res->gso_size_min || gso_size < res->gso_size_min)
		res->gso_size_min = gso_size;
	if (gso_size > res->gso_size_max)
		res->gso_size_max = gso_size;
	res->gso_segs += (len - fi.hlen + gso_size - 1) / gso_size;
}

/* Takes what the ring holds. Returns how many. */
static unsigned drain(struct recv_vnet *r, struct recv_vnet_result *res)
{
	struct pktring_pkt p;
	unsigned n = 0;

	for (; pktring_next(&r->ring, &p); n++) {
		res->partial += !!(p.status & TP_STATUS_CSUMNOTREADY);
		take(res, p.mac, p.snaplen, p.len, &p.vnet);
	}
	return n;
}

int recv_vnet_run(struct recv_vnet *r, int stop_fd, uint64_t max, struct recv_vnet_result *res)
{
	struct pollfd pfd[2] = {
		{ .fd = r->fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN },
	};
	bool slept = false;

	memset(res, 0, sizeof(*res));
	for (;;) {
		if (drain(r, res)) {
			res->wakeups += slept;
			slept = false;
			if (max && res->frames >= max)
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
	res->drops += pktring_drops(&r->ring);
	return 0;
}
