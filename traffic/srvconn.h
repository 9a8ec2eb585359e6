/*
 * One connection to the tunbed-traffic server, as a state machine driven by readiness: its
 * hello (proto.h), then a data session, latency probes or control requests. Everything a
 * client sends is read into bounds the server chose (a hello's buffer size bounds only the
 * server's writes, never a read), a hello and each control request have a bounded time to
 * arrive (SRV_HELLO_TIMEOUT_MS), one cut short by the client's end closes the connection, and
 * nothing a client sends ends more than its own connection. The server's threads drive it from epoll, the fuzz harness from a socketpair.
 * One thread per connection.
 */
#ifndef TUNBED_TR_SRVCONN_H
#define TUNBED_TR_SRVCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "pacer.h"
#include "proto.h"

/* What a connection needs from the thread that drives it. */
struct srvconn_env {
	uint8_t *scratch;    /* data sessions read into it and write from it */
	size_t scratch_size; /* its size: the largest read or write at once */
	uint64_t corrupt_at; /* test hook: flip the byte at this offset of what session 0 gets */
	/* Control answers: the server threads' CPU time and their number, and a test's UDP
	 * results (records of PROTO_UDP_RESULT_LEN into out, at most room bytes; *count gets
	 * how many; returns the bytes written). */
	uint64_t (*cpu_ns)(void *arg);
	unsigned threads;
	size_t (*udp_results)(void *arg, uint64_t test_id, uint8_t *out, size_t room,
			      uint32_t *count);
	void *arg;
};

enum srvconn_state {
	SC_HELLO,
	SC_DATA,
	SC_RR,
	SC_CONTROL,
};

/* Why srvconn_step says a connection is over; the caller then frees it. */
enum srvconn_end {
	SC_OPEN = 0,  /* not over: wait for the next event */
	SC_DONE,      /* finished as the protocol says (a data session is recorded) */
	SC_FAILED,    /* a socket error (a data session is recorded as failed) */
	SC_REFUSED,   /* not a tunbed-traffic hello or request, or a field out of range */
	SC_NO_MEMORY, /* the buffer of an rr session or a control answer */
	SC_CUT,	      /* the client's end came inside a hello or a control request */
};

struct srvconn {
	int fd;
	enum srvconn_state state;
	uint8_t hello_buf[PROTO_HELLO_LEN];
	size_t hello_len;
	struct proto_hello h;
	struct stream rx, tx;
	bool sending, wr_shut, eof;
	uint64_t deadline_ns; /* stop sending then (0: by bytes only) */
	struct pacer pacer;
	uint64_t wake_ns; /* paced: try again then */
	uint8_t *buf;	  /* rr request/response, or control answer */
	size_t buf_len, buf_done, buf_size;
	uint8_t req_buf[PROTO_CTL_REQ_LEN]; /* a control request, as far as it came */
	size_t req_len;
	uint64_t await_ns; /* the hello, request or answer's taking must be complete by then
			    * (0: nothing owed) */
	/* The owner's: its lists, and the await_ns it filed the connection under. */
	struct srvconn *prev, *next, *aprev, *anext;
	uint64_t filed_ns;
};

/*
 * A connection on fd (non-blocking), accepted at now (CLOCK_MONOTONIC ns), waiting for its
 * hello until now + SRV_HELLO_TIMEOUT_MS. NULL when out of memory.
 */
struct srvconn *srvconn_new(int fd, uint64_t now);

/*
 * Moves the connection as far as its socket allows at now. Returns SC_OPEN, or why it is over
 * (enum srvconn_end); a data session is recorded in results.h before it returns SC_DONE or
 * SC_FAILED. await_ns afterwards says until when the client has to send (or take) what it
 * owes: the owner closes the connection then (srvconn_expired).
 */
enum srvconn_end srvconn_step(struct srvconn *c, const struct srvconn_env *env, uint64_t now);

/* Whether the connection owes a hello, a request or the taking of an answer past its time. */
bool srvconn_expired(const struct srvconn *c, uint64_t now);

/*
 * Whether the connection sends against a clock (a deadline or a pacer): the owner then calls
 * srvconn_step again once srvconn_due says so, events or not.
 */
bool srvconn_clocked(const struct srvconn *c);
bool srvconn_due(const struct srvconn *c, uint64_t now);

/* Closes the fd and frees the connection. */
void srvconn_free(struct srvconn *c);

#endif
