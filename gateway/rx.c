/*
 * The receive side (see rx.h): AF_PACKET rings with fanout and a BPF filter (Linux
 * Documentation/networking/packet_mmap.rst), and the GRE-in-UDP socket (RFC 8086, udp(7)).
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
#include "netaddr.h"
#include "steer.h"
#include "udp.h"

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
 * socket takes every protocol: rx_open), the version, the protocol, then the destination a
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

int rx_open(struct rx_ring *r, const struct rx_cfg *cfg)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = cfg->ifindex,
	};
	int fanout, flagged, rc, one = 1;

	memset(r, 0, sizeof(*r));
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
	rc = attach_filter(r->fd, cfg->family, cfg->local);
	if (rc)
		goto err;
	rc = pktring_map(&r->pr, r->fd, cfg->kind, cfg->frame_max, r->gro);
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
		       (unsigned)(cfg->fanout_prog >= 0 ? PACKET_FANOUT_EBPF : PACKET_FANOUT_HASH)
			       << 16);
	flagged = fanout | (int)(PACKET_FANOUT_FLAG_IGNORE_OUTGOING << 16);
	if (setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &flagged, sizeof(flagged)) < 0 &&
	    (errno != EINVAL ||
	     setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) < 0)) {
		rc = -errno;
		goto err;
	}
	/* The group's program picks the member: the workers joined in their order. */
	if (cfg->fanout_prog >= 0 && setsockopt(r->fd, SOL_PACKET, PACKET_FANOUT_DATA,
						&cfg->fanout_prog, sizeof(cfg->fanout_prog)) < 0) {
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
	pktring_unmap(&r->pr);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
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

bool rx_next(struct rx_ring *r, struct rx_pkt *p)
{
	struct pktring_pkt k;

	if (!pktring_next(&r->pr, &k))
		return false;
	/* From the IP header on: the ring's lengths count from the link-layer header. */
	p->data = k.mac + k.mac_len;
	p->mac_len = k.mac_len;
	p->caplen = k.snaplen > k.mac_len ? k.snaplen - k.mac_len : 0;
	p->wirelen = k.len > k.mac_len ? k.len - k.mac_len : 0;
	p->rxhash = k.rxhash;
	p->queued = k.queued;
	p->copy = k.status & TP_STATUS_COPY;
	p->csum_partial = k.status & TP_STATUS_CSUMNOTREADY;
	/* With virtio headers (r->gro), a packet the kernel merged that still fits a frame (a
	 * few short segments) says so in the one before it. */
	p->merged = merged_from(&k.vnet, k.mac_len);
	return true;
}

/*
 * The whole packet behind a frame marked copy (p, just handed out by rx_next), read into buf
 * (len bytes) with its virtio header: into d, from its outer IP header. Returns 0, or
 * -EMSGSIZE when the packet is not the one of the frame or larger than buf, -errno when the
 * socket had none.
 */
static int read_copy(struct rx_ring *r, const struct rx_pkt *p, uint8_t *buf, size_t len,
		     struct rx_dgram *d)
{
	struct virtio_net_hdr h;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = buf, .iov_len = len },
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
	if ((m.msg_flags & MSG_TRUNC) || (size_t)n < sizeof(h) + p->mac_len ||
	    (size_t)n - sizeof(h) - p->mac_len != p->wirelen)
		return -EMSGSIZE;
	d->data = buf + p->mac_len;
	d->len = p->wirelen;
	d->merged = merged_from(&h, p->mac_len);
	return 0;
}

uint64_t rx_ring_drops(struct rx_ring *r)
{
	return pktring_drops(&r->pr);
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
	    setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
		return fd_close_err(fd);
	return fd;
}

/* --aqm: takes CoDel's verdict on a packet that queued since queued (0: no stamp). */
static void aqm_take(struct rxq *q, uint64_t queued)
{
	if (q->sh->aqm && queued && codel_take(&q->codel, queued, q->now))
		q->aqm_pending = true;
}

bool rxq_aqm_signal(struct rxq *q, size_t wirelen)
{
	if (!q->aqm_pending || wirelen < RX_AQM_MIN_WIRE)
		return false;
	q->aqm_pending = false;
	return true;
}

/* What the kernel says of a received message: its GRO segment size (returned; 0 when it is
 * one datagram), when it queued it (*queued, ns, CLOCK_REALTIME; 0 without a stamp) and
 * whether it reassembled it from fragments (*frag: IP_RECVFRAGSIZE names the largest). */
static size_t msg_meta(const struct msghdr *m, uint64_t *queued, bool *frag)
{
	size_t seg = 0;

	*queued = 0;
	*frag = false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR((struct msghdr *)m, cm)) {
		if ((cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_RECVFRAGSIZE) ||
		    (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_RECVFRAGSIZE)) {
			*frag = true;
		} else if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			seg = v > 0 ? (size_t)v : 0;
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			*queued = clock_ns_from_ts(&ts);
		}
	}
	return seg;
}

/* GRE-in-UDP: a new batch of messages; false when the socket had none. */
static bool udp_batch(struct rxq *q)
{
	int got;

	for (unsigned i = 0; i < RX_UDP_BATCH; i++) {
		struct msghdr *m = &q->msgs[i].msg_hdr;

		m->msg_name = &q->from[i];
		m->msg_namelen = sizeof(q->from[i]);
		m->msg_iov = &q->iov[i];
		m->msg_iovlen = 1;
		m->msg_control = q->cmsg[i].buf;
		m->msg_controllen = sizeof(q->cmsg[i].buf);
		m->msg_flags = 0;
	}
	stat_add(&q->stats->ctr[STAT_RECV_CALLS], 1);
	got = recvmmsg(q->udp_fd, q->msgs, RX_UDP_BATCH, MSG_DONTWAIT, NULL);
	q->got = got > 0 ? (unsigned)got : 0;
	q->full = q->got == RX_UDP_BATCH;
	q->cur = 0;
	if (q->sh->aqm)
		q->now = clock_real_ns();
	return q->got > 0;
}

/* GRE-in-UDP: the message cur begins; its GRO burst is cut at seg. */
static void udp_message(struct rxq *q)
{
	struct msghdr *m = &q->msgs[q->cur].msg_hdr;
	size_t len = q->msgs[q->cur].msg_len;
	uint64_t queued;

	q->seg = msg_meta(m, &queued, &q->frag);
	/* A batch that emptied the socket ends on an empty queue: as RFC 8289 never drops from a
	 * queue of at most one packet, its last message counts as no wait. */
	aqm_take(q, q->cur == q->got - 1 && !q->full ? q->now : queued);
	if (!q->seg || q->seg > len)
		q->seg = len;
	else if (q->seg < len)
		stat_add(&q->stats->ctr[STAT_UDP_GRO_READS], 1);
	q->off = 0;
	q->cut = false;
}

static bool udp_next(struct rxq *q, struct rx_dgram *d)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned outer_wire = ip_fixed_hlen(c->family) + UDP_HLEN;
	size_t len;

	/* Past the messages done (an empty one is one empty datagram, counted and dropped like
	 * any other); a new batch when the last one is done, unless it emptied the socket or the
	 * pass has had its budget: the budget is checked between batches, a batch is never
	 * split. */
	while (q->cur >= q->got || q->cut) {
		if (q->cur < q->got) {
			if (++q->cur < q->got)
				udp_message(q);
			continue;
		}
		if ((q->got && !q->full) || q->taken >= RX_BUDGET || !udp_batch(q)) {
			q->got = q->cur = 0;
			return false;
		}
		udp_message(q);
	}
	len = q->msgs[q->cur].msg_len;
	d->data = (uint8_t *)q->iov[q->cur].iov_base + q->off;
	d->len = len - q->off < q->seg ? len - q->off : q->seg;
	d->wirelen = d->len + outer_wire;
	d->outer = false;
	d->merged = (struct rx_merged){ 0 };
	d->csum_partial = false;
	d->drop = DROP_NONE;
	if (q->msgs[q->cur].msg_hdr.msg_flags & MSG_TRUNC)
		d->drop = DROP_TRUNCATED;
	else if (q->frag)
		d->drop = DROP_OUTER_FRAGMENT;
	else if (!netaddr_sockaddr_is(&q->from[q->cur], c->family, c->remote))
		d->drop = DROP_UNKNOWN_PEER;
	q->off += d->len;
	q->cut = q->off >= len;
	return true;
}

static bool ring_next(struct rxq *q, struct rx_dgram *d)
{
	struct rx_pkt p;

	if (q->taken >= RX_BUDGET)
		return false;
	if (!rx_next(&q->ring, &p)) {
		/* The ring ran empty: as for the socket, no standing queue behind it. */
		aqm_take(q, q->now);
		return false;
	}
	aqm_take(q, p.queued);
	d->data = p.data;
	d->len = p.caplen;
	d->wirelen = p.wirelen;
	d->outer = true;
	d->drop = DROP_NONE;
	d->merged = p.merged;
	d->csum_partial = p.csum_partial && !p.copy;
	/* A frame marked copy: the whole packet from the socket instead; DROP_TRUNCATED (as the
	 * frame alone would be) when it cannot be had. */
	if (p.copy && q->ring.gro) {
		stat_add(&q->stats->ctr[STAT_RECV_CALLS], 1);
		if (read_copy(&q->ring, &p, q->gro_buf, RX_GRO_BUF, d) < 0)
			d->drop = DROP_TRUNCATED;
	}
	if (d->drop == DROP_NONE && d->merged.gso_size)
		stat_add(&q->stats->ctr[STAT_GRE_GRO_READS], 1);
	return true;
}

void rxq_begin(struct rxq *q)
{
	q->taken = 0;
	if (q->sh->aqm && !q->sh->cfg->udp)
		q->now = clock_real_ns();
}

bool rxq_next(struct rxq *q, struct rx_dgram *d)
{
	bool got = q->sh->cfg->udp ? udp_next(q, d) : ring_next(q, d);

	if (got)
		q->taken++;
	return got;
}

void rxq_take_error(struct rxq *q)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(rxq_fd(q), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
		stat_add(&q->stats->ctr[STAT_RX_SOCKET_ERRORS], 1);
}

int rxq_fd(const struct rxq *q)
{
	return q->sh->cfg->udp ? q->udp_fd : q->ring.fd;
}

uint64_t rxq_drops(struct rxq *q)
{
	uint64_t now, d;

	if (!q->sh->cfg->udp)
		return rx_ring_drops(&q->ring);
	now = udp_drops(q->udp_fd);
	d = now - q->udp_drops;
	q->udp_drops = now;
	return d;
}

int rxq_udp_mib(const struct rxq *q, struct udp_mib *out)
{
	struct udp_mib now;

	if (!q->has_mib || udp_mib_read(q->sh->cfg->family, &now))
		return -ENODATA;
	out->rcvbuf_errors = now.rcvbuf_errors - q->mib_base.rcvbuf_errors;
	out->csum_errors = now.csum_errors - q->mib_base.csum_errors;
	return 0;
}

/* GRE-in-UDP: the receiving socket with its buffers, in the reuseport group. */
static int open_udp(struct rxq *q, unsigned id)
{
	const struct encap_cfg *c = q->sh->cfg;

	/* What the namespace's UDP counters held before gregw's sockets existed: the kernel's
	 * drops of datagrams gregw never sees are told against it (one worker keeps it). */
	if (id == 0)
		q->has_mib = udp_mib_read(c->family, &q->mib_base) == 0;
	q->udp_bufs = aligned_alloc(64, (size_t)RX_UDP_BATCH * RX_UDP_BUF);
	if (!q->udp_bufs)
		return -ENOMEM;
	for (unsigned i = 0; i < RX_UDP_BATCH; i++) {
		q->iov[i].iov_base = q->udp_bufs + (size_t)i * RX_UDP_BUF;
		q->iov[i].iov_len = RX_UDP_BUF;
	}
	q->udp_fd = udp_rx_open(c->family, c->local, c->udp_port, q->sh->udp_gro);
	if (q->udp_fd < 0)
		return q->udp_fd;
	if (q->sh->aqm) {
		int one = 1;

		/* The kernel stamps each datagram as it queues: CoDel's sojourn times. (The
		 * ring stamps every frame anyway.) */
		if (setsockopt(q->udp_fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
			return -errno;
	}
	/* Each worker joins the group in turn; the program, the group's, is set again by each
	 * so that it knows how many sockets there are by the last. */
	return steer_reuseport_attach(q->udp_fd, c->outer_hlen, &q->sh->steer, id + 1);
}

int rxq_init(struct rxq *q, unsigned id, const struct rx_cfg *rxc, struct gw_shared *sh,
	     struct worker_stats *stats)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->sh = sh;
	q->stats = stats;
	q->ring.fd = -1;
	q->udp_fd = -1;
	codel_init(&q->codel, sh->aqm_target_ns, sh->aqm_interval_ns);
	if (!sh->cfg->udp && rxc->gro) {
		q->gro_buf = aligned_alloc(64, RX_GRO_BUF);
		if (!q->gro_buf)
			return -ENOMEM;
	}
	rc = sh->cfg->udp ? open_udp(q, id) : rx_open(&q->ring, rxc);
	if (rc)
		rxq_fini(q);
	return rc;
}

void rxq_fini(struct rxq *q)
{
	rx_close(&q->ring);
	if (q->udp_fd >= 0)
		close(q->udp_fd);
	q->udp_fd = -1;
	free(q->udp_bufs);
	q->udp_bufs = NULL;
	free(q->gro_buf);
	q->gro_buf = NULL;
}
