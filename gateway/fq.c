/*
 * Deficit round robin over flows' lists (fq.h): RFC 8290's scheduler, as the kernel's
 * sch_fq_codel runs it, with a CoDel per flow (RFC 8289) when asked.
 */
#include "fq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { FQ_IDLE = 0, FQ_NEW, FQ_OLD };

int fq_init(struct fq *q, unsigned nslots, unsigned nbuckets, int32_t quantum, unsigned limit)
{
	memset(q, 0, sizeof(*q));
	if (!nslots || !nbuckets || (nbuckets & (nbuckets - 1)) || quantum <= 0 || !limit ||
	    limit > nslots)
		return -EINVAL;
	q->b = calloc(nbuckets, sizeof(*q->b));
	q->slot_next = calloc(nslots, sizeof(*q->slot_next));
	q->slot_len = calloc(nslots, sizeof(*q->slot_len));
	if (!q->b || !q->slot_next || !q->slot_len) {
		fq_fini(q);
		return -ENOMEM;
	}
	q->nslots = nslots;
	q->limit = limit;
	q->nbuckets = nbuckets;
	q->quantum = quantum;
	for (unsigned i = 0; i < nbuckets; i++)
		q->b[i].head = q->b[i].tail = q->b[i].next = FQ_NONE;
	q->new_flows.head = q->new_flows.tail = FQ_NONE;
	q->old_flows.head = q->old_flows.tail = FQ_NONE;
	return 0;
}

int fq_aqm_init(struct fq *q, uint64_t target_ns, uint64_t interval_ns, uint32_t min_len)
{
	q->codel = calloc(q->nbuckets, sizeof(*q->codel));
	q->pending = calloc(q->nbuckets, sizeof(*q->pending));
	q->slot_time = calloc(q->nslots, sizeof(*q->slot_time));
	if (!q->codel || !q->pending || !q->slot_time) {
		free(q->codel);
		free(q->pending);
		free(q->slot_time);
		q->codel = NULL;
		q->pending = NULL;
		q->slot_time = NULL;
		return -ENOMEM;
	}
	for (unsigned i = 0; i < q->nbuckets; i++)
		codel_init(&q->codel[i], target_ns, interval_ns);
	q->aqm_min = min_len;
	return 0;
}

void fq_fini(struct fq *q)
{
	free(q->b);
	free(q->slot_next);
	free(q->slot_len);
	free(q->codel);
	free(q->pending);
	free(q->slot_time);
	memset(q, 0, sizeof(*q));
}

static void list_push(struct fq *q, struct fq_list *l, uint32_t i)
{
	q->b[i].next = FQ_NONE;
	if (l->tail == FQ_NONE)
		l->head = i;
	else
		q->b[l->tail].next = i;
	l->tail = i;
}

static uint32_t list_pop(struct fq *q, struct fq_list *l)
{
	uint32_t i = l->head;

	l->head = q->b[i].next;
	if (l->head == FQ_NONE)
		l->tail = FQ_NONE;
	return i;
}

/* Takes the oldest slot of bucket i off the queue. */
static uint32_t take_head(struct fq *q, uint32_t i)
{
	struct fq_bucket *b = &q->b[i];
	uint32_t s = b->head;

	b->head = q->slot_next[s];
	if (b->head == FQ_NONE)
		b->tail = FQ_NONE;
	b->backlog -= q->slot_len[s];
	q->bytes -= q->slot_len[s];
	q->queued--;
	return s;
}

void fq_enqueue(struct fq *q, uint32_t slot, uint32_t hash, uint32_t len)
{
	uint32_t i = hash & (q->nbuckets - 1);
	struct fq_bucket *b = &q->b[i];

	q->slot_next[slot] = FQ_NONE;
	q->slot_len[slot] = len;
	if (q->slot_time)
		q->slot_time[slot] = q->now;
	if (b->tail == FQ_NONE)
		b->head = slot;
	else
		q->slot_next[b->tail] = slot;
	b->tail = slot;
	b->backlog += len;
	q->bytes += len;
	q->queued++;
	if (b->list == FQ_IDLE) {
		b->list = FQ_NEW;
		b->deficit = q->quantum;
		list_push(q, &q->new_flows, i);
	}
}

/* CoDel's verdict on slot s, just taken from bucket i. */
static bool judge(struct fq *q, uint32_t i, uint32_t s)
{
	/* The last packet leaves an empty queue: it waited for nothing but itself. */
	uint64_t queued = q->queued ? q->slot_time[s] : q->now;
	bool signal = codel_take(&q->codel[i], queued, q->now);

	if (q->slot_len[s] < q->aqm_min) {
		q->pending[i] |= signal;
		return false;
	}
	signal |= q->pending[i];
	q->pending[i] = false;
	return signal;
}

uint32_t fq_dequeue(struct fq *q, bool *signal)
{
	if (signal)
		*signal = false;
	for (;;) {
		struct fq_list *l = q->new_flows.head != FQ_NONE ? &q->new_flows : &q->old_flows;
		uint32_t i = l->head;
		struct fq_bucket *b;

		if (i == FQ_NONE)
			return FQ_NONE;
		b = &q->b[i];
		if (b->deficit <= 0) {
			/* Its turn is over: the next one at the back of the old flows. */
			b->deficit += q->quantum;
			list_pop(q, l);
			b->list = FQ_OLD;
			list_push(q, &q->old_flows, i);
			continue;
		}
		if (b->head == FQ_NONE) {
			/* Emptied: a new flow goes behind the old ones once (so that a flow
			 * cannot stay new by sending a packet a turn), an old one leaves. */
			list_pop(q, l);
			if (l == &q->new_flows && q->old_flows.head != FQ_NONE) {
				b->list = FQ_OLD;
				list_push(q, &q->old_flows, i);
			} else {
				b->list = FQ_IDLE;
			}
			continue;
		}
		uint32_t s = take_head(q, i);

		b->deficit -= (int32_t)q->slot_len[s];
		if (q->codel) {
			bool sig = judge(q, i, s);

			if (signal)
				*signal = sig;
		}
		return s;
	}
}

uint32_t fq_peek_turn(const struct fq *q)
{
	/* fq_dequeue leaves the flow it served at the head of its list, and takes from the
	 * old flows only while there is no new one: the list's head is that flow. */
	const struct fq_list *l = q->new_flows.head != FQ_NONE ? &q->new_flows : &q->old_flows;
	const struct fq_bucket *b;

	if (l->head == FQ_NONE)
		return FQ_NONE;
	b = &q->b[l->head];
	return b->deficit > 0 ? b->head : FQ_NONE;
}

enum fq_admit fq_admission(const struct fq *q, enum fq_full full)
{
	if (q->queued < q->limit && (!q->byte_limit || q->bytes < q->byte_limit))
		return FQ_ADMIT;
	return full == FQ_FULL_DROP ? FQ_EVICT : FQ_WAIT;
}

uint32_t fq_drop_longest(struct fq *q)
{
	uint32_t best = FQ_NONE;
	uint64_t most = 0;

	if (!q->queued)
		return FQ_NONE;
	for (uint32_t i = 0; i < q->nbuckets; i++) {
		if (q->b[i].head != FQ_NONE && (best == FQ_NONE || q->b[i].backlog > most)) {
			most = q->b[i].backlog;
			best = i;
		}
	}
	/* A bucket emptied here stays on its list: fq_dequeue moves it on. */
	return best == FQ_NONE ? FQ_NONE : take_head(q, best);
}
