/*
 * tunbed-traffic server (see server.h; protocol in proto.h, docs/traffic.md).
 */
#include "server.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "inet.h"
#include "traffic_limits.h"
#include "log.h"
#include "netaddr.h"
#include "pattern.h"
#include "traffic_privs.h"
#include "proto.h"
#include "sigfd.h"
#include "srvconn.h"
#include "thread.h"
#include "udptab.h"

/* SRV_HELLO_TIMEOUT_MS as the logs say it. */
#define HELLO_TIMEOUT_TEXT "10 s"
_Static_assert(SRV_HELLO_TIMEOUT_MS == 10000, "HELLO_TIMEOUT_TEXT says 10 s");

struct server;

struct srv_thread {
	struct server *owner;
	unsigned id;
	int cpu;
	int epfd, lfd, ufd;
	pthread_t thread;
	uint8_t *scratch;
	struct srvconn_env env;
	struct srvconn *conns;
	pthread_mutex_t
		udp_lock; /* the owner takes it per batch; control answers read through it */
	struct udptab udp;
	uint8_t *udp_bufs; /* SRV_UDP_BATCH datagrams of SRV_UDP_MAX */
	/* Connections that owe a hello, a request or the taking of an answer, in the order of
	 * their time (SRV_HELLO_TIMEOUT_MS after they were filed: the oldest first). */
	struct srvconn *await_head, *await_tail;
	bool accept_paused;	   /* at the descriptor limit: the listener is out of epoll */
	uint64_t accept_resume_ns; /* until then, or until a connection of ours closes */
	uint64_t timed_out;	   /* closed when their time ran out */
	uint64_t cut;		   /* the client's end came inside a hello or request */
};

struct server {
	const struct server_cfg *cfg;
	unsigned nthreads;
	struct srv_thread t[TRAFFIC_MAX_THREADS];
	int stop_fd;
	int stop;
};

static int open_sockets(struct srv_thread *t, const struct server_cfg *c)
{
	struct sockaddr_storage ss;
	int one = 1, zero = 0, family = c->has_bind ? c->bind.family : AF_INET6;
	socklen_t len = netaddr_sockaddr(family, c->has_bind ? c->bind.bytes : NULL, c->port, &ss);
	t->lfd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	t->ufd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->lfd < 0 || t->ufd < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		int fd = i ? t->ufd : t->lfd;

		/* Every thread binds the same port: the kernel spreads connections and UDP
		 * flows over them, and one UDP flow always lands on one thread. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (family == AF_INET6 && !c->has_bind)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&ss, len) < 0)
			return -errno;
	}
	/* Accepted connections take the listener's DS field, SYN-ACK included. */
	if (c->dscp && (conn_set_ds(t->lfd, family, (uint8_t)(c->dscp << IP_DSCP_SHIFT)) ||
			conn_set_ds(t->ufd, family, (uint8_t)(c->dscp << IP_DSCP_SHIFT))))
		return -errno;
	setsockopt(t->ufd, SOL_SOCKET, SO_RCVBUF, &(int){ SRV_UDP_RCVBUF }, sizeof(int));
	/* Arrival times from the kernel: a reply says how long its datagram waited here. */
	setsockopt(t->ufd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (listen(t->lfd, SRV_BACKLOG) < 0)
		return -errno;
	return 0;
}

static void conn_link(struct srv_thread *t, struct srvconn *c)
{
	c->next = t->conns;
	if (t->conns)
		t->conns->prev = c;
	t->conns = c;
}

static void await_unlink(struct srv_thread *t, struct srvconn *c)
{
	if (!c->filed_ns)
		return;
	if (c->aprev)
		c->aprev->anext = c->anext;
	else
		t->await_head = c->anext;
	if (c->anext)
		c->anext->aprev = c->aprev;
	else
		t->await_tail = c->aprev;
	c->aprev = c->anext = NULL;
	c->filed_ns = 0;
}

/* Files the connection under its await_ns: every time is now plus the same bound, so the
 * newest goes last and the list stays in order. */
static void await_file(struct srv_thread *t, struct srvconn *c)
{
	if (c->await_ns == c->filed_ns)
		return;
	await_unlink(t, c);
	if (!c->await_ns)
		return;
	c->aprev = t->await_tail;
	if (t->await_tail)
		t->await_tail->anext = c;
	else
		t->await_head = c;
	t->await_tail = c;
	c->filed_ns = c->await_ns;
}

static void conn_close(struct srv_thread *t, struct srvconn *c)
{
	/* A descriptor is free again: try the listener at once. */
	t->accept_resume_ns = 0;
	await_unlink(t, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srvconn_free(c);
}

/* The first connection the server gives up on for each reason is named, once per server;
 * later ones are only counted (server_run logs the counts when it stops). */
static void say_once(int *said, struct srvconn *c, const char *why)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[NETADDR_STRLEN] = "?";
	unsigned port = 0;

	if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		return;
	if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;

		/* The listener takes IPv4 too: its clients come as ::ffff:a.b.c.d. */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		port = ntohs(s6->sin6_port);
	} else if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		port = ntohs(s4->sin_port);
	}
	log_warnx("closed the connection from %s port %u: %s (further ones are counted)", addr,
		  port, why);
}

/* Moves c on; returns whether it is still open (else it is closed and freed). */
static bool conn_step(struct srv_thread *t, struct srvconn *c)
{
	enum srvconn_end end = srvconn_step(c, &t->env, clock_mono_ns());

	if (end == SC_OPEN) {
		await_file(t, c);
		return true;
	}
	if (end == SC_CUT) {
		t->cut++;
		static int said;

		say_once(&said, c, "it ended inside a hello or request");
	}
	conn_close(t, c);
	return false;
}

/* Closes the connections whose hello, request or answer is overdue. */
static void expire(struct srv_thread *t, uint64_t now)
{
	static int said;

	while (t->await_head && srvconn_expired(t->await_head, now)) {
		struct srvconn *c = t->await_head;

		t->timed_out++;
		say_once(&said, c, "no complete hello or request within " HELLO_TIMEOUT_TEXT);
		conn_close(t, c);
	}
}

static uint64_t threads_cpu_ns(void *arg)
{
	const struct server *srv = arg;
	uint64_t sum = 0;

	for (unsigned i = 0; i < srv->nthreads; i++) {
		clockid_t cid;
		struct timespec ts;

		if (pthread_getcpuclockid(srv->t[i].thread, &cid) == 0 &&
		    clock_gettime(cid, &ts) == 0)
			sum += clock_ns_from_ts(&ts);
	}
	return sum;
}

/* A test's UDP results, from every thread; the test is over for them (udptab_take). */
static size_t answer_udp(void *arg, uint64_t test_id, uint8_t *out, size_t room, uint32_t *count)
{
	struct server *srv = arg;
	size_t used = 0;

	*count = 0;
	for (unsigned i = 0; i < srv->nthreads; i++) {
		struct srv_thread *t = &srv->t[i];

		pthread_mutex_lock(&t->udp_lock);
		used += udptab_take(&t->udp, test_id, out + used, room - used, count);
		pthread_mutex_unlock(&t->udp_lock);
	}
	return used;
}

/*
 * Out of descriptors (or memory), accept fails and leaves the connection in the queue: the
 * listener, level-triggered, would wake the thread again at once, for as long as it stays
 * so. Instead the thread stops polling it for SRV_ACCEPT_PAUSE_MS, or until one of its own
 * connections closes; the queued connections wait in the kernel meanwhile.
 */
static void pause_accept(struct srv_thread *t, int err)
{
	static int said;
	struct rlimit rl;

	epoll_ctl(t->epfd, EPOLL_CTL_DEL, t->lfd, NULL);
	t->accept_paused = true;
	t->accept_resume_ns = clock_mono_ns() + (uint64_t)SRV_ACCEPT_PAUSE_MS * NSEC_PER_MSEC;
	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 0;
	log_warnx("cannot accept on port %u: %s (at most %llu descriptors): new connections wait "
		  "until some close",
		  t->owner->cfg->port, strerror(err), (unsigned long long)rl.rlim_cur);
}

static void resume_accept(struct srv_thread *t, uint64_t now)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &t->lfd };

	if (!t->accept_paused || now < t->accept_resume_ns)
		return;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->lfd, &ev) == 0)
		t->accept_paused = false;
	else
		t->accept_resume_ns = now + (uint64_t)SRV_ACCEPT_PAUSE_MS * NSEC_PER_MSEC;
}

static void accept_all(struct srv_thread *t)
{
	for (;;) {
		int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP };
		struct srvconn *c;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				pause_accept(t, errno);
			return;
		}
		c = srvconn_new(fd, clock_mono_ns());
		if (!c) {
			close(fd);
			pause_accept(t, ENOMEM);
			return;
		}
		ev.data.ptr = c;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			srvconn_free(c);
			continue;
		}
		conn_link(t, c);
		await_file(t, c);
	}
}

/* The kernel's arrival time of a datagram (CLOCK_REALTIME), or 0 if it gave none. */
static uint64_t arrival_ns(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			return clock_ns_from_ts(&ts);
		}
	}
	return 0;
}

/* Answers the datagrams of a batch that asked for it; a reply that cannot go is lost, as
 * a datagram on the way would be: the client counts the replies it got. */
static void udp_reply(struct srv_thread *t, struct mmsghdr *msgs, const uint64_t *arrived,
		      const struct proto_udp *u, const unsigned *which, unsigned n)
{
	struct mmsghdr out[SRV_UDP_BATCH];
	struct iovec iov[SRV_UDP_BATCH];
	uint8_t rep[SRV_UDP_BATCH][PROTO_UDP_REPLY_LEN];
	uint64_t now = clock_real_ns();

	for (unsigned k = 0; k < n; k++) {
		unsigned i = which[k];
		struct proto_udp_reply r = { .test_id = u[k].test_id,
					     .session = u[k].session,
					     .seq = u[k].seq,
					     .dwell_ns = arrived[i] && now > arrived[i]
								 ? now - arrived[i]
								 : 0 };

		proto_udp_reply_build(rep[k], sizeof(rep[k]), &r);
		iov[k] = (struct iovec){ .iov_base = rep[k], .iov_len = PROTO_UDP_REPLY_LEN };
		out[k] = (struct mmsghdr){ .msg_hdr = { .msg_name = msgs[i].msg_hdr.msg_name,
							.msg_namelen = msgs[i].msg_hdr.msg_namelen,
							.msg_iov = &iov[k],
							.msg_iovlen = 1 } };
	}
	sendmmsg(t->ufd, out, n, MSG_DONTWAIT);
}

static void udp_receive(struct srv_thread *t)
{
	struct mmsghdr msgs[SRV_UDP_BATCH];
	struct iovec iov[SRV_UDP_BATCH];
	struct sockaddr_storage from[SRV_UDP_BATCH];
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(struct timespec))];
	} ctl[SRV_UDP_BATCH];
	struct proto_udp echo[SRV_UDP_BATCH];
	uint64_t arrived[SRV_UDP_BATCH];
	unsigned which[SRV_UDP_BATCH];
	uint8_t *bufs = t->udp_bufs;
	int n;

	do {
		unsigned replies = 0;

		for (int i = 0; i < SRV_UDP_BATCH; i++) {
			iov[i].iov_base = bufs + (size_t)i * SRV_UDP_MAX;
			iov[i].iov_len = SRV_UDP_MAX;
			msgs[i].msg_hdr = (struct msghdr){ .msg_name = &from[i],
							   .msg_namelen = sizeof(from[i]),
							   .msg_iov = &iov[i],
							   .msg_iovlen = 1,
							   .msg_control = ctl[i].b,
							   .msg_controllen = sizeof(ctl[i].b) };
		}
		n = recvmmsg(t->ufd, msgs, SRV_UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		uint64_t now = clock_mono_ns();

		pthread_mutex_lock(&t->udp_lock);
		for (int i = 0; i < n; i++) {
			struct proto_udp u;
			struct seqstat *st;

			if (proto_udp_parse(iov[i].iov_base, msgs[i].msg_len, &u) < 0)
				continue;
			st = udptab_get(&t->udp, u.test_id, u.session, now);
			if (st && u.is_short)
				seqstat_count(st, u.seq);
			else if (st)
				seqstat_add(st, u.seq, u.send_ns, now);
			if (u.echo) {
				arrived[i] = arrival_ns(&msgs[i].msg_hdr);
				echo[replies] = u;
				which[replies++] = (unsigned)i;
			}
		}
		pthread_mutex_unlock(&t->udp_lock);
		if (replies)
			udp_reply(t, msgs, arrived, echo, which, replies);
	} while (n == SRV_UDP_BATCH);
}

/*
 * Connections that send against a deadline or a pacer need the clock to move them on. Returns
 * the nanoseconds until the next of them is due: as soon as its pacer lets a quantum go (a
 * paced sender whose only events are its own clock, pull, sends at its rate only if woken
 * then, to the nanosecond: a fixed tick of SRV_TICK_MS held it to a bucket every 5 ms, and
 * whole milliseconds to about 0.7 of 1 Gbit/s), else SRV_TICK_MS for the deadlines, or
 * SRV_IDLE_MS when none sends.
 */
static uint64_t tick(struct srv_thread *t)
{
	uint64_t now = clock_mono_ns(), wake = UINT64_MAX;
	bool busy = false;

	for (struct srvconn *c = t->conns, *next; c; c = next) {
		next = c->next;
		if (!srvconn_clocked(c))
			continue;
		busy = true;
		if (srvconn_due(c, now) && !conn_step(t, c))
			continue;
		if (srvconn_clocked(c) && c->wake_ns && c->wake_ns < wake)
			wake = c->wake_ns;
	}
	if (!busy)
		return (uint64_t)SRV_IDLE_MS * NSEC_PER_MSEC;
	now = clock_mono_ns();
	if (wake <= now)
		return 0;
	if (wake - now >= (uint64_t)SRV_TICK_MS * NSEC_PER_MSEC)
		return (uint64_t)SRV_TICK_MS * NSEC_PER_MSEC;
	return wake - now;
}

static void *thread_main(void *arg)
{
	struct srv_thread *t = arg;
	struct server *srv = t->owner;
	struct epoll_event ev[SRV_EVENTS];
	uint64_t timeout = (uint64_t)SRV_IDLE_MS * NSEC_PER_MSEC;

	while (!__atomic_load_n(&srv->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { .tv_sec = (time_t)(timeout / NSEC_PER_SEC),
				       .tv_nsec = (long)(timeout % NSEC_PER_SEC) };
		int n = epoll_pwait2(t->epfd, ev, SRV_EVENTS, &ts, NULL);
		uint64_t now;

		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &t->lfd)
				accept_all(t);
			else if (p == &t->ufd)
				udp_receive(t);
			else if (p != &srv->stop_fd)
				conn_step(t, p);
		}
		timeout = tick(t);
		now = clock_mono_ns();
		expire(t, now);
		resume_accept(t, now);
		if (t->accept_paused && timeout > (uint64_t)SRV_ACCEPT_PAUSE_MS * NSEC_PER_MSEC)
			timeout = (uint64_t)SRV_ACCEPT_PAUSE_MS * NSEC_PER_MSEC;
	}
	while (t->conns)
		conn_close(t, t->conns);
	return NULL;
}

static int thread_init(struct server *srv, struct srv_thread *t, unsigned id, int cpu)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	t->owner = srv;
	t->id = id;
	t->cpu = cpu;
	t->lfd = t->ufd = -1;
	pthread_mutex_init(&t->udp_lock, NULL);
	t->scratch = malloc(SRV_SCRATCH);
	t->udp_bufs = malloc((size_t)SRV_UDP_BATCH * SRV_UDP_MAX);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!t->scratch || udptab_init(&t->udp) || !t->udp_bufs || t->epfd < 0)
		return -ENOMEM;
	pattern_fill(1, 0, t->scratch, SRV_SCRATCH);
	t->env = (struct srvconn_env){ .scratch = t->scratch,
				       .scratch_size = SRV_SCRATCH,
				       .corrupt_at = srv->cfg->corrupt_at,
				       .cpu_ns = threads_cpu_ns,
				       .threads = srv->nthreads,
				       .udp_results = answer_udp,
				       .arg = srv };
	rc = open_sockets(t, srv->cfg);
	if (rc)
		return rc;
	ev.data.ptr = &t->lfd;
	epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->lfd, &ev);
	ev.data.ptr = &t->ufd;
	epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->ufd, &ev);
	ev.data.ptr = &srv->stop_fd;
	epoll_ctl(t->epfd, EPOLL_CTL_ADD, srv->stop_fd, &ev);
	return 0;
}

static void thread_fini(struct srv_thread *t)
{
	if (t->lfd >= 0)
		close(t->lfd);
	if (t->ufd >= 0)
		close(t->ufd);
	if (t->epfd >= 0)
		close(t->epfd);
	free(t->scratch);
	udptab_fini(&t->udp);
	free(t->udp_bufs);
	pthread_mutex_destroy(&t->udp_lock);
}

int server_run(const struct server_cfg *c)
{
	int cpus[TRAFFIC_MAX_THREADS], ncpus, sfd, rc, status = 1;
	unsigned inited = 0, started = 0;
	uint64_t timed_out = 0, cut = 0, untracked = 0, late = 0;
	/* Passed to each thread (srv_thread.owner); the signals come by signalfd, so no handler
	 * needs to reach it. */
	struct server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		fatal("calloc");
	srv->cfg = c;
	/* One thread per CPU; pinned only when asked: client and server often share a machine. */
	ncpus = thread_cpu_list(c->has_cpus ? &c->cpus : NULL, cpus, TRAFFIC_MAX_THREADS);
	srv->nthreads = c->threads ? c->threads : ncpus ? (unsigned)ncpus : 1;
	if (srv->nthreads > TRAFFIC_MAX_THREADS)
		srv->nthreads = TRAFFIC_MAX_THREADS;
	sfd = sigfd_open(SIGFD_PIPE);
	srv->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sfd < 0 || srv->stop_fd < 0)
		fatal("signalfd/eventfd");
	for (inited = 0; inited < srv->nthreads; inited++) {
		rc = thread_init(srv, &srv->t[inited], inited,
				 c->has_cpus ? thread_cpu_pick(cpus, ncpus, inited) : -1);
		if (rc) {
			log_warnx("cannot listen on port %u: %s", c->port, strerror(-rc));
			inited++;
			goto out;
		}
	}
	/* Every socket that may need privilege (a port below 1024) is bound: none is needed
	 * from here on, and the threads inherit the empty set. */
	if (traffic_privs_drop(0))
		goto out;
	for (started = 0; started < srv->nthreads; started++) {
		struct srv_thread *t = &srv->t[started];

		rc = thread_start(&t->thread, t->cpu, thread_main, t);
		if (rc) {
			log_warnx("cannot start thread %u: %s", started, strerror(-rc));
			goto out;
		}
	}
	log_info("serving TCP and UDP on port %u with %u threads", c->port, srv->nthreads);
	for (;;) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) == sizeof(si))
			break;
		if (errno != EINTR)
			break;
	}
	status = 0;
out:
	__atomic_store_n(&srv->stop, 1, __ATOMIC_RELEASE);
	if (write(srv->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		log_warn("cannot wake the threads");
	for (unsigned i = 0; i < started; i++) {
		pthread_join(srv->t[i].thread, NULL);
		timed_out += srv->t[i].timed_out;
		cut += srv->t[i].cut;
		untracked += srv->t[i].udp.untracked;
		late += srv->t[i].udp.late;
	}
	/* Uncounted datagrams look lost to the client: say so. */
	if (untracked)
		log_warnx("%llu UDP datagrams went uncounted: their sessions found no slot (%d a "
			  "thread)",
			  (unsigned long long)untracked, SRV_UDP_SLOTS);
	if (late)
		log_info("%llu UDP datagrams came after their test's results were taken",
			 (unsigned long long)late);
	if (timed_out || cut)
		log_warnx("closed %llu connections that did not complete a hello or request within "
			  "%s, and %llu that ended inside one",
			  (unsigned long long)timed_out, HELLO_TIMEOUT_TEXT,
			  (unsigned long long)cut);
	for (unsigned i = 0; i < inited; i++)
		thread_fini(&srv->t[i]);
	close(srv->stop_fd);
	close(sfd);
	free(srv);
	return status;
}
