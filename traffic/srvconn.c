/*
 * A server connection's state machine (see srvconn.h; protocol in proto.h, docs/traffic.md).
 */
#include "srvconn.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "traffic_limits.h"
#include "pattern.h"
#include "results.h"

static uint64_t await_from(uint64_t now)
{
	return now + (uint64_t)SRV_HELLO_TIMEOUT_MS * NSEC_PER_MSEC;
}

struct srvconn *srvconn_new(int fd, uint64_t now)
{
	struct srvconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->state = SC_HELLO;
	c->await_ns = await_from(now);
	return c;
}

bool srvconn_expired(const struct srvconn *c, uint64_t now)
{
	return c->await_ns && now >= c->await_ns;
}

void srvconn_free(struct srvconn *c)
{
	close(c->fd);
	free(c->buf);
	free(c);
}

static void record(struct srvconn *c, bool failed)
{
	struct proto_result r = {
		.session = c->h.session,
		.done = true,
		.failed = failed,
		.rx_bytes = c->rx.bytes,
		.rx_window = c->rx.window_bytes,
		.tx_bytes = c->tx.bytes,
		.mismatches = c->rx.mismatches,
		.first_bad = c->rx.first_bad,
	};

	results_add(c->h.test_id, &r);
}

static enum srvconn_end start_session(struct srvconn *c, const struct srvconn_env *env,
				      uint64_t now)
{
	const struct proto_hello *h = &c->h;

	/* A data session or probes run as long as the client says; a control connection owes
	 * its first request. */
	c->await_ns = 0;
	if (h->kind == PROTO_KIND_CONTROL) {
		c->state = SC_CONTROL;
		c->await_ns = await_from(now);
		return SC_OPEN;
	}
	if (h->kind == PROTO_KIND_RR) {
		c->state = SC_RR;
		c->buf_size = h->rr_size;
		c->buf = malloc(c->buf_size);
		return c->buf ? SC_OPEN : SC_NO_MEMORY;
	}
	c->state = SC_DATA;
	stream_init(&c->rx, pattern_seed(h->test_id, h->session, 0));
	stream_init(&c->tx, pattern_seed(h->test_id, h->session, 1));
	if (h->session == 0)
		c->tx.corrupt_at = env->corrupt_at;
	c->sending = h->pattern != PROTO_PUSH;
	/* The session's own times are the clock's, which its sends and receives read too. */
	if (h->duration_ms) {
		uint64_t t0 = clock_mono_ns();

		c->deadline_ns = t0 + (uint64_t)h->duration_ms * NSEC_PER_MSEC;
		c->rx.window_from = t0 + (uint64_t)h->measure_ms * NSEC_PER_MSEC;
		c->rx.window_to = c->deadline_ns;
	}
	pacer_init(&c->pacer, h->rate_bps, 0, clock_mono_ns());
	return SC_OPEN;
}

/* Sends what the session may send now; shuts the direction down when it is complete. */
static int data_send(struct srvconn *c, const struct srvconn_env *env, uint64_t now)
{
	bool verify = c->h.flags & PROTO_F_VERIFY;

	while (c->sending && !c->wr_shut) {
		uint64_t want = c->h.bytes ? c->h.bytes - c->tx.bytes : UINT64_MAX;
		long w;

		if ((c->h.bytes && c->tx.bytes >= c->h.bytes) ||
		    (c->deadline_ns && now >= c->deadline_ns) ||
		    (!c->h.bytes && !c->deadline_ns && c->eof)) {
			shutdown(c->fd, SHUT_WR);
			c->wr_shut = true;
			break;
		}
		want = pacer_grant(&c->pacer, now, want < c->h.buffer ? want : c->h.buffer,
				   TRAFFIC_PACE_QUANTUM);
		if (want == 0) {
			c->wake_ns = now + pacer_wait_ns(&c->pacer, now, TRAFFIC_PACE_QUANTUM);
			break;
		}
		w = stream_send(c->fd, &c->tx, env->scratch, env->scratch_size, want, verify);
		if (w < 0)
			return (int)w;
		if (w == 0)
			break;
		pacer_take(&c->pacer, (uint64_t)w);
		now = clock_mono_ns();
	}
	return 0;
}

static enum srvconn_end data_step(struct srvconn *c, const struct srvconn_env *env)
{
	bool verify = c->h.flags & PROTO_F_VERIFY;
	/* The hello's buffer (up to TRAFFIC_BUFFER_MAX) is the client's word on our writes; our
	 * reads go into our own scratch buffer, and never beyond it. */
	size_t room = c->h.buffer < env->scratch_size ? c->h.buffer : env->scratch_size;
	long r;

	while (!c->eof) {
		r = stream_recv(c->fd, &c->rx, env->scratch, room, verify);
		if (r == -EAGAIN)
			break;
		if (r < 0)
			goto failed;
		/* By bytes, the client sends exactly that much and waits for us to close. */
		if (r == 0 ||
		    (c->h.bytes && c->h.pattern != PROTO_PULL && c->rx.bytes >= c->h.bytes))
			c->eof = true;
	}
	if (data_send(c, env, clock_mono_ns()))
		goto failed;
	/* Done when the client has finished and so have we: record, then close. */
	if (c->eof && (!c->sending || c->wr_shut)) {
		record(c, false);
		return SC_DONE;
	}
	return SC_OPEN;
failed:
	record(c, true);
	return SC_FAILED;
}

static int flush_buf(struct srvconn *c)
{
	while (c->buf_done < c->buf_len) {
		ssize_t w = send(c->fd, c->buf + c->buf_done, c->buf_len - c->buf_done,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0)
			return (errno == EAGAIN) ? 0 : -errno;
		c->buf_done += (size_t)w;
	}
	return 0;
}

/* Echoes each probe of rr_size bytes as soon as it is whole. */
static enum srvconn_end rr_step(struct srvconn *c)
{
	for (;;) {
		ssize_t r;

		if (c->buf_len == c->buf_size) {
			if (flush_buf(c))
				return SC_FAILED;
			if (c->buf_done < c->buf_len)
				return SC_OPEN;
			c->buf_len = c->buf_done = 0;
		}
		r = recv(c->fd, c->buf + c->buf_len, c->buf_size - c->buf_len, MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN ? SC_OPEN : SC_FAILED;
		if (r == 0)
			return SC_DONE;
		c->buf_len += (size_t)r;
	}
}

/* Builds the answer to req into c->buf. */
static enum srvconn_end answer(struct srvconn *c, const struct srvconn_env *env,
			       const struct proto_ctl_req *req)
{
	struct proto_ctl_ans ans = { .type = req->type };
	size_t room = PROTO_CTL_ANS_HLEN + (size_t)PROTO_MAX_SESSIONS * PROTO_UDP_RESULT_LEN;
	size_t used = PROTO_CTL_ANS_HLEN;

	if (c->buf_size < room) {
		free(c->buf);
		c->buf = malloc(room);
		c->buf_size = c->buf ? room : 0;
		if (!c->buf)
			return SC_NO_MEMORY;
	}
	if (req->type == PROTO_CTL_CPU) {
		struct proto_cpu cpu = { .cpu_ns = env->cpu_ns(env->arg), .threads = env->threads };

		used += (size_t)proto_cpu_build(c->buf + used, room - used, &cpu);
		ans.count = 1;
	} else if (req->type == PROTO_CTL_RESULTS) {
		static __thread struct proto_result res[PROTO_MAX_SESSIONS];
		unsigned n = results_get(req->test_id, res, PROTO_MAX_SESSIONS);

		for (unsigned i = 0; i < n; i++)
			used += (size_t)proto_result_build(c->buf + used, room - used, &res[i]);
		ans.count = n;
	} else {
		used += env->udp_results(env->arg, req->test_id, c->buf + used, room - used,
					 &ans.count);
	}
	proto_ctl_ans_build(c->buf, room, &ans);
	c->buf_len = used;
	c->buf_done = 0;
	return SC_OPEN;
}

/*
 * Requests one after the other, each answered before the next is read. The request is
 * gathered in req_buf, not peeked at: a peek at half a request sees the same bytes forever,
 * and never the end of the stream behind them.
 */
static enum srvconn_end control_step(struct srvconn *c, const struct srvconn_env *env, uint64_t now)
{
	for (;;) {
		struct proto_ctl_req req;
		enum srvconn_end end;
		ssize_t r;
		int rc;

		if (c->buf_len) {
			if (flush_buf(c))
				return SC_FAILED;
			if (c->buf_done < c->buf_len)
				return SC_OPEN;
			/* Taken: the next request has its own time. */
			c->buf_len = c->buf_done = 0;
			c->await_ns = await_from(now);
		}
		r = recv(c->fd, c->req_buf + c->req_len, PROTO_CTL_REQ_LEN - c->req_len,
			 MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN ? SC_OPEN : SC_FAILED;
		if (r == 0)
			return c->req_len ? SC_CUT : SC_DONE;
		c->req_len += (size_t)r;
		rc = proto_ctl_req_parse(c->req_buf, c->req_len, &req);
		if (rc == -ENODATA)
			continue;
		if (rc < 0)
			return SC_REFUSED;
		c->req_len = 0;
		end = answer(c, env, &req);
		if (end != SC_OPEN)
			return end;
		/* The client has this long to take the answer. */
		c->await_ns = await_from(now);
	}
}

static enum srvconn_end hello_step(struct srvconn *c, const struct srvconn_env *env, uint64_t now)
{
	for (;;) {
		ssize_t r = recv(c->fd, c->hello_buf + c->hello_len, PROTO_HELLO_LEN - c->hello_len,
				 MSG_DONTWAIT);
		int rc;

		if (r < 0)
			return errno == EAGAIN ? SC_OPEN : SC_FAILED;
		/* A close before a byte is a probe of the port; one inside the hello is cut. */
		if (r == 0)
			return c->hello_len ? SC_CUT : SC_DONE;
		c->hello_len += (size_t)r;
		rc = proto_hello_parse(c->hello_buf, c->hello_len, &c->h);
		if (rc == -ENODATA)
			continue;
		if (rc < 0)
			return SC_REFUSED; /* not ours, or nonsense: this connection ends, no other */
		return start_session(c, env, now);
	}
}

enum srvconn_end srvconn_step(struct srvconn *c, const struct srvconn_env *env, uint64_t now)
{
	enum srvconn_state was;
	enum srvconn_end end;

	c->wake_ns = 0;
	do {
		was = c->state;
		switch (c->state) {
		case SC_HELLO:
			end = hello_step(c, env, now);
			break;
		case SC_DATA:
			end = data_step(c, env);
			break;
		case SC_RR:
			end = rr_step(c);
			break;
		default:
			end = control_step(c, env, now);
			break;
		}
		/* A hello just completed: what came behind it is the session's. */
	} while (end == SC_OPEN && was == SC_HELLO && c->state != SC_HELLO);
	return end;
}

bool srvconn_clocked(const struct srvconn *c)
{
	return c->state == SC_DATA && c->sending && !c->wr_shut;
}

bool srvconn_due(const struct srvconn *c, uint64_t now)
{
	return srvconn_clocked(c) &&
	       ((c->wake_ns && now >= c->wake_ns) || (c->deadline_ns && now >= c->deadline_ns));
}
