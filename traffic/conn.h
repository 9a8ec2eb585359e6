/*
 * What client and server share about moving bytes on a non-blocking TCP socket: sending the
 * session's pattern (or a fixed buffer when nobody verifies) and receiving with optional
 * verification, counting every byte, and opening the client's blocking connections. Used from
 * one thread per socket.
 */
#ifndef TUNBED_TR_CONN_H
#define TUNBED_TR_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* One direction of a stream: what has gone through it, and what verification found. */
struct stream {
	uint64_t seed;			 /* pattern seed (pattern_seed) */
	uint64_t bytes;			 /* bytes moved so far: the next stream offset */
	uint64_t mismatches;		 /* bytes that failed verification */
	uint64_t first_bad;		 /* stream offset of the first; UINT64_MAX if none */
	uint64_t corrupt_at;		 /* test hook: flip the byte at this offset when sending */
	uint64_t window_from, window_to; /* CLOCK_MONOTONIC: count received bytes in between */
	uint64_t window_bytes;
	uint64_t last_rx_ns;   /* CLOCK_MONOTONIC of the last read that returned data; 0: none */
	uint64_t stall_max_ns; /* the longest time between two such reads (stream_stall_note) */
};

void stream_init(struct stream *s, uint64_t seed);

/*
 * Notes a read that returned data at now_ns (CLOCK_MONOTONIC): the time since the previous one,
 * if any, raises stall_max_ns when it is longer. The stall of a stream is thus the longest gap
 * between two reads with data, from its first byte to its last: the time before the first byte
 * (the connect, the hello) and after the last (the end of the stream) are not in it, and a read
 * is timed as this thread made it, so its own scheduling delays count. Only the part of a gap
 * inside the stream's window (window_from to window_to, the measured seconds) counts: a gap
 * of the warm-up (a new destination's path MTU discovery, slow start) is not the test's.
 * Pure; any thread.
 */
void stream_stall_note(struct stream *s, uint64_t now_ns);

/*
 * Writes up to want bytes of the stream to fd, from scratch (size bytes) which is filled with
 * the pattern when verify is on; when it is off, scratch is sent as it is. Returns bytes
 * written (possibly 0 for EAGAIN) or -errno.
 */
long stream_send(int fd, struct stream *s, uint8_t *scratch, size_t size, uint64_t want,
		 bool verify);

/*
 * Reads what fd has (until EAGAIN or size bytes per call), checks it when verify is on,
 * counts into window_bytes what arrives inside the window, and notes the read's time
 * (stream_stall_note).
 * Returns bytes read, 0 at end of stream, -EAGAIN when nothing is there, or -errno.
 */
long stream_recv(int fd, struct stream *s, uint8_t *scratch, size_t size, bool verify);

/*
 * Sends (out) or receives exactly len bytes on a blocking socket, resuming after signals,
 * until until_ns (CLOCK_MONOTONIC; 0: as long as the socket's own timeouts let it). Returns 0,
 * -ECONNRESET when the peer closed first, -ETIME when until_ns passed, or -errno.
 */
int io_full(int fd, uint8_t *buf, size_t len, bool out, uint64_t until_ns);

/*
 * Sets the DS field (DSCP and ECN, RFC 2474) that fd's packets carry: IP_TOS, and for an IPv6
 * socket IPV6_TCLASS too (a dual-stack socket sends IPv4 with the first). A TCP socket keeps
 * its ECN bits the kernel's. Returns 0 or -errno, errno set. Any thread.
 */
int conn_set_ds(int fd, int family, uint8_t ds);

/*
 * A blocking socket of type (SOCK_STREAM, ...) for family, with TRAFFIC_CONNECT_TIMEOUT_S send
 * and receive timeouts. Returns the fd or -errno. Any thread.
 */
int conn_socket_blocking(int family, int type);

/*
 * Connects fd (from conn_socket_blocking) to peer, blocking, until until_ns (0: the socket's
 * send timeout). Returns 0, -ETIME when until_ns passed, or -errno. Any thread.
 */
int conn_connect_until(int fd, const struct sockaddr_storage *peer, socklen_t peer_len,
		       uint64_t until_ns);

/*
 * conn_socket_blocking and conn_connect_until in one: the fd or -errno (closed on failure).
 * For the client's control connections; any thread.
 */
int conn_connect_blocking(const struct sockaddr_storage *peer, socklen_t peer_len, int type,
			  uint64_t until_ns);

#endif
