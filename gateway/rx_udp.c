/*
 * GRE-in-UDP's receive transport (see rx_udp.h; RFC 8086, udp(7)): recvmmsg batches, their
 * UDP_GRO bursts cut back into datagrams, each checked for what only the socket can tell.
 */
#include "rx.h"

#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byteorder.h"
#include "clock.h"
#include "gre.h"
#include "inet.h"
#include "log.h"
#include "netaddr.h"
#include "steer.h"
#include "udp.h"

/* What the kernel says of a received message: its GRO segment size (returned; 0 when it is
 * one datagram), when it queued it (*queued, ns, CLOCK_REALTIME; 0 without a stamp), whether
 * it reassembled it from fragments (*frag: IP_RECVFRAGSIZE names the largest) and its outer
 * DS field (*ds; a UDP_GRO burst has one: the kernel merges only datagrams of one). */
static size_t msg_meta(const struct msghdr *m, uint64_t *queued, bool *frag, uint8_t *ds)
{
	size_t seg = 0;

	*queued = 0;
	*frag = false;
	*ds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR((struct msghdr *)m, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS &&
		    cm->cmsg_len >= CMSG_LEN(1)) {
			*ds = *CMSG_DATA(cm);
		} else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_TCLASS &&
			   cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int v;

			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			*ds = (uint8_t)v;
		} else if ((cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_RECVFRAGSIZE) ||
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

/* A new batch of messages; false when the socket had none. */
static bool udp_batch(struct rxq *q)
{
	int got;

	for (unsigned i = 0; i < RX_UDP_BATCH; i++) {
		struct msghdr *m = &q->udp.msgs[i].msg_hdr;

		m->msg_name = &q->udp.from[i];
		m->msg_namelen = sizeof(q->udp.from[i]);
		m->msg_iov = &q->udp.iov[i];
		m->msg_iovlen = 1;
		m->msg_control = q->udp.cmsg[i].buf;
		m->msg_controllen = sizeof(q->udp.cmsg[i].buf);
		m->msg_flags = 0;
	}
	stat_add(&q->stats->ctr[STAT_RECV_CALLS], 1);
	got = recvmmsg(q->udp.fd, q->udp.msgs, RX_UDP_BATCH, MSG_DONTWAIT, NULL);
	q->udp.got = got > 0 ? (unsigned)got : 0;
	q->udp.full = q->udp.got == RX_UDP_BATCH;
	q->udp.cur = 0;
	if (q->sh->aqm)
		q->now = clock_real_ns();
	return q->udp.got > 0;
}

/* The message cur begins; its GRO burst is cut at seg. */
static void udp_message(struct rxq *q)
{
	struct msghdr *m = &q->udp.msgs[q->udp.cur].msg_hdr;
	size_t len = q->udp.msgs[q->udp.cur].msg_len;
	uint64_t queued;

	q->udp.seg = msg_meta(m, &queued, &q->udp.frag, &q->udp.ds);
	/* A batch that emptied the socket ends on an empty queue: as RFC 8289 never drops from a
	 * queue of at most one packet, its last message counts as no wait. */
	rxq_aqm_take(q, q->udp.cur == q->udp.got - 1 && !q->udp.full ? q->now : queued);
	if (!q->udp.seg || q->udp.seg > len)
		q->udp.seg = len;
	else if (q->udp.seg < len)
		stat_add(&q->stats->ctr[STAT_UDP_GRO_READS], 1);
	q->udp.off = 0;
	q->udp.cut = false;
}

/*
 * A datagram whose inner packet is longer than the tunnel carries as one packet: a TCP
 * superpacket that a sender on this host (gregw's TAP, the kernel's own tunnels) left whole
 * and a device carried so (a veth pair), which the socket queues as one datagram and says
 * nothing of (UDP_GRO tells only UDP's own superpackets). A GSO packet's checksum is left
 * partial: its field holds the pseudo-header's sum, which a complete checksum matches once in
 * 65536. Its segment size did not come along: the tunnel MTU's is taken, the one a sender's
 * TCP uses unless a smaller MTU lies beyond the tunnel (docs/gregw.md; the ring, --wire-rx
 * ring, has the sender's). Sets d->merged, from d->data on, when it is one.
 */
static void whole_superpacket(const struct encap_cfg *c, struct rx_dgram *d)
{
	struct gre_info g;
	struct ip_info ip;
	struct l4_csum at;
	const uint8_t *inner, *tcp;
	unsigned thlen;
	int hl = gre_parse(d->data, d->len, &g);

	if (hl < 0)
		return;
	inner = d->data + hl;
	if (ip_parse(inner, d->len - (size_t)hl, false, &ip) < 0 || ip.tot_len <= c->mtu ||
	    ip.proto != IPPROTO_TCP || !inet_l4_csum_at(ip.tot_len, &ip, &at))
		return;
	tcp = inner + at.start;
	thlen = (unsigned)(tcp[TCP_DOFF_OFF] >> 4) * 4;
	if (thlen < TCP_HLEN || at.start + thlen >= c->mtu)
		return;
	if (!inet_l4_csum_left_partial(inner, &ip, at))
		return;
	d->merged = (struct rx_merged){
		.gso_size = (uint16_t)(c->mtu - at.start - thlen),
		.gso_type =
			(uint8_t)((ip.family == AF_INET6 ? VIRTIO_NET_HDR_GSO_TCPV6
							 : VIRTIO_NET_HDR_GSO_TCPV4) |
				  (tcp[TCP_FLAGS_OFF] & TCP_F_CWR ? VIRTIO_NET_HDR_GSO_ECN : 0)),
		.csum_start = (uint16_t)((unsigned)hl + at.start),
		.csum_offset = TCP_CSUM_OFF,
	};
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
	while (q->udp.cur >= q->udp.got || q->udp.cut) {
		if (q->udp.cur < q->udp.got) {
			if (++q->udp.cur < q->udp.got)
				udp_message(q);
			continue;
		}
		if ((q->udp.got && !q->udp.full) || q->taken >= RX_BUDGET || !udp_batch(q)) {
			q->udp.got = q->udp.cur = 0;
			return false;
		}
		udp_message(q);
	}
	len = q->udp.msgs[q->udp.cur].msg_len;
	d->data = (uint8_t *)q->udp.iov[q->udp.cur].iov_base + q->udp.off;
	d->len = len - q->udp.off < q->udp.seg ? len - q->udp.off : q->udp.seg;
	d->wirelen = d->len + outer_wire;
	d->outer = false;
	d->src = NULL;
	d->outer_ds = q->udp.ds;
	d->merged = (struct rx_merged){ 0 };
	d->csum_partial = false;
	d->drop = DROP_NONE;
	if (q->udp.msgs[q->udp.cur].msg_hdr.msg_flags & MSG_TRUNC)
		d->drop = DROP_TRUNCATED;
	else if (q->udp.frag)
		d->drop = DROP_OUTER_FRAGMENT;
	/* Any source may send to the port: tunnels_decap tells a peer's by its address and key. */
	else if (!(d->src = netaddr_sockaddr_bytes(&q->udp.from[q->udp.cur], c->family)))
		d->drop = DROP_UNKNOWN_PEER;
	if (d->drop == DROP_NONE && d->len == len && d->len > c->mtu) {
		whole_superpacket(c, d);
		if (d->merged.gso_size)
			stat_add(&q->stats->ctr[STAT_UDP_WHOLE_READS], 1);
	}
	q->udp.off += d->len;
	q->udp.cut = q->udp.off >= len;
	return true;
}

/* The receiving socket with its buffers, in the reuseport group. */
static int udp_queue_open(struct rxq *q, unsigned id, const struct rx_group *grp)
{
	const struct encap_cfg *c = q->sh->cfg;
	int rc, one = 1;

	(void)grp;
	q->udp.fd = -1;
	/* What the namespace's UDP counters held before gregw's sockets existed: the kernel's
	 * drops of datagrams gregw never sees are told against it (one worker keeps it). */
	if (id == 0)
		q->udp.has_mib = udp_mib_read(c->family, &q->udp.mib_base) == 0;
	q->udp.bufs = aligned_alloc(64, (size_t)RX_UDP_BATCH * RX_UDP_BUF);
	if (!q->udp.bufs)
		return -ENOMEM;
	for (unsigned i = 0; i < RX_UDP_BATCH; i++) {
		q->udp.iov[i].iov_base = q->udp.bufs + (size_t)i * RX_UDP_BUF;
		q->udp.iov[i].iov_len = RX_UDP_BUF;
	}
	q->udp.fd = udp_rx_open(c->family, c->local, c->udp_port, q->sh->udp_gro);
	if (q->udp.fd < 0)
		return q->udp.fd;
	if (q->sh->aqm) {
		/* The kernel stamps each datagram as it queues: CoDel's sojourn times. (The
		 * ring stamps every frame anyway.) */
		if (setsockopt(q->udp.fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
			return -errno;
	}
	/* Each message's outer DS field, for RFC 6040's decapsulation (worker.c). */
	if (c->family == AF_INET6)
		rc = setsockopt(q->udp.fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
	else
		rc = setsockopt(q->udp.fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	if (rc < 0)
		return -errno;
	/* Each worker joins the group in turn; the program, the group's, is set again by each
	 * so that it knows how many sockets there are by the last. */
	rc = steer_reuseport_attach(q->udp.fd, c->outer_hlen, &q->sh->steer, id + 1);
	if (rc)
		return rc;
	q->fd = q->udp.fd;
	return 0;
}

int rxq_udp_mib(const struct rxq *q, struct udp_mib *out)
{
	struct udp_mib now;

	if (q->ops != &rx_udp_ops || !q->udp.has_mib || udp_mib_read(q->sh->cfg->family, &now))
		return -ENODATA;
	out->rcvbuf_errors = now.rcvbuf_errors - q->udp.mib_base.rcvbuf_errors;
	out->csum_errors = now.csum_errors - q->udp.mib_base.csum_errors;
	return 0;
}

static void udp_queue_close(struct rxq *q)
{
	if (q->udp.fd >= 0)
		close(q->udp.fd);
	q->udp.fd = -1;
	free(q->udp.bufs);
	q->udp.bufs = NULL;
}

static uint64_t udp_queue_drops(struct rxq *q)
{
	uint64_t now = udp_drops(q->udp.fd), d = now - q->udp.drops;

	q->udp.drops = now;
	return d;
}

void udp_group_probe(struct gw_shared *sh, bool gro)
{
	udp_probe(sh->cfg->family, &sh->udp_gso, &sh->udp_gro);
	sh->udp_gro = sh->udp_gro && gro;
	if (!sh->udp_gso || (gro && !sh->udp_gro))
		log_warnx("GRE-in-UDP without%s%s: one datagram per message there "
			  "(still batched by sendmmsg/recvmmsg)",
			  sh->udp_gso ? "" : " UDP_SEGMENT (Linux 4.18)",
			  !gro || sh->udp_gro ? "" : " UDP_GRO (Linux 5.0)");
}

/* A socket on port 4754 takes GRE-in-UDP: no GRE sink is needed. What the kernel offers is
 * probed once, for both directions: the send side reads sh->udp_gso. */
static int udp_group_init(struct rx_group *grp)
{
	udp_group_probe(grp->sh, true);
	/* Each socket joins the reuseport group with the flow table's program (or fails). */
	grp->tun_steer = true;
	return 0;
}

const struct rx_ops rx_udp_ops = {
	.drops_name = "socket_drops",
	.group_init = udp_group_init,
	.open = udp_queue_open,
	.close = udp_queue_close,
	.next = udp_next,
	.drops = udp_queue_drops,
};
