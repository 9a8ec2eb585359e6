/*
 * gregw as a whole: the TUN device, the workers, the control socket and the main loop that
 * handles signals, telemetry and control requests. The main thread owns all of it; workers
 * see only their own struct worker and the shared read-only part.
 */
#ifndef TUNBED_GW_GREGW_H
#define TUNBED_GW_GREGW_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "ctl.h"
#include "encap.h"
#include "ifconf.h"
#include "tunctl.h"
#include "worker.h"

struct gregw {
	const struct config *cfg;
	struct encap_cfg ecfg;
	struct gw_shared sh;
	struct tunctl tun; /* the tunnels in force: the list the table is built from */
	unsigned nworkers;
	int cpus[CONFIG_MAX_WORKERS];
	struct worker *workers;
	unsigned ninited; /* workers set up (worker_init), released in reverse */
	int tun_fds[CONFIG_MAX_WORKERS];
	int tun_offloads; /* TUN_F_* in force with --offload on; 0 otherwise */
	bool sched_batch; /* the workers run under SCHED_BATCH */
	/* Why the workers read TUN by read(2), not io_uring (NULL: they do not), and what the
	 * kernel refused when that is why. */
	const char *tun_io_why;
	char tun_io_why_buf[160];
	int ifindex;
	int outer_ifindex;
	unsigned path_mtu;
	struct rx_group rxg; /* the receive side's transport, what every worker shares of it */
	struct tx_group txg; /* the send side's */
	bool steer_table;    /* flows meet workers through the flow table (steer.h), not a hash */
	struct ctl_server ctl;
	char ctl_path[CONFIG_PATH_MAX];
	FILE *stats_out;
	int sig_fd;   /* SIGINT, SIGTERM, SIGHUP: the main thread's alone (sigfd.h) */
	int timer_fd; /* --stats-interval */
	uint64_t start_ns;
	uint64_t ring_drops[CONFIG_MAX_WORKERS]; /* accumulated: the kernel's counter resets */
	struct ifconf_nl tun_nl;		 /* the TUN device's counters (sock NULL: none) */
};

/* Sets up, runs until SIGINT or SIGTERM, tears down. Returns the process exit status. */
int gregw_run(const struct config *cfg);

#endif
