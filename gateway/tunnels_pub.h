/*
 * The tunnel table in force (tunnels.h) as the workers read it: published by the control
 * thread with an atomic pointer swap, a replaced table freed once every worker has passed a
 * quiescent point; the workers read the pointer and mark their passes, with no allocation and
 * no lock. Per-tunnel counters of each worker, the tunnels' sequence numbers and the workers'
 * receive windows of them live here, by slot: a replace of a tunnel keeps its slot, so its
 * counts and numbers go on.
 */
#ifndef TUNBED_GW_TUNNELS_PUB_H
#define TUNBED_GW_TUNNELS_PUB_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "gw_limits.h"
#include "stats.h"
#include "tunnels.h"

/*
 * Per-tunnel counters of one worker. Drops are counted here by reason when the tunnel is known
 * (after the lookup); a drop before it (an unknown peer, a bad key, no tunnel for a
 * destination) has no tunnel, and the worker counts it in its own block. 128 bytes: a worker's
 * TUNNELS_MAX of them are 2 MiB, allocated at start, touched only where tunnels are.
 */
enum tunnel_counter {
	TUNNEL_TX_PACKETS, /* inner packets encapsulated into the tunnel */
	TUNNEL_TX_BYTES,   /* their inner bytes */
	TUNNEL_RX_PACKETS, /* inner packets decapsulated from it into TUN */
	TUNNEL_RX_BYTES,
	TUNNEL_COUNTERS,
};

enum { TUNNEL_DROPS = 11 }; /* the reasons of tunnels_drop_reason */

struct tunnel_stats {
	uint64_t ctr[TUNNEL_COUNTERS];
	uint64_t drops[TUNNEL_DROPS];
} __attribute__((aligned(64)));

/* Where reason r is counted in tunnel_stats.drops, or -1 for a reason that comes before any
 * tunnel is known. Pure. */
int tunnels_drop_index(enum drop_reason r);

/* The reason counted at drops[i], i below TUNNEL_DROPS. Pure. */
enum drop_reason tunnels_drop_reason(unsigned i);

/* Adds v to counter c, or counts a drop for reason r (where tunnels_drop_index has it), in a
 * block of the calling worker's own: relaxed stores, no locked instruction (as stats.h). */
static inline void tunnels_stat_add(struct tunnel_stats *s, enum tunnel_counter c, uint64_t v)
{
	__atomic_store_n(&s->ctr[c], __atomic_load_n(&s->ctr[c], __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELAXED);
}

static inline void tunnels_stat_drop(struct tunnel_stats *s, enum drop_reason r)
{
	int i = tunnels_drop_index(r);

	if (i >= 0)
		__atomic_store_n(&s->drops[i], __atomic_load_n(&s->drops[i], __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* One worker's place in the publication. */
struct tunnels_reader {
	uint64_t epoch;		    /* odd while a pass holds a table; only its worker writes it */
	struct tunnel_stats *stats; /* TUNNELS_MAX blocks, by slot */
} __attribute__((aligned(64)));

/* A table replaced, and each worker's epoch when it was. */
struct tunnels_retired {
	struct tunnels *t;
	uint64_t epochs[CONFIG_MAX_WORKERS];
};

/* A slot of a removed tunnel, reusable once no table older than gen is left. */
struct tunnels_pending {
	uint32_t slot;
	uint64_t gen;
};

/*
 * The published table, the workers' epochs and counters, and the tunnels' sequence numbers,
 * which belong to a slot and so outlive a replace. The control thread owns the rest.
 */
struct tunnels_pub {
	struct tunnels *cur; /* read with acquire by the workers; swapped by the control thread */
	unsigned nreaders;
	struct tunnels_reader readers[CONFIG_MAX_WORKERS];
	uint32_t *tx_seq; /* TUNNELS_MAX, by slot: RFC 2890 numbers a tunnel, not a worker */
	struct seq_window *rx_seq; /* TUNNELS_MAX * nreaders, by slot then worker: each one's
				    * receive window of the tunnel's numbers */
	size_t rx_seq_size;	   /* its bytes (mapped) */
	/* The control thread's. */
	uint64_t gen;
	unsigned nretired;
	struct tunnels_retired retired[TUNNELS_RETIRED_MAX]; /* oldest first */
	uint32_t *free_slots;				     /* a stack of TUNNELS_MAX at most */
	unsigned nfree;
	struct tunnels_pending *pending; /* a queue of TUNNELS_MAX at most, gen ascending */
	unsigned pending_head, npending;
	/* A worker that ends a pass while the control thread waits for the passes
	 * (tunnels_pub_want_wake) counts on wake_fd, an eventfd the control loop polls. */
	int wake_fd;
	uint32_t waiting; /* written by the control thread, read by the workers */
};

/*
 * Sets up p for nreaders workers (1 to CONFIG_MAX_WORKERS): their counters, the sequence
 * numbers and receive windows, and an empty table published. Returns 0, -EINVAL or -ENOMEM (p then holds
 * nothing). Main thread, before the workers start.
 */
int tunnels_pub_init(struct tunnels_pub *p, unsigned nreaders);

/* Frees every table and block; after the workers have stopped. Safe after a failed init. */
void tunnels_pub_fini(struct tunnels_pub *p);

/*
 * A worker's pass begins: returns the table to use until tunnels_leave, which stays valid
 * until then whatever the control thread publishes. One full fence per pass. Worker reader
 * only (0 to nreaders - 1), never nested.
 */
const struct tunnels *tunnels_enter(struct tunnels_pub *p, unsigned reader);

/* The pass ends, a quiescent point: the worker holds no table until its next tunnels_enter.
 * A worker calls it before it sleeps too. While the control thread waits for the passes
 * (tunnels_pub_want_wake), it also writes the wake-up (one full fence a pass, and a write(2)
 * a pass only then). */
void tunnels_leave(struct tunnels_pub *p, unsigned reader);

/*
 * The control thread waits for the workers' passes (on: a change's reply is held until it is
 * in effect) or no longer does. Set before the check of the passes (tunnels_pub_settled):
 * then either that check sees a pass's end or the worker that ended it writes the wake-up
 * (each side a full fence between its store and its load). Control thread.
 */
void tunnels_pub_want_wake(struct tunnels_pub *p, bool on);

/* The descriptor to poll for those wake-ups (POLLIN), -1 without one; tunnels_pub_woken
 * takes what it counted. Control thread. */
int tunnels_pub_wake_fd(const struct tunnels_pub *p);
void tunnels_pub_woken(struct tunnels_pub *p);

/* Worker reader's counters of tunnel tn. */
static inline struct tunnel_stats *tunnels_stats(struct tunnels_pub *p, unsigned reader,
						 const struct tunnel *tn)
{
	return &p->readers[reader].stats[tn->slot];
}

/*
 * Makes specs (n of them) the tunnels: builds their table, a tunnel keeping the slot of the
 * tunnel of its name in the table before (its counters and sequence numbers go on), a new
 * name taking a free slot (zeroed), and publishes it; then frees what it can
 * (tunnels_pub_reclaim). Returns 0, -EBUSY when TUNNELS_RETIRED_MAX tables, or every free
 * slot, still wait for a worker's pass (nothing changed: try again after one), or
 * tunnels_build's errors (nothing changed). Control thread.
 */
int tunnels_pub_set(struct tunnels_pub *p, const struct tunnel_spec *specs, unsigned n);

/*
 * The same for one change of the tunnels in force, ch of s (TUNFILE_REMOVE: its name alone),
 * derived from the table in force (tunnels_derive) rather than built whole: an add takes a
 * free slot (zeroed), a replace keeps its tunnel's, a remove's slot waits as
 * tunnels_pub_set's do. Returns 0, -EBUSY as tunnels_pub_set (nothing changed), or
 * tunnels_derive's errors (nothing changed), -EAGAIN among them: then tunnels_pub_set with
 * the whole list after the change makes it. Control thread.
 */
int tunnels_pub_change(struct tunnels_pub *p, enum tunfile_change ch, const struct tunnel_spec *s);

/*
 * Frees the replaced tables no worker can still hold (each has left its pass since, or was
 * outside one), and makes the slots of their removed tunnels free again. Returns how many
 * tables still wait. Control thread.
 */
unsigned tunnels_pub_reclaim(struct tunnels_pub *p);

/*
 * The generation every change is in effect up to: each worker that takes a packet from now on
 * takes it with a table of this generation or a later one (it has left the pass it held an
 * older one in since, or was outside a pass). Frees what it can first (tunnels_pub_reclaim).
 * Control thread.
 */
uint64_t tunnels_pub_settled(struct tunnels_pub *p);

/* The first worker still in the pass in which it may hold the oldest replaced table, or -1
 * when no replaced table waits (for the error that names a stuck worker). Control thread. */
int tunnels_pub_holder(const struct tunnels_pub *p);

/* The table in force, as the control thread sees it (its own publications). Control thread. */
const struct tunnels *tunnels_pub_current(const struct tunnels_pub *p);

/* The sum over the workers of slot's counters, read with relaxed loads. Control thread. */
void tunnels_pub_stats(const struct tunnels_pub *p, uint32_t slot, struct tunnel_stats *sum);

/* The workers' receive windows of tunnel tn, nreaders of them, worker i's at i (stats_seq's
 * peers). Worker threads (each writes its own), and the control thread (tunnels_pub_seq). */
static inline struct seq_window *tunnels_seq_windows(struct tunnels_pub *p, const struct tunnel *tn)
{
	return &p->rx_seq[(size_t)tn->slot * p->nreaders];
}

/* The sequence accounting of slot's tunnel from the workers' windows (stats_seq_merge).
 * Control thread. */
void tunnels_pub_seq(const struct tunnels_pub *p, uint32_t slot, struct seq_summary *out);

/* The first of n sequence numbers for tunnel tn, taken with one atomic add. Worker threads. */
static inline uint32_t tunnels_seq_take(struct tunnels_pub *p, const struct tunnel *tn, uint32_t n)
{
	return __atomic_fetch_add(&p->tx_seq[tn->slot], n, __ATOMIC_RELAXED);
}

#endif
