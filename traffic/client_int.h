/*
 * The client's state, shared by its modules (client.c, udp.c, rr.c, ping.c, ctlc.c, report.c). Each
 * session and thread is written by its own thread; the main thread reads counters with
 * relaxed loads for interval reports and everything once the threads are done.
 */
#ifndef TUNBED_TR_CLIENT_INT_H
#define TUNBED_TR_CLIENT_INT_H

#include <linux/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "client.h"
#include "conn.h"
#include "hist.h"
#include "traffic_limits.h"
#include "pacer.h"
#include "proto.h"

enum sess_state {
	SS_IDLE,
	SS_CONNECTING,
	SS_HELLO,
	SS_RUNNING,
	SS_DONE,
};

/* A --pairs pair as the sessions' sockets take it: bound to local, connected to remote. */
struct cl_pair {
	struct sockaddr_storage local, remote;
	socklen_t local_len, remote_len;
};

struct session {
	unsigned id;
	int fd;
	const struct cl_pair *pair; /* --pairs: pair id mod n; NULL: the server's address */
	enum sess_state state;
	uint8_t hello[PROTO_HELLO_LEN];
	size_t hello_sent;
	struct stream tx, rx;
	bool wr_shut, eof;
	struct pacer pacer;
	uint64_t wake_ns;	     /* paced: the clock moves it on then */
	uint64_t start_ns, end_ns;   /* first connect, last completion */
	uint64_t tx_mark, rx_mark;   /* counts at the end of the warm-up */
	uint64_t tx_total, rx_total; /* over all connections (churn, iterations) */
	uint64_t rx_window_total;    /* received in the measured window, all connections */
	uint64_t rx_stall_max_ns;    /* the longest receive stall, all connections (conn.h) */
	uint64_t connections;	     /* completed */
	int error;		     /* first errno, 0 if none */
	uint64_t mismatches;	     /* client-side verification, all connections */
	uint64_t first_bad;	     /* stream offset of the first, UINT64_MAX if none */
	uint32_t retrans;	     /* TCP retransmits, all connections */
	uint64_t udp_seq;	     /* UDP: datagrams sent (the next number) */
	uint64_t udp_unsent;	     /* UDP: datagrams this host could not send */
	uint64_t udp_late;	     /* UDP: slots skipped, the sender being behind (udpsched.h) */
	uint64_t udp_scheduled;	     /* UDP: slots due over the session's span */
	uint64_t udp_sampled;	     /* UDP: datagrams sent that asked for a reply */
	uint64_t udp_replies;	     /* UDP: replies taken as latency samples */
	struct tcp_info ti;	     /* the last connection's, taken before it closed */
	bool ti_valid;
};

struct cl_thread {
	struct client *owner;
	unsigned id;
	int cpu;
	int epfd;
	pthread_t thread;
	bool started;
	uint8_t *scratch;
	struct session **sess; /* this thread's sessions */
	unsigned nsess;
	unsigned active;
	uint64_t cpu_ns;      /* the thread's CPU time, taken as it ends */
	struct hist *udp_lat; /* UDP with --sample: the round trips of this thread's samples */
};

struct client {
	const struct client_cfg *cfg;
	uint64_t test_id;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct cl_pair *pairs; /* --pairs, cfg->npairs of them; NULL without */
	unsigned nthreads;
	struct cl_thread t[TRAFFIC_MAX_THREADS];
	struct session *sess;
	uint64_t t0_ns;	      /* start of the test */
	uint64_t measure_ns;  /* start of the measured part (after warm-up) */
	uint64_t deadline_ns; /* time mode: sending stops */
	uint64_t end_ns;      /* when the last session finished */
	int stop;	      /* finish now: a signal, or the end of the test for the probes */
	bool interrupted;     /* a signal ended the test early */
	uint64_t stop_ns;     /* when the signal came: the wind-down is bounded from then */
	char congestion[16];  /* TCP: the congestion control the sessions get */
	int threads_done;
	int done_fd;		 /* eventfd: a thread finished */
	pthread_barrier_t round; /* iterations: all threads finish a round together */
	/* rr */
	pthread_t rr_thread;
	bool rr_started;
	pthread_mutex_t rr_lock; /* rr_fd, as the probe thread opens and closes it */
	int rr_fd;		 /* the probes' connection, -1 when there is none */
	struct hist rr_hist;
	uint64_t rr_cpu_ns;
	int rr_error;
	uint64_t rr_sent;
	struct ping *ping; /* ICMP echo probes (ping.c); NULL without --icmp */
	/* server side, from the control connection */
	bool have_server_cpu;
	uint64_t server_cpu_start, server_cpu_end;
	struct proto_result *results; /* by session, from the server */
	bool *have_result;
	struct proto_udp_result *udp_results;
	bool *have_udp_result;
	uint64_t client_cpu_ns;
};

/* UDP sessions (udp.c): run on the client threads in place of TCP sessions. */
void *udp_thread_main(void *arg);

struct json_t;

/* Datagrams a second of one UDP session: --pps shared out, or --rate over --size. */
double udp_session_pps(const struct client_cfg *c);

/*
 * Adds to a final report's "udp" object what the packet schedule and the samples say: the
 * asked and the offered rate, whether it was met (unsent: the datagrams the kernel refused,
 * which report.c has summed), slots late, and latency.
 */
void udp_report(const struct client *cl, struct json_t *udp, uint64_t unsent);

/* Request/response probes (rr.c), on a thread of their own. */
int rr_start(struct client *cl);
void rr_join(struct client *cl);
/* After a stop signal (cl->stop set): wakes the probe thread from its blocking calls. */
void rr_wake(struct client *cl);

/*
 * Control connection (ctlc.c): server CPU and results, each asked before until_ns
 * (CLOCK_MONOTONIC; 0: within the sockets' own timeouts). Return 0, -ETIME when until_ns
 * passed, or -errno.
 */
int ctlc_cpu(struct client *cl, uint64_t *cpu_ns, uint64_t until_ns);
int ctlc_results(struct client *cl, uint64_t until_ns);
int ctlc_udp_results(struct client *cl, uint64_t until_ns);

/* Reports (report.c). */
void report_interval(struct client *cl, unsigned index, uint64_t from_ns, uint64_t to_ns,
		     const uint64_t *prev_bytes, uint64_t *bytes, const uint32_t *prev_retr,
		     uint32_t *retr);
int report_final(struct client *cl);

static inline uint64_t relaxed(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void relaxed_set(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

#endif
