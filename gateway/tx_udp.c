/*
 * GRE-in-UDP's send transport (see tx_udp.h; RFC 8086): messages with UDP_SEGMENT (udp(7)),
 * one sendmmsg per source port.
 */
#include "tx.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "fd.h"
#include "log.h"
#include "udp.h"

/*
 * Whether a failed send reported an ICMP error of an earlier datagram rather than its own: a
 * connected UDP socket keeps the peer's "port unreachable" (ECONNREFUSED: the peer's gregw not
 * yet up) or "unreachable" as a pending error, and its next send fails with it, unsent
 * (sock_error in the kernel's sock_alloc_send_pskb; sendmmsg leaves it pending after a partial
 * batch). The failed call consumed it: that send is tried once more. The sockets are connected
 * to the first peer alone: the kernel matches an ICMP error to a socket by its addresses, and
 * another peer's never match, so messages to other peers (txq_name) neither cause nor meet
 * such errors but the first peer's.
 */
static bool stale_error(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
}

/* Whether a send that failed with err goes again: after EINTR always, after a stale error
 * once (*stale: it has). */
static bool send_again(int err, bool *stale)
{
	if (err == EINTR)
		return true;
	if (*stale || !stale_error(err))
		return false;
	*stale = true;
	return true;
}

/*
 * UDP_SEGMENT refused a message at run time: the kernel says EIO when the route cannot take
 * UDP GSO (an IPsec policy on it; before Linux 6.11 also a device that cannot checksum),
 * which the probe at start, of the socket option alone, could not see. This queue sends
 * datagram by datagram from now on, says so once (the send already failed: off the fast
 * path), and sends this message's datagrams one by one.
 */
static void send_each(struct txq *q, int fd, const struct msghdr *m, unsigned slot,
		      const struct tx_ent *e, unsigned segs, unsigned outer_wire)
{
	if (!q->udp.gso_off) {
		__atomic_store_n(&q->udp.gso_off, true, __ATOMIC_RELAXED);
		log_warnx("worker %u: UDP_SEGMENT refused (%s): sending datagram by datagram",
			  q->id, strerror(errno));
	}
	for (unsigned k = 0; k < segs; k++) {
		struct msghdr one = { .msg_name = m->msg_name,
				      .msg_namelen = m->msg_namelen,
				      .msg_iov = m->msg_iov + TX_IOV * k,
				      .msg_iovlen = TX_IOV };
		bool stale = false;
		ssize_t sent;

		txq_cmsg(q, &one, slot, e->tos, 0);
		do {
			stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
			sent = sendmsg(fd, &one, 0);
		} while (sent < 0 && send_again(errno, &stale));
		if (sent < 0) {
			txq_drop_send(q, e, 1);
			continue;
		}
		txq_count_sent(q, 1, (uint64_t)sent + outer_wire);
	}
}

/*
 * The queued packets become messages, in the order udp_send put them (by socket, each flow's
 * packets in their order): consecutive packets of one flow and one outer DS field and TTL
 * (their control messages are the message's), all of one size but the last, go in one
 * message with UDP_SEGMENT (within the kernel's limits on count and size), so
 * a flow's superpackets of a pass, and its ACKs, leave in one send whenever their sizes allow;
 * anything else alone. Messages on one socket go in one sendmmsg. A message holds one flow
 * only: the peer's socket, that is its worker, is chosen by the first one; and one tunnel, so
 * one destination (a flow's packets go into one tunnel, but a superpacket's group number is
 * no flow's). A message to another peer than the first, to which the socket is connected,
 * names its destination (txq_name).
 */
static void send_udp(struct txq *q, unsigned n)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned outer_wire = (c->family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN;
	unsigned nmsg = 0, segs[TX_MSGS], socks[TX_MSGS];
	const struct tx_ent
		*firsts[TX_MSGS]; /* a message's first entry: its flow's, its tunnel's */
	bool use_gso = txq_udp_gso(q);

	for (unsigned i = 0; i < n;) {
		const struct tx_ent *e = &q->ents[q->udp.order[i]];
		size_t size = tx_ent_len(e), total = size, last = size;
		struct msghdr *m = &q->msgs[nmsg].msg_hdr;
		unsigned j = i + 1;

		/* The next packet joins if it is the flow's, no larger, and all before it were
		 * full-sized (only the last datagram of a UDP_SEGMENT message may be short). */
		for (; use_gso && e->flow && j < n && j - i < UDP_GSO_SEGS; j++) {
			const struct tx_ent *next = &q->ents[q->udp.order[j]];
			size_t len = tx_ent_len(next);

			if (next->flow != e->flow || next->tn != e->tn || len > size ||
			    last != size || total + len > UDP_PAYLOAD_MAX ||
			    next->tos.ds != e->tos.ds || next->tos.ttl != e->tos.ttl)
				break;
			total += len;
			last = len;
		}
		txq_name(q, m, nmsg, e, c->udp_port, NULL, 0);
		m->msg_iov = &q->iov[TX_IOV * i];
		m->msg_iovlen = TX_IOV * (j - i);
		txq_cmsg(q, m, nmsg, e->tos, j - i > 1 ? (uint16_t)size : 0);
		segs[nmsg] = j - i;
		socks[nmsg] = e->sock;
		firsts[nmsg] = e;
		nmsg++;
		i = j;
	}
	stat_add(&q->stats->ctr[STAT_TX_BATCHES], 1);
	bool stale = false;

	for (unsigned off = 0; off < nmsg;) {
		unsigned run = 1;
		int sent;

		while (off + run < nmsg && socks[off + run] == socks[off])
			run++;
		stat_add(&q->stats->ctr[STAT_SEND_CALLS], 1);
		sent = sendmmsg(q->udp.fd[socks[off]], q->msgs + off, run, 0);
		if (sent < 0) {
			if (send_again(errno, &stale))
				continue;
			stale = false;
			if (errno == EIO && segs[off] > 1)
				send_each(q, q->udp.fd[socks[off]], &q->msgs[off].msg_hdr, off,
					  firsts[off], segs[off], outer_wire);
			else
				txq_drop_send(q, firsts[off], segs[off]);
			off++;
			continue;
		}
		for (int k = 0; k < sent; k++) {
			if (segs[off + k] > 1)
				stat_add(&q->stats->ctr[STAT_UDP_GSO_SENDS], 1);
			txq_count_sent(q, segs[off + k],
				       q->msgs[off + k].msg_len +
					       (uint64_t)segs[off + k] * outer_wire);
		}
		off += (unsigned)sent;
		stale = false;
	}
}

/* The queued entries from to to in sending order: grouped by socket (one sendmmsg each), a
 * stable counting sort, so each flow's packets (one socket per flow) keep their order. */
static void order_by_socket(struct txq *q, unsigned from, unsigned to)
{
	unsigned start[UDP_TX_PORTS + 1] = { 0 };

	for (unsigned i = from; i < to; i++)
		start[q->ents[i].sock + 1]++;
	for (unsigned s = 1; s <= UDP_TX_PORTS; s++)
		start[s] += start[s - 1];
	for (unsigned i = from; i < to; i++)
		q->udp.order[start[q->ents[i].sock]++] = (uint16_t)i;
}

/* The TTL or hop limit the socket sends with by itself, c->ttl: txq_cmsg gives a packet
 * another. */
static int set_ttl(int fd, const struct encap_cfg *c)
{
	int ttl = c->ttl;

	if (c->family == AF_INET6)
		return setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl));
	return setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
}

/*
 * One sending socket per source port. The first worker picks UDP_TX_PORTS
 * consecutive ports of the dynamic range, the same for every worker (the main thread sets the
 * workers up one after the other). An ephemeral bind would not do: with SO_REUSEPORT the
 * kernel may hand out one port to all of them, and every flow would look alike to the peer.
 */
static int udp_open(struct txq *q)
{
	const struct encap_cfg *c = q->sh->cfg;
	uint16_t *sports = q->sh->udp_sports;
	int rc = 0;

	for (unsigned i = 0; i < UDP_TX_PORTS; i++)
		q->udp.fd[i] = -1;
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

			q->udp.fd[i] = udp_tx_open(c->family, c->local, &port, c->remote,
						   c->udp_port, TX_SEND_TIMEOUT_MS);
			if (q->udp.fd[i] >= 0 && set_ttl(q->udp.fd[i], c) < 0)
				q->udp.fd[i] = fd_close_err(q->udp.fd[i]);
			if (q->udp.fd[i] < 0)
				break;
			sports[i] = port;
		}
		if (i == UDP_TX_PORTS)
			return 0;
		rc = q->udp.fd[i];
		q->udp.fd[i] = -1;
		while (i > 0) {
			close(q->udp.fd[--i]);
			q->udp.fd[i] = -1;
		}
		if (!first || rc != -EADDRINUSE)
			return rc;
		sports[0] = 0;
	}
	return -EADDRINUSE;
}

/* The entries from to to in sending order (by socket), encapsulated in that order (so their
 * tunnels' numbers follow it), as messages of UDP_SEGMENT. */
static void udp_send(struct txq *q, unsigned from, unsigned to)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned n = to - from;

	order_by_socket(q, from, to);
	for (unsigned k = 0; k < n; k++) {
		struct tx_ent *e = &q->ents[q->udp.order[k]];

		e->tos = encap_tos(c, e->inner);
		txq_dgram_iov(q, k, e, txq_encap(q, e), 0);
	}
	send_udp(q, n);
}

static void udp_close(struct txq *q)
{
	for (unsigned i = 0; i < UDP_TX_PORTS; i++) {
		if (q->udp.fd[i] >= 0)
			close(q->udp.fd[i]);
		q->udp.fd[i] = -1;
	}
}

const struct tx_ops tx_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.send = udp_send,
};
