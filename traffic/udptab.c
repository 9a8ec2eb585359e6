/*
 * The UDP sessions of a server thread (see udptab.h).
 */
#include "udptab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "clock.h"
#include "proto.h"

int udptab_init(struct udptab *t)
{
	*t = (struct udptab){ 0 };
	t->keys = calloc(SRV_UDP_SLOTS, sizeof(*t->keys));
	t->st = calloc(SRV_UDP_SLOTS, sizeof(*t->st));
	if (!t->keys || !t->st) {
		udptab_fini(t);
		return -ENOMEM;
	}
	return 0;
}

void udptab_fini(struct udptab *t)
{
	free(t->keys);
	free(t->st);
	t->keys = NULL;
	t->st = NULL;
}

unsigned udptab_home(uint64_t test_id, uint32_t session)
{
	return (unsigned)(((test_id * 0x9e3779b97f4a7c15ull) ^ session) % SRV_UDP_SLOTS);
}

static bool taken(const struct udptab *t, uint64_t test_id)
{
	for (unsigned i = 0; i < RESULTS_TESTS; i++) {
		if (t->taken[i] == test_id && test_id)
			return true;
	}
	return false;
}

struct seqstat *udptab_get(struct udptab *t, uint64_t test_id, uint32_t session, uint64_t now)
{
	unsigned home = udptab_home(test_id, session), claim = SRV_UDP_SLOTS;

	/*
	 * Freed slots leave holes in the chains: the whole window is searched for the session
	 * before a hole is taken, or a session probing past a freed slot would get a second one.
	 */
	for (unsigned i = 0; i < SRV_UDP_PROBES; i++) {
		unsigned k = (home + i) % SRV_UDP_SLOTS;
		struct udptab_key *u = &t->keys[k];

		if (u->used && u->test_id == test_id && u->session == session) {
			u->last_ns = now;
			return &t->st[k];
		}
		if (claim == SRV_UDP_SLOTS &&
		    (!u->used || now - u->last_ns > (uint64_t)RESULTS_KEEP_S * NSEC_PER_SEC))
			claim = k;
	}
	if (taken(t, test_id)) {
		t->late++;
		return NULL;
	}
	if (claim == SRV_UDP_SLOTS) {
		t->untracked++;
		return NULL;
	}
	t->keys[claim] = (struct udptab_key){
		.test_id = test_id, .last_ns = now, .session = session, .used = 1
	};
	seqstat_init(&t->st[claim]);
	return &t->st[claim];
}

size_t udptab_take(struct udptab *t, uint64_t test_id, uint8_t *out, size_t room, uint32_t *count)
{
	size_t used = 0;

	for (unsigned k = 0; k < SRV_UDP_SLOTS && used + PROTO_UDP_RESULT_LEN <= room; k++) {
		struct udptab_key *u = &t->keys[k];
		const struct seqstat *st = &t->st[k];
		struct proto_udp_result r;

		if (!u->used || u->test_id != test_id)
			continue;
		r = (struct proto_udp_result){
			.session = u->session,
			.received = st->received,
			.duplicates = st->duplicates,
			.reordered = st->reordered,
			.too_old = st->too_old,
			.lowest = st->lowest,
			.highest = st->highest,
			.jitter_ns = (uint64_t)st->jitter_ns,
		};
		used += (size_t)proto_udp_result_build(out + used, room - used, &r);
		(*count)++;
		u->used = 0;
	}
	if (!taken(t, test_id)) {
		t->taken[t->taken_next] = test_id;
		t->taken_next = (t->taken_next + 1) % RESULTS_TESTS;
	}
	return used;
}
