/*
 * tunbed-traffic client: TCP sessions on epoll threads, the reporting main thread, and the
 * orchestration of a test (see client.h; protocol in proto.h).
 */
#include "client.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "clock.h"
#include "fd.h"
#include "inet.h"
#include "log.h"
#include "netaddr.h"
#include "pattern.h"
#include "ping.h"
#include "sigfd.h"
#include "thread.h"

static bool stopping(const struct client *cl)
{
	return __atomic_load_n(&cl->stop, __ATOMIC_RELAXED);
}

/* A stop signal: everything ends now, and the wind-down is bounded from here. */
static void interrupt(struct client *cl)
{
	cl->interrupted = true;
	cl->stop_ns = clock_mono_ns();
	__atomic_store_n(&cl->stop, 1, __ATOMIC_RELAXED);
	rr_wake(cl);
}

static void set_error(struct session *s, int err)
{
	/* A write into a connection the server has dropped says EPIPE, a read ECONNRESET: the
	 * same event, reported as one. */
	if (err == EPIPE)
		err = ECONNRESET;
	if (!s->error)
		s->error = err;
}

/* Time mode: what arrives between the end of the warm-up and the deadline is the result. */
static void arm_window(const struct client *cl, struct session *s)
{
	if (cl->cfg->bytes && !cl->cfg->churn)
		return;
	s->rx.window_from = cl->measure_ns;
	s->rx.window_to = cl->deadline_ns;
}

static void session_finish(struct cl_thread *t, struct session *s, bool reset)
{
	if (s->fd >= 0) {
		socklen_t len = sizeof(s->ti);

		if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &s->ti, &len) == 0) {
			s->ti_valid = true;
			s->retrans += s->ti.tcpi_total_retrans;
		}
		if (reset) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };

			/* --shutdown rst: an abortive close, as ctsTraffic's "RST" does. */
			setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(s->fd);
		s->fd = -1;
	}
	relaxed_set(&s->tx_total, s->tx_total + s->tx.bytes);
	relaxed_set(&s->rx_total, s->rx_total + s->rx.bytes);
	s->rx_window_total += s->rx.window_bytes;
	if (s->rx.stall_max_ns > s->rx_stall_max_ns)
		s->rx_stall_max_ns = s->rx.stall_max_ns;
	s->mismatches += s->rx.mismatches;
	if (s->first_bad == UINT64_MAX && s->rx.first_bad != UINT64_MAX)
		s->first_bad = s->rx.first_bad;
	stream_init(&s->tx, s->tx.seed);
	stream_init(&s->rx, s->rx.seed);
	arm_window(t->owner, s);
	s->end_ns = clock_mono_ns();
	s->state = SS_DONE;
	if (!s->error)
		relaxed_set(&s->connections, s->connections + 1);
	t->active--;
}

static int session_connect(struct cl_thread *t, struct session *s)
{
	const struct client *cl = t->owner;
	const struct client_cfg *c = cl->cfg;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP,
				  .data.ptr = s };
	const struct sockaddr_storage *peer = s->pair ? &s->pair->remote : &cl->peer;
	socklen_t peer_len = s->pair ? s->pair->remote_len : cl->peer_len;
	int fd;

	fd = socket(peer->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (s->pair) {
		int one = 1;

		/* The port is chosen at connect, by the 4-tuple: thousands of sessions from one
		 * address do not each hold an ephemeral port of their own from bind. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)&s->pair->local, s->pair->local_len) < 0)
			return fd_close_err(fd);
	}
	if (c->sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &c->sndbuf, sizeof(c->sndbuf));
	if (c->rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &c->rcvbuf, sizeof(c->rcvbuf));
	if (c->congestion[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, c->congestion, strlen(c->congestion)) < 0)
		return fd_close_err(fd);
	if (c->dscp && conn_set_ds(fd, peer->ss_family, (uint8_t)(c->dscp << IP_DSCP_SHIFT)))
		return fd_close_err(fd);
	if (connect(fd, (const struct sockaddr *)peer, peer_len) < 0 && errno != EINPROGRESS)
		return fd_close_err(fd);
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return fd_close_err(fd);
	s->fd = fd;
	s->state = SS_CONNECTING;
	s->hello_sent = 0;
	s->wr_shut = s->eof = false;
	if (!s->start_ns)
		s->start_ns = clock_mono_ns();
	pacer_init(&s->pacer, c->rate_bps, 0, clock_mono_ns());
	t->active++;
	return 0;
}

static void build_hello(const struct client *cl, struct session *s)
{
	const struct client_cfg *c = cl->cfg;
	uint64_t now = clock_mono_ns();
	struct proto_hello h = {
		.kind = PROTO_KIND_DATA,
		.pattern = (uint8_t)c->pattern,
		.flags = c->verify ? PROTO_F_VERIFY : 0,
		.test_id = cl->test_id,
		.session = s->id,
		.bytes = c->bytes,
		.rate_bps = c->rate_bps,
		.buffer = c->buffer,
	};

	/* Time mode: the server sends until the same deadline as the client, and counts what
	 * it receives from the end of the warm-up on, as the client does. */
	if (!c->bytes) {
		h.duration_ms = cl->deadline_ns > now
					? (uint32_t)((cl->deadline_ns - now) / NSEC_PER_MSEC) + 1
					: 1;
		h.measure_ms = cl->measure_ns > now
				       ? (uint32_t)((cl->measure_ns - now) / NSEC_PER_MSEC)
				       : 0;
	}
	proto_hello_build(s->hello, sizeof(s->hello), &h);
}

static bool sends(const struct client *cl)
{
	return cl->cfg->pattern != PROTO_PULL;
}

static bool receives(const struct client *cl)
{
	return cl->cfg->pattern != PROTO_PUSH;
}

/* Sending is over: bytes done, or the deadline passed. */
static bool send_complete(const struct client *cl, const struct session *s, uint64_t now)
{
	const struct client_cfg *c = cl->cfg;

	if (c->bytes)
		return s->tx.bytes >= c->bytes;
	return now >= cl->deadline_ns || stopping(cl);
}

/* Moves a session as far as its socket allows. Returns true when it is finished. */
static bool session_step(struct cl_thread *t, struct session *s)
{
	const struct client *cl = t->owner;
	const struct client_cfg *c = cl->cfg;
	uint64_t now = clock_mono_ns();

	/* Interrupted: end now, with what has been counted. */
	if (stopping(cl))
		return true;
	if (s->state == SS_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			set_error(s, err);
			return true;
		}
		build_hello(cl, s);
		s->state = SS_HELLO;
	}
	if (s->state == SS_HELLO) {
		ssize_t w = send(s->fd, s->hello + s->hello_sent, PROTO_HELLO_LEN - s->hello_sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EAGAIN)
				return false;
			set_error(s, errno);
			return true;
		}
		s->hello_sent += (size_t)w;
		if (s->hello_sent < PROTO_HELLO_LEN)
			return false;
		s->state = SS_RUNNING;
	}
	/* Read in every pattern: in push the server's close is the end of the session. */
	while (!s->eof) {
		long r = stream_recv(s->fd, &s->rx, t->scratch, c->buffer,
				     c->verify && receives(cl));

		if (r == -EAGAIN)
			break;
		if (r < 0) {
			set_error(s, (int)-r);
			return true;
		}
		if (r == 0)
			s->eof = true;
	}
	while (sends(cl) && !s->wr_shut) {
		uint64_t want, ask;
		long w;

		if (send_complete(cl, s, now)) {
			if (c->rst)
				return true;
			/* By bytes, the server knows when it has everything and closes first, so
			 * that TIME_WAIT lands on the server and churn does not run this host out
			 * of ports; by time, the client's FIN says the session is over. */
			if (!c->bytes || stopping(cl))
				shutdown(s->fd, SHUT_WR);
			s->wr_shut = true;
			break;
		}
		want = c->bytes ? c->bytes - s->tx.bytes : c->buffer;
		ask = want < c->buffer ? want : c->buffer;
		want = pacer_grant(&s->pacer, now, ask, TRAFFIC_PACE_QUANTUM);
		if (!want) {
			s->wake_ns = now + pacer_wait_ns(&s->pacer, now,
							 ask < TRAFFIC_PACE_QUANTUM
								 ? ask
								 : TRAFFIC_PACE_QUANTUM);
			break;
		}
		w = stream_send(s->fd, &s->tx, t->scratch, c->buffer, want, c->verify);
		if (w < 0) {
			set_error(s, (int)-w);
			return true;
		}
		if (w == 0)
			break;
		pacer_take(&s->pacer, (uint64_t)w);
		now = clock_mono_ns();
	}
	/* Pull with --shutdown rst: the session ends at its deadline or byte count. */
	if (!sends(cl) && c->rst && (c->bytes ? s->rx.bytes >= c->bytes : now >= cl->deadline_ns))
		return true;
	if (receives(cl) ? s->eof && (!sends(cl) || s->wr_shut) : s->eof)
		return true;
	/* A server that never closes must not hold the test forever. */
	if (!c->bytes && now > cl->deadline_ns + (uint64_t)CL_GRACE_MS * NSEC_PER_MSEC) {
		set_error(s, ETIMEDOUT);
		return true;
	}
	return false;
}

static void start_round(struct cl_thread *t)
{
	for (unsigned i = 0; i < t->nsess; i++) {
		struct session *s = t->sess[i];
		int rc = session_connect(t, s);

		if (rc) {
			set_error(s, -rc);
			s->state = SS_DONE;
		}
	}
}

/* Churn: a finished session opens its next connection while the test has time left. */
static void maybe_reconnect(struct cl_thread *t, struct session *s)
{
	const struct client *cl = t->owner;
	int rc;

	if (!cl->cfg->churn || s->error || stopping(cl) || clock_mono_ns() >= cl->deadline_ns)
		return;
	rc = session_connect(t, s);
	if (rc) {
		set_error(s, -rc);
		s->state = SS_DONE;
	}
}

/* How long until the clock must move a session: a pacer refill, or the next sweep; at most
 * CL_POLL_MAX_MS. In nanoseconds: whole milliseconds held a paced session of 1 Gbit/s (its
 * bucket 1 ms) below its rate. */
static struct timespec next_timeout(const struct cl_thread *t, uint64_t sweep_at)
{
	const struct client *cl = t->owner;
	uint64_t now = clock_mono_ns(), wake = sweep_at;

	if (cl->cfg->rate_bps) {
		for (unsigned i = 0; i < t->nsess; i++) {
			const struct session *s = t->sess[i];

			if (s->state == SS_RUNNING && s->wake_ns && s->wake_ns < wake)
				wake = s->wake_ns;
		}
	}
	if (wake <= now)
		wake = now;
	if (wake - now > CL_POLL_MAX_MS * (uint64_t)NSEC_PER_MSEC)
		wake = now + CL_POLL_MAX_MS * (uint64_t)NSEC_PER_MSEC;
	return (struct timespec){ .tv_sec = (time_t)((wake - now) / NSEC_PER_SEC),
				  .tv_nsec = (long)((wake - now) % NSEC_PER_SEC) };
}

static void step_and_maybe_finish(struct cl_thread *t, struct session *s)
{
	if (s->state != SS_DONE && session_step(t, s)) {
		session_finish(t, s, t->owner->cfg->rst);
		maybe_reconnect(t, s);
	}
}

static void *thread_main(void *arg)
{
	struct cl_thread *t = arg;
	struct client *cl = t->owner;
	struct epoll_event ev[CL_EVENTS];

	for (unsigned round = 0; round < cl->cfg->iterations; round++) {
		/* Sweeps: at the deadline every session stops sending, after the grace period
		 * those still open time out; a stop request sweeps at once. */
		uint64_t sweep_at = cl->deadline_ns;
		int n;

		start_round(t);
		while (t->active) {
			struct timespec wait = next_timeout(t, sweep_at);
			uint64_t now;
			bool sweep;

			n = epoll_pwait2(t->epfd, ev, CL_EVENTS, &wait, NULL);
			for (int i = 0; i < n; i++)
				step_and_maybe_finish(t, ev[i].data.ptr);
			now = clock_mono_ns();
			sweep = stopping(cl) || now >= sweep_at;
			if (!sweep && !cl->cfg->rate_bps)
				continue;
			for (unsigned i = 0; i < t->nsess; i++) {
				struct session *s = t->sess[i];

				/* A stop ends the sessions still connecting too: to a server
				 * that is gone, their connect would wait for TCP's retries. */
				if (stopping(cl) && s->state != SS_DONE && s->state != SS_IDLE) {
					step_and_maybe_finish(t, s);
					continue;
				}
				if (s->state != SS_RUNNING ||
				    !(sweep || (s->wake_ns && now >= s->wake_ns)))
					continue;
				s->wake_ns = 0;
				step_and_maybe_finish(t, s);
			}
			if (now >= sweep_at)
				sweep_at = sweep_at == cl->deadline_ns
						   ? cl->deadline_ns +
							     (uint64_t)CL_GRACE_MS * NSEC_PER_MSEC
						   : now + CL_POLL_MAX_MS * (uint64_t)NSEC_PER_MSEC;
		}
		if (cl->cfg->iterations > 1)
			pthread_barrier_wait(&cl->round);
	}
	t->cpu_ns = clock_thread_cpu_ns();
	__atomic_add_fetch(&cl->threads_done, 1, __ATOMIC_RELEASE);
	if (write(cl->done_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		log_warn("eventfd");
	return NULL;
}

/* The TCP congestion control the sessions get: --congestion's, checked, or the system's.
 * Says what is wrong itself. */
static bool probe_congestion(const struct client_cfg *c, char *name, size_t size)
{
	socklen_t len = (socklen_t)size - 1;
	int fd = socket(c->addr.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = false;

	memset(name, 0, size);
	if (fd < 0) {
		log_warn("socket");
		return false;
	}
	if (c->congestion[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, c->congestion, strlen(c->congestion)) < 0) {
		if (errno == EPERM)
			/* Loaded but restricted: choosing it takes CAP_NET_ADMIN, which the
			 * client keeps for it only when started with it (privs.h). */
			log_warnx(
				"--congestion %s: only processes with CAP_NET_ADMIN may choose it "
				"here (allowed to all: "
				"/proc/sys/net/ipv4/tcp_allowed_congestion_control)",
				c->congestion);
		else
			log_warnx("--congestion %s: %s (available: "
				  "/proc/sys/net/ipv4/tcp_available_congestion_control)",
				  c->congestion,
				  errno == ENOENT ? "not available here" : strerror(errno));
	} else if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) < 0) {
		log_warn("TCP_CONGESTION");
	} else {
		ok = true;
	}
	close(fd);
	return ok;
}

/* Only ping probes: nothing for the server to do or count. */
static bool ping_only(const struct client_cfg *c)
{
	return c->icmp && !c->sessions && !c->rr;
}

static int setup(struct client *cl, const struct client_cfg *c)
{
	int cpus[TRAFFIC_MAX_THREADS], ncpus;
	unsigned nsess = c->sessions;

	cl->cfg = c;
	cl->rr_fd = -1;
	pthread_mutex_init(&cl->rr_lock, NULL);
	if (getrandom(&cl->test_id, sizeof(cl->test_id), 0) != sizeof(cl->test_id))
		cl->test_id = clock_real_ns() ^ ((uint64_t)getpid() << 32);
	cl->peer_len = netaddr_sockaddr(c->addr.family, c->addr.bytes, c->port, &cl->peer);
	/* One thread per CPU; pinned only when asked: client and server often share a machine. */
	ncpus = thread_cpu_list(c->has_cpus ? &c->cpus : NULL, cpus, TRAFFIC_MAX_THREADS);
	cl->nthreads = c->threads ? c->threads : ncpus ? (unsigned)ncpus : 1;
	if (cl->nthreads > nsess && nsess)
		cl->nthreads = nsess;
	if (!cl->nthreads)
		cl->nthreads = 1;
	cl->sess = calloc(nsess ? nsess : 1, sizeof(*cl->sess));
	cl->results = calloc(nsess ? nsess : 1, sizeof(*cl->results));
	cl->have_result = calloc(nsess ? nsess : 1, sizeof(*cl->have_result));
	cl->udp_results = calloc(nsess ? nsess : 1, sizeof(*cl->udp_results));
	cl->have_udp_result = calloc(nsess ? nsess : 1, sizeof(*cl->have_udp_result));
	if (!cl->sess || !cl->results || !cl->have_result || !cl->udp_results ||
	    !cl->have_udp_result)
		return -ENOMEM;
	if (c->npairs) {
		cl->pairs = calloc(c->npairs, sizeof(*cl->pairs));
		if (!cl->pairs)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < c->npairs; i++) {
		const struct traffic_pair *p = &c->pairs[i];
		struct cl_pair *q = &cl->pairs[i];

		q->local_len = netaddr_sockaddr(p->local.family, p->local.bytes, 0, &q->local);
		q->remote_len =
			netaddr_sockaddr(p->remote.family, p->remote.bytes, c->port, &q->remote);
	}
	for (unsigned i = 0; i < nsess; i++) {
		struct session *s = &cl->sess[i];

		s->id = i;
		s->fd = -1;
		s->pair = c->npairs ? &cl->pairs[i % c->npairs] : NULL;
		s->first_bad = UINT64_MAX;
		stream_init(&s->tx, pattern_seed(cl->test_id, i, 0));
		stream_init(&s->rx, pattern_seed(cl->test_id, i, 1));
	}
	for (unsigned i = 0; i < cl->nthreads; i++) {
		struct cl_thread *t = &cl->t[i];

		size_t scratch = c->udp ? (size_t)CL_UDP_BATCH * c->udp_size : c->buffer;

		t->owner = cl;
		t->id = i;
		t->cpu = c->has_cpus ? thread_cpu_pick(cpus, ncpus, i) : -1;
		t->epfd = epoll_create1(EPOLL_CLOEXEC);
		t->scratch = malloc(scratch);
		t->sess = calloc(nsess / cl->nthreads + 1, sizeof(*t->sess));
		if (t->epfd < 0 || !t->scratch || !t->sess)
			return -ENOMEM;
		pattern_fill(1, 0, t->scratch, scratch);
	}
	for (unsigned i = 0; i < nsess; i++) {
		struct cl_thread *t = &cl->t[i % cl->nthreads];

		t->sess[t->nsess++] = &cl->sess[i];
	}
	cl->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cl->done_fd < 0)
		return -errno;
	if (c->iterations > 1)
		pthread_barrier_init(&cl->round, NULL, cl->nthreads);
	hist_init(&cl->rr_hist);
	return 0;
}

static void teardown(struct client *cl)
{
	for (unsigned i = 0; i < cl->nthreads; i++) {
		if (cl->t[i].epfd >= 0)
			close(cl->t[i].epfd);
		free(cl->t[i].scratch);
		free(cl->t[i].sess);
		free(cl->t[i].udp_lat);
	}
	for (unsigned i = 0; i < cl->cfg->sessions; i++) {
		if (cl->sess[i].fd >= 0)
			close(cl->sess[i].fd);
	}
	if (cl->cfg->iterations > 1)
		pthread_barrier_destroy(&cl->round);
	close(cl->done_fd);
	free(cl->sess);
	free(cl->results);
	free(cl->have_result);
	free(cl->udp_results);
	free(cl->have_udp_result);
	free(cl->pairs);
	ping_close(cl);
	pthread_mutex_destroy(&cl->rr_lock);
	free(cl);
}

static int start_threads(struct client *cl)
{
	void *(*fn)(void *) = cl->cfg->udp ? udp_thread_main : thread_main;

	for (unsigned i = 0; i < cl->nthreads && cl->cfg->sessions; i++) {
		struct cl_thread *t = &cl->t[i];
		int rc = thread_start(&t->thread, t->cpu, fn, t);

		if (rc)
			return rc;
		t->started = true;
	}
	return 0;
}

/* CPU of the client's own threads: each worker's as it ended, the probes', and ours. */
static uint64_t threads_cpu_ns(const struct client *cl)
{
	uint64_t sum = clock_thread_cpu_ns() + cl->rr_cpu_ns + ping_cpu_ns(cl);

	for (unsigned i = 0; i < cl->nthreads; i++)
		sum += cl->t[i].cpu_ns;
	return sum;
}

/* The main thread: interval reports, the warm-up mark, signals, until every thread is done. */
static void supervise(struct client *cl, int sig_fd)
{
	unsigned n = cl->cfg->sessions, index = 0;
	uint64_t *prev = calloc(n + 1, sizeof(*prev)), *cur = calloc(n + 1, sizeof(*cur));
	uint32_t *prev_r = calloc(n + 1, sizeof(*prev_r)), *cur_r = calloc(n + 1, sizeof(*cur_r));
	uint64_t step = cl->cfg->interval_ms * NSEC_PER_MSEC, next_report, last = cl->measure_ns;
	bool marked = cl->cfg->warmup_ms == 0;
	int running = cl->cfg->sessions ? (int)cl->nthreads : 0;

	next_report = step ? cl->measure_ns + step : UINT64_MAX;
	while (__atomic_load_n(&cl->threads_done, __ATOMIC_ACQUIRE) < running) {
		uint64_t now = clock_mono_ns(), wake = next_report;
		struct pollfd pfd[2] = { { .fd = cl->done_fd, .events = POLLIN },
					 { .fd = sig_fd, .events = POLLIN } };
		int timeout;

		if (!marked && cl->measure_ns < wake)
			wake = cl->measure_ns;
		timeout = wake == UINT64_MAX ? 1000
			  : wake > now	     ? (int)((wake - now) / NSEC_PER_MSEC) + 1
					     : 0;
		if (poll(pfd, 2, timeout) > 0) {
			if (pfd[1].revents & POLLIN) {
				struct signalfd_siginfo si;

				if (read(sig_fd, &si, sizeof(si)) > 0)
					log_warnx("signal %u: finishing the test now",
						  si.ssi_signo);
				interrupt(cl);
			}
			if (pfd[0].revents & POLLIN) {
				uint64_t v;

				if (read(cl->done_fd, &v, sizeof(v)) < 0)
					continue;
			}
		}
		now = clock_mono_ns();
		if (!marked && now >= cl->measure_ns) {
			for (unsigned i = 0; i < n; i++) {
				struct session *s = &cl->sess[i];

				s->tx_mark = relaxed(&s->tx_total) + relaxed(&s->tx.bytes);
				s->rx_mark = relaxed(&s->rx_total) + relaxed(&s->rx.bytes);
			}
			marked = true;
		}
		if (now >= next_report) {
			report_interval(cl, index++, last, now, prev, cur, prev_r, cur_r);
			memcpy(prev, cur, (n + 1) * sizeof(*prev));
			memcpy(prev_r, cur_r, (n + 1) * sizeof(*prev_r));
			last = now;
			next_report += step;
		}
	}
	free(prev);
	free(cur);
	free(prev_r);
	free(cur_r);
}

int client_run(const struct client_cfg *c)
{
	struct client *cl = calloc(1, sizeof(*cl));
	uint64_t cpu0 = 0, until;
	int sig_fd, rc, status;

	rc = cl ? setup(cl, c) : -ENOMEM;
	if (rc) {
		log_warnx("cannot set up: %s", strerror(-rc));
		if (cl)
			teardown(cl);
		return 1;
	}
	if (!c->udp && !probe_congestion(c, cl->congestion, sizeof(cl->congestion))) {
		teardown(cl);
		return 1;
	}
	/* A host that refuses ping sockets is found out before the test; ping_open says why. */
	if (c->icmp && ping_open(cl)) {
		teardown(cl);
		return 1;
	}
	sig_fd = sigfd_open(SIGFD_PIPE | SIGFD_NONBLOCK);

	/* The server's CPU before the test; a server we cannot ask is found out right here.
	 * Ping probes alone need no server: the host's kernel answers them. */
	rc = ping_only(c) ? 0 : ctlc_cpu(cl, &cl->server_cpu_start, 0);
	if (rc) {
		log_warnx("%s port %u: %s", c->host, c->port, strerror(-rc));
		close(sig_fd);
		teardown(cl);
		return 1;
	}
	cl->have_server_cpu = !ping_only(c);
	cl->t0_ns = clock_mono_ns();
	cl->measure_ns = cl->t0_ns + c->warmup_ms * NSEC_PER_MSEC;
	/* By bytes there is no deadline, unless churn repeats connections for --time. */
	cl->deadline_ns =
		c->bytes && !c->churn ? UINT64_MAX : cl->measure_ns + c->time_ms * NSEC_PER_MSEC;
	for (unsigned i = 0; i < c->sessions; i++)
		arm_window(cl, &cl->sess[i]);
	cpu0 = threads_cpu_ns(cl);
	if (c->rr && rr_start(cl))
		log_warnx("cannot start the latency probes");
	if (c->icmp && ping_start(cl))
		log_warnx("cannot start the ping probes");
	rc = start_threads(cl);
	if (rc)
		log_warnx("cannot start threads: %s", strerror(-rc));
	supervise(cl, sig_fd);
	for (unsigned i = 0; i < cl->nthreads; i++) {
		if (cl->t[i].started)
			pthread_join(cl->t[i].thread, NULL);
	}
	cl->end_ns = clock_mono_ns();
	if (c->sessions)
		ping_load_over(cl);
	/* Probes alone run for the test's time, ping probes for their count (beside a load,
	 * until their last replies are in, CL_ICMP_WAIT_MS at most): the main thread waits them
	 * out, and a signal ends them. */
	while (!stopping(cl) &&
	       ((!c->sessions && c->rr && clock_mono_ns() < cl->deadline_ns) || !ping_done(cl))) {
		struct pollfd pfd = { .fd = sig_fd, .events = POLLIN };

		if (poll(&pfd, 1, CL_TICK_MS) > 0)
			interrupt(cl);
	}
	if (!c->sessions && (c->rr || c->icmp))
		cl->end_ns = clock_mono_ns();
	__atomic_store_n(&cl->stop, 1, __ATOMIC_RELAXED);
	rr_join(cl);
	ping_join(cl);
	cl->client_cpu_ns = threads_cpu_ns(cl) - cpu0;
	/* After a stop signal the server's side gets what is left of CL_STOP_WAIT_MS: a server
	 * whose path is gone would otherwise hold the stop for the connect and receive
	 * timeouts of every request. */
	until = cl->interrupted ? cl->stop_ns + (uint64_t)CL_STOP_WAIT_MS * NSEC_PER_MSEC : 0;
	rc = ping_only(c) ? -ENOTCONN : ctlc_cpu(cl, &cl->server_cpu_end, until);
	if (rc)
		cl->have_server_cpu = false;
	if (rc != -ETIME && c->sessions && !c->udp)
		rc = ctlc_results(cl, until);
	if (rc != -ETIME && c->sessions && c->udp)
		rc = ctlc_udp_results(cl, until);
	if (rc == -ETIME)
		log_warnx("%s port %u: no answer within %d s of the stop: the server's side of the "
			  "test is missing",
			  c->host, c->port, CL_STOP_WAIT_MS / 1000);
	status = report_final(cl);
	close(sig_fd);
	teardown(cl);
	return status;
}
