/*
 * The flow queue (gateway/fq.c) against RFC 8290's scheduler: one flow leaves in order;
 * backlogged flows take turns of a quantum of bytes, equal shares whatever their packet
 * sizes; a flow new to the queue goes before the old flows' backlog, but only once a turn (a
 * flow that keeps sending stays old); an emptied flow leaves the lists and comes back new;
 * overflow takes the oldest packet of the flow with the most bytes; slots come back to be
 * queued again; bad arguments are refused. The admission of the next packet: room below the
 * limit under either policy; at the limit it waits (pause) or evicts (drop), and room comes
 * back with a dequeue or a drop. What the next dequeue hands out while a flow's turn goes on.
 * The byte limit: many small reads fit where the slot count would stop few large ones, and a
 * queue at its bytes waits or evicts as at its slots. CoDel per flow (fq_aqm_init) on a fake
 * clock: a flow whose packets wait above the target for an interval is signalled, a flow
 * beside it that waits less is not, short packets pass their signal on to the flow's next long
 * one, and the last packet of the queue is never signalled.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "fq.h"

enum { SLOTS = 64, BUCKETS = 16, QUANTUM = 3000, LIMIT = 4 };

/* Dequeues everything, at most max, in order into out. Returns how many came out. */
static unsigned drain(struct fq *q, uint32_t *out, unsigned max)
{
	unsigned n = 0;
	uint32_t s;

	while (n < max && (s = fq_dequeue(q, NULL)) != FQ_NONE)
		out[n++] = s;
	return n;
}

/*
 * The admission of the next packet, by how many are queued (of a limit of LIMIT) and the
 * policy of a full queue. A packet's size plays no part: a slot holds any read.
 */
static void admission(void)
{
	static const struct {
		const char *name;
		unsigned queued;
		enum fq_full full;
		enum fq_admit want;
	} rows[] = {
		{ "empty, pause", 0, FQ_FULL_PAUSE, FQ_ADMIT },
		{ "empty, drop", 0, FQ_FULL_DROP, FQ_ADMIT },
		{ "one short of the limit, pause", LIMIT - 1, FQ_FULL_PAUSE, FQ_ADMIT },
		{ "one short of the limit, drop", LIMIT - 1, FQ_FULL_DROP, FQ_ADMIT },
		{ "at the limit, pause: wait", LIMIT, FQ_FULL_PAUSE, FQ_WAIT },
		{ "at the limit, drop: evict", LIMIT, FQ_FULL_DROP, FQ_EVICT },
	};
	struct fq q;
	uint32_t out[SLOTS];

	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, LIMIT), 0);
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (uint32_t s = 0; s < rows[i].queued; s++)
			fq_enqueue(&q, s, s, s ? 100 : 65535);
		CHECK_ROW(fq_admission(&q, rows[i].full) == rows[i].want, rows[i].name);
		drain(&q, out, SLOTS);
	}

	/* Full, then a dequeue (a send) makes room: the reads resume. */
	for (uint32_t s = 0; s < LIMIT; s++)
		fq_enqueue(&q, s, 1, 1000);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_WAIT);
	CHECK_INT(fq_dequeue(&q, NULL), 0);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_ADMIT);
	/* Dropping: the eviction makes room for one read, which fills the queue again. */
	fq_enqueue(&q, 0, 2, 1000);
	CHECK(fq_admission(&q, FQ_FULL_DROP) == FQ_EVICT);
	CHECK_INT(fq_drop_longest(&q), 1); /* flow 1: 3000 bytes against 1000 */
	CHECK(fq_admission(&q, FQ_FULL_DROP) == FQ_ADMIT);
	fq_enqueue(&q, 1, 2, 1000);
	CHECK(fq_admission(&q, FQ_FULL_DROP) == FQ_EVICT);
	CHECK_INT(drain(&q, out, SLOTS), LIMIT);
	fq_fini(&q);

	/* The limit may be every slot, or one. */
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS), 0);
	for (uint32_t s = 0; s < SLOTS; s++) {
		CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_ADMIT);
		fq_enqueue(&q, s, s, 1000);
	}
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_WAIT);
	fq_fini(&q);
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, 1), 0);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_ADMIT);
	fq_enqueue(&q, 9, 3, 1000);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_WAIT);
	CHECK(fq_admission(&q, FQ_FULL_DROP) == FQ_EVICT);
	fq_fini(&q);
}

/*
 * The byte limit beside the slot limit, by rows: reads of a size queued, and what the next one
 * meets under each policy. Below the bytes, a read of any size is admitted (the queue passes
 * the limit by one read at most); at them, pause waits and drop evicts, as at the slots.
 */
static void byte_limit(void)
{
	enum { BYTES = 8000 };
	static const struct {
		const char *name;
		unsigned reads, len;
		enum fq_full full;
		enum fq_admit want;
	} rows[] = {
		{ "empty: a read of any size", 0, 0, FQ_FULL_PAUSE, FQ_ADMIT },
		{ "7 reads of 1000 bytes: room", 7, 1000, FQ_FULL_PAUSE, FQ_ADMIT },
		{ "8 of 1000, at the bytes: pause waits", 8, 1000, FQ_FULL_PAUSE, FQ_WAIT },
		{ "8 of 1000, at the bytes: drop evicts", 8, 1000, FQ_FULL_DROP, FQ_EVICT },
		{ "one read past the bytes (65535): waits", 1, 65535, FQ_FULL_PAUSE, FQ_WAIT },
		{ "60 reads of 100 bytes: room, where slots of 64 KB held 0 of 8000", 60, 100,
		  FQ_FULL_PAUSE, FQ_ADMIT },
		{ "64 reads of 100: the slots' limit, not the bytes", 64, 100, FQ_FULL_PAUSE,
		  FQ_WAIT },
	};
	struct fq q;
	uint32_t out[SLOTS];

	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS), 0);
	fq_limit_bytes(&q, BYTES);
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (uint32_t s = 0; s < rows[i].reads; s++)
			fq_enqueue(&q, s, s, rows[i].len);
		CHECK_ROW(fq_admission(&q, rows[i].full) == rows[i].want, rows[i].name);
		drain(&q, out, SLOTS);
	}
	/* At the bytes, a dequeue makes room; an eviction does too. */
	for (uint32_t s = 0; s < 8; s++)
		fq_enqueue(&q, s, s < 6 ? 1 : 2, 1000);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_WAIT);
	CHECK_INT(fq_dequeue(&q, NULL), 0);
	CHECK(fq_admission(&q, FQ_FULL_PAUSE) == FQ_ADMIT);
	fq_enqueue(&q, 8, 2, 1000);
	CHECK_INT(fq_drop_longest(&q), 1); /* flow 1: 5000 bytes against 3000 */
	CHECK(fq_admission(&q, FQ_FULL_DROP) == FQ_ADMIT);
	CHECK_INT((int)q.bytes, 7000);
	fq_fini(&q);
}

enum { US = 1000, MS = 1000 * US, TARGET = 500 * US, INTERVAL = 10 * MS, AQM_MIN = 1000 };

/* Keeps flow 1 (slots 0 .. 9) and flow 2 (20 .. 29) backlogged from t on, one packet each
 * every step: flow 1's packets have waited wait1 when they leave, flow 2's wait2. Returns the
 * signals each flow got (sig[0], sig[1]) over dur, and when flow 1's first came. */
static void two_flows(struct fq *q, uint64_t t, uint64_t dur, uint64_t step, uint64_t wait1,
		      uint64_t wait2, unsigned sig[2], uint64_t *first)
{
	/* Two packets of each flow queued at a time, so that neither leaves the queue empty. */
	for (uint64_t now = t; now < t + dur; now += step) {
		for (int f = 0; f < 2; f++) {
			uint32_t s = (uint32_t)(f * 20 + (now / step) % 10);
			bool signal;

			fq_clock(q, now - (f ? wait2 : wait1));
			fq_enqueue(q, s, (uint32_t)f + 1, 1500);
			if (q->queued < 3)
				continue; /* the first round: a second packet of each queued */
			fq_clock(q, now);
			s = fq_dequeue(q, &signal);
			CHECK(s != FQ_NONE);
			if (!signal)
				continue;
			sig[s >= 20]++;
			if (s < 20 && !*first)
				*first = now;
		}
	}
}

/*
 * CoDel per flow (RFC 8290, 4.1), its clock the test's: each flow's state is its own; a flow
 * waits above the target for an interval before its first signal, one interval after the
 * sojourn first rose; the other flow, below the target, gets none meanwhile; short packets
 * (ACKs) carry no signal but pass it on; the last packet of the queue is never signalled.
 */
static void aqm(void)
{
	struct fq q;
	unsigned sig[2] = { 0, 0 };
	uint64_t first = 0, t = 100 * MS;
	uint32_t out[SLOTS];
	bool signal;

	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS), 0);
	/* Without fq_aqm_init: no signal, whatever the wait. */
	fq_clock(&q, 0);
	fq_enqueue(&q, 0, 1, 1500);
	fq_enqueue(&q, 1, 1, 1500);
	fq_clock(&q, 1000 * MS);
	CHECK_INT(fq_dequeue(&q, &signal), 0);
	CHECK(!signal);
	drain(&q, out, SLOTS);
	CHECK_INT(fq_aqm_init(&q, TARGET, INTERVAL, AQM_MIN), 0);

	/* Flow 1 waits 2 ms, flow 2 100 us: within the first interval nothing; then flow 1 alone
	 * is signalled, the first one interval after its sojourn was first judged high. */
	two_flows(&q, t, INTERVAL - 100 * US, 50 * US, 2 * MS, 100 * US, sig, &first);
	CHECK_INT(sig[0] + sig[1], 0);
	two_flows(&q, t + INTERVAL - 100 * US, 30 * MS, 50 * US, 2 * MS, 100 * US, sig, &first);
	CHECK(sig[0] >= 3); /* at 10 ms, then 10/sqrt(2), 10/sqrt(3) ms later, ... */
	CHECK_INT(sig[1], 0);
	CHECK(first >= t + INTERVAL && first < t + INTERVAL + 100 * US);
	CHECK(q.codel[1].dropping && !q.codel[2].dropping);

	/* Flow 2's wait rises too: its own CoDel starts from its own first high sojourn. */
	sig[0] = sig[1] = 0;
	first = 0;
	two_flows(&q, t + 40 * MS, 5 * MS, 50 * US, 2 * MS, 3 * MS, sig, &first);
	CHECK_INT(sig[1], 0); /* within its first interval */
	two_flows(&q, t + 45 * MS, 20 * MS, 50 * US, 2 * MS, 3 * MS, sig, &first);
	CHECK(sig[1] > 0);
	/* Its sojourn falls below the target: it leaves the dropping state at once. */
	two_flows(&q, t + 65 * MS, 1 * MS, 50 * US, 2 * MS, 100 * US, sig, &first);
	CHECK(!q.codel[2].dropping);
	drain(&q, out, SLOTS);

	/* Short packets (ACKs) of a flow CoDel signals on carry nothing; the flow's next long
	 * packet gets the signal they owed, once. Flow 3 (slots 40 ..) enters its dropping state
	 * on a 100-byte packet. */
	t = 1000 * MS;
	fq_clock(&q, t);
	for (uint32_t s = 40; s < 44; s++)
		fq_enqueue(&q, s, 3, 100);
	fq_enqueue(&q, 44, 3, 1500);
	fq_enqueue(&q, 45, 3, 1500);
	fq_enqueue(&q, 46, 3, 1500);
	fq_clock(&q, t + 2 * MS);
	CHECK_INT(fq_dequeue(&q, &signal), 40); /* judged high: the interval starts */
	CHECK(!signal);
	fq_clock(&q, t + 2 * MS + INTERVAL);
	CHECK_INT(fq_dequeue(&q, &signal), 41); /* CoDel would signal: a short one */
	CHECK(!signal && q.codel[3].dropping);
	CHECK_INT(fq_dequeue(&q, &signal), 42);
	CHECK(!signal);
	CHECK_INT(fq_dequeue(&q, &signal), 43);
	CHECK(!signal);
	CHECK_INT(fq_dequeue(&q, &signal), 44); /* the first long one carries it */
	CHECK(signal);
	CHECK_INT(fq_dequeue(&q, &signal), 45); /* and only once: drop_next is 7 ms away */
	CHECK(!signal);
	/* The last packet leaves the queue empty: no wait, whatever its stamp says, and CoDel
	 * leaves its dropping state. */
	fq_clock(&q, t + 100 * MS);
	CHECK_INT(fq_dequeue(&q, &signal), 46);
	CHECK(!signal && !q.codel[3].dropping);
	CHECK(fq_dequeue(&q, &signal) == FQ_NONE && !signal);
	fq_fini(&q);
}

/*
 * fq_peek_turn: what fq_dequeue hands out next while the flow it served goes on with its turn,
 * and nothing once the turn (or the flow) ends; over a long mix of flows and sizes, a peek is
 * always the next dequeue's slot, of the flow just served.
 */
static void peek_turn(void)
{
	struct fq q;
	uint32_t flow_of[SLOTS], x = 12345;
	unsigned peeks = 0, ends = 0, bad = 0, queued = 0;

	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS), 0);
	CHECK(fq_peek_turn(&q) == FQ_NONE);
	/* Flow 1 of 1000-byte packets, flow 2 of 3000: three of flow 1's a turn. */
	for (uint32_t s = 0; s < 4; s++)
		fq_enqueue(&q, s, 1, 1000);
	fq_enqueue(&q, 10, 2, 3000);
	CHECK_INT(fq_dequeue(&q, NULL), 0);
	CHECK_INT(fq_peek_turn(&q), 1);
	CHECK_INT(fq_dequeue(&q, NULL), 1);
	CHECK_INT(fq_peek_turn(&q), 2);
	CHECK_INT(fq_dequeue(&q, NULL), 2);
	CHECK(fq_peek_turn(&q) == FQ_NONE); /* its turn is spent: flow 2's comes */
	CHECK_INT(fq_dequeue(&q, NULL), 10);
	CHECK(fq_peek_turn(&q) == FQ_NONE); /* flow 2 has nothing more */
	CHECK_INT(fq_dequeue(&q, NULL), 3);
	CHECK(fq_peek_turn(&q) == FQ_NONE); /* emptied */
	CHECK(fq_dequeue(&q, NULL) == FQ_NONE);

	/* A long mix: each round queues a few slots of random flows and sizes, then takes a
	 * few; every peek names the next dequeue, of the flow just served. */
	for (uint32_t s = 0; s < SLOTS; s++)
		flow_of[s] = UINT32_MAX;
	for (unsigned round = 0; round < 2000; round++) {
		for (unsigned k = 0; k < 3 && queued < SLOTS; k++) {
			uint32_t s = 0;

			while (flow_of[s] != UINT32_MAX)
				s++;
			x = x * 1103515245u + 12345u;
			flow_of[s] = (x >> 16) % 5;
			fq_enqueue(&q, s, flow_of[s], 200 + (x >> 8) % 4000);
			queued++;
		}
		for (unsigned k = 0; k < 3; k++) {
			uint32_t s = fq_dequeue(&q, NULL), peek, next;

			if (s == FQ_NONE)
				break;
			queued--;
			peek = fq_peek_turn(&q);
			next = fq_dequeue(&q, NULL);
			if (peek != FQ_NONE) {
				peeks++;
				bad += next != peek || flow_of[next] != flow_of[s];
			} else {
				ends++;
			}
			flow_of[s] = UINT32_MAX;
			if (next != FQ_NONE) {
				flow_of[next] = UINT32_MAX;
				queued--;
			}
		}
	}
	CHECK_INT(bad, 0);
	CHECK(peeks > 100 && ends > 100); /* both kinds came up */
	fq_fini(&q);
}

int main(void)
{
	struct fq q;
	uint32_t out[SLOTS];

	CHECK_INT(fq_init(&q, SLOTS, 12, QUANTUM, SLOTS), -EINVAL); /* not a power of two */
	CHECK_INT(fq_init(&q, 0, BUCKETS, QUANTUM, 1), -EINVAL);
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, 0, SLOTS), -EINVAL);
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, 0), -EINVAL);	     /* holds nothing */
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS + 1), -EINVAL); /* more than slots */

	admission();
	byte_limit();
	aqm();
	peek_turn();

	/* Empty: nothing to send, nothing to drop. */
	CHECK_INT(fq_init(&q, SLOTS, BUCKETS, QUANTUM, SLOTS), 0);
	CHECK(fq_dequeue(&q, NULL) == FQ_NONE);
	CHECK(fq_drop_longest(&q) == FQ_NONE);

	/* One flow: first in, first out. */
	for (uint32_t s = 0; s < 5; s++)
		fq_enqueue(&q, s, 7, 1000);
	CHECK_INT(q.queued, 5);
	CHECK_U64(q.bytes, 5000);
	CHECK_INT(drain(&q, out, SLOTS), 5);
	for (uint32_t s = 0; s < 5; s++)
		CHECK_INT(out[s], s);
	CHECK_INT(q.queued, 0);
	CHECK_U64(q.bytes, 0);

	/* Two backlogged flows, hashes 1 and 2, of 1000- and 3000-byte packets: each turn is a
	 * quantum (3000 bytes), so flow 1 sends three packets a turn and flow 2 one. Slots
	 * 0-8 are flow 1's, 10-12 flow 2's, queued flow 1 first. */
	for (uint32_t s = 0; s < 9; s++)
		fq_enqueue(&q, s, 1, 1000);
	for (uint32_t s = 10; s < 13; s++)
		fq_enqueue(&q, s, 2, 3000);
	CHECK_INT(drain(&q, out, SLOTS), 12);
	{
		const uint32_t want[] = { 0, 1, 2, 10, 3, 4, 5, 11, 6, 7, 8, 12 };

		for (unsigned i = 0; i < 12; i++)
			CHECK_INT(out[i], want[i]);
	}

	/* A bulk flow with a backlog, then a sparse one's packet: the sparse one, new, goes
	 * before the rest of the backlog (after what the bulk flow's turn still allows). */
	for (uint32_t s = 0; s < 10; s++)
		fq_enqueue(&q, s, 3, 3000);  /* one packet a turn */
	CHECK_INT(fq_dequeue(&q, NULL), 0);  /* bulk, new: its first turn */
	fq_enqueue(&q, 20, 4, 100);	     /* a ping */
	CHECK_INT(fq_dequeue(&q, NULL), 20); /* new flows first */
	CHECK_INT(fq_dequeue(&q, NULL), 1);
	/* The sparse flow sends again, with turn left: it went behind the old flows when it
	 * emptied, so it waits for the end of the bulk flow's turn, not for its backlog. */
	fq_enqueue(&q, 21, 4, 100);
	CHECK_INT(fq_dequeue(&q, NULL), 21);
	CHECK_INT(fq_dequeue(&q, NULL), 2);
	CHECK_INT(drain(&q, out, SLOTS), 7);
	for (unsigned i = 0; i < 7; i++)
		CHECK_INT(out[i], 3 + i);

	/* Packets larger than the quantum: the deficit carries over, so a flow of 5000-byte
	 * packets still gets about a quantum a turn, not a packet; when its 30000 bytes are
	 * out, a flow of 1000-byte packets queued beside it has sent 24000 of its 30000. */
	for (uint32_t s = 0; s < 6; s++)
		fq_enqueue(&q, s, 1, 5000);
	for (uint32_t s = 10; s < 40; s++)
		fq_enqueue(&q, s, 2, 1000);
	{
		unsigned n = drain(&q, out, SLOTS), small = 0, i = 0;

		CHECK_INT(n, 36);
		while (i < n && out[i] != 5)
			small += out[i++] >= 10;
		CHECK_INT(small * 1000, 24000);
	}

	/* A flow that keeps sending stays old: a sparse flow's packet goes before a bulk flow's
	 * backlog once (after the bulk flow's first turn); found empty, it goes behind the old
	 * flows, so that its next packet waits for the end of the bulk flow's next turn, not
	 * before it as a new flow's would. Three 1000-byte packets a turn. */
	for (uint32_t s = 0; s < 10; s++)
		fq_enqueue(&q, s, 12, 1000);
	CHECK_INT(fq_dequeue(&q, NULL), 0);
	fq_enqueue(&q, 20, 13, 100);
	CHECK_INT(fq_dequeue(&q, NULL), 1);
	CHECK_INT(fq_dequeue(&q, NULL), 2);
	CHECK_INT(fq_dequeue(&q, NULL), 20);
	CHECK_INT(fq_dequeue(&q, NULL), 3); /* the sparse flow found empty on the way */
	fq_enqueue(&q, 21, 13, 100);
	CHECK_INT(fq_dequeue(&q, NULL), 4);
	CHECK_INT(fq_dequeue(&q, NULL), 5);
	CHECK_INT(fq_dequeue(&q, NULL), 21);
	CHECK_INT(drain(&q, out, SLOTS), 4);

	/* Hashes share a bucket modulo the buckets: 5 and 5 + BUCKETS are one flow here. */
	fq_enqueue(&q, 0, 5, 3000);
	fq_enqueue(&q, 1, 6, 3000);
	fq_enqueue(&q, 2, 5 + BUCKETS, 3000);
	CHECK_INT(drain(&q, out, SLOTS), 3);
	CHECK_INT(out[0], 0);
	CHECK_INT(out[1], 1);
	CHECK_INT(out[2], 2);

	/* Overflow: the flow with the most bytes gives up its oldest packet, whoever has the
	 * most packets. Flow 8 has 3 x 100 bytes, flow 9 2 x 5000. */
	fq_enqueue(&q, 0, 8, 100);
	fq_enqueue(&q, 1, 9, 5000);
	fq_enqueue(&q, 2, 8, 100);
	fq_enqueue(&q, 3, 9, 5000);
	fq_enqueue(&q, 4, 8, 100);
	CHECK_INT(fq_drop_longest(&q), 1);
	CHECK_INT(q.queued, 4);
	CHECK_U64(q.bytes, 5300);
	CHECK_INT(fq_drop_longest(&q), 3); /* still flow 9: 5000 against 300 */
	CHECK_INT(fq_drop_longest(&q), 0); /* then flow 8, oldest first */
	/* A flow emptied by drops still leaves the lists in order: the rest comes out. */
	CHECK_INT(drain(&q, out, SLOTS), 2);
	CHECK_INT(out[0], 2);
	CHECK_INT(out[1], 4);
	CHECK(fq_drop_longest(&q) == FQ_NONE);

	/* An emptied flow left the lists: queued again, it is new, ahead of a backlogged one. */
	for (uint32_t s = 0; s < 4; s++)
		fq_enqueue(&q, s, 10, 3000);
	CHECK_INT(fq_dequeue(&q, NULL), 0);
	CHECK_INT(fq_dequeue(&q, NULL), 1);
	CHECK_INT(drain(&q, out, SLOTS), 2);
	fq_enqueue(&q, 5, 11, 3000); /* flow 10 is idle again, 11 new */
	fq_enqueue(&q, 6, 10, 3000);
	CHECK_INT(fq_dequeue(&q, NULL), 5);
	CHECK_INT(fq_dequeue(&q, NULL), 6);
	CHECK(fq_dequeue(&q, NULL) == FQ_NONE);

	/* Every slot at once, one flow each of 16 buckets, 4 slots per flow: each turn
	 * sends one packet of each, in the order the flows came. */
	for (uint32_t s = 0; s < SLOTS; s++)
		fq_enqueue(&q, s, s % BUCKETS, QUANTUM);
	CHECK_INT(drain(&q, out, SLOTS), SLOTS);
	for (uint32_t i = 0; i < SLOTS; i++)
		CHECK_INT(out[i], i);
	fq_fini(&q);
	return check_done("test_fq");
}
