/*
 * Plain GRE's receive transport (see rx_ring.h): AF_PACKET rings with fanout and a BPF filter
 * (packet(7), Linux Documentation/networking/packet_mmap.rst), superpackets read whole behind
 * their frames, the GRE sink and the drop at tc ingress.
 */
#include "rx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byteorder.h"
#include "clock.h"
#include "fd.h"
#include "inet.h"
#include "log.h"
#include "steer.h"
#include "tcx.h"

#ifndef PACKET_FANOUT_FLAG_IGNORE_OUTGOING
#define PACKET_FANOUT_FLAG_IGNORE_OUTGOING 0x4000 /* Linux 6.5 */
#endif

/* A load from the network header on: the socket is SOCK_RAW, its packets start at the
 * link-layer header, whatever its length (SKF_NET_OFF, linux/filter.h). */
#define NET_OFF(off) ((uint32_t)(SKF_NET_OFF + (int)(off)))

/* A classic BPF program being written: its instructions so far, and how many it will have. */
struct filter {
	struct sock_filter *insn;
	unsigned n, len;
};

static void stmt(struct filter *f, uint16_t code, uint32_t k)
{
	f->insn[f->n++] = (struct sock_filter){ .code = code, .k = k };
}

/* Compares A with k; when they differ, jumps to the last instruction. */
static void or_drop(struct filter *f, uint32_t k)
{
	f->insn[f->n] = (struct sock_filter){ .code = BPF_JMP | BPF_JEQ | BPF_K,
					      .jf = (uint8_t)(f->len - 2 - f->n),
					      .k = k };
	f->n++;
}

/* Compares A with k; when they are equal, skips the next skip instructions. */
static void if_skip(struct filter *f, uint32_t k, uint8_t skip)
{
	f->insn[f->n++] =
		(struct sock_filter){ .code = BPF_JMP | BPF_JEQ | BPF_K, .jt = skip, .k = k };
}

/*
 * Accepts IPv4 or IPv6 GRE addressed to local, and its fragments; everything else stays out
 * of the ring. The source is checked in userspace, so that GRE from an unknown peer is
 * counted, not unseen; so are fragments (outer_fragment): an IPv4 fragment names GRE in its
 * header, an IPv6 one in the fragment header that follows the fixed header. IPv6 GRE may
 * also follow a destination options header (the kernel's ip6gre sends one by default),
 * whose next header is at the same offset as the fragment header's. The EtherType (the
 * socket takes every protocol: ring_open), the version, the protocol, then the destination a
 * word at a time (one for IPv4, four for IPv6); the last instruction drops. Offsets count
 * from the network header.
 */
static int attach_filter(int fd, int family, const uint8_t *local)
{
	unsigned words = ip_addr_len(family) / 4;
	struct sock_filter insn[9 + 2 * 4 + 4];
	struct filter f = { .insn = insn, .len = 9 + 2 * words + (family == AF_INET6 ? 4 : 0) };
	struct sock_fprog prog = { .len = (unsigned short)f.len, .filter = insn };

	stmt(&f, BPF_LD | BPF_H | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL));
	or_drop(&f, family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(0));
	stmt(&f, BPF_ALU | BPF_AND | BPF_K, 0xf0);
	or_drop(&f, family == AF_INET6 ? 0x60 : 0x40);
	stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(ip_proto_off(family)));
	if (family == AF_INET6) {
		if_skip(&f, IPPROTO_GRE_NUM, 4);
		if_skip(&f, IPPROTO_FRAGMENT, 1);
		or_drop(&f, IPPROTO_DSTOPTS);
		stmt(&f, BPF_LD | BPF_B | BPF_ABS, NET_OFF(IPV6_HLEN + IPV6_EXT_NEXT_OFF));
	}
	or_drop(&f, IPPROTO_GRE_NUM);
	for (unsigned w = 0; w < words; w++) {
		stmt(&f, BPF_LD | BPF_W | BPF_ABS, NET_OFF(ip_dst_off(family) + 4 * w));
		or_drop(&f, load_be32(local + 4 * w));
	}
	stmt(&f, BPF_RET | BPF_K, 0xffffffff);
	stmt(&f, BPF_RET | BPF_K, 0);
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -errno;
	return 0;
}

/*
 * A NIC driver's GRO (and veth's, when it is on) merges a flow's GRE packets into one
 * superpacket before the taps see it, too large for a frame sized to the MTU. With a copy
 * threshold the kernel then hands the frame over cut short and marked TP_STATUS_COPY, and
 * queues the whole packet on the socket, behind a virtio header (gso_size, checksum state).
 * The socket buffer holds those waiting; without CAP_NET_ADMIN it is net.core.rmem_max at
 * most, and a superpacket that finds it full reaches the frame alone (dropped, truncated).
 */
static int want_whole(int fd)
{
	int one = 1, buf = RX_GRO_RCVBUF;

	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof(one)) < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) < 0)
		return -errno;
	return 0;
}

static void ring_close_fd(struct rx_ring *r)
{
	pktring_unmap(&r->pr);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static int ring_open(struct rx_ring *r, const struct rx_group *grp)
{
	const struct rx_cfg *cfg = &grp->cfg;
	const struct encap_cfg *c = grp->sh->cfg;
	int prog = grp->ring.fanout_prog;
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = cfg->ifindex,
	};
	int fanout, flagged, rc, one = 1;

	/* SOCK_RAW, as PACKET_VNET_HDR requires: frames start at the link-layer header, and
	 * tp_net says where the IP header is. Bound to every protocol, the socket is a tap: it
	 * takes its copy before tc ingress, where the GRE drop (tcx.h) can keep the IP stack
	 * from the packet; PACKET_IGNORE_OUTGOING keeps our own transmissions out. */
	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->fd < 0)
		return -errno;
	if (setsockopt(r->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		rc = -errno;
		goto err;
	}
	/* Refused (an old kernel, or the buffer): merged superpackets are dropped as truncated,
	 * as before; gregw says so (r->gro stays false). */
	r->gro = cfg->gro && want_whole(r->fd) == 0;
	/* The filter goes on before the bind, so no unfiltered packet slips in between. */
	rc = attach_filter(r->fd, c->family, c->local);
	if (rc)
		goto err;
	rc = pktring_map(&r->pr, r->fd, cfg->ring, cfg->frame_max, r->gro);
	if (rc)
		goto err;
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		rc = -errno;
		goto err;
	}
	/* Without PACKET_FANOUT_FLAG_DEFRAG: the tunnel sets DF and never fragments, so a
	 * fragment on the wire is an attack or a misconfigured path, and each one is counted
	 * (outer_fragment). Reassembled, a pair would pass as one good packet, and a lone
	 * fragment would wait in the kernel's queue until its timer dropped it, unseen. */
	/* The group's own hook must leave our transmissions out too: the socket's
	 * PACKET_IGNORE_OUTGOING does not reach it (PACKET_FANOUT_FLAG_IGNORE_OUTGOING, Linux
	 * 6.5; an older kernel refuses the flag, and its filter drops them instead). */
	fanout = (int)((cfg->fanout_group & 0xffffu) |
		       (unsigned)(prog >= 0 ? PACKET_FANOUT_EBPF : PACKET_FANOUT_HASH) << 16);
	flagged = fanout | (int)(PACKET_FANOUT_FLAG_IGNORE_OUTGOING << 16);
	if (setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &flagged, sizeof(flagged)) < 0 &&
	    (errno != EINVAL ||
	     setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) < 0)) {
		rc = -errno;
		goto err;
	}
	/* The group's program picks the member: the workers joined in their order. */
	if (prog >= 0 &&
	    setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT_DATA, &prog, sizeof(prog)) < 0) {
		rc = -errno;
		goto err;
	}
	return 0;
err:
	ring_close_fd(r);
	return rc;
}

/* What a virtio header says of a packet whose link-layer header is mac_len bytes. */
static struct rx_merged merged_from(const struct virtio_net_hdr *h, uint32_t mac_len)
{
	bool partial = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;

	return (struct rx_merged){
		.gso_size = h->gso_type == VIRTIO_NET_HDR_GSO_NONE || !partial ? 0 : h->gso_size,
		.gso_type = h->gso_type,
		.csum_start = h->csum_start > mac_len ? (uint16_t)(h->csum_start - mac_len) : 0,
		.csum_offset = h->csum_offset,
	};
}

/*
 * The whole packet behind a frame marked copy (its link-layer header mac_len bytes, d->wirelen
 * from the IP header on), read into r->gro_buf with its virtio header: into d, from its outer
 * IP header. Returns 0, or -EMSGSIZE when the packet is not the one of the frame or larger
 * than the buffer, -errno when the socket had none.
 */
static int read_copy(struct rx_ring *r, uint32_t mac_len, struct rx_dgram *d)
{
	struct virtio_net_hdr h;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = r->gro_buf, .iov_len = RX_GRO_BUF },
	};
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	do
		n = recvmsg(r->fd, &m, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The queue holds the frames' packets in their order, one for each frame marked copy:
	 * anything else (cut short, or another length than the frame's) is not this one. */
	if ((m.msg_flags & MSG_TRUNC) || (size_t)n < sizeof(h) + mac_len ||
	    (size_t)n - sizeof(h) - mac_len != d->wirelen)
		return -EMSGSIZE;
	d->data = r->gro_buf + mac_len;
	d->len = d->wirelen;
	d->merged = merged_from(&h, mac_len);
	return 0;
}

/*
 * A raw IPPROTO_GRE socket of family whose filter drops everything: its presence alone makes
 * the kernel treat GRE as delivered and send no "protocol unreachable". One per gregw, not per
 * worker: every raw socket gets a clone of every GRE packet. Returns an fd or -errno.
 */
static int sink_open(int family)
{
	struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = drop_all };
	int fd, one = 1;

	fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_GRE);
	if (fd < 0)
		return -errno;
	/* Refuse everything; nothing may queue up in a socket nobody reads. */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
		return fd_close_err(fd);
	return fd;
}

static bool ring_next(struct rxq *q, struct rx_dgram *d)
{
	struct rx_ring *r = &q->ring;
	struct pktring_pkt p;
	bool copy;

	if (q->taken >= RX_BUDGET)
		return false;
	if (!pktring_next(&r->pr, &p)) {
		/* The ring ran empty: as for the socket, no standing queue behind it. */
		rxq_aqm_take(q, q->now);
		return false;
	}
	rxq_aqm_take(q, p.queued);
	copy = p.status & TP_STATUS_COPY;
	/* From the outer IP header on: the ring's lengths count from the link-layer header. */
	d->data = p.mac + p.mac_len;
	d->len = p.snaplen > p.mac_len ? p.snaplen - p.mac_len : 0;
	d->wirelen = p.len > p.mac_len ? p.len - p.mac_len : 0;
	d->outer = true;
	d->drop = DROP_NONE;
	/* With virtio headers (r->gro), a packet the kernel merged that still fits a frame (a
	 * few short segments) says so in the one before it. */
	d->merged = merged_from(&p.vnet, p.mac_len);
	d->csum_partial = (p.status & TP_STATUS_CSUMNOTREADY) && !copy;
	/* A frame marked copy: the whole packet from the socket instead; DROP_TRUNCATED (as the
	 * frame alone would be) when it cannot be had. */
	if (copy && r->gro) {
		stat_add(&q->stats->ctr[STAT_RECV_CALLS], 1);
		if (read_copy(r, p.mac_len, d) < 0)
			d->drop = DROP_TRUNCATED;
	}
	if (d->drop == DROP_NONE && d->merged.gso_size)
		stat_add(&q->stats->ctr[STAT_GRE_GRO_READS], 1);
	return true;
}

/* The ring stamps every frame: CoDel judges the pass's frames at its start. */
static void ring_begin(struct rxq *q)
{
	if (q->sh->aqm)
		q->now = clock_real_ns();
}

static uint64_t ring_drops(struct rxq *q)
{
	return pktring_drops(&q->ring.pr);
}

static int ring_queue_open(struct rxq *q, unsigned id, const struct rx_group *grp)
{
	struct rx_ring *r = &q->ring;
	int rc;

	(void)id; /* the fanout group takes its members in the order they join */
	r->fd = -1;
	if (grp->cfg.gro) {
		r->gro_buf = aligned_alloc(64, RX_GRO_BUF);
		if (!r->gro_buf)
			return -ENOMEM;
	}
	rc = ring_open(r, grp);
	if (rc)
		return rc;
	q->fd = r->fd;
	return 0;
}

static void ring_queue_close(struct rxq *q)
{
	ring_close_fd(&q->ring);
	free(q->ring.gro_buf);
	q->ring.gro_buf = NULL;
}

/*
 * The fanout group's program, which picks a flow's worker by the flow table (steer.h): where
 * the kernel refuses it, its flow hash picks, and the TUN device must not steer by the table,
 * or the two would disagree. Then the sink.
 */
static int ring_group_init(struct rx_group *grp)
{
	struct rx_ring_group *rg = &grp->ring;
	const struct encap_cfg *c = grp->sh->cfg;

	rg->sink_fd = rg->tcx_fd = -1;
	rg->fanout_prog = steer_fanout_load(c->outer_hlen, &grp->sh->steer, grp->cfg.nworkers);
	if (rg->fanout_prog < 0)
		log_warnx("no steering program for the receive rings (%s): the kernel's flow "
			  "hash picks the worker, and the TUN device follows it",
			  strerror(-rg->fanout_prog));
	grp->tun_steer = rg->fanout_prog >= 0;
	rg->sink_fd = sink_open(c->family);
	if (rg->sink_fd < 0) {
		int rc = rg->sink_fd;

		log_warnx("cannot open the GRE sink socket: %s", strerror(-rc));
		if (rg->fanout_prog >= 0)
			close(rg->fanout_prog);
		rg->fanout_prog = -1;
		return rc;
	}
	return 0;
}

static void ring_group_ready(struct rx_group *grp, const struct rxq *first)
{
	struct rx_ring_group *rg = &grp->ring;
	const struct encap_cfg *c = grp->sh->cfg;

	rg->whole = first->ring.gro;
	if (grp->cfg.gro && !rg->whole)
		log_warnx("the receive rings cannot take merged superpackets whole: where the "
			  "interface merges GRE (GRO), those are dropped as truncated");
	/* The group holds its program now. */
	if (rg->fanout_prog >= 0)
		close(rg->fanout_prog);
	rg->fanout_prog = -1;
	if (!grp->cfg.ingress_drop)
		return;
	/* The rings take their copies first; the IP stack then never sees the GRE. */
	rg->tcx_fd = tcx_gre_drop_attach(grp->cfg.ifindex, c->family, c->local, c->remote);
	if (rg->tcx_fd < 0)
		log_warnx("no GRE drop at tc ingress (%s): the IP stack takes each GRE packet too, "
			  "to the sink socket",
			  strerror(-rg->tcx_fd));
}

static void ring_group_fini(struct rx_group *grp)
{
	struct rx_ring_group *rg = &grp->ring;

	if (rg->tcx_fd >= 0)
		close(rg->tcx_fd);
	if (rg->fanout_prog >= 0)
		close(rg->fanout_prog);
	if (rg->sink_fd >= 0)
		close(rg->sink_fd);
	rg->tcx_fd = rg->fanout_prog = rg->sink_fd = -1;
}

const struct rx_ops rx_ring_ops = {
	.drops_name = "ring_drops",
	.group_init = ring_group_init,
	.group_ready = ring_group_ready,
	.group_fini = ring_group_fini,
	.open = ring_queue_open,
	.close = ring_queue_close,
	.begin = ring_begin,
	.next = ring_next,
	.drops = ring_drops,
};
