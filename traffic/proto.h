/*
 * The wire protocol between tunbed-traffic client and server (docs/traffic.md): the hello
 * that opens every TCP connection, the header of every UDP datagram, and the control
 * requests and answers through which a client fetches the server's side of a test (bytes
 * received, verification, UDP loss and jitter, server CPU), and the server's reply to a
 * datagram that asks for one (latency samples). Fixed-size big-endian records; builders and
 * parsers are pure.
 */
#ifndef TUNBED_TR_PROTO_H
#define TUNBED_TR_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traffic_limits.h" /* PROTO_MAX_SESSIONS, PROTO_RR_MAX */

enum {
	PROTO_VERSION = 1,
	PROTO_HELLO_LEN = 64,
	PROTO_UDP_HLEN = 32,
	PROTO_UDP_SHORT_HLEN = 18, /* datagrams below PROTO_UDP_HLEN: a 64-byte Ethernet frame
				    * holds IPv4, UDP and 18 bytes (RFC 2544's smallest frame) */
	PROTO_UDP_REPLY_LEN = 32,
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

/*
 * A datagram's header. Datagrams of PROTO_UDP_HLEN bytes or more carry all of it; shorter
 * ones (down to PROTO_UDP_SHORT_HLEN) the short form: no send time, a 16-bit session and a
 * 48-bit sequence number.
 */
struct proto_udp {
	uint64_t test_id;
	uint32_t session;
	uint64_t seq;	  /* 0, 1, 2, ... per session; below 2^48 in the short form */
	uint64_t send_ns; /* sender's CLOCK_MONOTONIC; 0 in the short form */
	bool echo;	  /* the sender asks for a reply (struct proto_udp_reply) */
	bool is_short;	  /* parsed from the short form */
};

/*
 * Writes the header of a datagram of room bytes: the whole one from PROTO_UDP_HLEN, else the
 * short form. Returns the header's length or -ENOSPC (room below PROTO_UDP_SHORT_HLEN).
 */
int proto_udp_build(uint8_t *buf, size_t room, const struct proto_udp *u);

/*
 * Parses a datagram's header, the short form when len is below PROTO_UDP_HLEN. Returns the
 * header's length, -ENODATA (below PROTO_UDP_SHORT_HLEN) or -EPROTO (not a tunbed-traffic
 * datagram, or a session out of range).
 */
int proto_udp_parse(const uint8_t *buf, size_t len, struct proto_udp *u);

/*
 * The server's reply to a datagram that asked for one: which datagram, and how long it
 * waited in the server between its arrival and the reply, so that the client can take the
 * server's own delay out of the round trip.
 */
struct proto_udp_reply {
	uint64_t test_id;
	uint32_t session;
	uint64_t seq;
	uint64_t dwell_ns;
};

/* Writes a reply (PROTO_UDP_REPLY_LEN bytes). Returns the length or -ENOSPC. */
int proto_udp_reply_build(uint8_t *buf, size_t room, const struct proto_udp_reply *r);

/* Returns PROTO_UDP_REPLY_LEN, -ENODATA (too short) or -EPROTO (not a reply). */
int proto_udp_reply_parse(const uint8_t *buf, size_t len, struct proto_udp_reply *r);

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
