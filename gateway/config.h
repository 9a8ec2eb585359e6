/*
 * gregw's configuration: command-line options and the same keys in an optional config file
 * (INI, read with libinih: "key = value", no sections). The file is read first; options on
 * the command line override it, except `route` and `allow-from`, which accumulate.
 */
#ifndef TUNBED_GW_CONFIG_H
#define TUNBED_GW_CONFIG_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "gw_limits.h"
#include "netaddr.h"
#include "privs.h"
#include "pktring.h"
#include "tos.h"
#include "tunfile.h"

struct config {
	char tun[16];
	bool has_local;
	struct netaddr local, remote;
	bool has_remote;
	bool has_addr, has_addr6;
	struct netprefix addr, addr6;
	bool has_key;
	uint32_t key;
	bool seq, csum, mss_clamp;
	unsigned workers; /* 0: one per CPU of cpus */
	bool has_cpus;
	cpu_set_t cpus;
	int cpu_order[CONFIG_MAX_WORKERS]; /* --cpus as listed: worker i's CPU is the i-th */
	unsigned ncpu_order;
	unsigned mtu; /* 0: the path MTU minus the encapsulation */
	unsigned stats_interval_ms;
	char stats_json[CONFIG_PATH_MAX]; /* empty: stdout */
	char ctl[CONFIG_PATH_MAX];	  /* empty: the default path */
	char netns[64];			  /* empty: stay where started */
	enum pktring_kind rx_ring;
	bool offload;	 /* TUN superpackets: segment towards the wire, coalesce from it */
	bool fair_queue; /* --fair-queue on (default): TUN reads leave by flow (fq.h) */
	bool tx_merge;	 /* --tx-merge on (default): a flow's reads of a pass merged (merge.h) */
	bool aqm;	 /* --aqm codel: CoDel on each worker's flow queue (per flow) and receive
			  * queue (ring or socket) */
	unsigned aqm_target_us, aqm_interval_us;
	unsigned coalesce_hold_us; /* --coalesce-hold */
	bool fq_drop;		   /* --fq-full drop: a full flow queue drops, not pauses reads */
	unsigned fq_limit;	   /* --fq-limit: packets a worker's flow queue holds */
	bool ingress_drop;	   /* --ingress-drop tcx */
	bool wire_tx_packet;	   /* --wire-tx packet, or tap (where the TAP is refused) */
	bool wire_tx_tap;	   /* --wire-tx tap (default) */
	bool wire_tx_tap_asked;	   /* --wire-tx tap given: GRE-in-UDP through the TAP also to
				    * an interface that does not segment it (the kernel cuts) */
	bool wire_rx_ring;	   /* --wire-rx ring: GRE-in-UDP from the packet ring */
	bool tun_io_uring;	   /* --tun-io uring: TUN reads through io_uring (tun_uring.h) */
	bool gre_udp;		/* --encap gre-udp: GRE-in-UDP (RFC 8086) instead of GRE over IP */
	bool sched_batch;	/* --sched batch (default): workers under SCHED_BATCH */
	bool any_address;	/* addresses and routes may lie outside the benchmarking ranges */
	struct privs_user user; /* --user: who gregw is once set up */
	int nroutes;
	struct netprefix routes[CONFIG_MAX_ROUTES];
	unsigned nallow; /* --allow-from; 0: the routes and the tunnel subnets */
	struct netprefix allow[CONFIG_MAX_ALLOW];
	struct tos_cfg tos; /* --tos, --ttl: the outer DSCP and TTL (tos.h) */
	/* --tunnels FILE: the tunnel table at start, read by config_parse (remote and gre_udp
	 * then are its first tunnel's peer and its tunnels' one encapsulation). Empty: one
	 * tunnel, of --remote,
	 * --key, --seq, --csum and --encap. */
	char tunnels[CONFIG_PATH_MAX];
	struct tunfile tf;
	int verbose;
};

/* Exit status for a bad option or file: one line on stderr has named it already. */
enum { CONFIG_EXIT_USAGE = 2 };

/* Fills *c with the defaults. */
void config_defaults(struct config *c);

/*
 * Parses argv (after the program name) into *c, reading --config FILE first. On a bad value
 * prints one line naming the option (or FILE:LINE) and the value and returns -EINVAL; so too
 * for an address or route outside the benchmarking ranges without any-address, once every
 * option is read. For --help or --version prints and returns 1. Returns 0 when gregw should
 * run.
 */
int config_parse(struct config *c, int argc, char **argv);

/* Prints the --help text. */
void config_usage(void);

/* Frees what config_parse allocated (the tunnel file's tunnels); safe after a failed parse. */
void config_fini(struct config *c);

#endif
