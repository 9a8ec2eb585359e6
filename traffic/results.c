/*
 * The server's per-test results (see results.h).
 */
#include "results.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

struct test_rec {
	uint64_t test_id;
	uint64_t touched_ns;
	struct proto_result *sessions; /* PROTO_MAX_SESSIONS, session i at i */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct test_rec tests[RESULTS_TESTS];

static struct test_rec *find(uint64_t test_id, int create)
{
	uint64_t now = clock_mono_ns();
	struct test_rec *oldest = &tests[0];

	for (int i = 0; i < RESULTS_TESTS; i++) {
		struct test_rec *t = &tests[i];

		if (t->sessions && now - t->touched_ns > (uint64_t)RESULTS_KEEP_S * NSEC_PER_SEC) {
			free(t->sessions);
			memset(t, 0, sizeof(*t));
		}
		if (t->sessions && t->test_id == test_id)
			return t;
		if (!t->sessions || t->touched_ns < oldest->touched_ns)
			oldest = t;
	}
	if (!create)
		return NULL;
	free(oldest->sessions);
	memset(oldest, 0, sizeof(*oldest));
	oldest->sessions = calloc(PROTO_MAX_SESSIONS, sizeof(*oldest->sessions));
	if (!oldest->sessions)
		return NULL;
	oldest->test_id = test_id;
	oldest->touched_ns = now;
	return oldest;
}

void results_add(uint64_t test_id, const struct proto_result *r)
{
	struct test_rec *t;
	struct proto_result *s;

	if (r->session >= PROTO_MAX_SESSIONS)
		return;
	pthread_mutex_lock(&lock);
	t = find(test_id, 1);
	if (t) {
		s = &t->sessions[r->session];
		/* Churn and iterations reuse a session: its connections add up. */
		if (!s->done) {
			s->first_bad = UINT64_MAX;
			s->session = r->session;
		}
		s->done = true;
		s->failed |= r->failed;
		s->rx_bytes += r->rx_bytes;
		s->rx_window += r->rx_window;
		s->tx_bytes += r->tx_bytes;
		s->mismatches += r->mismatches;
		if (r->first_bad != UINT64_MAX && s->first_bad == UINT64_MAX)
			s->first_bad = r->first_bad;
		t->touched_ns = clock_mono_ns();
	}
	pthread_mutex_unlock(&lock);
}

unsigned results_get(uint64_t test_id, struct proto_result *out, unsigned max)
{
	struct test_rec *t;
	unsigned n = 0;

	pthread_mutex_lock(&lock);
	t = find(test_id, 0);
	for (unsigned i = 0; t && i < PROTO_MAX_SESSIONS && n < max; i++) {
		if (t->sessions[i].done)
			out[n++] = t->sessions[i];
	}
	pthread_mutex_unlock(&lock);
	return n;
}
