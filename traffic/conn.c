/*
 * Moving and verifying a session's bytes on non-blocking sockets, and the client's blocking
 * connections (see conn.h).
 */
#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"
#include "traffic_limits.h"
#include "pattern.h"

void stream_init(struct stream *s, uint64_t seed)
{
	s->seed = seed;
	s->bytes = 0;
	s->mismatches = 0;
	s->first_bad = UINT64_MAX;
	s->corrupt_at = UINT64_MAX;
	s->window_from = 0;
	s->window_to = UINT64_MAX;
	s->window_bytes = 0;
	s->last_rx_ns = 0;
	s->stall_max_ns = 0;
}

void stream_stall_note(struct stream *s, uint64_t now_ns)
{
	/* The gap's part inside the window. A clock that went backwards (it does not,
	 * CLOCK_MONOTONIC) would make a huge gap. */
	uint64_t from = s->last_rx_ns > s->window_from ? s->last_rx_ns : s->window_from;
	uint64_t to = now_ns < s->window_to ? now_ns : s->window_to;

	if (s->last_rx_ns && to > from && to - from > s->stall_max_ns)
		s->stall_max_ns = to - from;
	if (now_ns > s->last_rx_ns)
		s->last_rx_ns = now_ns;
}

long stream_send(int fd, struct stream *s, uint8_t *scratch, size_t size, uint64_t want,
		 bool verify)
{
	size_t n = want < size ? (size_t)want : size;
	ssize_t w;

	if (n == 0)
		return 0;
	if (verify || s->corrupt_at != UINT64_MAX)
		pattern_fill(s->seed, s->bytes, scratch, n);
	/* The hidden test hook: one wrong byte, for the receiver's verification to catch. */
	if (s->corrupt_at >= s->bytes && s->corrupt_at < s->bytes + n)
		scratch[s->corrupt_at - s->bytes] ^= 0x5a;
	w = send(fd, scratch, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
	/* Relaxed: the client's reporting thread reads the count while this one writes it. */
	__atomic_store_n(&s->bytes, s->bytes + (uint64_t)w, __ATOMIC_RELAXED);
	return w;
}

long stream_recv(int fd, struct stream *s, uint8_t *scratch, size_t size, bool verify)
{
	ssize_t r = recv(fd, scratch, size, MSG_DONTWAIT);
	uint64_t now;
	long bad;

	if (r < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? -EAGAIN : -errno;
	if (r == 0)
		return 0;
	if (verify && (bad = pattern_check(s->seed, s->bytes, scratch, (size_t)r)) >= 0) {
		/* Count every wrong byte, not just the first: a shifted stream is all wrong, and
		 * comparing against the expected bytes costs far less than checking from each
		 * wrong one again. */
		static __thread uint8_t expect[4096];

		if (s->first_bad == UINT64_MAX)
			s->first_bad = s->bytes + (uint64_t)bad;
		for (long from = bad; from < r; from += (long)sizeof(expect)) {
			size_t n = (size_t)(r - from) < sizeof(expect) ? (size_t)(r - from)
								       : sizeof(expect);

			pattern_fill(s->seed, s->bytes + (uint64_t)from, expect, n);
			for (size_t i = 0; i < n; i++)
				s->mismatches += expect[i] != scratch[from + (long)i];
		}
	}
	__atomic_store_n(&s->bytes, s->bytes + (uint64_t)r, __ATOMIC_RELAXED);
	now = clock_mono_ns();
	stream_stall_note(s, now);
	if (s->window_to != UINT64_MAX || s->window_from) {
		if (now >= s->window_from && now < s->window_to)
			s->window_bytes += (uint64_t)r;
	} else {
		s->window_bytes += (uint64_t)r;
	}
	return r;
}

int conn_set_ds(int fd, int family, uint8_t ds)
{
	int v = ds;

	if (setsockopt(fd, IPPROTO_IP, IP_TOS, &v, sizeof(v)) < 0)
		return -errno;
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v)) < 0)
		return -errno;
	return 0;
}

int conn_socket_blocking(int family, int type)
{
	struct timeval tv = { .tv_sec = TRAFFIC_CONNECT_TIMEOUT_S };
	int fd = socket(family, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * Before a blocking call on fd with a deadline: its timeout (opt) cut to the time left, at
 * most TRAFFIC_CONNECT_TIMEOUT_S. Returns 0, or -ETIME when none is left.
 */
static int bound(int fd, int opt, uint64_t until_ns)
{
	uint64_t now, left;
	struct timeval tv;

	if (!until_ns)
		return 0;
	now = clock_mono_ns();
	if (now >= until_ns)
		return -ETIME;
	left = until_ns - now;
	if (left > (uint64_t)TRAFFIC_CONNECT_TIMEOUT_S * NSEC_PER_SEC)
		left = (uint64_t)TRAFFIC_CONNECT_TIMEOUT_S * NSEC_PER_SEC;
	/* At least a microsecond: a zero timeout means none at all. */
	tv.tv_sec = (time_t)(left / NSEC_PER_SEC);
	tv.tv_usec = (suseconds_t)((left % NSEC_PER_SEC) / 1000) + (left < 1000);
	return setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

/* After a blocking call on fd failed with err: -ETIME if the deadline is what ended it. */
static int failed(int err, uint64_t until_ns)
{
	return until_ns && clock_mono_ns() >= until_ns ? -ETIME : -err;
}

int conn_connect_until(int fd, const struct sockaddr_storage *peer, socklen_t peer_len,
		       uint64_t until_ns)
{
	int rc = bound(fd, SO_SNDTIMEO, until_ns);

	if (rc)
		return rc;
	if (connect(fd, (const struct sockaddr *)peer, peer_len) < 0)
		return failed(errno, until_ns);
	return 0;
}

int conn_connect_blocking(const struct sockaddr_storage *peer, socklen_t peer_len, int type,
			  uint64_t until_ns)
{
	int fd = conn_socket_blocking(peer->ss_family, type), rc;

	if (fd < 0)
		return fd;
	rc = conn_connect_until(fd, peer, peer_len, until_ns);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int io_full(int fd, uint8_t *buf, size_t len, bool out, uint64_t until_ns)
{
	size_t done = 0;

	while (done < len) {
		int rc = bound(fd, out ? SO_SNDTIMEO : SO_RCVTIMEO, until_ns);
		ssize_t n;

		if (rc)
			return rc;
		n = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
			: recv(fd, buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return failed(errno, until_ns);
		if (n == 0)
			return -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}
