/*
 * The UDP sessions a server thread tracks (seqstat.h per session), by test id and session
 * number, in a table of SRV_UDP_SLOTS with linear probing over at most SRV_UDP_PROBES slots.
 * A test's slots are freed when its results are taken (the client asks once, when its senders
 * have stopped): later datagrams of that test are counted as late, not tracked again. A slot
 * silent for RESULTS_KEEP_S is taken over by a new session that finds no other. Not locked:
 * the caller serialises (server.c: the thread's udp_lock).
 */
#ifndef TUNBED_TR_UDPTAB_H
#define TUNBED_TR_UDPTAB_H

#include <stddef.h>
#include <stdint.h>

#include "traffic_limits.h" /* SRV_UDP_SLOTS, SRV_UDP_PROBES, RESULTS_TESTS, RESULTS_KEEP_S */
#include "seqstat.h"

struct udptab_key {
	uint64_t test_id;
	uint64_t last_ns; /* the session's latest datagram */
	uint32_t session;
	uint32_t used;
};

struct udptab {
	struct udptab_key *keys; /* SRV_UDP_SLOTS, apart from the statistics: probing reads these */
	struct seqstat *st;	 /* SRV_UDP_SLOTS */
	uint64_t
		taken[RESULTS_TESTS]; /* tests whose results were taken, the latest RESULTS_TESTS */
	unsigned taken_next;
	uint64_t untracked; /* datagrams of sessions that found no slot */
	uint64_t late;	    /* datagrams of a test whose results were taken */
};

/* Allocates the table. Returns 0 or -ENOMEM. */
int udptab_init(struct udptab *t);
void udptab_fini(struct udptab *t);

/*
 * The statistics of session of test_id, whose datagram arrived at now (CLOCK_MONOTONIC ns): its
 * slot, or a new one. NULL (and counted) when the test's results were taken already, or when
 * every slot it may probe is held by another session heard from within RESULTS_KEEP_S.
 */
struct seqstat *udptab_get(struct udptab *t, uint64_t test_id, uint32_t session, uint64_t now);

/*
 * Writes the records (PROTO_UDP_RESULT_LEN each) of test_id's sessions into out, as many as
 * room holds, adds their number to *count, frees their slots and remembers that the test's
 * results are taken. Returns the bytes written.
 */
size_t udptab_take(struct udptab *t, uint64_t test_id, uint8_t *out, size_t room, uint32_t *count);

/* The first slot session of test_id probes (for tests: keys that collide). */
unsigned udptab_home(uint64_t test_id, uint32_t session);

#endif
