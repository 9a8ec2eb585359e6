/*
 * Request/response latency probes: one TCP connection (TCP_NODELAY) on its own thread; each
 * probe of --rr-size bytes goes to the server and back, and its round trip goes into a
 * histogram once the warm-up is over. At --rr-rate probes a second, or back to back.
 */
#include <errno.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "byteorder.h"
#include "client_int.h"
#include "clock.h"

static void *rr_main(void *arg)
{
	struct client *cl = arg;
	const struct client_cfg *c = cl->cfg;
	struct proto_hello h = { .kind = PROTO_KIND_RR,
				 .test_id = cl->test_id,
				 .rr_size = c->rr_size };
	uint8_t hello[PROTO_HELLO_LEN], *buf = calloc(1, c->rr_size);
	uint64_t gap = c->rr_rate ? NSEC_PER_SEC / c->rr_rate : 0, next = clock_mono_ns();
	int fd, one = 1, rc;

	fd = conn_socket_blocking(cl->peer.ss_family, SOCK_STREAM);
	if (fd < 0 || !buf) {
		cl->rr_error = fd < 0 ? -fd : ENOMEM;
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	/* Published before the connect, so that a stop can cut any blocking call short. */
	pthread_mutex_lock(&cl->rr_lock);
	cl->rr_fd = fd;
	rc = __atomic_load_n(&cl->stop, __ATOMIC_RELAXED) ? -ECANCELED : 0;
	pthread_mutex_unlock(&cl->rr_lock);
	if (!rc)
		rc = conn_connect_until(fd, &cl->peer, cl->peer_len, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	proto_hello_build(hello, sizeof(hello), &h);
	if (!rc)
		rc = io_full(fd, hello, sizeof(hello), true, 0);
	for (uint64_t seq = 0; !rc && !__atomic_load_n(&cl->stop, __ATOMIC_RELAXED); seq++) {
		uint64_t sent, now;

		if (gap) {
			now = clock_mono_ns();
			if (next > now)
				clock_sleep_ns(next - now);
			next += gap;
		}
		sent = clock_mono_ns();
		store_be64(buf, seq);
		store_be64(buf + 8, sent);
		rc = io_full(fd, buf, c->rr_size, true, 0);
		if (!rc)
			rc = io_full(fd, buf, c->rr_size, false, 0);
		now = clock_mono_ns();
		/* An echo of another probe would mean a broken server: not a latency. */
		if (!rc && load_be64(buf) != seq)
			rc = -EPROTO;
		if (!rc && sent >= cl->measure_ns)
			hist_add(&cl->rr_hist, now - sent);
		cl->rr_sent = seq + 1;
	}
	if (rc && !__atomic_load_n(&cl->stop, __ATOMIC_RELAXED))
		cl->rr_error = -rc;
	pthread_mutex_lock(&cl->rr_lock);
	cl->rr_fd = -1;
	pthread_mutex_unlock(&cl->rr_lock);
	close(fd);
	free(buf);
	cl->rr_cpu_ns = clock_thread_cpu_ns();
	return NULL;
}

int rr_start(struct client *cl)
{
	int rc = pthread_create(&cl->rr_thread, NULL, rr_main, cl);

	if (rc)
		return -rc;
	cl->rr_started = true;
	return 0;
}

void rr_wake(struct client *cl)
{
	/* A probe in flight to a server that no longer answers would hold the stop for the
	 * socket's 5 s timeouts: the shutdown ends its connect, send or receive now. */
	pthread_mutex_lock(&cl->rr_lock);
	if (cl->rr_fd >= 0)
		shutdown(cl->rr_fd, SHUT_RDWR);
	pthread_mutex_unlock(&cl->rr_lock);
}

void rr_join(struct client *cl)
{
	if (cl->rr_started)
		pthread_join(cl->rr_thread, NULL);
	cl->rr_started = false;
}
