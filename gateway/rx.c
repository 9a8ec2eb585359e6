/*
 * The receive queue (see rx.h): the transport chosen once, its datagrams handed out with
 * CoDel's verdict (RFC 8289) on each.
 */
#include "rx.h"

#include <string.h>
#include <sys/socket.h>

int rx_group_init(struct rx_group *grp, struct gw_shared *sh, const struct rx_cfg *cfg)
{
	memset(grp, 0, sizeof(*grp));
	grp->sh = sh;
	grp->cfg = *cfg;
	grp->ops = sh->cfg->udp && !cfg->udp_ring ? &rx_udp_ops : &rx_ring_ops;
	return grp->ops->group_init(grp);
}

void rx_group_ready(struct rx_group *grp, const struct rxq *first)
{
	if (grp->ops->group_ready)
		grp->ops->group_ready(grp, first);
}

void rx_group_fini(struct rx_group *grp)
{
	if (grp->ops && grp->ops->group_fini)
		grp->ops->group_fini(grp);
}

int rxq_init(struct rxq *q, unsigned id, const struct rx_group *grp, struct worker_stats *stats)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->ops = grp->ops;
	q->sh = grp->sh;
	q->stats = stats;
	q->fd = -1;
	codel_init(&q->codel, q->sh->aqm_target_ns, q->sh->aqm_interval_ns);
	rc = q->ops->open(q, id, grp);
	if (rc)
		rxq_fini(q);
	return rc;
}

void rxq_fini(struct rxq *q)
{
	if (q->ops)
		q->ops->close(q);
	q->fd = -1;
}

void rxq_aqm_take(struct rxq *q, uint64_t queued)
{
	if (q->sh->aqm && queued && codel_take(&q->codel, queued, q->now))
		q->aqm_pending = true;
}

void rxq_aqm_unspent(struct rxq *q)
{
	q->aqm_pending = true;
}

void rxq_begin(struct rxq *q)
{
	q->taken = 0;
	if (q->ops->begin)
		q->ops->begin(q);
}

bool rxq_next(struct rxq *q, struct rx_dgram *d)
{
	if (!q->ops->next(q, d))
		return false;
	q->taken++;
	/* CoDel's signal waits for a packet that can take it: full-sized, and not dropped. */
	d->aqm = q->aqm_pending && d->drop == DROP_NONE && d->wirelen >= RX_AQM_MIN_WIRE;
	if (d->aqm)
		q->aqm_pending = false;
	return true;
}

void rxq_take_error(struct rxq *q)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(q->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
		stat_add(&q->stats->ctr[STAT_RX_SOCKET_ERRORS], 1);
}

uint64_t rxq_drops(struct rxq *q)
{
	return q->ops->drops(q);
}
