/*
 * tunbed-traffic client: N TCP sessions over T epoll threads (push, pull or duplex, by time
 * or by bytes, paced or not, verified or not), UDP sessions at a bit or packet rate (with
 * sampled latency), and request/response latency probes on their own connection and ICMP
 * echo probes (ping.h), alone or under load; per-interval
 * and final reports through one emitter (report.h).
 */
#ifndef TUNBED_TR_CLIENT_H
#define TUNBED_TR_CLIENT_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "netaddr.h"
#include "pairs.h"
#include "proto.h"

/* --ecn: what the sessions' packets say of ECN (RFC 3168). */
enum client_ecn {
	CLIENT_ECN_OFF,	      /* UDP Not-ECT; TCP as the namespace's net.ipv4.tcp_ecn has it */
	CLIENT_ECN_ON,	      /* UDP ECT(0); TCP: every session must have negotiated ECN */
	CLIENT_ECN_CODEPOINT, /* UDP: ecn_codepoint on every datagram */
};

enum client_output {
	OUT_TEXT,
	OUT_JSON,	 /* one document at the end */
	OUT_JSON_STREAM, /* a line per interval and one at the end */
};

struct client_cfg {
	const char *host;
	struct netaddr addr;
	uint16_t port;
	unsigned sessions; /* TCP (or UDP with udp) sessions; 0 with rr: probes only */
	unsigned threads;  /* 0: one per CPU */
	bool has_cpus;
	cpu_set_t cpus;
	uint64_t time_ms;   /* per session, after warmup; 0 with bytes */
	uint64_t bytes;	    /* per session and direction; 0 with time */
	uint64_t warmup_ms; /* excluded from results (time mode) */
	unsigned iterations;
	enum proto_pattern pattern;
	uint64_t rate_bps;  /* per session; 0: unpaced (TCP) */
	uint32_t buffer;    /* bytes per write and read */
	int sndbuf, rcvbuf; /* 0: the kernel's autotuning */
	char congestion[16];
	uint8_t dscp; /* --dscp: the sessions' DSCP, 0 to 63 */
	enum client_ecn ecn;
	uint8_t ecn_codepoint; /* UDP: the ECN field of every datagram (enum ip_ecn) */
	bool verify;
	bool rst;
	bool churn;
	bool udp;
	uint32_t udp_size; /* datagram payload, header included */
	uint64_t pps;	   /* UDP: datagrams a second over all sessions, instead of rate_bps */
	uint32_t sample;   /* UDP: every sample-th datagram of a session asks for a reply, whose
			    * round trip is a latency sample; 0: none */
	bool rr;
	uint32_t rr_rate; /* probes per second; 0: back to back */
	uint32_t rr_size;
	bool icmp;		   /* ping probes (ping.h) */
	uint32_t icmp_count;	   /* alone: how many; beside a load: at most */
	uint64_t icmp_interval_ms; /* between two */
	uint32_t icmp_size;	   /* payload bytes after the ICMP header, as ping -s */
	uint64_t interval_ms;	   /* 0: no interval reports */
	enum client_output output;
	bool any_address;	/* --any-address: HOST may lie outside the benchmarking ranges */
	const char *pairs_path; /* --pairs as given; NULL without */
	struct traffic_pair *pairs; /* its pairs (pairs.h), malloc'd; session i takes i mod n */
	unsigned npairs;
};

/*
 * Runs the test and writes its report to stdout. Returns the exit status: 0 when every
 * session completed and verification (if on) found nothing, 1 otherwise (partial results are
 * still reported).
 */
int client_run(const struct client_cfg *c);

#endif
