/*
 * The send queue (see tx.h): entries queued during a pass, each for its tunnel, encapsulated
 * with its tunnel's GRE sequence numbers (RFC 2890) and sent by the transport chosen once.
 */
#include "tx.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
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

static bool ops_tap(const struct tx_ops *ops)
{
	return ops == &tx_tap_gre_ops || ops == &tx_tap_udp_ops;
}

bool tx_group_tap(const struct tx_group *grp)
{
	return ops_tap(grp->ops);
}

struct nexthop *tx_group_nexthop(struct tx_group *grp)
{
	return grp->ops == &tx_packet_ops || ops_tap(grp->ops) ? &grp->nh : NULL;
}

void txq_count_sent(struct txq *q, uint64_t packets, uint64_t bytes)
{
	stat_add(&q->stats->ctr[STAT_WIRE_TX_PACKETS], packets);
	stat_add(&q->stats->ctr[STAT_WIRE_TX_BYTES], bytes);
}

void txq_name(struct txq *q, struct msghdr *m, unsigned k, const struct tx_ent *e, uint16_t port,
	      struct sockaddr_storage *first, socklen_t first_len)
{
	const struct encap_cfg *c = q->sh->cfg;

	if (memcmp(e->tn->peer, c->remote, ip_addr_len(c->family)) != 0) {
		m->msg_name = &q->names[k];
		m->msg_namelen = netaddr_sockaddr(c->family, e->tn->peer, port, &q->names[k]);
		return;
	}
	m->msg_name = first;
	m->msg_namelen = first ? first_len : 0;
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
	struct iovec *iov = &q->iov[TX_IOV * k];

	if (e->csum.start)
		inet_csum_finish(e->inner + e->csum.start, e->len - e->csum.start, e->tail,
				 e->tail_len, e->csum);
	iov[0] = (struct iovec){ outer + skip, e->outer_hlen - skip + e->len };
	iov[1] = (struct iovec){ (void *)e->tail, e->tail_len };
	q->msgs[k].msg_hdr.msg_iov = iov;
	q->msgs[k].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
}

void txq_flush(struct txq *q)
{
	if (q->nents == 0)
		return;
	q->ops->send(q, 0, q->nents);
	q->nents = 0;
}

uint8_t *txq_encap(struct txq *q, struct tx_ent *e)
{
	const struct tunnel *tn = e->tn;
	uint32_t seq = 0;

	/* A checksum left partial would be completed by the device after the GRE checksum
	 * covered it: a tunnel added with csum at run time, on a gateway that started with
	 * none. */
	if (e->csum.start && (tn->gre_flags & GRE_F_CSUM)) {
		inet_csum_finish(e->inner + e->csum.start, e->len - e->csum.start, e->tail,
				 e->tail_len, e->csum);
		e->csum.start = 0;
	}
	/* RFC 2890 numbers the tunnel, not a worker: one atomic add per packet of a tunnel with
	 * sequence numbers, in the order the transport sends. */
	if (tn->gre_flags & GRE_F_SEQ)
		seq = tunnels_seq_take(&q->sh->tunnels, tn, 1);
	return encap_build2(q->sh->cfg, tn, e->inner, e->len, e->tail, e->tail_len, seq);
}

void txq_drop_send(struct txq *q, const struct tx_ent *e, unsigned n)
{
	struct tunnel_stats *ts = tunnels_stats(&q->sh->tunnels, q->id, e->tn);

	stat_add(&q->stats->drops[DROP_TX_SEND], n);
	while (n--)
		tunnels_stat_drop(ts, DROP_TX_SEND);
}

uint8_t *txq_hdr_room(struct txq *q)
{
	if (q->nents == TX_MSGS)
		txq_flush(q);
	return q->hdrs + (size_t)q->nents * TX_SEG_HDR;
}

/* Queues e, into its tunnel, sending what is queued first when the queue is full. */
static void push(struct txq *q, struct tx_ent e)
{
	if (q->nents == TX_MSGS)
		txq_flush(q);
	e.outer_hlen = encap_outer_hlen(q->sh->cfg, e.tn);
	q->ents[q->nents++] = e;
}

void txq_add(struct txq *q, const struct tunnel *tn, uint8_t *inner, size_t len,
	     const uint8_t *tail, size_t tail_len, uint32_t flow, unsigned sock,
	     struct l4_csum csum)
{
	push(q, (struct tx_ent){ .tn = tn,
				 .inner = inner,
				 .len = len,
				 .tail = tail,
				 .tail_len = tail_len,
				 .flow = flow,
				 .sock = sock,
				 .csum = csum });
}

void txq_add_whole(struct txq *q, const struct tunnel *tn, uint8_t *inner, size_t len,
		   const struct tx_gso *gso, unsigned sock)
{
	push(q, (struct tx_ent){ .tn = tn,
				 .inner = inner,
				 .len = len,
				 .sock = sock,
				 .csum = { gso->l4_off, TCP_CSUM_OFF },
				 .gso = *gso });
}

size_t txq_whole_max(struct txq *q)
{
	if (!ops_tap(q->ops))
		return 0;
	return tx_tap_whole_max(q);
}

bool txq_whole_takes(const struct txq *q, const struct tunnel *tn)
{
	const struct encap_cfg *c = q->sh->cfg;

	return tx_tap_takes(tn->gre_flags, c->family, tn->peer, c->remote);
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
