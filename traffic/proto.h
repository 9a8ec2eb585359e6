/*
 * The wire protocol between tunbed-traffic client and server (docs/traffic.md): the hello
 * that opens every TCP connection, the header of every UDP datagram, and the control
 * requests and answers through which a client fetches the server's side of a test (bytes
 * received, verification, UDP loss and jitter, server CPU). Fixed-size big-endian records;
 * builders and parsers are pure.
 */
#ifndef TUNBED_TR_PROTO_H
#define TUNBED_TR_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h" /* PROTO_MAX_SESSIONS, PROTO_RR_MAX */

enum {
	PROTO_VERSION = 1,
	PROTO_HELLO_LEN = 64,
	PROTO_UDP_HLEN = 32,
	PROTO_CTL_REQ_LEN = 16,
	PROTO_CTL_ANS_HLEN = 16,
	PROTO_RESULT_LEN = 56,
	PROTO_UDP_RESULT_LEN = 64,
	PROTO_CPU_LEN = 16,
	PROTO_RR_MIN = 16, /* a probe carries its number and send time */
};

enum proto_kind {
	PROTO_KIND_DATA = 1,	/* a TCP data session */
	PROTO_KIND_RR = 2,	/* request/response latency probes */
	PROTO_KIND_CONTROL = 3, /* control requests */
};

enum proto_pattern {
	PROTO_PUSH = 1,	  /* client sends, server receives */
	PROTO_PULL = 2,	  /* server sends, client receives */
	PROTO_DUPLEX = 3, /* both */
};

enum proto_flags {
	PROTO_F_VERIFY = 1u << 0, /* the receiver checks every byte against the pattern */
};

struct proto_hello {
	uint8_t kind;	  /* enum proto_kind */
	uint8_t pattern;  /* enum proto_pattern (data sessions) */
	uint8_t flags;	  /* enum proto_flags */
	uint64_t test_id; /* random per client invocation */
	uint32_t session; /* 0 .. PROTO_MAX_SESSIONS-1 */
	uint64_t bytes;	  /* per direction: the server sends this much (pull, duplex) and, having
			   * received this much (push, duplex), closes first; 0: by duration_ms */
	uint32_t
		duration_ms; /* how long the server sends; 0 with bytes 0: until the client closes */
	uint64_t rate_bps;   /* the server's send pacing; 0: as fast as it can */
	uint32_t buffer;     /* the server's write size */
	uint32_t rr_size;    /* probe size (rr sessions) */
	uint32_t measure_ms; /* time mode: the measured part starts this long after the hello
			      * and ends at duration_ms; the server counts what it receives in
			      * between, so that the receiver's count covers that window only */
};

/* Writes the hello (PROTO_HELLO_LEN bytes). Returns the length or -ENOSPC. */
int proto_hello_build(uint8_t *buf, size_t room, const struct proto_hello *h);

/*
 * Parses a hello from the len bytes received so far. Returns PROTO_HELLO_LEN, -ENODATA (not
 * all of it yet), -EPROTO (not a tunbed-traffic hello, or another version) or -EINVAL (a
 * field out of range: kind, pattern, session, buffer, rr_size).
 */
int proto_hello_parse(const uint8_t *buf, size_t len, struct proto_hello *h);

struct proto_udp {
	uint64_t test_id;
	uint32_t session;
	uint64_t seq;	  /* 0, 1, 2, ... per session */
	uint64_t send_ns; /* sender's CLOCK_MONOTONIC */
};

int proto_udp_build(uint8_t *buf, size_t room, const struct proto_udp *u);

/* Parses a datagram's header. Returns PROTO_UDP_HLEN, -ENODATA (too short) or -EPROTO. */
int proto_udp_parse(const uint8_t *buf, size_t len, struct proto_udp *u);

enum proto_ctl_type {
	PROTO_CTL_CPU = 1,	   /* the server's threads' CPU time */
	PROTO_CTL_RESULTS = 2,	   /* per-session results of a test's TCP sessions */
	PROTO_CTL_UDP_RESULTS = 3, /* per-session results of a test's UDP sessions */
};

struct proto_ctl_req {
	uint8_t type;
	uint64_t test_id;
};

int proto_ctl_req_build(uint8_t *buf, size_t room, const struct proto_ctl_req *r);
int proto_ctl_req_parse(const uint8_t *buf, size_t len, struct proto_ctl_req *r);

/* An answer: a header, then count records of the type's length. */
struct proto_ctl_ans {
	uint8_t type;
	uint32_t count;
};

int proto_ctl_ans_build(uint8_t *buf, size_t room, const struct proto_ctl_ans *a);

/*
 * Parses an answer header; -ENODATA until all of it is there, -EPROTO for a bad magic or
 * type, -EINVAL for a count above PROTO_MAX_SESSIONS.
 */
int proto_ctl_ans_parse(const uint8_t *buf, size_t len, struct proto_ctl_ans *a);

/* Length of one record of an answer type, or 0 for an unknown type. */
size_t proto_ctl_record_len(uint8_t type);

struct proto_cpu {
	uint64_t cpu_ns; /* summed over the server's worker threads since they started */
	uint32_t threads;
};

struct proto_result {
	uint32_t session;
	bool done;	     /* the server saw the session end */
	bool failed;	     /* it ended in an error (reset, timeout) */
	uint64_t rx_bytes;   /* what the server received */
	uint64_t rx_window;  /* ... within the measured window of the hello (time mode) */
	uint64_t tx_bytes;   /* what the server sent */
	uint64_t mismatches; /* bytes that failed verification */
	uint64_t first_bad;  /* stream offset of the first; UINT64_MAX if none */
};

struct proto_udp_result {
	uint32_t session;
	uint64_t received, duplicates, reordered, too_old;
	uint64_t lowest, highest;
	uint64_t jitter_ns;
};

int proto_cpu_build(uint8_t *buf, size_t room, const struct proto_cpu *c);
int proto_cpu_parse(const uint8_t *buf, size_t len, struct proto_cpu *c);
int proto_result_build(uint8_t *buf, size_t room, const struct proto_result *r);
int proto_result_parse(const uint8_t *buf, size_t len, struct proto_result *r);
int proto_udp_result_build(uint8_t *buf, size_t room, const struct proto_udp_result *r);
int proto_udp_result_parse(const uint8_t *buf, size_t len, struct proto_udp_result *r);

#endif
