/*
 * The send queue (see tx.h): GRE (RFC 2784, RFC 2890) on a packet socket (packet(7)) or a raw
 * socket (raw(7)), GRE-in-UDP (RFC 8086) with UDP_SEGMENT (udp(7)).
 */
#include "tx.h"

#include <endian.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "fd.h"
#include "log.h"
#include "netaddr.h"
#include "udp.h"

/* An untracked superpacket's segments share a number with this bit set (the flow table numbers
 * its entries from 1, far below it). */
#define TX_GROUP_BIT 0x80000000u

/*
 * The plain GRE socket: raw, protocol GRE, bound to the local address, the kernel writing the
 * outer IP header from the socket's options (the template's fields: TTL or hop limit, DF and
 * no local fragmentation, traffic class 0, no flow label). With IP_HDRINCL the kernel would
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

/* What the kernel accepted for the wire: packets, and their bytes with the outer headers. */
static void count_sent(struct txq *q, uint64_t packets, uint64_t bytes)
{
	stat_add(&q->stats->ctr[STAT_WIRE_TX_PACKETS], packets);
	stat_add(&q->stats->ctr[STAT_WIRE_TX_BYTES], bytes);
}

static size_t ent_len(const struct tx_ent *e, unsigned outer_hlen)
{
	return outer_hlen + e->len + e->tail_len;
}

/* Plain GRE: msgs[from..to) on fd, the packet or the raw socket. */
static void send_plain(struct txq *q, int fd, unsigned from, unsigned to)
{
	unsigned off = from, outer_hlen = q->sh->cfg->outer_hlen;

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
			stat_add(&q->stats->drops[DROP_TX_SEND], 1);
			off++;
			continue;
		}
		for (int i = 0; i < sent; i++)
			count_sent(q, 1, ent_len(&q->ents[off + i], outer_hlen));
		if (fd == q->raw_fd)
			stat_add(&q->stats->ctr[STAT_WIRE_TX_IP], (unsigned)sent);
		off += (unsigned)sent;
	}
}

/*
 * UDP_SEGMENT refused a message at run time: the kernel says EIO when the route cannot take
 * UDP GSO (an IPsec policy on it; before Linux 6.11 also a device that cannot checksum),
 * which the probe at start, of the socket option alone, could not see. This queue sends
 * datagram by datagram from now on, says so once (the send already failed: off the fast
 * path), and sends this message's datagrams one by one.
 */
static void send_each(struct txq *q, int fd, const struct msghdr *m, unsigned segs,
		      unsigned outer_wire)
{
	if (!q->udp_gso_off) {
		__atomic_store_n(&q->udp_gso_off, true, __ATOMIC_RELAXED);
		log_warnx("worker %u: UDP_SEGMENT refused (%s): sending datagram by datagram",
			  q->id, strerror(errno));
	}
	for (unsigned k = 0; k < segs; k++) {
		struct msghdr one = { .msg_iov = m->msg_iov + TX_IOV * k, .msg_iovlen = TX_IOV };
		ssize_t sent;

		do {
			stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
			sent = sendmsg(fd, &one, 0);
		} while (sent < 0 && errno == EINTR);
		if (sent < 0) {
			stat_add(&q->stats->drops[DROP_TX_SEND], 1);
			continue;
		}
		count_sent(q, 1, (uint64_t)sent + outer_wire);
	}
}

/* Adds the UDP_SEGMENT control message of datagrams of size bytes to message i. */
static void set_gso(struct txq *q, unsigned i, size_t size)
{
	struct msghdr *m = &q->msgs[i].msg_hdr;
	struct cmsghdr *cm = (struct cmsghdr *)q->cmsg[i].buf;
	uint16_t gso = (uint16_t)size;

	m->msg_control = cm;
	m->msg_controllen = CMSG_SPACE(sizeof(gso));
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(gso));
	memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
}

/*
 * Over UDP, the queued packets become messages, in the order flush put them (by socket, each
 * flow's packets in their order): consecutive packets of one flow, all of one size but the
 * last, go in one message with UDP_SEGMENT (within the kernel's limits on count and size), so
 * a flow's superpackets of a pass, and its ACKs, leave in one send whenever their sizes allow;
 * anything else alone. Messages on one socket go in one sendmmsg. A message holds one flow
 * only: the peer's socket, that is its worker, is chosen by the first one.
 */
static void send_udp(struct txq *q, unsigned n)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned outer_wire = (c->family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
	unsigned nmsg = 0, segs[TX_MSGS], socks[TX_MSGS];
	bool use_gso = txq_udp_gso(q);

	for (unsigned i = 0; i < n;) {
		const struct tx_ent *e = &q->ents[q->order[i]];
		size_t size = ent_len(e, c->outer_hlen), total = size, last = size;
		struct msghdr *m = &q->msgs[nmsg].msg_hdr;
		unsigned j = i + 1;

		/* The next packet joins if it is the flow's, no larger, and all before it were
		 * full-sized (only the last datagram of a UDP_SEGMENT message may be short). */
		for (; use_gso && e->flow && j < n && j - i < UDP_GSO_SEGS; j++) {
			const struct tx_ent *next = &q->ents[q->order[j]];
			size_t len = ent_len(next, c->outer_hlen);

			if (next->flow != e->flow || len > size || last != size ||
			    total + len > UDP_PAYLOAD_MAX)
				break;
			total += len;
			last = len;
		}
		m->msg_name = NULL;
		m->msg_namelen = 0;
		m->msg_iov = &q->iov[TX_IOV * i];
		m->msg_iovlen = TX_IOV * (j - i);
		m->msg_control = NULL;
		m->msg_controllen = 0;
		if (j - i > 1)
			set_gso(q, nmsg, size);
		segs[nmsg] = j - i;
		socks[nmsg] = e->sock;
		nmsg++;
		i = j;
	}
	stat_add(&q->stats->ctr[STAT_TX_BATCHES], 1);
	for (unsigned off = 0; off < nmsg;) {
		unsigned run = 1;
		int sent;

		while (off + run < nmsg && socks[off + run] == socks[off])
			run++;
		stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
		sent = sendmmsg(q->udp_fd[socks[off]], q->msgs + off, run, 0);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EIO && segs[off] > 1)
				send_each(q, q->udp_fd[socks[off]], &q->msgs[off].msg_hdr,
					  segs[off], outer_wire);
			else
				stat_add(&q->stats->drops[DROP_TX_SEND], segs[off]);
			off++;
			continue;
		}
		for (int k = 0; k < sent; k++) {
			if (segs[off + k] > 1)
				stat_add(&q->stats->ctr[STAT_UDP_GSO_SENDS], 1);
			count_sent(q, segs[off + k],
				   q->msgs[off + k].msg_len + (uint64_t)segs[off + k] * outer_wire);
		}
		off += (unsigned)sent;
	}
}

/* Over UDP, the queued entries in sending order: grouped by socket (one sendmmsg each), a
 * stable counting sort, so each flow's packets (one socket per flow) keep their order. */
static void order_by_socket(struct txq *q, unsigned n)
{
	unsigned start[UDP_TX_PORTS + 1] = { 0 };

	for (unsigned i = 0; i < n; i++)
		start[q->ents[i].sock + 1]++;
	for (unsigned s = 1; s <= UDP_TX_PORTS; s++)
		start[s] += start[s - 1];
	for (unsigned i = 0; i < n; i++)
		q->order[start[q->ents[i].sock]++] = (uint16_t)i;
}

/*
 * Plain GRE: how many of the batch's first messages take the IP path. All of them without a
 * next hop (or a packet socket); else one when a probe is due (nexthop_tick), none otherwise.
 * Reads the next hop when it changed.
 */
static unsigned ip_path_count(struct txq *q, unsigned n)
{
	uint32_t probes;

	if (q->pkt_fd < 0)
		return n;
	if (nexthop_read(&q->sh->nh, &q->hop_seen, &q->hop))
		q->ll.sll_ifindex = q->hop.ifindex;
	if (!q->hop.ifindex)
		return n;
	probes = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);
	if (probes == q->probes_seen)
		return 0;
	q->probes_seen = probes;
	return 1;
}

_Static_assert(ENCAP_HEADROOM >= ENCAP_OUTER_MAX + ETH_HLEN + sizeof(struct virtio_net_hdr),
	       "a frame's headers fit before the outer header");

/* Message k on the packet socket: written before the outer IP header, the virtio header (a
 * checksum left partial, at its offset in the frame) and the Ethernet header; then the
 * payload. */
static void frame_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer)
{
	const struct encap_cfg *c = q->sh->cfg;
	struct iovec *iov = &q->iov[TX_IOV * k];
	struct virtio_net_hdr h = { 0 };
	uint8_t *frame = outer - ETH_HLEN - sizeof(h);

	if (e->csum.start) {
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.csum_start = htole16((uint16_t)(ETH_HLEN + c->outer_hlen + e->csum.start));
		h.csum_offset = htole16(e->csum.offset);
	}
	memcpy(frame, &h, sizeof(h));
	memcpy(frame + sizeof(h), q->hop.eth, ETH_HLEN);
	iov[0] = (struct iovec){ frame, sizeof(h) + ETH_HLEN + c->outer_hlen + e->len };
	iov[1] = (struct iovec){ (void *)e->tail, e->tail_len };
	q->msgs[k].msg_hdr.msg_name = &q->ll;
	q->msgs[k].msg_hdr.msg_namelen = sizeof(q->ll);
	q->msgs[k].msg_hdr.msg_iov = iov;
	q->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
}

/* Message k's pieces elsewhere: from where the kernel's part ends (the outer IP header on the
 * raw socket, over UDP also UDP's), then the payload. A checksum left partial is completed.
 * Each message's two pieces follow the last's: over UDP send_udp joins messages. */
static void dgram_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer)
{
	const struct encap_cfg *c = q->sh->cfg;
	struct iovec *iov = &q->iov[TX_IOV * k];

	if (e->csum.start)
		inet_csum_finish(e->inner + e->csum.start, e->len - e->csum.start, e->tail,
				 e->tail_len, e->csum);
	iov[0] = (struct iovec){ outer + q->ip_hlen, c->outer_hlen - q->ip_hlen + e->len };
	iov[1] = (struct iovec){ (void *)e->tail, e->tail_len };
	if (!c->udp) {
		q->msgs[k].msg_hdr.msg_name = &q->peer;
		q->msgs[k].msg_hdr.msg_namelen = q->peer_len;
	}
	q->msgs[k].msg_hdr.msg_iov = iov;
	q->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
}

void txq_flush(struct txq *q)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned n = q->nents, ip_first;
	uint32_t seq = 0;

	if (n == 0)
		return;
	/* The batch's numbers follow the sending order. */
	if (c->gre_flags & GRE_F_SEQ)
		seq = __atomic_fetch_add(&q->sh->tx_seq, n, __ATOMIC_RELAXED);
	if (c->udp)
		order_by_socket(q, n);
	ip_first = c->udp ? n : ip_path_count(q, n);
	for (unsigned k = 0; k < n; k++) {
		struct tx_ent *e = &q->ents[c->udp ? q->order[k] : k];
		uint8_t *outer = encap_build2(c, e->inner, e->len, e->tail, e->tail_len, seq + k);

		if (k < ip_first)
			dgram_iov(q, k, e, outer);
		else
			frame_iov(q, k, e, outer);
	}
	if (c->udp) {
		send_udp(q, n);
	} else {
		send_plain(q, q->raw_fd, 0, ip_first);
		send_plain(q, q->pkt_fd, ip_first, n);
	}
	q->nents = 0;
}

uint8_t *txq_hdr_room(struct txq *q)
{
	if (q->nents == TX_MSGS)
		txq_flush(q);
	return q->hdrs + (size_t)q->nents * TX_SEG_HDR;
}

void txq_add(struct txq *q, uint8_t *inner, size_t len, const uint8_t *tail, size_t tail_len,
	     uint32_t flow, unsigned sock, struct l4_csum csum)
{
	if (q->nents == TX_MSGS)
		txq_flush(q);
	q->ents[q->nents++] = (struct tx_ent){ inner, len, tail, tail_len, flow, sock, csum };
}

uint32_t txq_group(struct txq *q)
{
	q->groups = (q->groups + 1) | TX_GROUP_BIT;
	return q->groups;
}

/*
 * GRE-in-UDP: one sending socket per source port. The first worker picks UDP_TX_PORTS
 * consecutive ports of the dynamic range, the same for every worker (the main thread sets the
 * workers up one after the other). An ephemeral bind would not do: with SO_REUSEPORT the
 * kernel may hand out one port to all of them, and every flow would look alike to the peer.
 */
static int open_udp(struct txq *q)
{
	const struct encap_cfg *c = q->sh->cfg;
	uint16_t *sports = q->sh->udp_sports;
	int rc = 0;

	for (unsigned attempt = 0; attempt < UDP_SPORT_TRIES; attempt++) {
		bool first = sports[0] == 0;
		uint16_t base =
			first ? (uint16_t)(UDP_SPORT_LO +
					   ((unsigned)getpid() * UDP_SPORT_PID_STEP +
					    attempt * UDP_SPORT_TRY_STEP) %
						   (UDP_SPORT_HI - UDP_SPORT_LO - UDP_TX_PORTS))
			      : sports[0];
		unsigned i;

		for (i = 0; i < UDP_TX_PORTS; i++) {
			uint16_t port = (uint16_t)(base + i);

			q->udp_fd[i] = udp_tx_open(c->family, c->local, &port, c->remote,
						   c->udp_port, TX_SEND_TIMEOUT_MS);
			if (q->udp_fd[i] < 0)
				break;
			sports[i] = port;
		}
		if (i == UDP_TX_PORTS)
			return 0;
		rc = q->udp_fd[i];
		q->udp_fd[i] = -1;
		while (i > 0) {
			close(q->udp_fd[--i]);
			q->udp_fd[i] = -1;
		}
		if (!first || rc != -EADDRINUSE)
			return rc;
		sports[0] = 0;
	}
	return -EADDRINUSE;
}

/* Plain GRE: the raw socket, its messages addressed to the peer; and with --wire-tx packet
 * the packet socket, its frames to the next hop's device. */
static int open_plain(struct txq *q)
{
	const struct encap_cfg *c = q->sh->cfg;

	q->raw_fd = tx_raw_open(c, TX_SEND_TIMEOUT_MS);
	if (q->raw_fd < 0)
		return q->raw_fd;
	q->ip_hlen = ip_fixed_hlen(c->family);
	q->peer_len = netaddr_sockaddr(c->family, c->remote, 0, &q->peer);
	if (!q->sh->wire_tx_packet)
		return 0;
	q->pkt_fd = tx_packet_open(TX_SEND_TIMEOUT_MS);
	if (q->pkt_fd < 0)
		return q->pkt_fd;
	q->ll.sll_family = AF_PACKET;
	q->ll.sll_protocol = htons(c->family == AF_INET6 ? ETH_P_IPV6 : ETH_P_IP);
	/* The probe clock as it stands: the first probe comes with the first tick. */
	q->probes_seen = __atomic_load_n(&q->sh->nh.probes, __ATOMIC_RELAXED);
	return 0;
}

int txq_init(struct txq *q, unsigned id, struct gw_shared *sh, struct worker_stats *stats)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->sh = sh;
	q->stats = stats;
	q->id = id;
	q->raw_fd = -1;
	q->pkt_fd = -1;
	for (unsigned i = 0; i < UDP_TX_PORTS; i++)
		q->udp_fd[i] = -1;
	q->hdrs = aligned_alloc(64, (size_t)TX_MSGS * TX_SEG_HDR);
	if (!q->hdrs)
		return -ENOMEM;
	rc = sh->cfg->udp ? open_udp(q) : open_plain(q);
	if (rc)
		txq_fini(q);
	return rc;
}

void txq_fini(struct txq *q)
{
	if (q->raw_fd >= 0)
		close(q->raw_fd);
	if (q->pkt_fd >= 0)
		close(q->pkt_fd);
	q->raw_fd = q->pkt_fd = -1;
	for (unsigned i = 0; i < UDP_TX_PORTS; i++) {
		if (q->udp_fd[i] >= 0)
			close(q->udp_fd[i]);
		q->udp_fd[i] = -1;
	}
	free(q->hdrs);
	q->hdrs = NULL;
}
