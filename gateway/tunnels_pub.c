/*
 * The publication of tunnel tables (see tunnels_pub.h): an atomic pointer swap, each worker's
 * epoch, odd inside a pass, and the replaced tables freed once every worker has left the pass
 * it was in (quiescent-state-based reclamation, as userspace RCU's QSBR flavour); and the
 * slots that carry a tunnel's counters and sequence numbers from one table to the next.
 */
#include "tunnels_pub.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

int tunnels_pub_init(struct tunnels_pub *p, unsigned nreaders)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->wake_fd = -1;
	if (nreaders < 1 || nreaders > CONFIG_MAX_WORKERS)
		return -EINVAL;
	/* Without it the control loop falls back on its timeout (TUNCTL_RETRY_US). */
	p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	p->nreaders = nreaders;
	for (unsigned i = 0; i < nreaders; i++) {
		/* Pages of tunnels that never come are never touched. */
		p->readers[i].stats = calloc(TUNNELS_MAX, sizeof(struct tunnel_stats));
		if (!p->readers[i].stats)
			goto nomem;
	}
	p->tx_seq = calloc(TUNNELS_MAX, sizeof(*p->tx_seq));
	/* Zero pages, aligned, never touched where no tunnel with sequence numbers comes. */
	p->rx_seq_size = (size_t)TUNNELS_MAX * nreaders * sizeof(*p->rx_seq);
	p->rx_seq = mmap(NULL, p->rx_seq_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (p->rx_seq == MAP_FAILED)
		p->rx_seq = NULL;
	p->free_slots = malloc(TUNNELS_MAX * sizeof(*p->free_slots));
	p->pending = malloc(TUNNELS_MAX * sizeof(*p->pending));
	if (!p->tx_seq || !p->rx_seq || !p->free_slots || !p->pending)
		goto nomem;
	/* Popped from the top: slot 0 first. */
	for (uint32_t s = 0; s < TUNNELS_MAX; s++)
		p->free_slots[s] = TUNNELS_MAX - 1 - s;
	p->nfree = TUNNELS_MAX;
	rc = tunnels_build(NULL, 0, NULL, &p->cur);
	if (rc) {
		tunnels_pub_fini(p);
		return rc;
	}
	p->gen = 1;
	tunnels_set_gen(p->cur, 1);
	return 0;
nomem:
	tunnels_pub_fini(p);
	return -ENOMEM;
}

void tunnels_pub_fini(struct tunnels_pub *p)
{
	for (unsigned i = 0; i < p->nretired; i++)
		tunnels_free(p->retired[i].t);
	p->nretired = 0;
	tunnels_free(p->cur);
	p->cur = NULL;
	for (unsigned i = 0; i < CONFIG_MAX_WORKERS; i++) {
		free(p->readers[i].stats);
		p->readers[i].stats = NULL;
	}
	free(p->tx_seq);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	p->wake_fd = -1;
	if (p->rx_seq)
		munmap(p->rx_seq, p->rx_seq_size);
	p->rx_seq = NULL;
	free(p->free_slots);
	free(p->pending);
	p->tx_seq = NULL;
	p->free_slots = NULL;
	p->pending = NULL;
}

/*
 * The fence orders the worker's odd epoch before its read of the pointer, as the control
 * thread's fence orders its swap before its read of the epochs: of the two, one sees the
 * other. Either the worker reads the new table, or the control thread sees it inside a pass
 * and waits for that pass to end.
 */
const struct tunnels *tunnels_enter(struct tunnels_pub *p, unsigned reader)
{
	struct tunnels_reader *r = &p->readers[reader];

	__atomic_store_n(&r->epoch, __atomic_load_n(&r->epoch, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&p->cur, __ATOMIC_ACQUIRE);
}

/* Release: every read of the table, and every count into a slot, happens before the control
 * thread sees the epoch move and frees or zeroes them. */
void tunnels_leave(struct tunnels_pub *p, unsigned reader)
{
	struct tunnels_reader *r = &p->readers[reader];

	__atomic_store_n(&r->epoch, __atomic_load_n(&r->epoch, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	if (p->wake_fd < 0)
		return;
	/* The epoch's store before the flag's load (tunnels_pub_want_wake's other half). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&p->waiting, __ATOMIC_RELAXED)) {
		uint64_t one = 1;

		/* EAGAIN only at a count of 2^64 - 2: the control loop is awake anyway. */
		if (write(p->wake_fd, &one, sizeof(one)) < 0)
			return;
	}
}

void tunnels_pub_want_wake(struct tunnels_pub *p, bool on)
{
	__atomic_store_n(&p->waiting, on ? 1u : 0u, __ATOMIC_RELAXED);
	/* The flag's store before the epochs' loads of the check that follows. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int tunnels_pub_wake_fd(const struct tunnels_pub *p)
{
	return p->wake_fd;
}

void tunnels_pub_woken(struct tunnels_pub *p)
{
	uint64_t n;

	if (p->wake_fd >= 0 && read(p->wake_fd, &n, sizeof(n)) < 0)
		return;
}

const struct tunnels *tunnels_pub_current(const struct tunnels_pub *p)
{
	return p->cur;
}

/* The first worker still in the pass it was in when r was replaced, or -1: every worker has
 * left it since, or was in none. */
static int holder_of(const struct tunnels_pub *p, const struct tunnels_retired *r)
{
	for (unsigned i = 0; i < p->nreaders; i++) {
		uint64_t was = r->epochs[i];

		if ((was & 1) && __atomic_load_n(&p->readers[i].epoch, __ATOMIC_ACQUIRE) == was)
			return (int)i;
	}
	return -1;
}

unsigned tunnels_pub_reclaim(struct tunnels_pub *p)
{
	uint64_t oldest;

	/* A later snapshot is taken after an earlier one, so grace periods end in order. */
	while (p->nretired && holder_of(p, &p->retired[0]) < 0) {
		tunnels_free(p->retired[0].t);
		memmove(&p->retired[0], &p->retired[1], --p->nretired * sizeof(p->retired[0]));
	}
	oldest = tunnels_gen(p->nretired ? p->retired[0].t : p->cur);
	while (p->npending && p->pending[p->pending_head].gen <= oldest) {
		p->free_slots[p->nfree++] = p->pending[p->pending_head].slot;
		p->pending_head = (p->pending_head + 1) % TUNNELS_MAX;
		p->npending--;
	}
	return p->nretired;
}

/* Tables are replaced one generation at a time and freed oldest first: the workers hold
 * the oldest not yet freed, or any later one. */
uint64_t tunnels_pub_settled(struct tunnels_pub *p)
{
	tunnels_pub_reclaim(p);
	return tunnels_gen(p->nretired ? p->retired[0].t : p->cur);
}

int tunnels_pub_holder(const struct tunnels_pub *p)
{
	return p->nretired ? holder_of(p, &p->retired[0]) : -1;
}

/* A slot no table holds any more: its counts start again for the tunnel that takes it. */
static void slot_clear(struct tunnels_pub *p, uint32_t slot)
{
	for (unsigned i = 0; i < p->nreaders; i++) {
		struct tunnel_stats *s = &p->readers[i].stats[slot];

		for (unsigned c = 0; c < TUNNEL_COUNTERS; c++)
			__atomic_store_n(&s->ctr[c], 0, __ATOMIC_RELAXED);
		for (unsigned d = 0; d < TUNNEL_DROPS; d++)
			__atomic_store_n(&s->drops[d], 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&p->tx_seq[slot], 0, __ATOMIC_RELAXED);
	/* No worker reads a window of a slot no table holds, nor another worker's of it. */
	memset(&p->rx_seq[(size_t)slot * p->nreaders], 0, p->nreaders * sizeof(*p->rx_seq));
}

/*
 * Slots for the specs of order (sorted by name): a name of cur's keeps its slot, a new one
 * takes the next free one (*fresh of them, taken for good only once the table is built). A
 * walk along both lists, which are in the same order. -EBUSY when the free slots run out.
 */
static int assign(const struct tunnels_pub *p, const struct tunnels *cur,
		  const struct tunnel_spec *const *order, unsigned n, uint32_t *slots,
		  uint32_t *fresh)
{
	uint32_t j = 0, ncur = tunnels_count(cur);

	*fresh = 0;
	for (unsigned i = 0; i < n; i++) {
		int c = 1;

		while (j < ncur && (c = strcmp(tunnels_at(cur, j)->name, order[i]->name)) < 0)
			j++;
		if (j < ncur && c == 0)
			slots[i] = tunnels_at(cur, j)->slot;
		else if (*fresh < p->nfree)
			slots[i] = p->free_slots[p->nfree - 1 - (*fresh)++];
		else
			return -EBUSY;
	}
	return 0;
}

/* The slots of cur's tunnels that next lacks wait for the tables that hold them to go. */
static void retire_slots(struct tunnels_pub *p, const struct tunnels *cur,
			 const struct tunnels *next)
{
	uint32_t j = 0, nnext = tunnels_count(next);

	for (uint32_t i = 0; i < tunnels_count(cur); i++) {
		const struct tunnel *gone = tunnels_at(cur, i);
		int c = 1;

		while (j < nnext && (c = strcmp(tunnels_at(next, j)->name, gone->name)) < 0)
			j++;
		if (j < nnext && c == 0)
			continue;
		p->pending[(p->pending_head + p->npending++) % TUNNELS_MAX] =
			(struct tunnels_pending){ .slot = gone->slot, .gen = p->gen };
	}
}

/* Makes next the table in force (its generation set): the one before it waits for the passes
 * of the workers that may hold it. */
static void publish(struct tunnels_pub *p, struct tunnels *next)
{
	struct tunnels_retired *r = &p->retired[p->nretired++];

	r->t = __atomic_exchange_n(&p->cur, next, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < p->nreaders; i++)
		r->epochs[i] = __atomic_load_n(&p->readers[i].epoch, __ATOMIC_ACQUIRE);
	tunnels_pub_reclaim(p);
}

int tunnels_pub_set(struct tunnels_pub *p, const struct tunnel_spec *specs, unsigned n)
{
	const struct tunnels *cur = p->cur;
	const struct tunnel_spec **order = NULL;
	struct tunnels *next;
	uint32_t *slots = NULL, fresh;
	int rc;

	tunnels_pub_reclaim(p);
	if (p->nretired == TUNNELS_RETIRED_MAX)
		return -EBUSY;
	if (n > TUNNELS_MAX)
		return -E2BIG;
	if (!tunnels_names_ok(specs, n))
		return -EINVAL;
	order = malloc((n ? n : 1) * sizeof(*order));
	slots = malloc((n ? n : 1) * sizeof(*slots));
	if (!order || !slots) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		order[i] = &specs[i];
	tunnels_sort_names(order, n);
	rc = assign(p, cur, order, n, slots, &fresh);
	if (!rc)
		rc = tunnels_build_sorted(order, n, slots, &next);
	if (rc)
		goto out;
	for (uint32_t i = 0; i < fresh; i++)
		slot_clear(p, p->free_slots[--p->nfree]);
	tunnels_set_gen(next, ++p->gen);
	retire_slots(p, cur, next);
	publish(p, next);
out:
	free(order);
	free(slots);
	return rc;
}

int tunnels_pub_change(struct tunnels_pub *p, enum tunfile_change ch, const struct tunnel_spec *s)
{
	const struct tunnels *cur = p->cur;
	struct tunnels *next;
	uint32_t i = TUNNELS_NONE;
	int rc;

	tunnels_pub_reclaim(p);
	if (p->nretired == TUNNELS_RETIRED_MAX || (ch == TUNFILE_ADD && !p->nfree))
		return -EBUSY;
	if (ch == TUNFILE_REMOVE)
		i = tunnels_find(cur, s->name);
	rc = tunnels_derive(cur, ch, s, ch == TUNFILE_ADD ? p->free_slots[p->nfree - 1] : 0, &next);
	if (rc)
		return rc;
	if (ch == TUNFILE_ADD)
		slot_clear(p, p->free_slots[--p->nfree]);
	tunnels_set_gen(next, ++p->gen);
	if (ch == TUNFILE_REMOVE)
		p->pending[(p->pending_head + p->npending++) % TUNNELS_MAX] =
			(struct tunnels_pending){ .slot = tunnels_at(cur, i)->slot, .gen = p->gen };
	publish(p, next);
	return 0;
}

void tunnels_pub_stats(const struct tunnels_pub *p, uint32_t slot, struct tunnel_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < p->nreaders; i++) {
		const struct tunnel_stats *s = &p->readers[i].stats[slot];

		for (unsigned c = 0; c < TUNNEL_COUNTERS; c++)
			sum->ctr[c] += __atomic_load_n(&s->ctr[c], __ATOMIC_RELAXED);
		for (unsigned d = 0; d < TUNNEL_DROPS; d++)
			sum->drops[d] += __atomic_load_n(&s->drops[d], __ATOMIC_RELAXED);
	}
}

void tunnels_pub_seq(const struct tunnels_pub *p, uint32_t slot, struct seq_summary *out)
{
	struct seq_era eras[CONFIG_MAX_WORKERS];

	for (unsigned i = 0; i < p->nreaders; i++) {
		const struct seq_window *w = &p->rx_seq[(size_t)slot * p->nreaders + i];
		unsigned tries = 0;

		/* A window being replaced (a resync) is read again, a few times. */
		while (!stats_seq_read(&w->seq, &eras[i]) && tries++ < 3)
			;
		if (tries > 3)
			eras[i].id = 0;
	}
	stats_seq_merge(eras, p->nreaders, out);
}

static const enum drop_reason tunnel_drops[TUNNEL_DROPS] = {
	DROP_NO_SEQ,	 DROP_NO_CSUM,	      DROP_BAD_CSUM,	   DROP_BAD_PROTO,
	DROP_BAD_INNER,	 DROP_SPOOFED_SOURCE, DROP_TUNNEL_LOOP,	   DROP_TUN_WRITE,
	DROP_TX_TOO_BIG, DROP_TX_SEND,	      DROP_TX_FQ_OVERFLOW,
};

int tunnels_drop_index(enum drop_reason r)
{
	for (int i = 0; i < TUNNEL_DROPS; i++) {
		if (tunnel_drops[i] == r)
			return i;
	}
	return -1;
}

enum drop_reason tunnels_drop_reason(unsigned i)
{
	return i < TUNNEL_DROPS ? tunnel_drops[i] : DROP_NONE;
}
