/*
 * UDP sessions of the client: each a connected socket (its own source port) sending datagrams
 * of --size bytes, numbered from 0, on a packet schedule (udpsched.h) at --rate or --pps, in
 * sendmmsg batches; the server counts loss, reordering, duplicates and RFC 3550 jitter (see
 * seqstat.h). With --sample, every N-th datagram asks for a reply, and its round trip (less
 * the time the server held it) is a latency sample.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "clock.h"
#include "fd.h"
#include "inet.h"
#include "jout.h"
#include "log.h"
#include "udpsched.h"

/* A session as its thread drives it: the schedule, and the samples in flight. */
struct flow {
	struct session *s;
	struct udpsched sched;
	uint64_t burst; /* datagrams one wake-up sends when on time */
	uint64_t sample_seq[CL_UDP_SAMPLES_KEPT];
	uint64_t sample_ns[CL_UDP_SAMPLES_KEPT];
};

double udp_session_pps(const struct client_cfg *c)
{
	if (c->pps)
		return (double)c->pps / (c->sessions ? c->sessions : 1);
	return (double)c->rate_bps / (8.0 * c->udp_size);
}

/* A session's rate as its schedule takes it: --pps shared out, or --rate in datagrams of
 * --size; the session's turn is its number. */
static struct udpsched_rate session_rate(const struct client_cfg *c, const struct session *s)
{
	struct udpsched_rate r = {
		.num = c->pps, .den = c->sessions, .turn = s->id, .turns = c->sessions
	};

	if (!c->pps) {
		r.num = c->rate_bps;
		r.den = 8ull * c->udp_size;
	}
	return r;
}

static int open_udp(struct client *cl, struct session *s)
{
	int fd = socket(cl->peer.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	uint8_t ds = (uint8_t)(cl->cfg->dscp << IP_DSCP_SHIFT | cl->cfg->ecn_codepoint);

	if (fd < 0)
		return -errno;
	if (ds && conn_set_ds(fd, cl->peer.ss_family, ds))
		return fd_close_err(fd);
	if (connect(fd, (struct sockaddr *)&cl->peer, cl->peer_len) < 0)
		return fd_close_err(fd);
	/* The replies' arrival from the kernel: the thread reads them when it gets to it. */
	if (cl->cfg->sample && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		return fd_close_err(fd);
	s->fd = fd;
	return 0;
}

static bool sampled(const struct client_cfg *c, uint64_t seq)
{
	return c->sample && seq % c->sample == 0;
}

static unsigned sample_slot(const struct client_cfg *c, uint64_t seq)
{
	return (unsigned)(seq / c->sample % CL_UDP_SAMPLES_KEPT);
}

/*
 * Sends what the schedule has due by now, in batches. A datagram that asks for a reply starts
 * its batch, so that the time taken just before the send is its own. Returns false when the
 * socket took less than a batch (the rest waits for the next wake-up).
 */
static bool send_due(struct client *cl, struct cl_thread *t, struct flow *f, uint64_t now)
{
	const struct client_cfg *c = cl->cfg;
	struct session *s = f->s;
	struct mmsghdr msgs[CL_UDP_BATCH];
	struct iovec iov[CL_UDP_BATCH];
	uint64_t due = udpsched_due(&f->sched, now);

	if (c->bytes) {
		uint64_t left = c->bytes > s->tx.bytes
					? (c->bytes - s->tx.bytes + c->udp_size - 1) / c->udp_size
					: 0;

		due = due < left ? due : left;
	}
	while (due) {
		uint64_t stamp = clock_mono_ns();
		unsigned n = 0;
		int sent;

		while (n < CL_UDP_BATCH && n < due && !(n && sampled(c, s->udp_seq + n))) {
			uint8_t *b = t->scratch + (size_t)n * c->udp_size;
			struct proto_udp u = { .test_id = cl->test_id,
					       .session = s->id,
					       .seq = s->udp_seq + n,
					       .send_ns = stamp,
					       .echo = sampled(c, s->udp_seq + n) };

			proto_udp_build(b, c->udp_size, &u);
			iov[n] = (struct iovec){ .iov_base = b, .iov_len = c->udp_size };
			msgs[n] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[n],
								 .msg_iovlen = 1 } };
			n++;
		}
		sent = sendmmsg(s->fd, msgs, n, 0);
		if (sent < 0) {
			/* A refused port (ICMP from a vanished server) or a full socket buffer. */
			if (errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED &&
			    !s->error)
				s->error = errno;
			sent = 0;
		}
		if (sent && sampled(c, s->udp_seq)) {
			unsigned k = sample_slot(c, s->udp_seq);

			f->sample_seq[k] = s->udp_seq;
			f->sample_ns[k] = stamp;
			relaxed_set(&s->udp_sampled, s->udp_sampled + 1);
		}
		/* Only datagrams the kernel took get numbers, so that the receiver's loss is the
		 * path's; what this host could not send is counted apart, its slots passed. */
		udpsched_pass(&f->sched, n);
		s->udp_seq += (uint64_t)sent;
		relaxed_set(&s->udp_unsent, s->udp_unsent + n - (unsigned)sent);
		relaxed_set(&s->tx.bytes, s->tx.bytes + (uint64_t)sent * c->udp_size);
		if ((unsigned)sent < n)
			return false;
		due -= n;
	}
	return true;
}

/* The kernel's arrival time of a reply (CLOCK_REALTIME), or 0. */
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

/*
 * CLOCK_REALTIME less CLOCK_MONOTONIC, now: the realtime reading halfway between two, around
 * the monotonic one, of the closest of three tries. A thread preempted between two readings
 * (for milliseconds on a busy machine) would otherwise make every sample of that read early
 * by as much, some of them below nothing.
 */
static uint64_t real_less_mono(void)
{
	uint64_t best = 0, gap = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t r1 = clock_real_ns(), m = clock_mono_ns(), r2 = clock_real_ns();

		if (r2 - r1 < gap) {
			gap = r2 - r1;
			best = r1 + gap / 2 - m;
		}
	}
	return best;
}

/* Takes the replies waiting on a session's socket into the thread's histogram. */
static void read_replies(struct client *cl, struct cl_thread *t, struct flow *f)
{
	const struct client_cfg *c = cl->cfg;
	struct session *s = f->s;
	struct mmsghdr msgs[CL_UDP_REPLY_BATCH];
	struct iovec iov[CL_UDP_REPLY_BATCH];
	uint8_t buf[CL_UDP_REPLY_BATCH][PROTO_UDP_REPLY_LEN];
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(struct timespec))];
	} ctl[CL_UDP_REPLY_BATCH];
	int n;

	do {
		uint64_t mono, offset;

		for (int i = 0; i < CL_UDP_REPLY_BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
			msgs[i] = (struct mmsghdr){ .msg_hdr = {
							    .msg_iov = &iov[i],
							    .msg_iovlen = 1,
							    .msg_control = ctl[i].b,
							    .msg_controllen = sizeof(ctl[i].b),
						    } };
		}
		n = recvmmsg(s->fd, msgs, CL_UDP_REPLY_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		/* The kernel stamps in CLOCK_REALTIME, the samples went out on CLOCK_MONOTONIC:
		 * their offset, taken now, is good to well under a microsecond. */
		offset = real_less_mono();
		mono = clock_mono_ns();
		for (int i = 0; i < n; i++) {
			struct proto_udp_reply r;
			uint64_t at = arrival_ns(&msgs[i].msg_hdr), rtt;
			unsigned k;

			/* What the connected socket lets in comes from the server's port; anything
			 * else there is not a reply to this session, and is ignored. */
			if (proto_udp_reply_parse(buf[i], msgs[i].msg_len, &r) < 0 ||
			    r.test_id != cl->test_id || r.session != s->id || !sampled(c, r.seq))
				continue;
			k = sample_slot(c, r.seq);
			if (f->sample_seq[k] != r.seq)
				continue;
			at = at > offset ? at - offset : mono;
			rtt = at > f->sample_ns[k] ? at - f->sample_ns[k] : 0;
			rtt = rtt > r.dwell_ns ? rtt - r.dwell_ns : 0;
			f->sample_seq[k] = UINT64_MAX;
			if (t->udp_lat)
				hist_add(t->udp_lat, rtt);
			relaxed_set(&s->udp_replies, s->udp_replies + 1);
		}
	} while (n == CL_UDP_REPLY_BATCH);
}

static bool session_over(const struct client *cl, const struct session *s, uint64_t now)
{
	const struct client_cfg *c = cl->cfg;

	if (__atomic_load_n(&cl->stop, __ATOMIC_RELAXED))
		return true;
	if (c->bytes)
		return s->tx.bytes >= c->bytes;
	return now >= cl->deadline_ns;
}

static void finish(struct client *cl, struct flow *f, uint64_t now)
{
	struct session *s = f->s;
	uint64_t end = now < cl->deadline_ns ? now : cl->deadline_ns;

	s->state = SS_DONE;
	s->end_ns = end;
	s->udp_scheduled = udpsched_total(&f->sched, end);
	if (cl->cfg->bytes && s->udp_scheduled > f->sched.passed)
		s->udp_scheduled = f->sched.passed;
	close(s->fd);
	s->fd = -1;
	relaxed_set(&s->connections, 1);
}

static void thread_done(struct client *cl, struct cl_thread *t)
{
	t->cpu_ns = clock_thread_cpu_ns();
	__atomic_add_fetch(&cl->threads_done, 1, __ATOMIC_RELEASE);
	if (write(cl->done_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		log_warn("eventfd");
}

void *udp_thread_main(void *arg)
{
	struct cl_thread *t = arg;
	struct client *cl = t->owner;
	const struct client_cfg *c = cl->cfg;
	double pps = udp_session_pps(c);
	struct flow *flows = calloc(t->nsess, sizeof(*flows));
	uint64_t last_read = 0, t0;
	unsigned live = 0;

	if (!flows) {
		for (unsigned i = 0; i < t->nsess; i++) {
			t->sess[i]->error = ENOMEM;
			t->sess[i]->state = SS_DONE;
		}
		thread_done(cl, t);
		return NULL;
	}
	/* Wake-ups on time: the default slack of 50 us is half a burst at a high rate. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (c->sample) {
		t->udp_lat = malloc(sizeof(*t->udp_lat));
		if (t->udp_lat)
			hist_init(t->udp_lat);
	}
	for (unsigned i = 0; i < t->nsess; i++) {
		struct flow *f = &flows[i];
		struct session *s = t->sess[i];
		int rc = open_udp(cl, s);
		double burst = pps * CL_UDP_BURST_US / 1e6;

		f->s = s;
		memset(f->sample_seq, 0xff, sizeof(f->sample_seq));
		if (rc) {
			s->error = -rc;
			s->state = SS_DONE;
			continue;
		}
		f->burst = burst < 1 ? 1 : burst > CL_UDP_BATCH ? CL_UDP_BATCH : (uint64_t)burst;
		s->state = SS_RUNNING;
		live++;
	}
	/* One start for the thread's sessions once their sockets are open, so that their turns
	 * keep their spacing; the test's deadline ends every schedule. */
	t0 = clock_mono_ns();
	for (unsigned i = 0; i < t->nsess; i++) {
		struct session *s = t->sess[i];

		if (s->state != SS_RUNNING)
			continue;
		s->start_ns = t0;
		udpsched_init(&flows[i].sched, session_rate(c, s), t0, cl->deadline_ns);
	}
	while (live) {
		uint64_t now = clock_mono_ns(), wake = UINT64_MAX;
		uint64_t upto = now < cl->deadline_ns ? now : cl->deadline_ns;

		for (unsigned i = 0; i < t->nsess; i++) {
			struct flow *f = &flows[i];
			struct session *s = f->s;
			uint64_t w;

			if (s->state != SS_RUNNING)
				continue;
			if (!__atomic_load_n(&cl->stop, __ATOMIC_RELAXED)) {
				uint64_t late = udpsched_skip_late(&f->sched, upto,
								   CL_UDP_BACKLOG_US *
									   (uint64_t)NSEC_PER_USEC);

				if (late)
					relaxed_set(&s->udp_late, s->udp_late + late);
				send_due(cl, t, f, upto);
			}
			if (session_over(cl, s, now)) {
				if (c->sample)
					read_replies(cl, t, f);
				finish(cl, f, now);
				live--;
				continue;
			}
			w = udpsched_at(&f->sched, f->burst);
			if (w < wake)
				wake = w;
		}
		if (c->sample &&
		    now - last_read >= CL_UDP_REPLY_POLL_MS * (uint64_t)NSEC_PER_MSEC) {
			for (unsigned i = 0; i < t->nsess; i++) {
				if (flows[i].s->state == SS_RUNNING)
					read_replies(cl, t, &flows[i]);
			}
			last_read = now;
		}
		if (wake > cl->deadline_ns && !c->bytes)
			wake = cl->deadline_ns;
		/* One reading of the clock for the decision: two could straddle the wake time. */
		now = clock_mono_ns();
		if (live && wake > now)
			clock_sleep_ns(wake - now < CL_UDP_SLEEP_MAX_MS * (uint64_t)NSEC_PER_MSEC
					       ? wake - now
					       : CL_UDP_SLEEP_MAX_MS * (uint64_t)NSEC_PER_MSEC);
	}
	free(flows);
	thread_done(cl, t);
	return NULL;
}

static void latency_json(const struct client *cl, json_t *udp, uint64_t sampled, uint64_t replies)
{
	static const struct {
		const char *key;
		double q;
	} pct[] = { { "p50_ms", 50 }, { "p90_ms", 90 }, { "p99_ms", 99 }, { "p99_9_ms", 99.9 } };
	json_t *o = json_object();
	struct hist *h = malloc(sizeof(*h));

	jout_int(o, "every", cl->cfg->sample);
	jout_u64(o, "sampled", sampled);
	jout_u64(o, "samples", replies);
	if (h) {
		hist_init(h);
		for (unsigned i = 0; i < cl->nthreads; i++) {
			if (cl->t[i].udp_lat)
				hist_merge(h, cl->t[i].udp_lat);
		}
		if (h->count) {
			jout_real(o, "min_ms", h->min_ns / 1e6);
			for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
				jout_real(o, pct[i].key, hist_percentile(h, pct[i].q) / 1e6);
			jout_real(o, "max_ms", h->max_ns / 1e6);
			jout_real(o, "mean_ms", (double)h->sum_ns / (double)h->count / 1e6);
		}
		free(h);
	}
	jout_set(udp, "latency", o);
}

void udp_report(const struct client *cl, json_t *udp, uint64_t unsent)
{
	const struct client_cfg *c = cl->cfg;
	double pps = udp_session_pps(c), offered = 0, span_max = 0, ratio;
	uint64_t late = 0, scheduled = 0, sampled = 0, replies = 0;

	for (unsigned i = 0; i < c->sessions; i++) {
		const struct session *s = &cl->sess[i];
		double span = s->end_ns > s->start_ns ? clock_secs(s->end_ns - s->start_ns) : 0;

		late += s->udp_late;
		scheduled += s->udp_scheduled;
		sampled += s->udp_sampled;
		replies += s->udp_replies;
		if (span > 0)
			offered += (double)s->udp_seq / span;
		if (span > span_max)
			span_max = span;
	}
	ratio = pps > 0 && c->sessions ? offered / (pps * c->sessions) : 0;
	jout_real(udp, "pps", pps * c->sessions);
	jout_real(udp, "offered_pps", offered);
	jout_real(udp, "offered_ratio", ratio);
	/* By bytes, a session's last datagrams are as due as any: only the rate counts. A schedule
	 * whose every slot went out on time offered the rate asked, whatever the ratio says: a
	 * span holds whole slots, so at a few datagrams a second its rate is off by more than the
	 * tolerance (5 slots of 0.2 s over a span of 0.99 s: 1.01). */
	jout_bool(udp, "offered_ok",
		  fabs(ratio - 1) <= 1.0 / CL_UDP_RATE_TOLERANCE ||
			  (!late && !unsent && scheduled));
	jout_real(udp, "send_s", span_max);
	jout_u64(udp, "scheduled", scheduled);
	jout_u64(udp, "late", late);
	if (c->sample)
		latency_json(cl, udp, sampled, replies);
}
