/*
 * Plain GRE's send transports (see tx_packet.h): GRE (RFC 2784, RFC 2890) as frames on a
 * packet socket (packet(7)), or on a raw socket (raw(7)).
 */
#include "tx.h"

#include <endian.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "fd.h"
#include "log.h"
#include "netaddr.h"

/*
 * The plain GRE socket: raw, protocol GRE, bound to the local address, the kernel writing the
 * outer IP header from the socket's options (the template's fields: TTL or hop limit, DF and
 * no local fragmentation, traffic class 0, no flow label) and a packet's control messages
 * (its DS field and TTL where they differ: txq_cmsg). With IP_HDRINCL the kernel would
 * look the route up as "next hop known" (FLOWI_FLAG_KNOWN_NH) and allocate, list and free a
 * route for every packet, which cost one plain GRE session about a third of its throughput
 * here (docs/benchmarks.md, 2026-12-01). It receives
 * nothing: a raw GRE socket gets a copy of every GRE packet the stack takes up (with the drop
 * at tc ingress, only those from others than the peer), and its filter drops them all; nor
 * is it connected, so ICMP errors about the tunnel's packets never fail its sends. A bounded
 * wait keeps a stuck queue from holding a worker past a stop request.
 */
int tx_raw_open(const struct encap_cfg *c, unsigned timeout_ms)
{
	struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = drop_all };
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};
	struct sockaddr_storage self;
	socklen_t self_len = netaddr_sockaddr(c->family, c->local, 0, &self);
	int fd, one = 1, zero = 0, ttl = c->ttl, probe = IP_PMTUDISC_PROBE;
	int v6probe = IPV6_PMTUDISC_PROBE;
	bool ok;

	fd = socket(c->family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_GRE);
	if (fd < 0)
		return -errno;
	ok = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) == 0 &&
	     setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) == 0 &&
	     setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
	     bind(fd, (struct sockaddr *)&self, self_len) == 0;
	if (ok && c->family == AF_INET6)
		ok = setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl)) == 0 &&
		     setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v6probe, sizeof(v6probe)) ==
			     0 &&
		     setsockopt(fd, IPPROTO_IPV6, IPV6_DONTFRAG, &one, sizeof(one)) == 0 &&
		     setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, sizeof(zero)) == 0;
	else if (ok)
		ok = setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) == 0 &&
		     setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof(probe)) == 0;
	if (!ok)
		return fd_close_err(fd);
	return fd;
}

int tx_packet_open(unsigned timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};
	int fd, one = 1;

	/* Protocol 0: no packet is ever queued to it. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return fd_close_err(fd);
	return fd;
}

/* msgs[from..to) on fd, the packet or the raw socket; message k sends entry ent_of[k]. */
static void send_batch(struct txq *q, int fd, unsigned from, unsigned to)
{
	const uint16_t *ent_of = q->packet.ent_of;
	unsigned off = from;

	if (from == to)
		return;
	stat_add(&q->stats->ctr[STAT_TX_BATCHES], 1);
	while (off < to) {
		int sent;

		stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
		sent = sendmmsg(fd, q->msgs + off, to - off, 0);

		if (sent < 0) {
			if (errno == EINTR)
				continue;
			/* The first message failed (buffer full past the timeout, no route,
			 * too big, the device down): drop it and go on with the rest. */
			txq_drop_send(q, &q->ents[ent_of[off]], 1);
			off++;
			continue;
		}
		for (int i = 0; i < sent; i++)
			txq_count_sent(q, 1, tx_ent_len(&q->ents[ent_of[off + i]]));
		if (fd == q->packet.raw_fd)
			stat_add(&q->stats->ctr[STAT_WIRE_TX_IP], (unsigned)sent);
		off += (unsigned)sent;
	}
}

/*
 * How many of the batch's first messages take the IP path. All of them without a next hop;
 * else one when a probe is due (nexthop_tick), none otherwise. Reads the next hop when it
 * changed.
 */
static unsigned ip_path_count(struct txq *q, unsigned n)
{
	uint32_t probes;

	if (nexthop_read(&q->sh->nh, &q->packet.hop_seen, &q->packet.hop))
		q->packet.ll.sll_ifindex = q->packet.hop.ifindex;
	if (!q->packet.hop.ifindex)
		return n;
	probes = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);
	if (probes == q->packet.probes_seen)
		return 0;
	q->packet.probes_seen = probes;
	return 1;
}

_Static_assert(ENCAP_HEADROOM >= ENCAP_OUTER_MAX + ETH_HLEN + sizeof(struct virtio_net_hdr),
	       "a frame's headers fit before the outer header");

/* Message k on the packet socket: written before the outer IP header, the virtio header (a
 * checksum left partial, at its offset in the frame) and the Ethernet header; then the
 * payload. */
static void frame_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer)
{
	struct iovec *iov = &q->iov[TX_IOV * k];
	struct virtio_net_hdr h = { 0 };
	uint8_t *frame = outer - ETH_HLEN - sizeof(h);

	if (e->csum.start) {
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.csum_start = htole16((uint16_t)(ETH_HLEN + e->outer_hlen + e->csum.start));
		h.csum_offset = htole16(e->csum.offset);
	}
	memcpy(frame, &h, sizeof(h));
	memcpy(frame + sizeof(h), q->packet.hop.eth, ETH_HLEN);
	iov[0] = (struct iovec){ frame, sizeof(h) + ETH_HLEN + e->outer_hlen + e->len };
	iov[1] = (struct iovec){ (void *)e->tail, e->tail_len };
	q->msgs[k].msg_hdr.msg_name = &q->packet.ll;
	q->msgs[k].msg_hdr.msg_namelen = sizeof(q->packet.ll);
	q->msgs[k].msg_hdr.msg_control = NULL;
	q->msgs[k].msg_hdr.msg_controllen = 0;
	q->msgs[k].msg_hdr.msg_iov = iov;
	q->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
}

/* Whether entry e goes to another peer than the first (whose next hop the frames follow). */
static bool other_peer(const struct txq *q, const struct tx_ent *e)
{
	const struct encap_cfg *c = q->sh->cfg;

	return memcmp(e->tn->peer, c->remote, ip_addr_len(c->family)) != 0;
}

/* Message k on the IP path: the kernel writes the outer IP header, to the entry's tunnel's
 * peer, its DS field and TTL as encap_build wrote them in outer (the control messages where
 * they are not the socket's own). */
static void ip_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer)
{
	struct msghdr *m = &q->msgs[k].msg_hdr;
	struct tos_fields f;

	tos_read(outer, q->packet.ip_hlen, &f);
	txq_dgram_iov(q, k, e, outer, q->packet.ip_hlen);
	txq_name(q, m, k, e, 0, &q->packet.peer, q->packet.peer_len);
	txq_cmsg(q, m, k, f, 0);
}

/* tx_ip_ops: every message on the IP path. */
static void ip_send(struct txq *q, unsigned from, unsigned to)
{
	for (unsigned k = from; k < to; k++) {
		struct tx_ent *e = &q->ents[k];

		q->packet.ent_of[k] = (uint16_t)k;
		ip_iov(q, k, e, txq_encap(q, e));
	}
	send_batch(q, q->packet.raw_fd, from, to);
}

/*
 * tx_packet_ops: frames to the next hop while it is known, but for the batch's first message
 * once a second (nexthop_tick), which takes the IP path: its sends keep the kernel's neighbour
 * entry in use, so that the kernel confirms it or finds it gone. A tunnel to another peer than
 * the first takes the IP path too (the next hop followed is the first peer's). The IP path's
 * messages go first, each tunnel's packets in their order either way. On the IP path a
 * checksum left partial is completed first.
 */
static void packet_send(struct txq *q, unsigned from, unsigned to)
{
	unsigned ip_end = from + ip_path_count(q, to - from), m = from, ip_msgs = from;

	for (int frames = 0; frames < 2; frames++) {
		for (unsigned k = from; k < to; k++) {
			struct tx_ent *e = &q->ents[k];
			bool ip = k < ip_end || other_peer(q, e);

			if (ip == (bool)frames)
				continue;
			q->packet.ent_of[m] = (uint16_t)k;
			if (ip)
				ip_iov(q, m++, e, txq_encap(q, e));
			else
				frame_iov(q, m++, e, txq_encap(q, e));
		}
		if (!frames)
			ip_msgs = m;
	}
	send_batch(q, q->packet.raw_fd, from, ip_msgs);
	send_batch(q, q->packet.pkt_fd, ip_msgs, to);
}

/* The raw socket, its messages addressed to the peer. */
static int ip_open(struct txq *q)
{
	const struct encap_cfg *c = q->sh->cfg;
	struct tx_packet *p = &q->packet;

	p->pkt_fd = -1;
	p->raw_fd = tx_raw_open(c, TX_SEND_TIMEOUT_MS);
	if (p->raw_fd < 0)
		return p->raw_fd;
	p->ip_hlen = ip_fixed_hlen(c->family);
	p->peer_len = netaddr_sockaddr(c->family, c->remote, 0, &p->peer);
	return 0;
}

/* The raw socket, and the packet socket, its frames to the next hop's device. */
static int packet_open(struct txq *q)
{
	struct tx_packet *p = &q->packet;
	int rc = ip_open(q);

	if (rc)
		return rc;
	p->pkt_fd = tx_packet_open(TX_SEND_TIMEOUT_MS);
	if (p->pkt_fd < 0)
		return p->pkt_fd;
	p->ll.sll_family = AF_PACKET;
	p->ll.sll_protocol = htons(q->sh->cfg->family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	/* The probe clock as it stands: the first probe comes with the first tick. */
	p->probes_seen = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);
	return 0;
}

static void packet_close(struct txq *q)
{
	struct tx_packet *p = &q->packet;

	if (p->raw_fd >= 0)
		close(p->raw_fd);
	if (p->pkt_fd >= 0)
		close(p->pkt_fd);
	p->raw_fd = p->pkt_fd = -1;
}

/*
 * The next hop, looked up and followed (nexthop.h), before any worker opens its sockets;
 * inner checksums go to the device where no GRE checksum must cover them and TUN says which
 * are partial. A kernel that refuses a packet socket with virtio headers, or the rtnetlink
 * sockets, leaves the IP path (the fallback), said in one warning.
 */
static int packet_prepare(struct tx_group *grp)
{
	struct gw_shared *sh = grp->sh;
	const struct encap_cfg *c = sh->cfg;
	struct netaddr remote = { .family = c->family }, local = remote;
	int rc = tx_packet_open(0);

	if (rc >= 0) {
		close(rc);
		memcpy(remote.bytes, c->remote, netaddr_len(remote.family));
		memcpy(local.bytes, c->local, netaddr_len(local.family));
		rc = nexthop_open(&grp->nh, &sh->nh, &remote, &local);
	}
	if (rc < 0) {
		log_warnx("no packet sockets for GRE (%s): it leaves on the IP path",
			  strerror(-rc));
		return rc;
	}
	sh->tx_csum_partial = sh->vnet_hdr && !(c->gre_flags & GRE_F_CSUM);
	return 0;
}

static void packet_release(struct tx_group *grp)
{
	nexthop_close(&grp->nh);
}

const struct tx_ops tx_ip_ops = {
	.name = "ip",
	.open = ip_open,
	.close = packet_close,
	.send = ip_send,
};

const struct tx_ops tx_packet_ops = {
	.name = "packet",
	.fallback = &tx_ip_ops,
	.prepare = packet_prepare,
	.release = packet_release,
	.open = packet_open,
	.close = packet_close,
	.send = packet_send,
};
