/*
 * Every fixed size and bound of tunbed-traffic, with where each number comes from: what the
 * options and the protocol accept, what the client and the server allocate before their
 * threads start, their batches and their waits.
 */
#ifndef TUNBED_TRAFFIC_LIMITS_H
#define TUNBED_TRAFFIC_LIMITS_H

enum traffic_limits {
	/* What the options accept (options.c) and the protocol carries (proto.c). */
	TRAFFIC_MAX_THREADS = 64,	  /* --threads, client and server: one per CPU, at most as
					    * many as gregw's --workers */
	PROTO_MAX_SESSIONS = 10000,	  /* --sessions; a hello's session number is below it */
	TRAFFIC_PAIRS_MAX = 16384,	  /* --pairs lines: one a tunnel, as many tunnels as
					    * gregw's table holds (TUNNELS_MAX) */
	TRAFFIC_PAIRS_LINE_MAX = 256,	  /* a --pairs line: two IPv6 addresses are 79 bytes at
					    * most, the rest is room for a comment */
	TRAFFIC_PAIRS_FILE_MAX = 4 << 20, /* a --pairs file: TRAFFIC_PAIRS_MAX lines of two
					    * IPv6 addresses (1.3 MiB) and comments */
	TRAFFIC_ITERATIONS_MAX = 1000000, /* --iterations: rounds, each of every session */
	TRAFFIC_TIME_MIN_MS = 100,	  /* --time and --interval from 0.1 s: a few RTTs */
	TRAFFIC_TIME_MAX_S = 86400,	  /* --time: a day */
	TRAFFIC_WARMUP_MAX_S = 3600,	  /* --warmup: an hour */
	TRAFFIC_INTERVAL_MAX_S = 3600,	  /* --interval: an hour */
	TRAFFIC_BUFFER_MAX = 16 << 20,	  /* --buffer, and the write size a server accepts */
	TRAFFIC_SOCKBUF_MIN = 4096,	  /* --sndbuf, --rcvbuf: a page */
	TRAFFIC_SOCKBUF_MAX = 1 << 30,	  /* and 1 GiB: far above any tcp_wmem/tcp_rmem */
	TRAFFIC_UDP_SIZE_MAX = 65507,	  /* --size: the largest UDP payload over IPv4 */
	TRAFFIC_PPS_MAX = 100000000,	  /* --pps: 100 Mpps, far above what one host's stack
					    * sends (about 1 Mpps a core) */
	TRAFFIC_SAMPLE_MAX = 1000000000,  /* --sample: one datagram in 10^9 */
	TRAFFIC_RR_RATE_MAX = 1000000,	  /* --rr-rate: probes per second */
	TRAFFIC_ICMP_COUNT_MAX = 100000,  /* --icmp-count: 5.5 hours at ping's 0.2 s */
	TRAFFIC_ICMP_INTERVAL_MAX_S = 60, /* --icmp-interval, from 1 ms (a probe thread's tick) */
	PROTO_RR_MAX = 65536,		  /* --rr-size: a probe of 64 KiB at most */
	TRAFFIC_PACE_QUANTUM = 1500,	  /* a paced sender waits until an Ethernet MTU may go */
	TRAFFIC_CONNECT_TIMEOUT_S = 5,	  /* blocking control and probe connections (conn.c) */

	/* The client (client.c, udp.c, ctlc.c, report.c). */
	CL_EVENTS = 256,	     /* epoll events taken per wait */
	CL_TICK_MS = 5,		     /* while sessions are paced or near their deadline */
	CL_POLL_MAX_MS = 100,	     /* the longest wait: a stop is seen within it */
	CL_GRACE_MS = 5000,	     /* after the deadline, a session gets this long to close */
	CL_RESULTS_WAIT_MS = 3000,   /* for the server to have seen every session end */
	CL_ERRORS_KEPT = 8,	     /* distinct error lines reported */
	CL_UDP_BATCH = 64,	     /* datagrams per sendmmsg: as gregw's receive batches */
	CL_UDP_BURST_US = 500,	     /* a UDP session sends at most this much of its rate at
				      * once when on time (and at least one datagram) */
	CL_UDP_BACKLOG_US = 5000,    /* a sender further behind its schedule skips the older
				      * slots (counted late) instead of catching up in a burst
				      * that no steady source would send */
	CL_UDP_SLEEP_MAX_MS = 50,    /* the longest sleep of a UDP thread between sends */
	CL_UDP_RATE_TOLERANCE = 100, /* the offered rate within 1/100 of the asked one, or the
				      * test's offered_ok is false (docs/ndr.md) */
	CL_UDP_SAMPLES_KEPT = 64,    /* latency samples in flight per session: at 1000 a
				      * second, 64 ms of round trip */
	CL_UDP_REPLY_BATCH = 16,     /* replies taken per recvmmsg */
	CL_UDP_REPLY_POLL_MS = 1,    /* replies are read this often: the kernel stamps their
				      * arrival, so only the samples kept bound the wait */
	CL_CTL_RESULTS_WAIT_S = 10,  /* for the server's records of every session */
	CL_CTL_RESULTS_POLL_MS = 20, /* between two requests for them */
	CL_CTL_UDP_SETTLE_MS = 200,  /* for datagrams in flight when the senders stop */
	CL_STOP_WAIT_MS = 3000,	     /* after a stop signal, the wind-down in all (threads,
				      * probes, the server's side): a reachable server answers in
				      * milliseconds, one whose path is gone never, and a stop
				      * must not wait out the 5 s timeouts of every request */
	CL_REPORT_SESSIONS_MAX = 64, /* an interval report lists each session up to this many */
	CL_ICMP_WAIT_MS = 1000,	     /* after the last ping probe, for the replies still out:
				      * ping(8)'s -W 1; a reply later than this is lost */

	/* The server (server.c, results.c). */
	SRV_SCRATCH = 1 << 20,	  /* largest read or write a connection does at once */
	SRV_EVENTS = 256,	  /* epoll events taken per wait */
	SRV_TICK_MS = 5,	  /* while a connection sends against a clock or a pacer */
	SRV_IDLE_MS = 500,	  /* otherwise; a stop request wakes the threads at once */
	SRV_BACKLOG = 4096,	  /* listen backlog: the kernel's somaxconn, which caps it anyway */
	SRV_UDP_SLOTS = 4096,	  /* UDP sessions a thread tracks; more are not counted */
	SRV_UDP_PROBES = 16,	  /* linear probing limit in that table */
	SRV_UDP_BATCH = 64,	  /* datagrams per recvmmsg */
	SRV_UDP_MAX = 65536,	  /* one of them: UDP's length field */
	SRV_UDP_RCVBUF = 8 << 20, /* a thread's UDP socket: many sessions' bursts wait here */
	RESULTS_TESTS = 64,	  /* tests remembered; the oldest is forgotten first */
	RESULTS_KEEP_S = 600,	  /* and none longer than this */

	/* What a client may hold of the server (srvconn.c, server.c). */
	SRV_HELLO_TIMEOUT_MS = 10000, /* a connection's time for its hello, and a control
				       * connection's for each request and for taking each
				       * answer: twice the client's own send and receive timeout
				       * (TRAFFIC_CONNECT_TIMEOUT_S), so that a client the server
				       * gives up on has given up itself */
	SRV_ACCEPT_PAUSE_MS = 100,    /* at the descriptor limit, the listener is tried again
				       * this often (or when a connection closes): a queued
				       * client waits at most this long once descriptors free,
				       * for one failed accept per pause instead of a spin */

	/* Measurement (seqstat.c, pacer.c, hist.c). */
	SEQ_WINDOW = 4096,	     /* numbers below highest - SEQ_WINDOW are "too old" to judge */
	PACER_BURST_MIN = 16 * 1024, /* bytes: one 16 KiB write may go at once at any rate */
	PACER_BURST_MS = 1,	     /* the default bucket holds 1 ms at the rate, or the above */
	HIST_SUB_BITS = 5,	     /* 32 sub-buckets per octave: under 3.2% error */
	HIST_OCTAVES = 40,	     /* up to 2^40 ns, about 18 minutes */
};

#endif
