/*
 * The send queue (see tx.h): entries queued during a pass, their GRE sequence numbers (RFC
 * 2890) taken a batch at a time, sent by the transport chosen once.
 */
#include "tx.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "udp.h"

/* An untracked superpacket's segments share a number with this bit set (the flow table numbers
 * its entries from 1, far below it). */
#define TX_GROUP_BIT 0x80000000u

int tx_group_init(struct tx_group *grp, struct gw_shared *sh, const struct tx_cfg *cfg)
{
	bool udp = sh->cfg->udp;
	const struct tx_ops *ops = udp ? &tx_udp_ops : cfg->packet ? &tx_packet_ops : &tx_ip_ops;
	const struct tx_ops *tap = udp ? &tx_tap_udp_ops : &tx_tap_gre_ops;
	int rc;

	memset(grp, 0, sizeof(*grp));
	grp->sh = sh;
	grp->cfg = *cfg;
	grp->nh.timer_fd = -1;
	grp->why = cfg->tap ? NULL : cfg->packet || udp ? "--wire-tx packet" : "--wire-tx ip";
	tx_tap_group_clear(&grp->tap);
	/* The kernel may refuse what a transport needs: its fallback, if any, takes over. */
	while (ops->prepare && (rc = ops->prepare(grp)) < 0) {
		if (!ops->fallback)
			return rc;
		ops = ops->fallback;
	}
	grp->ops = ops;
	if (!cfg->tap)
		return 0;
	/* The TAP sends the rest by the encapsulation's own transport, which must be there:
	 * plain GRE's frames need the next hop that the packet transport follows. */
	if (tap->fallback != ops)
		grp->why = "no packet sockets";
	else if (tap->prepare(grp) == 0)
		grp->ops = tap;
	return 0;
}

void tx_group_fini(struct tx_group *grp)
{
	if (grp->ops && grp->ops->release)
		grp->ops->release(grp);
	grp->ops = NULL;
}

struct nexthop *tx_group_nexthop(struct tx_group *grp)
{
	return grp->ops == &tx_packet_ops || grp->ops == &tx_tap_gre_ops ||
			       grp->ops == &tx_tap_udp_ops
		       ? &grp->nh
		       : NULL;
}

void txq_count_sent(struct txq *q, uint64_t packets, uint64_t bytes)
{
	stat_add(&q->stats->ctr[STAT_WIRE_TX_PACKETS], packets);
	stat_add(&q->stats->ctr[STAT_WIRE_TX_BYTES], bytes);
}

/* One control message of level and type holding n bytes of v at at; returns its space. */
static size_t cmsg_put(char *at, int level, int type, const void *v, size_t n)
{
	struct cmsghdr *cm = (struct cmsghdr *)(void *)at;

	cm->cmsg_level = level;
	cm->cmsg_type = type;
	cm->cmsg_len = CMSG_LEN(n);
	memcpy(CMSG_DATA(cm), v, n);
	return CMSG_SPACE(n);
}

void txq_cmsg(struct txq *q, struct msghdr *m, unsigned slot, struct tos_fields tos, uint16_t gso)
{
	const struct encap_cfg *c = q->sh->cfg;
	bool v6 = c->family == AF_INET6;
	int level = v6 ? IPPROTO_IPV6 : IPPROTO_IP, ds = tos.ds, ttl = tos.ttl;
	char *buf = q->cmsg[slot].buf;
	size_t len = 0;

	if (ds)
		len += cmsg_put(buf + len, level, v6 ? IPV6_TCLASS : IP_TOS, &ds, sizeof(ds));
	if (tos.ttl != c->ttl)
		len += cmsg_put(buf + len, level, v6 ? IPV6_HOPLIMIT : IP_TTL, &ttl, sizeof(ttl));
	if (gso)
		len += cmsg_put(buf + len, IPPROTO_UDP, UDP_SEGMENT, &gso, sizeof(gso));
	m->msg_control = len ? buf : NULL;
	m->msg_controllen = len;
}

void txq_dgram_iov(struct txq *q, unsigned k, struct tx_ent *e, uint8_t *outer, unsigned skip)
{
	const struct encap_cfg *c = q->sh->cfg;
	struct iovec *iov = &q->iov[TX_IOV * k];

	if (e->csum.start)
		inet_csum_finish(e->inner + e->csum.start, e->len - e->csum.start, e->tail,
				 e->tail_len, e->csum);
	iov[0] = (struct iovec){ outer + skip, c->outer_hlen - skip + e->len };
	iov[1] = (struct iovec){ (void *)e->tail, e->tail_len };
	q->msgs[k].msg_hdr.msg_iov = iov;
	q->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
}

void txq_flush(struct txq *q)
{
	unsigned n = q->nents;
	uint32_t seq = 0;

	if (n == 0)
		return;
	/* The batch's numbers follow the sending order. */
	if (q->sh->cfg->gre_flags & GRE_F_SEQ)
		seq = __atomic_fetch_add(&q->sh->tx_seq, n, __ATOMIC_RELAXED);
	q->ops->send(q, 0, n, seq);
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
	q->ents[q->nents++] =
		(struct tx_ent){ inner, len, tail, tail_len, flow, sock, csum, { 0 }, { 0 } };
}

void txq_add_whole(struct txq *q, uint8_t *inner, size_t len, const struct tx_gso *gso,
		   unsigned sock)
{
	struct l4_csum csum = { gso->l4_off, TCP_CSUM_OFF };

	if (q->nents == TX_MSGS)
		txq_flush(q);
	q->ents[q->nents++] = (struct tx_ent){ inner, len, NULL, 0, 0, sock, csum, *gso, { 0 } };
}

size_t txq_whole_max(struct txq *q)
{
	if (q->ops != &tx_tap_gre_ops && q->ops != &tx_tap_udp_ops)
		return 0;
	return tx_tap_whole_max(q);
}

uint32_t txq_group(struct txq *q)
{
	q->groups = (q->groups + 1) | TX_GROUP_BIT;
	return q->groups;
}

int txq_init(struct txq *q, unsigned id, const struct tx_group *grp, struct worker_stats *stats)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->sh = grp->sh;
	q->stats = stats;
	q->id = id;
	q->hdrs = aligned_alloc(64, (size_t)TX_MSGS * TX_SEG_HDR);
	if (!q->hdrs)
		return -ENOMEM;
	q->ops = grp->ops;
	q->grp = grp;
	rc = q->ops->open(q);
	if (rc)
		txq_fini(q);
	return rc;
}

void txq_fini(struct txq *q)
{
	if (q->ops)
		q->ops->close(q);
	free(q->hdrs);
	q->hdrs = NULL;
}
