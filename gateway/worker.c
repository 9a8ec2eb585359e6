/*
 * The worker loop: TUN -> GRE -> wire in sendmmsg batches, wire -> GRE -> TUN from the
 * receive ring. No allocation, no lock, no log call in the loop: every outcome is a counter.
 */
#include "worker.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mss.h"
#include "netaddr.h"
#include "steer.h"
#include "thread.h"
#include "tx.h"

/* --aqm signals a standing queue on datagrams at least this large (a full segment's). */
#define AQM_MIN_DATAGRAM 1000

/* Over UDP, an untracked superpacket's segments share an id with this bit set (the flow table
 * numbers its entries from 1, far below it). */
#define FLOW_GROUP_BIT 0x80000000u

static inline uint8_t *slot(struct worker *w, unsigned i)
{
	return w->slots + (size_t)i * (ENCAP_HEADROOM + WORKER_SLOT) + ENCAP_HEADROOM;
}

static inline bool stopping(const struct worker *w)
{
	return __atomic_load_n(&w->sh->stop, __ATOMIC_ACQUIRE);
}

/* Token bucket of WORKER_ICMP_PER_SEC per one-second window, as routers limit errors. */
static bool icmp_allowed(struct worker *w)
{
	uint64_t now = clock_mono_ns() / NSEC_PER_SEC;

	if (now != w->icmp_window) {
		w->icmp_window = now;
		w->icmp_in_window = 0;
	}
	return w->icmp_in_window++ < WORKER_ICMP_PER_SEC;
}

/*
 * Writes one packet into TUN, behind a virtio header when the device has them (h NULL: a
 * packet that needs nothing of the kernel). Returns whether the kernel took it.
 */
static bool tun_put(struct worker *w, const struct virtio_net_hdr *h, const uint8_t *pkt,
		    size_t len)
{
	static const struct virtio_net_hdr none;
	struct iovec iov[2] = {
		{ .iov_base = (void *)(h ? h : &none), .iov_len = sizeof(*h) },
		{ .iov_base = (void *)pkt, .iov_len = len },
	};

	if (!w->sh->vnet_hdr)
		return write(w->tun_fd, pkt, len) == (ssize_t)len;
	return writev(w->tun_fd, iov, 2) == (ssize_t)(sizeof(*h) + len);
}

static void send_too_big(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip)
{
	size_t n;

	if (!icmp_allowed(w)) {
		stat_add(&w->stats.ctr[STAT_ICMP_LIMITED], 1);
		return;
	}
	n = icmp_too_big(w->sh->cfg, pkt, len, ip, w->icmp, sizeof(w->icmp));
	if (n && tun_put(w, NULL, w->icmp, n))
		stat_add(&w->stats.ctr[STAT_ICMP_SENT], 1);
}

/* Counts n packets of pkt's flow; returns the flow's hash (the same both ways), which over
 * UDP also picks the flow's source port. *id (id may be NULL) gets the flow's table entry as
 * a number from 1, or 0 when the table has no room for it. */
static uint32_t track_flow(struct worker *w, const uint8_t *pkt, size_t len,
			   const struct ip_info *ip, bool encap, unsigned n, uint32_t *id)
{
	struct flow_key k;
	struct flow_entry *e;

	flow_key_from(pkt, len, ip, &k);
	e = flow_get(w->flows, &k);
	if (id)
		*id = e ? (uint32_t)(e - w->flows->e) + 1 : 0;
	if (!e)
		return flow_hash(&k);
	stat_add(encap ? &e->encap_packets : &e->decap_packets, n);
	return e->hash;
}

/* Sends msgs[0..n); what the kernel refuses is dropped and counted, never retried forever. */
/* What the kernel accepted for the wire: packets, and their bytes with the outer headers. */
static void count_sent(struct worker *w, uint64_t packets, uint64_t bytes)
{
	stat_add(&w->stats.ctr[STAT_WIRE_TX_PACKETS], packets);
	stat_add(&w->stats.ctr[STAT_WIRE_TX_BYTES], bytes);
}

static void send_batch(struct worker *w, unsigned n)
{
	unsigned off = 0;

	stat_add(&w->stats.ctr[STAT_TX_BATCHES], 1);
	while (off < n) {
		int sent = sendmmsg(w->tx_fd, w->msgs + off, n - off, 0);

		if (sent < 0) {
			if (errno == EINTR)
				continue;
			/* The first message failed (buffer full past the timeout, no route,
			 * too big): drop it and go on with the rest. */
			stat_add(&w->stats.drops[DROP_TX_SEND], 1);
			off++;
			continue;
		}
		for (int i = 0; i < sent; i++)
			count_sent(w, 1, w->msgs[off + i].msg_len);
		off += (unsigned)sent;
	}
}

static size_t ent_len(const struct tx_ent *e, unsigned outer_hlen)
{
	return outer_hlen + e->len + e->tail_len;
}

/*
 * UDP_SEGMENT refused a message at run time: the kernel says EIO when the route cannot take
 * UDP GSO (an IPsec policy on it; before Linux 6.11 also a device that cannot checksum),
 * which the probe at start, of the socket option alone, could not see. This worker sends
 * datagram by datagram from now on, says so once (the send already failed: off the fast
 * path), and sends this message's datagrams one by one.
 */
static void send_each(struct worker *w, int fd, const struct msghdr *m, unsigned segs,
		      unsigned outer_wire)
{
	if (!w->udp_gso_off) {
		__atomic_store_n(&w->udp_gso_off, true, __ATOMIC_RELAXED);
		log_warnx("worker %u: UDP_SEGMENT refused (%s): sending datagram by datagram",
			  w->id, strerror(errno));
	}
	for (unsigned k = 0; k < segs; k++) {
		struct msghdr one = { .msg_iov = m->msg_iov + 2 * k, .msg_iovlen = 2 };
		ssize_t sent;

		do
			sent = sendmsg(fd, &one, 0);
		while (sent < 0 && errno == EINTR);
		if (sent < 0) {
			stat_add(&w->stats.drops[DROP_TX_SEND], 1);
			continue;
		}
		count_sent(w, 1, (uint64_t)sent + outer_wire);
	}
}

/*
 * Over UDP, the queued packets become messages, in the order flush_tx put them (by socket,
 * each flow's packets in their order): consecutive packets of one flow, all of one size but
 * the last, go in one message with UDP_SEGMENT (within the kernel's limits on count and
 * size), so a flow's superpackets of a pass, and its ACKs, leave in one send whenever their
 * sizes allow; anything else alone. Messages on one socket go in one sendmmsg. A message
 * holds one flow only: the peer's socket, that is its worker, is chosen by the first one.
 */
static void send_udp(struct worker *w, unsigned n)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned outer_wire = (c->family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
	unsigned nmsg = 0, segs[WORKER_TX_MSGS], socks[WORKER_TX_MSGS];
	bool use_gso = worker_udp_gso(w);

	for (unsigned i = 0; i < n;) {
		const struct tx_ent *e = &w->ents[w->order[i]];
		size_t size = ent_len(e, c->outer_hlen), total = size, last = size;
		struct msghdr *m = &w->msgs[nmsg].msg_hdr;
		unsigned j = i + 1;

		/* The next packet joins if it is the flow's, no larger, and all before it were
		 * full-sized (only the last datagram of a UDP_SEGMENT message may be short). */
		for (; use_gso && e->flow && j < n && j - i < UDP_GSO_SEGS; j++) {
			const struct tx_ent *next = &w->ents[w->order[j]];
			size_t len = ent_len(next, c->outer_hlen);

			if (next->flow != e->flow || len > size || last != size ||
			    total + len > UDP_PAYLOAD_MAX)
				break;
			total += len;
			last = len;
		}
		m->msg_name = NULL;
		m->msg_namelen = 0;
		m->msg_iov = &w->iov[2 * i];
		m->msg_iovlen = 2 * (j - i);
		m->msg_control = NULL;
		m->msg_controllen = 0;
		if (j - i > 1) {
			struct cmsghdr *cm = (struct cmsghdr *)w->tx_cmsg[nmsg].buf;
			uint16_t gso = (uint16_t)size;

			m->msg_control = cm;
			m->msg_controllen = CMSG_SPACE(sizeof(gso));
			cm->cmsg_level = IPPROTO_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(gso));
			memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
		}
		segs[nmsg] = j - i;
		socks[nmsg] = e->sock;
		nmsg++;
		i = j;
	}
	stat_add(&w->stats.ctr[STAT_TX_BATCHES], 1);
	for (unsigned off = 0; off < nmsg;) {
		unsigned run = 1;
		int sent;

		while (off + run < nmsg && socks[off + run] == socks[off])
			run++;
		sent = sendmmsg(w->udp_tx[socks[off]], w->msgs + off, run, 0);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EIO && segs[off] > 1)
				send_each(w, w->udp_tx[socks[off]], &w->msgs[off].msg_hdr,
					  segs[off], outer_wire);
			else
				stat_add(&w->stats.drops[DROP_TX_SEND], segs[off]);
			off++;
			continue;
		}
		for (int k = 0; k < sent; k++) {
			if (segs[off + k] > 1)
				stat_add(&w->stats.ctr[STAT_UDP_GSO_SENDS], 1);
			count_sent(w, segs[off + k],
				   w->msgs[off + k].msg_len + (uint64_t)segs[off + k] * outer_wire);
		}
		off += (unsigned)sent;
	}
}

/* Over UDP, the queued entries in sending order: grouped by socket (one sendmmsg each), a
 * stable counting sort, so each flow's packets (one socket per flow) keep their order. */
static void order_by_socket(struct worker *w, unsigned n)
{
	unsigned start[UDP_TX_PORTS + 1] = { 0 };

	for (unsigned i = 0; i < n; i++)
		start[w->ents[i].sock + 1]++;
	for (unsigned s = 1; s <= UDP_TX_PORTS; s++)
		start[s] += start[s - 1];
	for (unsigned i = 0; i < n; i++)
		w->order[start[w->ents[i].sock]++] = (uint16_t)i;
}

/* Encapsulates and sends what is queued. The GRE sequence numbers of the batch are taken
 * with one atomic add (RFC 2890 numbers the tunnel, not a worker) and follow the sending
 * order. */
static void flush_tx(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned n = w->nents;
	uint32_t seq = 0;

	if (n == 0)
		return;
	if (c->gre_flags & GRE_F_SEQ)
		seq = __atomic_fetch_add(&w->sh->tx_seq, n, __ATOMIC_RELAXED);
	if (c->udp)
		order_by_socket(w, n);
	for (unsigned k = 0; k < n; k++) {
		const struct tx_ent *e = &w->ents[c->udp ? w->order[k] : k];
		struct iovec *iov = &w->iov[2 * k];

		iov[0].iov_base = encap_build2(c, e->inner, e->len, e->tail, e->tail_len, seq + k);
		iov[0].iov_len = c->outer_hlen + e->len;
		iov[1].iov_base = (void *)e->tail;
		iov[1].iov_len = e->tail_len;
		w->msgs[k].msg_hdr.msg_iov = iov;
		w->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
	}
	if (c->udp)
		send_udp(w, n);
	else
		send_batch(w, n);
	w->nents = 0;
}

static void queue(struct worker *w, uint8_t *inner, size_t len, const uint8_t *tail,
		  size_t tail_len, uint32_t flow, unsigned sock)
{
	if (w->nents == WORKER_TX_MSGS)
		flush_tx(w);
	w->ents[w->nents++] = (struct tx_ent){ inner, len, tail, tail_len, flow, sock };
	stat_add(&w->stats.ctr[STAT_TUN_RX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_TUN_RX_BYTES], len + tail_len);
}

/* Cuts a superpacket into segments, each queued with its own headers and its payload where
 * it lies in the slot. */
static void queue_segments(struct worker *w, const struct gso_pkt *g, const struct ip_info *ip)
{
	uint32_t flow;
	/* Over UDP the flow's hash picks its sending socket, that is its source port. */
	unsigned sock = track_flow(w, g->pkt, g->len, ip, true, g->nseg, &flow) % UDP_TX_PORTS;

	if (!flow) { /* untracked: its segments may still share a message */
		w->groups = (w->groups + 1) | FLOW_GROUP_BIT;
		flow = w->groups;
	}

	for (unsigned i = 0; i < g->nseg; i++) {
		uint8_t *hdr;
		size_t plen;

		if (w->nents == WORKER_TX_MSGS)
			flush_tx(w);
		hdr = w->seg_hdrs + (size_t)w->nents * WORKER_SEG_HDR + ENCAP_HEADROOM;
		plen = gso_segment(g, i, hdr);
		queue(w, hdr, g->hdr_len, g->pkt + g->hdr_len + (size_t)i * g->mss, plen, flow,
		      sock);
	}
	stat_add(&w->stats.ctr[STAT_GSO_SUPERPACKETS], 1);
}

/* Reads one packet from TUN into inner; with virtio headers, *h gets its header. */
static ssize_t tun_get(struct worker *w, uint8_t *inner, struct virtio_net_hdr *h)
{
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(*h) },
		{ .iov_base = inner, .iov_len = WORKER_SLOT },
	};
	ssize_t len;

	if (!w->sh->vnet_hdr) {
		memset(h, 0, sizeof(*h));
		return read(w->tun_fd, inner, WORKER_SLOT);
	}
	len = readv(w->tun_fd, iov, 2);
	if (len < 0)
		return len;
	if ((size_t)len < sizeof(*h)) {
		errno = EPROTO;
		return -1;
	}
	return len - (ssize_t)sizeof(*h);
}

/* Reads up to a batch from TUN, encapsulates and sends it. Returns packets read. */
static unsigned from_tun(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned n = 0, got = 0;

	while (n < WORKER_BATCH) {
		uint8_t *inner = slot(w, n);
		struct virtio_net_hdr h;
		struct gso_pkt g;
		struct ip_info ip;
		enum drop_reason why;
		uint32_t flow;
		unsigned sock;
		ssize_t len = tun_get(w, inner, &h);

		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPROTO) {
				stat_add(&w->stats.drops[DROP_TX_BAD_INNER], 1);
				continue;
			}
			break; /* EAGAIN: TUN is empty */
		}
		got++;
		stat_add(&w->stats.ctr[STAT_TUN_READS], 1);
		/* A superpacket, or a packet whose checksum the kernel left to us. */
		why = gso_parse(&h, inner, (size_t)len, c->mtu, &g);
		if (why == DROP_TX_TOO_BIG && ip_parse(inner, (size_t)len, false, &ip) < 0)
			why = DROP_TX_BAD_INNER; /* the ICMP error below quotes the header */
		if (why == DROP_NONE && g.nseg) {
			if (ip_parse(inner, (size_t)len, false, &ip) < 0 || ip.tot_len != len)
				why = DROP_TX_BAD_INNER;
			else {
				queue_segments(w, &g, &ip);
				n++;
				continue;
			}
		}
		if (why == DROP_NONE)
			why = encap_check(c, inner, (size_t)len, &ip);
		if (why == DROP_TX_TOO_BIG && ip.df)
			send_too_big(w, inner, (size_t)len, &ip);
		if (why != DROP_NONE) {
			stat_add(&w->stats.drops[why], 1);
			continue;
		}
		if (c->mss_clamp && mss_clamp(inner, (size_t)len, &ip,
					      ip.family == AF_INET6 ? w->sh->mss6 : w->sh->mss4))
			stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
		sock = track_flow(w, inner, (size_t)len, &ip, true, 1, &flow) % UDP_TX_PORTS;
		queue(w, inner, (size_t)len, NULL, 0, flow, sock);
		n++;
	}
	flush_tx(w);
	return got;
}

/* gro_emit_fn: a packet or superpacket from the coalescer goes into TUN. */
static void emit_tun(void *ctx, const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
		     unsigned nseg)
{
	struct worker *w = ctx;
	/* Counted as the segments that make it up, as they crossed the wire. */
	size_t seg_bytes = len + (size_t)(nseg - 1) * le16toh(h->hdr_len);

	if (!tun_put(w, h, pkt, len)) {
		stat_add(&w->stats.drops[DROP_TUN_WRITE], nseg);
		return;
	}
	stat_add(&w->stats.ctr[STAT_TUN_WRITES], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_PACKETS], nseg);
	stat_add(&w->stats.ctr[STAT_TUN_TX_BYTES], seg_bytes);
	if (nseg > 1)
		stat_add(&w->stats.ctr[STAT_GRO_SUPERPACKETS], 1);
}

/* A decapsulated packet, checked, goes into TUN (or the coalescer). */
static void deliver_inner(struct worker *w, const struct decap_result *rr)
{
	const struct encap_cfg *c = w->sh->cfg;
	struct decap_result r = *rr;
	struct ip_info ip;
	/* The buffer is ours until the next packet is taken: the inner packet may be edited. */
	uint8_t *inner = (uint8_t *)r.inner;

	ip_parse(inner, r.inner_len, false, &ip);
	if (r.has_seq) {
		struct flow_key k;
		struct flow_entry *e;

		stats_seq(&w->stats, r.seq);
		flow_key_from(inner, r.inner_len, &ip, &k);
		e = flow_get(w->flows, &k);
		if (e) {
			int order = flow_seq(e, r.seq);

			if (order == 1)
				stat_add(&w->stats.ctr[STAT_SEQ_REORDERED], 1);
			else if (order == 2)
				stat_add(&w->stats.ctr[STAT_SEQ_DUPLICATE], 1);
			stat_add(&e->decap_packets, 1);
		}
	} else {
		track_flow(w, inner, r.inner_len, &ip, false, 1, NULL);
	}
	if (c->mss_clamp &&
	    mss_clamp(inner, r.inner_len, &ip, ip.family == AF_INET6 ? w->sh->mss6 : w->sh->mss4))
		stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
	if (w->sh->vnet_hdr) {
		gro_add(&w->gro, inner, r.inner_len, emit_tun, w);
		return;
	}
	if (!tun_put(w, NULL, inner, r.inner_len)) {
		stat_add(&w->stats.drops[DROP_TUN_WRITE], 1);
		return;
	}
	stat_add(&w->stats.ctr[STAT_TUN_WRITES], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_BYTES], r.inner_len);
}

/*
 * --aqm: a standing queue is signalled on the next full-sized packet from the wire (a bulk
 * flow's, which builds it, not an ACK or a latency probe, which lose more by it and could not
 * shrink it): its inner packet is marked CE when ECN-capable, else dropped. Returns the drop
 * reason for the packet, DROP_NONE to deliver it. The packet is ours until the next one is
 * taken, so it may be edited in place.
 */
static enum drop_reason aqm_rx_verdict(struct worker *w, const struct decap_result *r,
				       size_t outer_len)
{
	if (!w->aqm_pending || outer_len < AQM_MIN_DATAGRAM)
		return DROP_NONE;
	w->aqm_pending = false;
	if (ip_ecn_set_ce((uint8_t *)r->inner, r->inner_len)) {
		stat_add(&w->stats.ctr[STAT_AQM_MARKED], 1);
		return DROP_NONE;
	}
	return DROP_AQM;
}

static void deliver(struct worker *w, const struct rx_pkt *p)
{
	struct decap_result r;
	enum drop_reason why;

	stat_add(&w->stats.ctr[STAT_WIRE_RX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_WIRE_RX_BYTES], p->wirelen);
	why = decap(w->sh->cfg, p->data, p->caplen, p->wirelen, &r);
	if (why == DROP_NONE)
		why = aqm_rx_verdict(w, &r, p->wirelen);
	if (why != DROP_NONE) {
		stat_add(&w->stats.drops[why], 1);
		return;
	}
	deliver_inner(w, &r);
}

static bool from_peer(const struct worker *w, const struct sockaddr_storage *ss)
{
	return netaddr_sockaddr_is(ss, w->sh->cfg->family, w->sh->cfg->remote);
}

/* What the kernel says of a received message: its GRO segment size (returned; 0 when it is
 * one datagram) and when it queued it (*queued, ns, CLOCK_REALTIME; 0 without a stamp). */
static size_t msg_meta(const struct msghdr *m, uint64_t *queued)
{
	size_t seg = 0;

	*queued = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR((struct msghdr *)m, cm)) {
		if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO) {
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

/* --aqm: takes CoDel's verdict on a message that queued since queued (see codel.h). */
static void aqm_take(struct worker *w, uint64_t queued, uint64_t now)
{
	if (w->sh->aqm && queued && codel_take(&w->codel, queued, now))
		w->aqm_pending = true;
}

/* GRE-in-UDP: takes datagrams, each GRO burst cut back into its datagrams. */
static unsigned from_udp(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned outer_wire = (c->family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
	unsigned n = 0;

	while (n < WORKER_RX_BUDGET) {
		uint64_t now;
		int got;

		for (unsigned i = 0; i < WORKER_UDP_RX_BATCH; i++) {
			struct msghdr *m = &w->rx_msgs[i].msg_hdr;

			m->msg_name = &w->rx_from[i];
			m->msg_namelen = sizeof(w->rx_from[i]);
			m->msg_iov = &w->rx_iov[i];
			m->msg_iovlen = 1;
			m->msg_control = w->rx_cmsg[i].buf;
			m->msg_controllen = sizeof(w->rx_cmsg[i].buf);
			m->msg_flags = 0;
		}
		got = recvmmsg(w->udp_rx, w->rx_msgs, WORKER_UDP_RX_BATCH, MSG_DONTWAIT, NULL);
		if (got <= 0)
			break;
		now = w->sh->aqm ? clock_real_ns() : 0;
		for (int i = 0; i < got; i++) {
			struct msghdr *m = &w->rx_msgs[i].msg_hdr;
			const uint8_t *buf = w->rx_iov[i].iov_base;
			uint64_t queued;
			size_t len = w->rx_msgs[i].msg_len, seg = msg_meta(m, &queued);

			/* A batch that emptied the socket ends on an empty queue: as RFC 8289
			 * never drops from a queue of at most one packet, its last message
			 * counts as no wait. */
			aqm_take(w, i == got - 1 && got < WORKER_UDP_RX_BATCH ? now : queued, now);
			if (!seg || seg > len)
				seg = len;
			else if (seg < len)
				stat_add(&w->stats.ctr[STAT_UDP_GRO_READS], 1);
			for (size_t off = 0; off < len; off += seg) {
				size_t dlen = len - off < seg ? len - off : seg;
				struct decap_result r;
				enum drop_reason why;

				n++;
				stat_add(&w->stats.ctr[STAT_WIRE_RX_PACKETS], 1);
				stat_add(&w->stats.ctr[STAT_WIRE_RX_BYTES], dlen + outer_wire);
				if (m->msg_flags & MSG_TRUNC)
					why = DROP_TRUNCATED;
				else if (!from_peer(w, &w->rx_from[i]))
					why = DROP_UNKNOWN_PEER;
				else
					why = decap_gre(c, buf + off, dlen, &r);
				if (why == DROP_NONE)
					why = aqm_rx_verdict(w, &r, dlen);
				if (why != DROP_NONE) {
					stat_add(&w->stats.drops[why], 1);
					continue;
				}
				deliver_inner(w, &r);
			}
		}
		if (got < WORKER_UDP_RX_BATCH)
			break;
	}
	return n;
}

/* Takes up to WORKER_RX_BUDGET packets from the ring into TUN. Returns packets taken. */
static unsigned from_wire(struct worker *w)
{
	struct rx_pkt p;
	unsigned n = 0;

	if (w->sh->cfg->udp)
		n = from_udp(w);
	else {
		uint64_t now = w->sh->aqm ? clock_real_ns() : 0;

		while (n < WORKER_RX_BUDGET && rx_next(&w->rx, &p)) {
			aqm_take(w, p.queued, now);
			deliver(w, &p);
			n++;
		}
		/* The ring ran empty: as for the socket, no standing queue behind it. */
		if (n < WORKER_RX_BUDGET)
			aqm_take(w, now, now);
	}
	if (w->sh->vnet_hdr) {
		/* What was coalesced leaves at the end of the pass, as the kernel's GRO
		 * flushes at the end of a NAPI poll: never held while the worker sleeps. */
		gro_flush(&w->gro, emit_tun, w);
		stat_add(&w->stats.ctr[STAT_GRO_BAD_CSUM],
			 w->gro.bad_csum - stat_read(&w->stats.ctr[STAT_GRO_BAD_CSUM]));
	}
	if (n)
		stat_add(&w->stats.ctr[STAT_RX_BATCHES], 1);
	return n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd[3] = {
		{ .fd = w->tun_fd, .events = POLLIN },
		{ .fd = w->sh->cfg->udp ? w->udp_rx : w->rx.fd, .events = POLLIN },
		{ .fd = w->sh->stop_fd, .events = POLLIN },
	};

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	codel_init(&w->codel, w->sh->aqm_target_ns, w->sh->aqm_interval_ns);
	while (!stopping(w)) {
		unsigned work = from_tun(w);

		work += from_wire(w);
		if (!work)
			poll(pfd, 3, WORKER_POLL_MS);
	}
	return NULL;
}

static void release(struct worker *w)
{
	rx_close(&w->rx);
	if (w->tx_fd >= 0)
		close(w->tx_fd);
	if (w->udp_rx >= 0)
		close(w->udp_rx);
	for (unsigned i = 0; i < UDP_TX_PORTS; i++)
		if (w->udp_tx[i] >= 0)
			close(w->udp_tx[i]);
	free(w->udp_bufs);
	free(w->flows);
	free(w->gro_mem);
	free(w->seg_hdrs);
	free(w->slots);
	w->slots = NULL;
}

/* GRE over IP: a raw socket to send, a ring to receive. */
static int open_raw(struct worker *w, const struct rx_cfg *rxc)
{
	const struct encap_cfg *c = w->sh->cfg;
	int rc;

	w->tx_fd = tx_open(c->family, WORKER_SEND_TIMEOUT_MS);
	if (w->tx_fd < 0)
		return w->tx_fd;
	rc = rx_open(&w->rx, rxc);
	if (rc)
		return rc;
	w->peer_len = netaddr_sockaddr(c->family, c->remote, 0, &w->peer);
	for (unsigned i = 0; i < WORKER_TX_MSGS; i++) {
		w->msgs[i].msg_hdr.msg_name = &w->peer;
		w->msgs[i].msg_hdr.msg_namelen = w->peer_len;
	}
	return 0;
}

/* GRE-in-UDP: sending sockets, one per source port, and a receiving one with its buffers. */
static int open_udp(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	int rc = 0;

	w->udp_bufs = aligned_alloc(64, (size_t)WORKER_UDP_RX_BATCH * WORKER_UDP_RX_BUF);
	if (!w->udp_bufs)
		return -ENOMEM;
	for (unsigned i = 0; i < WORKER_UDP_RX_BATCH; i++) {
		w->rx_iov[i].iov_base = w->udp_bufs + (size_t)i * WORKER_UDP_RX_BUF;
		w->rx_iov[i].iov_len = WORKER_UDP_RX_BUF;
	}
	/* The first worker picks UDP_TX_PORTS consecutive ports of the ephemeral range, the same
	 * for every worker (workers are set up one after the other by the main thread). An
	 * ephemeral bind would not do: with SO_REUSEPORT the kernel may hand out one port to all
	 * of them, and every flow would look alike to the peer. */
	for (unsigned attempt = 0; attempt < 64; attempt++) {
		bool first = w->sh->udp_sports[0] == 0;
		uint16_t base =
			first ? (uint16_t)(UDP_SPORT_LO +
					   (getpid() * 61u + attempt * 997u) %
						   (UDP_SPORT_HI - UDP_SPORT_LO - UDP_TX_PORTS))
			      : w->sh->udp_sports[0];
		unsigned i;

		for (i = 0; i < UDP_TX_PORTS; i++) {
			uint16_t port = (uint16_t)(base + i);

			w->udp_tx[i] = udp_tx_open(c->family, c->local, &port, c->remote,
						   c->udp_port, WORKER_SEND_TIMEOUT_MS);
			if (w->udp_tx[i] < 0)
				break;
			w->sh->udp_sports[i] = port;
		}
		if (i == UDP_TX_PORTS)
			break;
		rc = w->udp_tx[i];
		w->udp_tx[i] = -1;
		while (i > 0) {
			close(w->udp_tx[--i]);
			w->udp_tx[i] = -1;
		}
		if (!first || rc != -EADDRINUSE)
			return rc;
		w->sh->udp_sports[0] = 0;
	}
	if (w->udp_tx[0] < 0)
		return -EADDRINUSE;
	w->udp_rx = udp_rx_open(c->family, c->local, c->udp_port, w->sh->udp_gro);
	if (w->udp_rx < 0)
		return w->udp_rx;
	if (w->sh->aqm) {
		int one = 1;

		/* The kernel stamps each datagram as it queues: CoDel's sojourn times. (The
		 * receive ring stamps every frame anyway.) */
		if (setsockopt(w->udp_rx, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
			return -errno;
	}
	/* Each worker joins the group in turn; the program, the group's, is set again by each
	 * so that it knows how many sockets there are by the last. */
	return steer_reuseport_attach(w->udp_rx, c->outer_hlen, w->id + 1);
}

int worker_init(struct worker *w, unsigned id, int cpu, int tun_fd, const struct rx_cfg *rxc,
		struct gw_shared *sh)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->cpu = cpu;
	w->tun_fd = tun_fd;
	w->sh = sh;
	w->rx.fd = -1;
	w->tx_fd = -1;
	w->udp_rx = -1;
	for (unsigned i = 0; i < UDP_TX_PORTS; i++)
		w->udp_tx[i] = -1;
	w->slots = aligned_alloc(64, (size_t)WORKER_BATCH * (ENCAP_HEADROOM + WORKER_SLOT));
	w->seg_hdrs = aligned_alloc(64, (size_t)WORKER_TX_MSGS * WORKER_SEG_HDR);
	w->gro_mem = aligned_alloc(64, (size_t)GRO_FLOWS * GRO_BUF);
	w->flows = calloc(1, sizeof(*w->flows));
	if (!w->slots || !w->flows || !w->seg_hdrs || !w->gro_mem) {
		rc = -ENOMEM;
		goto err;
	}
	gro_init(&w->gro, w->gro_mem);
	rc = sh->cfg->udp ? open_udp(w) : open_raw(w, rxc);
	if (rc)
		goto err;
	return 0;
err:
	release(w);
	return rc;
}

uint64_t worker_rx_drops(struct worker *w)
{
	uint64_t now, d;

	if (!w->sh->cfg->udp)
		return rx_ring_drops(&w->rx);
	now = udp_drops(w->udp_rx);
	d = now - w->udp_drops;
	w->udp_drops = now;
	return d;
}

int worker_start(struct worker *w)
{
	int rc = thread_start(&w->thread, w->cpu, worker_main, w);

	if (rc)
		return rc;
	w->started = true;
	return 0;
}

void worker_join(struct worker *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = false;
}

void worker_fini(struct worker *w)
{
	if (!w->slots)
		return;
	release(w);
}
