/*
 * Every fixed size and bound of gregw, with where each number comes from. The packet path
 * allocates nothing after start-up, so these decide its memory and its batches.
 */
#ifndef TUNBED_GW_LIMITS_H
#define TUNBED_GW_LIMITS_H

enum gw_limits {
	/* A worker's pass (worker.c). */
	WORKER_BATCH = 256,	    /* reads from TUN per pass without --fair-queue, and the slots
				     * (of WORKER_SLOT, with headroom) every read is made into */
	WORKER_SLOT = 65536,	    /* largest TUN read: a 64 KB superpacket (IP total length) */
	WORKER_POLL_MS = 200,	    /* idle wake-up; a stop request wakes the workers at once */
	WORKER_ICMP_PER_SEC = 1000, /* ICMP errors per worker and second, as routers limit */
	WORKER_TELL_S = 60,	    /* a worker says why it drops (spoofed_source) at most this
				     * often, in seconds, as syslog's rate limits do */

	/* --fair-queue (fq.h, tun.c): the reads wait in the memory of WORKER_BATCH slots, cut
	 * into pages of TUN_FQ_PAGE_SLOTS slots' room each, where reads are packed one after
	 * the other (a read needs a slot's room free before it, being of unknown length until
	 * it is made). The queue holds up to --fq-limit reads (1 to TUN_FQ_READS, default
	 * all) and TUN_FQ_BYTES bytes; a full one leaves the next packet in the TUN device's
	 * queue (--fq-full pause), TUNNEL_TXQUEUELEN of them at most. */
	TUN_FQ_READS = 4096,	  /* reads queued at most: 8 MB of 2 KB reads, ACKs and single
				   * segments, where 256 slots held 256 reads whatever their size */
	TUN_FQ_BYTES = 8 << 20,	  /* bytes queued at most: 13 ms at 5 Gbit/s a worker, room for
				   * CoDel (--aqm) to hold a target of a few ms below it; packed
				   * reads of any size fit the slots' 16.8 MB with room to spare */
	TUN_FQ_PAGE_SLOTS = 4,	  /* a page: 3 slots' room of packed reads, and the last read's */
	TUN_FQ_PASS_READS = 1024, /* reads a pass makes at most, twice the segments it sends
				   * (TUN_FQ_PASS_SEGS) even of single-segment reads: when more
				   * comes than the worker sends, the excess waits in the flow
				   * queue, where CoDel sees it, not in the TUN device's ring */
	TUN_FQ_AQM_MIN = 1000,	  /* --aqm signals in the flow queue on reads this large: a full
				   * segment's or a superpacket's, never an ACK's or a probe's */
	TUN_FQ_BUCKETS = 1024,	  /* flows' lists, as FQ-CoDel's default */
	TUN_FQ_QUANTUM = 65536,	  /* bytes a flow sends a turn: a superpacket */
	TUN_FQ_PASS_SEGS = 512,	  /* segments a pass sends at most, half a sendmmsg: the backlog
				   * waits here, in flows, not in the TUN's FIFO, and the
				   * worker turns to the wire every few hundred microseconds */

	/* The configuration (config.c). */
	CONFIG_MAX_WORKERS = 64, /* one per CPU; TUN allows up to 256 queues */
	CONFIG_MAX_ROUTES = 32,	 /* --route prefixes into the tunnel */
	CONFIG_MAX_ALLOW = 32,	 /* --allow-from prefixes, as many as routes */
	CONFIG_PATH_MAX = 256,	 /* --ctl and --stats-json paths (a Unix socket's is 108) */

	/* The control socket (ctl.c): the main thread never waits on a client. A client
	 * accepted in one pass is read in the next, before 16 newer ones could evict it; a
	 * stats reply is written in microseconds, the flow tables (64 x 1024 flows at most)
	 * in milliseconds. */
	CTL_CONNS = 16,	      /* clients served at once; a 17th evicts the oldest */
	CTL_ACCEPT_BATCH = 8, /* connections accepted per pass of the main loop */
	CTL_CMD_MAX = 1024,   /* a command line: "stats", or a tunnel's keys to add (a name,
			       * a peer, a key, eight prefixes of up to 43 bytes, options) */
	CTL_CMD_MS = 1000,    /* from connect to the end of the command line, at most; on a
			       * kept connection, from a line's first byte to its end */
	CTL_REPLY_MS = 5000,  /* to read the whole reply, at most */
	CTL_IDLE_MS = 10000,  /* a kept connection between a reply and its next line: longer
			       * than a churn's pause for its pings (5 s); a client that waits
			       * longer connects again */
	CTL_LINES_PASS = 64,  /* a kept connection's lines answered in one pass of the main
			       * loop, so that a client sending many cannot hold it: the other
			       * clients, the signals and the stats timer come between */
	CTL_BACKLOG = 64,     /* connections the kernel queues before gregw accepts them */
	/* A kept connection's replies answered at once are gathered into one send up to this
	 * (a change's reply is under 100 bytes; the flow tables, megabytes, leave alone). */
	CTL_GATHER_MAX = 65536,

	/* The send queue (tx.c) and its transports (tx_packet.c, tx_udp.c). */
	TX_MSGS = 1024,		  /* messages per sendmmsg: UIO_MAXIOV */
	TX_SEND_TIMEOUT_MS = 200, /* a full socket buffer blocks a send at most this long */

	/* The receive side (rx.c) and its transports (rx_ring.c, rx_udp.c); a worker's ring is
	 * common/pktring.h's, the same for tunbed-framebench's ring receiver. */
	RX_BUDGET = 256,	  /* datagrams taken from the wire before TUN is read again */
	RX_UDP_BATCH = 16,	  /* datagrams (or UDP_GRO bursts) per recvmmsg */
	RX_UDP_BUF = 65536,	  /* one of them: a GRO burst is at most 64 KB */
	RX_GRO_BUF = 65536 + 256, /* a GRO superpacket read whole: the kernel's default limit
				   * (gro_max_size) and a link-layer header */
	RX_GRO_RCVBUF = 8 << 20,  /* socket buffer for whole superpackets waiting behind their
				   * frames: about 60 of 64 KB (each counts about twice) */
	RX_AQM_MIN_WIRE = 1000,	  /* --aqm signals on packets this large on the wire: a full
				   * segment's, never an ACK's or a probe's */

	/* GRE-in-UDP (udp.c, RFC 8086). */
	UDP_TX_PORTS = 8,	 /* sending sockets, that is source ports, per worker */
	UDP_GSO_SEGS = 64,	 /* datagrams per UDP_SEGMENT send (the kernel allows 128) */
	UDP_PAYLOAD_MAX = 65507, /* the largest UDP payload over IPv4: 65535 - 20 - 8 */
	UDP_RCVBUF = 16 << 20,	 /* receive buffer: whole superpackets of 64 sessions wait here
				  * while the worker is away; 4 MB lost thousands a GB */
	UDP_MIB_BUF = 16384,	 /* /proc/net/snmp6 is about 3 KB, /proc/net/snmp 1.3 KB */
	UDP_SPORT_LO = 49152,	 /* source ports from the dynamic range (RFC 6335, 6) */
	UDP_SPORT_HI = 65535,
	UDP_SPORT_TRIES = 64,	  /* tries at UDP_TX_PORTS free consecutive ports */
	UDP_SPORT_PID_STEP = 61,  /* where the tries start: prime steps over the range, from */
	UDP_SPORT_TRY_STEP = 997, /* the PID (two gregw rarely collide) and the try */

	/* Offloads (gso.c, coalesce.c). */
	GSO_HDR_MAX = 256, /* a segment's inner headers: IPv4 with options or IPv6 with some
			    * extension headers, and TCP with options; larger are refused */

	SUPERPACKET_MAX = 65535, /* largest superpacket: the IP total length */

	TX_MERGE_MAX = 65536 - 1 - 70, /* --tx-merge: the longest superpacket it makes, so that
					* its frame on the wire (Ethernet 14, outer IPv6 40,
					* UDP 8, GRE with a key 8 bytes) stays below the
					* kernel's default GSO limit (gso_max_size, 64 KB), as
					* TCP's own superpackets do */

	COALESCE_FLOWS = 8,   /* superpackets open at once per worker, as a NAPI poll holds few */
	COALESCE_BUF = 65536, /* one superpacket's buffer */

	/* Sequence accounting (stats.c, RFC 2890). A sending gregw numbers blocks of up to
	 * TX_MSGS per batch on each of up to CONFIG_MAX_WORKERS workers, so its numbers reach a
	 * receiving worker at most 64 x 1024 out of order: the window's reach either way. */
	SEQ_WINDOW = 65536,
	SEQ_RESYNC_RUN = 4, /* numbers in a row out of the window, each within SEQ_WINDOW of the
			     * one before, that restart it; a random spoofed number lands so near
			     * the one before once in 32768 */

	/* The flow table (flows.c). */
	FLOW_TABLE_SIZE = 1024, /* per worker, a power of two; later flows are counted, not kept */
	FLOW_PROBES = 8,	/* linear probing limit before a flow is "untracked" */

	/* The tunnel (gregw.c, icmp.c). */
	TUNNEL_TTL = 64,	  /* outer TTL / hop limit, and of ICMP errors: Linux's default */
	TUNNEL_MTU_MIN = 68,	  /* smallest inner MTU: IPv4's minimum (RFC 791) */
	TUNNEL_TXQUEUELEN = 1000, /* the TUN device's queue: what Linux gives an Ethernet device */

	/* Inner sources (allow.c, encap.c), matched by a scan per packet received. */
	ENCAP_ALLOW_MAX = CONFIG_MAX_ROUTES + 3, /* the routes, the two tunnel subnets and
						  * fe80::/10, or --allow-from's prefixes */
	ALLOW_LOCAL_MAX = 256, /* the namespace's interface addresses read at start; a gateway
				* namespace holds a few, a busy host dozens */
	ENCAP_OWN_MAX = ALLOW_LOCAL_MAX + 2, /* those and the TUN's own two */

	/* The tunnel table (tunnels.c); the tunnel file's limits (TUNNELS_MAX, ...) are
	 * common/tunfile.h's, which tunbed-wire reads too. */
	TUNNELS_RETIRED_MAX = 8, /* tables replaced but not yet freed; a change past them waits
				  * for the workers' next pass (a pass is well under a millisecond
				  * with work, and a worker asleep in poll holds no table) */
	TUNCTL_WAIT_MAX = 64,	 /* changes kept while the workers hold the tables (-EBUSY):
				  * CTL_CONNS clients' and more, for clients that hung up before
				  * their reply; one more is refused */
	TUNCTL_WAIT_MS = 1000,	 /* a change kept this long is refused, and one made and not in
				  * effect this long answered with an error: a worker's pass is
				  * far shorter, and the reply must leave within CTL_REPLY_MS */
	TUNCTL_RETRY_US = 2000,	 /* the control loop's fallback wake-ups while a reply waits
				  * for the workers' passes (a worker's pass end wakes it:
				  * tunnels_pub_want_wake); without the eventfd, what a reply may
				  * wait past the pass that held it */
};

#endif
