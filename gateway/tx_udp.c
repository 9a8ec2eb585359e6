/*
 * GRE-in-UDP's send transport (see tx_udp.h; RFC 8086): messages with UDP_SEGMENT (udp(7)),
 * one sendmmsg per source port.
 */
#include "tx.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "udp.h"

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
	if (!q->udp.gso_off) {
		__atomic_store_n(&q->udp.gso_off, true, __ATOMIC_RELAXED);
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
		txq_count_sent(q, 1, (uint64_t)sent + outer_wire);
	}
}

/* Adds the UDP_SEGMENT control message of datagrams of size bytes to message i. */
static void set_gso(struct txq *q, unsigned i, size_t size)
{
	struct msghdr *m = &q->msgs[i].msg_hdr;
	struct cmsghdr *cm = (struct cmsghdr *)q->udp.cmsg[i].buf;
	uint16_t gso = (uint16_t)size;

	m->msg_control = cm;
	m->msg_controllen = CMSG_SPACE(sizeof(gso));
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(gso));
	memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
}

/*
 * The queued packets become messages, in the order udp_send put them (by socket, each flow's
 * packets in their order): consecutive packets of one flow, all of one size but the
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
		const struct tx_ent *e = &q->ents[q->udp.order[i]];
		size_t size = tx_ent_len(e, c->outer_hlen), total = size, last = size;
		struct msghdr *m = &q->msgs[nmsg].msg_hdr;
		unsigned j = i + 1;

		/* The next packet joins if it is the flow's, no larger, and all before it were
		 * full-sized (only the last datagram of a UDP_SEGMENT message may be short). */
		for (; use_gso && e->flow && j < n && j - i < UDP_GSO_SEGS; j++) {
			const struct tx_ent *next = &q->ents[q->udp.order[j]];
			size_t len = tx_ent_len(next, c->outer_hlen);

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
		sent = sendmmsg(q->udp.fd[socks[off]], q->msgs + off, run, 0);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EIO && segs[off] > 1)
				send_each(q, q->udp.fd[socks[off]], &q->msgs[off].msg_hdr,
					  segs[off], outer_wire);
			else
				stat_add(&q->stats->drops[DROP_TX_SEND], segs[off]);
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

/* The entries from to to in sending order (by socket), encapsulated, as messages of
 * UDP_SEGMENT; the k-th sent is numbered seq + from + k. */
static void udp_send(struct txq *q, unsigned from, unsigned to, uint32_t seq)
{
	const struct encap_cfg *c = q->sh->cfg;
	unsigned n = to - from;

	order_by_socket(q, from, to);
	for (unsigned k = 0; k < n; k++) {
		struct tx_ent *e = &q->ents[q->udp.order[k]];

		txq_dgram_iov(
			q, k, e,
			encap_build2(c, e->inner, e->len, e->tail, e->tail_len, seq + from + k), 0);
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
