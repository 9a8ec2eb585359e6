/*
 * UDP sessions of the client: each a connected socket sending datagrams of --size bytes at
 * --rate, numbered from 0, with the send time in the header, so that the server can count
 * loss, reordering, duplicates and RFC 3550 jitter (see seqstat.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "clock.h"
#include "fd.h"
#include "log.h"

static int open_udp(struct client *cl, struct session *s)
{
	int fd = socket(cl->peer.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&cl->peer, cl->peer_len) < 0)
		return fd_close_err(fd);
	s->fd = fd;
	return 0;
}

/* Sends what the pacer allows now, in batches. Returns false once the session is over. */
static bool udp_step(struct client *cl, struct cl_thread *t, struct session *s, uint64_t now)
{
	const struct client_cfg *c = cl->cfg;
	struct mmsghdr msgs[CL_UDP_BATCH];
	struct iovec iov[CL_UDP_BATCH];
	unsigned n = 0;
	int sent;

	if (__atomic_load_n(&cl->stop, __ATOMIC_RELAXED) ||
	    (c->bytes ? s->tx.bytes >= c->bytes : now >= cl->deadline_ns))
		return false;
	while (n < CL_UDP_BATCH && pacer_allow(&s->pacer, now, c->udp_size) >= c->udp_size &&
	       !(c->bytes && s->tx.bytes + (uint64_t)n * c->udp_size >= c->bytes)) {
		uint8_t *b = t->scratch + (size_t)n * c->udp_size;
		struct proto_udp u = { .test_id = cl->test_id,
				       .session = s->id,
				       .seq = s->udp_seq + n,
				       .send_ns = now };

		proto_udp_build(b, c->udp_size, &u);
		iov[n] = (struct iovec){ .iov_base = b, .iov_len = c->udp_size };
		msgs[n] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[n], .msg_iovlen = 1 } };
		pacer_take(&s->pacer, c->udp_size);
		n++;
	}
	if (!n)
		return true;
	sent = sendmmsg(s->fd, msgs, n, 0);
	if (sent < 0) {
		/* A refused port (ICMP from a vanished server) or a full socket buffer. */
		if (errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED && !s->error)
			s->error = errno;
		sent = 0;
	}
	/* Only datagrams the kernel took get numbers, so that the receiver's loss is the
	 * path's; what this host could not send is counted apart. */
	s->udp_seq += (uint64_t)sent;
	relaxed_set(&s->udp_unsent, s->udp_unsent + n - (unsigned)sent);
	relaxed_set(&s->tx.bytes, s->tx.bytes + (uint64_t)sent * c->udp_size);
	return true;
}

void *udp_thread_main(void *arg)
{
	struct cl_thread *t = arg;
	struct client *cl = t->owner;
	unsigned live = 0;

	for (unsigned i = 0; i < t->nsess; i++) {
		struct session *s = t->sess[i];
		int rc = open_udp(cl, s);

		if (rc) {
			s->error = -rc;
			s->state = SS_DONE;
			continue;
		}
		pacer_init(&s->pacer, cl->cfg->rate_bps, (uint64_t)cl->cfg->udp_size * CL_UDP_BURST,
			   clock_mono_ns());
		s->start_ns = clock_mono_ns();
		s->state = SS_RUNNING;
		live++;
	}
	while (live) {
		uint64_t now = clock_mono_ns(), wake = UINT64_MAX;

		for (unsigned i = 0; i < t->nsess; i++) {
			struct session *s = t->sess[i];
			uint64_t w;

			if (s->state != SS_RUNNING)
				continue;
			if (!udp_step(cl, t, s, now)) {
				s->state = SS_DONE;
				s->end_ns = now;
				close(s->fd);
				s->fd = -1;
				relaxed_set(&s->connections, 1);
				live--;
				continue;
			}
			w = now + pacer_wait_ns(&s->pacer, now, cl->cfg->udp_size);
			if (w < wake)
				wake = w;
		}
		/* One reading of the clock for the decision: two could straddle the wake time. */
		now = clock_mono_ns();
		if (live && wake > now)
			clock_sleep_ns(wake - now < CL_UDP_SLEEP_MAX_MS * (uint64_t)NSEC_PER_MSEC
					       ? wake - now
					       : CL_UDP_SLEEP_MAX_MS * (uint64_t)NSEC_PER_MSEC);
	}
	t->cpu_ns = clock_thread_cpu_ns();
	__atomic_add_fetch(&cl->threads_done, 1, __ATOMIC_RELEASE);
	if (write(cl->done_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		log_warn("eventfd");
	return NULL;
}
