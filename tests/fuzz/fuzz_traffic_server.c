/*
 * libFuzzer harness for the tunbed-traffic server's connection handling (traffic/srvconn.c):
 * up to four client connections at once, each a socketpair whose one end the server's state
 * machine reads and writes, fed a byte stream in chunks that the input's first bytes
 * describe, interleaved, with half-closes and closes. The harness's scratch buffer is small
 * (FUZZ_SCRATCH), so a read that trusts a hello's buffer size (up to 16 MiB) runs past it.
 *
 * Input: byte 0, low 5 bits: n, the number of chunks; then n headers of two bytes each:
 *   first:  bits 0-1 the connection (0-3); bit 2: after the chunk the client half-closes
 *           (SHUT_WR); bit 3: after it the client closes its end (a later chunk of that
 *           connection opens a new one); bit 4: before it the clock jumps past the time a
 *           connection has for its hello or request (SRV_HELLO_TIMEOUT_MS), and the overdue
 *           ones are closed, as the server does; bit 5: the client reads what the server
 *           sent; bits 6-7: the unit of the length, 1, 16, 256 or 4096 bytes
 *   second: the length in those units
 * then the payload, which the chunks take in order; a chunk beyond its end is zeros. After
 * every step, a connection that waits for a hello or a request must have a time for it, within
 * SRV_HELLO_TIMEOUT_MS of the clock, and a data session or probes none. At the end every
 * client closes, and then every server connection that does not wait for its clock (a pacer,
 * a deadline) must be over within a few steps: one cut inside a hello or request too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "traffic_limits.h"
#include "srvconn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	FUZZ_CONNS = 4,
	FUZZ_SCRATCH = 4096,	 /* far below a hello's largest buffer (TRAFFIC_BUFFER_MAX) */
	FUZZ_ZEROS = 255 * 4096, /* the longest chunk */
	FUZZ_STALLS = 4,	 /* steps without progress before a chunk's rest is dropped */
	FUZZ_END_STEPS = 8,	 /* after every client closed, steps until the server's end */
};

enum {
	F_HALF_CLOSE = 1u << 2,
	F_CLOSE = 1u << 3,
	F_LATER = 1u << 4,
	F_DRAIN = 1u << 5,
};

static const uint64_t timeout_ns = (uint64_t)SRV_HELLO_TIMEOUT_MS * NSEC_PER_MSEC;

struct fconn {
	struct srvconn *srv; /* NULL: none open */
	int client;	     /* -1: closed */
	bool half_closed;
};

static uint8_t *scratch;
static uint64_t now; /* the clock the connections' hello and request times are on */
static const uint8_t zeros[FUZZ_ZEROS];

static uint64_t cpu_ns(void *arg)
{
	(void)arg;
	return 42;
}

static size_t udp_results(void *arg, uint64_t test_id, uint8_t *out, size_t room, uint32_t *count)
{
	(void)arg;
	(void)test_id;
	(void)out;
	(void)room;
	*count = 0;
	return 0;
}

static void end_server(struct fconn *f)
{
	srvconn_free(f->srv);
	f->srv = NULL;
}

static void step(struct fconn *f, const struct srvconn_env *env)
{
	const struct srvconn *c = f->srv;

	if (!c)
		return;
	if (srvconn_step(f->srv, env, now) != SC_OPEN) {
		end_server(f);
		return;
	}
	/* Owed: a hello, a request or the taking of an answer, each with a time. */
	if ((c->state == SC_HELLO || c->state == SC_CONTROL) &&
	    (!c->await_ns || c->await_ns > now + timeout_ns))
		abort();
	if ((c->state == SC_DATA || c->state == SC_RR) && c->await_ns)
		abort();
}

/* The client reads and drops what the server sent, so that the server can send on. */
static void drain(struct fconn *f)
{
	static uint8_t sink[65536];

	for (int i = 0; f->client >= 0 && i < 64; i++) {
		if (recv(f->client, sink, sizeof(sink), MSG_DONTWAIT) <= 0)
			break;
	}
}

static void close_client(struct fconn *f)
{
	if (f->client >= 0)
		close(f->client);
	f->client = -1;
}

static bool open_conn(struct fconn *f)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	f->srv = srvconn_new(sv[0], now);
	if (!f->srv) {
		close(sv[0]);
		close(sv[1]);
		return false;
	}
	f->client = sv[1];
	f->half_closed = false;
	return true;
}

static void send_chunk(struct fconn *f, const struct srvconn_env *env, const uint8_t *p, size_t len,
		       bool drains)
{
	size_t off = 0;

	for (int stalls = 0; off < len && stalls < FUZZ_STALLS;) {
		ssize_t w = send(f->client, p + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0)
			off += (size_t)w;
		else if (w < 0 && errno != EAGAIN)
			break;
		else
			stalls++;
		step(f, env);
		if (drains)
			drain(f);
		if (!f->srv)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct srvconn_env env = { .scratch_size = FUZZ_SCRATCH,
				   .corrupt_at = UINT64_MAX,
				   .cpu_ns = cpu_ns,
				   .threads = 1,
				   .udp_results = udp_results };
	struct fconn conns[FUZZ_CONNS];
	size_t n, pos;

	if (!scratch)
		scratch = malloc(FUZZ_SCRATCH);
	if (!scratch || size < 1)
		return 0;
	env.scratch = scratch;
	now = NSEC_PER_SEC;
	n = data[0] & 31;
	if (size < 1 + 2 * n)
		return 0;
	for (int i = 0; i < FUZZ_CONNS; i++)
		conns[i] = (struct fconn){ .srv = NULL, .client = -1 };
	pos = 1 + 2 * n;
	for (size_t i = 0; i < n; i++) {
		uint8_t h0 = data[1 + 2 * i], h1 = data[2 + 2 * i];
		struct fconn *f = &conns[h0 & 3];
		size_t len = (size_t)h1 << (4 * (h0 >> 6)), have = size - pos;

		if (h0 & F_LATER) {
			now += timeout_ns;
			for (int k = 0; k < FUZZ_CONNS; k++) {
				if (conns[k].srv && srvconn_expired(conns[k].srv, now))
					end_server(&conns[k]);
			}
		}
		if (!f->srv) {
			close_client(f);
			if (!open_conn(f))
				break;
		}
		if (f->half_closed) {
			len = 0;
		} else if (len <= have) {
			send_chunk(f, &env, data + pos, len, h0 & F_DRAIN);
			pos += len;
		} else {
			/* The payload's rest, then zeros. */
			send_chunk(f, &env, data + pos, have, h0 & F_DRAIN);
			pos = size;
			if (f->srv)
				send_chunk(f, &env, zeros, len - have, h0 & F_DRAIN);
		}
		if (f->srv && (h0 & (F_HALF_CLOSE | F_CLOSE))) {
			if (h0 & F_CLOSE)
				close_client(f);
			else if (shutdown(f->client, SHUT_WR) == 0)
				f->half_closed = true;
		}
		step(f, &env);
		if (h0 & F_DRAIN)
			drain(f);
	}
	/* Every client goes away: whatever state its connection is in, the server ends it. */
	for (int i = 0; i < FUZZ_CONNS; i++) {
		struct fconn *f = &conns[i];

		close_client(f);
		for (int s = 0; f->srv && s < FUZZ_END_STEPS; s++)
			step(f, &env);
		/* One that sends against its clock (a pacer, a deadline) finds out when it next
		 * sends; any other must be over. */
		if (f->srv && !srvconn_clocked(f->srv))
			abort();
		if (f->srv)
			end_server(f);
	}
	return 0;
}
