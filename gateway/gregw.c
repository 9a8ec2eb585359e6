/*
 * gregw setup, start, main loop and teardown (see gregw.h). Acquire in order, release in
 * reverse: gregw_setup's goto ladder and gregw_teardown name the same steps, backwards.
 */
#include "gregw.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <libmnl/libmnl.h>
#include <unistd.h>

#include "allow.h"
#include "clock.h"
#include "ctl.h"
#include "ifconf.h"
#include "jout.h"
#include "log.h"
#include "mss.h"
#include "netns.h"
#include "priv.h"
#include "sigfd.h"
#include "telemetry.h"
#include "steer.h"
#include "thread.h"
#include "tun.h"
#include "tun_uring.h"
#include "uapi_newer.h"

/* Enters --netns before anything is created: the TUN device and every socket live there. */
static int enter_netns(const struct config *c)
{
	int fd, saved, rc;

	if (!c->netns[0])
		return 0;
	fd = netns_open(c->netns);
	if (fd < 0) {
		log_warnx("cannot open namespace '%s': %s", c->netns, strerror(-fd));
		return fd;
	}
	rc = netns_enter(fd, &saved);
	close(fd);
	if (rc) {
		log_warnx("cannot enter namespace '%s': %s", c->netns, strerror(-rc));
		return rc;
	}
	close(saved);
	return 0;
}

/* Workers and their CPUs: --cpus in order, else every CPU this process may run on. */
static int plan_workers(struct gregw *g)
{
	const struct config *c = g->cfg;
	int n = 0;

	if (c->has_cpus) {
		for (unsigned i = 0; i < c->ncpu_order; i++)
			g->cpus[n++] = c->cpu_order[i];
	} else {
		n = thread_cpu_list(NULL, g->cpus, CONFIG_MAX_WORKERS);
	}
	g->nworkers = c->workers ? c->workers : n ? (unsigned)n : 1;
	/* More workers than CPUs wrap around the list: allowed, if rarely wise. No CPU at all:
	 * the workers are not pinned. */
	for (unsigned i = (unsigned)n; i < g->nworkers; i++)
		g->cpus[i] = thread_cpu_pick(g->cpus, n, i);
	return 0;
}

/* Outer addresses, MTU and the encapsulation template the workers will share. */
static int plan_tunnel(struct gregw *g)
{
	const struct config *c = g->cfg;
	struct encap_cfg *e = &g->ecfg;
	struct ifconf_route rt;
	char a[NETADDR_STRLEN];
	unsigned overhead;
	int rc;

	memset(e, 0, sizeof(*e));
	e->family = c->remote.family;
	rc = ifconf_route_get(&c->remote, &rt);
	if (rc) {
		log_warnx("no route to --remote %s: %s", netaddr_format(&c->remote, a),
			  strerror(-rc));
		return rc;
	}
	g->outer_ifindex = rt.oif;
	g->path_mtu = rt.mtu;
	if (c->has_local) {
		memcpy(e->local, c->local.bytes, netaddr_len(e->family));
	} else if (rt.has_src) {
		memcpy(e->local, rt.src.bytes, netaddr_len(e->family));
	} else {
		log_warnx("no source address towards %s: give --local",
			  netaddr_format(&c->remote, a));
		return -EADDRNOTAVAIL;
	}
	memcpy(e->remote, c->remote.bytes, netaddr_len(e->family));
	/* Every tunnel's GRE options together: the tunnel MTU leaves room for the longest
	 * header; the key and flags of the one tunnel are the TAP's (tx_tap.c). */
	e->gre_flags = g->tun.gre_flags;
	e->key = g->tun.specs[0].key;
	e->tunnel_sources = g->tun.from_file;
	e->tos = c->tos;
	e->ttl = c->tos.ttl_inherit ? TUNNEL_TTL : c->tos.ttl;
	e->udp = c->gre_udp;
	e->udp_port = GRE_UDP_PORT;
	overhead = encap_overhead(e->family, e->gre_flags, e->udp);
	if (g->path_mtu <= overhead + TUNNEL_MTU_MIN) {
		log_warnx("path MTU %u towards the peer leaves no room for the tunnel",
			  g->path_mtu);
		return -EMSGSIZE;
	}
	e->mtu = c->mtu ? c->mtu : g->path_mtu - overhead;
	/* The testbed sets the inner MTU (docs/design.md); the gateway checks it. */
	if (e->mtu + overhead > g->path_mtu) {
		log_warnx(
			"--mtu %u does not fit: the path MTU %u towards the peer leaves %u for the "
			"tunnel (%u bytes of encapsulation)",
			c->mtu, g->path_mtu, g->path_mtu - overhead, overhead);
		return -EMSGSIZE;
	}
	if (c->has_addr6 && e->mtu < 1280) {
		log_warnx("tunnel MTU %u is below IPv6's 1280: --addr6 cannot work", e->mtu);
		return -EMSGSIZE;
	}
	e->mss_clamp = c->mss_clamp;
	e->has_addr4 = c->has_addr;
	e->has_addr6 = c->has_addr6;
	memcpy(e->addr4, c->addr.addr.bytes, 4);
	memcpy(e->addr6, c->addr6.addr.bytes, 16);
	/* Inner sources from the peer (--allow-from): before the TUN device exists. */
	rc = allow_plan(e, c);
	if (rc)
		return rc;
	encap_cfg_finish(e);
	g->sh.cfg = e;
	if (c->mss_clamp) {
		g->sh.mss4 = mss_for_mtu(AF_INET, e->mtu);
		g->sh.mss6 = mss_for_mtu(AF_INET6, e->mtu);
	}
	return 0;
}

/*
 * Two device settings the gateway needs. An IPv4-only tunnel keeps IPv6 off its TUN device:
 * otherwise the kernel sends MLD reports and router solicitations into it the moment it comes
 * up, and a peer whose gateway is not running yet answers each with ICMP "protocol
 * unreachable". And ICMP errors gregw writes into TUN come from the TUN's own address, which
 * the kernel drops as a martian unless the device accepts local sources.
 */
static void tune_device(const struct gregw *g)
{
	const struct config *c = g->cfg;
	int rc;

	if (!c->has_addr6 && !tunctl_has_inner6(&g->tun)) {
		rc = ifconf_sysctl("ipv6", c->tun, "disable_ipv6", "1");
		if (rc && rc != -ENOENT) /* no IPv6 in this kernel: nothing to quiet */
			log_warnx("cannot turn IPv6 off on %s: %s", c->tun, strerror(-rc));
	}
	if (c->has_addr) {
		rc = ifconf_sysctl("ipv4", c->tun, "accept_local", "1");
		if (rc)
			log_warnx("cannot set accept_local on %s (ICMP errors will not reach "
				  "senders): %s",
				  c->tun, strerror(-rc));
	}
}

static int setup_device(struct gregw *g)
{
	const struct config *c = g->cfg;
	char p[NETPREFIX_STRLEN];
	int rc;

	g->ifindex = (int)if_nametoindex(c->tun);
	if (g->ifindex <= 0)
		return -errno;
	tune_device(g);
	rc = ifconf_link_up(g->ifindex, g->ecfg.mtu, TUNNEL_TXQUEUELEN);
	if (rc) {
		log_warnx("cannot bring %s up with mtu %u: %s", c->tun, g->ecfg.mtu, strerror(-rc));
		return rc;
	}
	if (c->has_addr && (rc = ifconf_addr_add(g->ifindex, &c->addr))) {
		log_warnx("cannot add %s to %s: %s", netaddr_format_prefix(&c->addr, p), c->tun,
			  strerror(-rc));
		return rc;
	}
	if (c->has_addr6 && (rc = ifconf_addr_add(g->ifindex, &c->addr6))) {
		log_warnx("cannot add %s to %s: %s", netaddr_format_prefix(&c->addr6, p), c->tun,
			  strerror(-rc));
		return rc;
	}
	for (int i = 0; i < c->nroutes; i++) {
		rc = ifconf_route_replace(g->ifindex, &c->routes[i]);
		if (rc) {
			log_warnx("cannot route %s into %s: %s",
				  netaddr_format_prefix(&c->routes[i], p), c->tun, strerror(-rc));
			return rc;
		}
	}
	return tunctl_route(&g->tun, g->ifindex);
}

/* /run/gregw/[USER/][NETNS.]TUN.sock unless --ctl: a directory of its own for a --user,
 * who must be able to remove the socket at exit. */
static void default_ctl_path(struct gregw *g)
{
	const struct privs_user *u = &g->cfg->user;
	char ns[NETNS_NAME_MAX], dir[sizeof("/run/gregw/") + PRIVS_NAME_MAX];

	snprintf(dir, sizeof(dir), "/run/gregw/%s%s", u->set ? u->name : "", u->set ? "/" : "");
	if (g->cfg->ctl[0])
		snprintf(g->ctl_path, sizeof(g->ctl_path), "%s", g->cfg->ctl);
	else if (netns_identify(ns, sizeof(ns)) == 0)
		snprintf(g->ctl_path, sizeof(g->ctl_path), "%s%s.%s.sock", dir, ns, g->cfg->tun);
	else
		snprintf(g->ctl_path, sizeof(g->ctl_path), "%s%s.sock", dir, g->cfg->tun);
}

static void emit(struct gregw *g, bool final)
{
	json_t *doc = telemetry_stats(g, final);

	if (!doc)
		return;
	jout_dump(g->stats_out, doc, 0);
	json_decref(doc);
}

/* A document as the control socket sends it, with a newline: indented, or one line (line: a
 * kept connection's reply). NULL if out of memory. */
static char *dump_doc(json_t *doc, bool line, size_t *len)
{
	char *buf = NULL;
	FILE *f;
	int rc;

	if (!doc)
		return NULL;
	f = open_memstream(&buf, len);
	if (!f) {
		json_decref(doc);
		return NULL;
	}
	rc = jout_dump(f, doc, line ? 0 : JOUT_PRETTY);
	json_decref(doc);
	if (fclose(f) != 0 || rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The control socket's commands (ctl_reply_fn): stats (also an empty line), flows, and the
 * tunnels' (tunctl.h), whose changes may answer later (tunctl_retry). The reply to anything
 * else names it, quoted, in a JSON error. */
static char *ctl_reply(void *arg, uint64_t id, const char *cmd, size_t len, bool line,
		       size_t *out_len)
{
	struct gregw *g = arg;
	char quoted[4 * CTL_CMD_MAX + 1], msg[sizeof(quoted) + 64];
	json_t *err;
	bool handled, later;

	if (len == 0 || (len == 5 && memcmp(cmd, "stats", 5) == 0))
		return dump_doc(telemetry_stats(g, false), line, out_len);
	if (len == 5 && memcmp(cmd, "flows", 5) == 0)
		return dump_doc(telemetry_flows(g), line, out_len);
	err = tunctl_command(&g->tun, cmd, len, id, clock_mono_ns(), &handled, &later);
	if (later)
		return CTL_LATER;
	if (handled)
		return dump_doc(err, line, out_len);
	snprintf(msg, sizeof(msg),
		 "unknown command '%s'%s: expected stats, flows, tunnels, add, replace or remove",
		 ctl_quote(cmd, len, quoted, sizeof(quoted)),
		 len == CTL_CMD_MAX ? " (too long)" : "");
	err = json_object();
	if (err && jout_str(err, "error", msg)) {
		json_decref(err);
		err = NULL;
	}
	return dump_doc(err, line, out_len);
}

/* The reply to a tunnel change kept while the workers held the tables (tunctl_done_fn). */
static void ctl_done(void *arg, uint64_t id, json_t *reply)
{
	struct gregw *g = arg;
	size_t len = 0;
	char *out = dump_doc(reply, ctl_line(&g->ctl, id), &len);

	ctl_reply_later(&g->ctl, id, out, len, clock_mono_ns());
}

/*
 * --sched batch: the workers run under SCHED_BATCH, which the kernel never lets preempt the
 * running task on waking (check_preempt_wakeup_fair); otherwise each packet that wakes a
 * worker on a busy CPU switches it in, and a TCP endpoint or the other gateway's worker
 * sharing that CPU is cut short (what it gains: docs/gregw.md). A failure leaves normal
 * threads and says so.
 */
static void set_sched(struct gregw *g)
{
	struct sched_param sp = { 0 };

	g->sched_batch = false;
	if (!g->cfg->sched_batch)
		return;
	for (unsigned i = 0; i < g->nworkers; i++) {
		int rc = pthread_setschedparam(g->workers[i].thread, SCHED_BATCH, &sp);

		if (rc) {
			log_warnx("cannot run worker %u under SCHED_BATCH (%s): workers run as "
				  "normal threads",
				  i, strerror(rc));
			while (i--)
				pthread_setschedparam(g->workers[i].thread, SCHED_OTHER, &sp);
			return;
		}
	}
	g->sched_batch = true;
}

/*
 * The main thread's loop: signals, the stats timer, the next hop's changes and probe timer
 * (plain GRE on packet sockets) and control clients. Nothing here waits on a client: its
 * connections are polled with the rest (ctl.h).
 */
static void main_loop(struct gregw *g)
{
	enum { FIXED = 5, MAIN_RECLAIM_MS = 10 };
	struct pollfd pfd[FIXED + CTL_POLLFDS];
	struct nexthop *nh = tx_group_nexthop(&g->txg);
	struct tunnels_pub *pub = &g->sh.tunnels;
	bool armed = false;

	pfd[0] = (struct pollfd){ .fd = g->sig_fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = g->timer_fd, .events = POLLIN };
	/* poll skips a negative descriptor */
	pfd[2] = (struct pollfd){ .fd = nh ? mnl_socket_get_fd(nh->mon) : -1, .events = POLLIN };
	pfd[3] = (struct pollfd){ .fd = nh ? nh->timer_fd : -1, .events = POLLIN };
	pfd[4] = (struct pollfd){ .fd = tunnels_pub_wake_fd(pub), .events = POLLIN };
	for (;;) {
		int timeout = -1;
		struct timespec ts, *tsp = NULL;
		uint64_t wait_ns;
		/* Replaced tunnel tables wait for the workers' passes: freed on the next pass of
		 * this loop, which comes soon while any waits; a change's reply waits for them
		 * too (a change is answered in effect), and a change kept for them is made then,
		 * tried at every pass of this loop. While a reply waits, a worker that ends a
		 * pass wakes the loop (tunnels_pub_want_wake, armed before the check so that no
		 * pass's end is missed), and TUNCTL_RETRY_US is only the fallback: waking every
		 * 100 us instead took 34 wake-ups a change, 5% of a CPU at 100 changes a second,
		 * on the CPUs the workers use (docs/benchmarks.md). */
		bool kept = tunctl_retry(&g->tun, clock_mono_ns(), ctl_done, g) > 0;

		if (kept && !armed) {
			tunnels_pub_want_wake(pub, true);
			armed = true;
			kept = tunctl_retry(&g->tun, clock_mono_ns(), ctl_done, g) > 0;
		}
		if (!kept && armed) {
			tunnels_pub_want_wake(pub, false);
			armed = false;
		}

		ctl_pollfds(&g->ctl, pfd + FIXED, clock_mono_ns(), &timeout);
		if (tunnels_pub_reclaim(&g->sh.tunnels) &&
		    (timeout < 0 || timeout > MAIN_RECLAIM_MS))
			timeout = MAIN_RECLAIM_MS;
		wait_ns = timeout >= 0 ? (uint64_t)timeout * NSEC_PER_MSEC : UINT64_MAX;
		if (kept && wait_ns > (uint64_t)TUNCTL_RETRY_US * NSEC_PER_USEC)
			wait_ns = (uint64_t)TUNCTL_RETRY_US * NSEC_PER_USEC;
		if (wait_ns != UINT64_MAX) {
			ts = clock_ts_from_ns(wait_ns);
			tsp = &ts;
		}
		if (ppoll(pfd, FIXED + CTL_POLLFDS, tsp, NULL) < 0) {
			if (errno != EINTR)
				break;
			continue;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(g->sig_fd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: stopping", si.ssi_signo);
			break;
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(g->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks))
				emit(g, false);
		}
		if (pfd[2].revents & POLLIN)
			nexthop_changed(nh);
		if (pfd[3].revents & POLLIN)
			nexthop_tick(nh);
		if (pfd[4].revents & POLLIN)
			tunnels_pub_woken(pub);
		ctl_handle(&g->ctl, pfd + FIXED, clock_mono_ns(), ctl_reply, g);
	}
}

static void stop_workers(struct gregw *g)
{
	uint64_t one = 1;

	__atomic_store_n(&g->sh.stop, 1, __ATOMIC_RELEASE);
	if (write(g->sh.stop_fd, &one, sizeof(one)) < 0)
		log_warn("cannot wake the workers");
	for (unsigned i = 0; i < g->nworkers; i++)
		worker_join(&g->workers[i]);
}

static int open_timer(unsigned ms)
{
	struct itimerspec its = { 0 };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0 || !ms)
		return fd;
	its.it_interval = clock_ts_from_ns((uint64_t)ms * NSEC_PER_MSEC);
	its.it_value = its.it_interval;
	timerfd_settime(fd, 0, &its, NULL);
	return fd;
}

/*
 * The receive side's transport and which worker takes a flow (steer.h): the flow table, the
 * transport's part all workers share (rx.h: for plain GRE the rings' fanout program, its own
 * warning where refused), and the TUN device's program, which consults the same table
 * wherever the receive side does, or the two would disagree. Each steering part that the
 * kernel refuses is said once; the flows then go by a hash.
 */
static int receive_setup(struct gregw *g)
{
	const struct config *c = g->cfg;
	struct rx_cfg rxc = {
		.ring = c->rx_ring,
		.ifindex = g->outer_ifindex,
		.fanout_group = (unsigned)getpid(),
		.frame_max = g->path_mtu,
		.nworkers = g->nworkers,
		/* Superpackets from the wire (the kernel merged them, or a sender on this host
		 * left them whole) go into TUN whole where it takes them, else cut by gregw
		 * (tunq_write_merged): taken whole with offloads off too. */
		.gro = true,
		.ingress_drop = c->ingress_drop,
		.udp_ring = c->wire_rx_ring,
	};
	int rc = steer_maps_create(&g->sh.steer), prog;

	if (rc)
		log_warnx(
			"no flow table for the workers (LRU maps and BPF atomics: Linux 5.12; %s): "
			"flows go to workers by a hash, unevenly when they are few",
			strerror(-rc));
	rc = rx_group_init(&g->rxg, &g->sh, &rxc);
	if (rc) {
		steer_maps_close(&g->sh.steer);
		return rc;
	}
	if (!g->rxg.tun_steer)
		return 0;
	prog = steer_tun_load(&g->sh.steer, g->nworkers);
	if (prog < 0 || (rc = steer_tun_attach(g->tun_fds[0], prog)) < 0)
		log_warnx("TUN queue steering unavailable (TUNSETSTEERINGEBPF: Linux 4.16; %s): a "
			  "flow's first packets may pass another worker",
			  strerror(prog < 0 ? -prog : -rc));
	else
		g->steer_table = g->sh.steer.flows >= 0;
	if (prog >= 0)
		close(prog);
	return 0;
}

static void receive_teardown(struct gregw *g)
{
	rx_group_fini(&g->rxg);
	steer_maps_close(&g->sh.steer);
}

/* The send side's transport, as --wire-tx asks and the kernel allows (tx.h). */
static int send_setup(struct gregw *g)
{
	const struct tx_cfg txc = {
		.tap = g->cfg->wire_tx_tap,
		.tap_software = g->cfg->wire_tx_tap_asked,
		.packet = g->cfg->wire_tx_packet,
		.nworkers = g->nworkers,
		.ifindex = g->outer_ifindex,
	};

	int rc = tx_group_init(&g->txg, &g->sh, &txc);

	g->tun.tap = rc == 0 && tx_group_tap(&g->txg);
	return rc;
}

/* What the workers' queues share of the options. */
static void plan_queues(struct gregw *g)
{
	const struct config *c = g->cfg;

	g->sh.vnet_hdr = c->offload;
	g->sh.aqm = c->aqm;
	g->sh.aqm_target_ns = (uint64_t)c->aqm_target_us * 1000;
	g->sh.aqm_interval_ns = (uint64_t)c->aqm_interval_us * 1000;
	g->sh.coalesce_hold_ns = (uint64_t)c->coalesce_hold_us * 1000;
	g->sh.fair_queue = c->fair_queue;
	g->sh.tx_merge = c->tx_merge;
	g->sh.fq_full = c->fq_drop ? FQ_FULL_DROP : FQ_FULL_PAUSE;
	g->sh.fq_limit = c->fq_limit;
}

/* --offload on: the superpackets the TUN device takes and hands over, said once. */
static void tun_features(struct gregw *g)
{
	char names[64];

	if (!g->cfg->offload)
		return;
	/* The features belong to the device: one queue sets them for all. */
	g->tun_offloads = tun_offload(g->tun_fds[0]);
	if (g->tun_offloads < 0) {
		log_warnx("TUN offloads refused (TUNSETOFFLOAD: Linux 2.6.27; %s): no superpackets "
			  "from TUN (coalesced ones are still written into it)",
			  strerror(-g->tun_offloads));
		g->tun_offloads = 0;
	} else if (!(g->tun_offloads & TUN_F_TSO4)) {
		log_warnx("TUN offloads: only %s: no TCP superpackets from this kernel",
			  tun_offload_names(g->tun_offloads, names, sizeof(names)));
	} else if (!(g->tun_offloads & TUN_F_USO4)) {
		log_warnx("TUN offloads: %s: no UDP superpackets from TUN (USO: Linux 6.2)",
			  tun_offload_names(g->tun_offloads, names, sizeof(names)));
	} else {
		log_info("TUN offloads: %s",
			 tun_offload_names(g->tun_offloads, names, sizeof(names)));
	}
	g->sh.tun_offloads = g->tun_offloads;
}

/*
 * --tun-io: the workers' TUN reads lent to io_uring where asked, the flow queue takes them
 * (they land in its slots) and the kernel gives a ring as tun_uring.h sets it up; else
 * read(2), said once. Before privileges are dropped: the rings are made in worker_init.
 */
static void choose_tun_io(struct gregw *g)
{
	const char *what;
	int rc;

	g->sh.tun_uring = false;
	if (!g->cfg->tun_io_uring) {
		g->tun_io_why = "--tun-io read";
		return;
	}
	if (!g->cfg->fair_queue) {
		log_warnx("--tun-io uring needs --fair-queue on: TUN reads by read(2)");
		g->tun_io_why = "--fair-queue off";
		return;
	}
	rc = tun_uring_probe(g->tun_fds[0], &what);
	if (rc) {
		log_warnx("io_uring refused (%s: %s): TUN reads by read(2)", what, strerror(-rc));
		snprintf(g->tun_io_why_buf, sizeof(g->tun_io_why_buf), "no io_uring: %s: %s", what,
			 strerror(-rc));
		g->tun_io_why = g->tun_io_why_buf;
		return;
	}
	g->sh.tun_uring = true;
	g->tun_io_why = NULL;
}

/* The TUN device, a queue per worker, its features, up with its addresses and routes. */
static int open_tun(struct gregw *g)
{
	const struct config *c = g->cfg;
	int rc = tun_open(c->tun, g->nworkers, c->offload, g->tun_fds);

	if (rc) {
		log_warnx("cannot create TUN device %s: %s%s", c->tun, strerror(-rc),
			  rc == -EEXIST ? " (a device of that name exists: choose another --tun)"
					: "");
		return rc;
	}
	tun_features(g);
	choose_tun_io(g);
	rc = setup_device(g);
	if (rc)
		tun_close(g->tun_fds, g->nworkers);
	return rc;
}

/* --stats-json: the file the documents are appended to, else stdout; and the route socket the
 * TUN device's own counters are read on (opened now: none can be once privileges are gone). */
static int open_stats(struct gregw *g)
{
	const char *path = g->cfg->stats_json;
	int rc = ifconf_nl_open(&g->tun_nl);

	if (rc)
		log_warnx("no route socket for the TUN device's counters (%s): the stats say null",
			  strerror(-rc));
	if (!path[0])
		return 0;
	g->stats_out = fopen(path, "a");
	if (!g->stats_out) {
		rc = -errno;
		log_warn("cannot open --stats-json %s", path);
		g->stats_out = stdout;
		ifconf_nl_close(&g->tun_nl);
		return rc;
	}
	return 0;
}

static void close_stats(struct gregw *g)
{
	if (g->stats_out != stdout)
		fclose(g->stats_out);
	g->stats_out = stdout;
	ifconf_nl_close(&g->tun_nl);
}

static void close_workers(struct gregw *g)
{
	while (g->ninited > 0)
		worker_fini(&g->workers[--g->ninited]);
	free(g->workers);
	g->workers = NULL;
}

/* Each worker's queues, buffers and sockets; then what the receive side needs of them all. */
static int open_workers(struct gregw *g)
{
	int rc;

	g->workers = aligned_alloc(64, sizeof(*g->workers) * g->nworkers);
	if (!g->workers) {
		log_warnx("out of memory for %u workers", g->nworkers);
		return -ENOMEM;
	}
	for (g->ninited = 0; g->ninited < g->nworkers; g->ninited++) {
		unsigned i = g->ninited;

		rc = worker_init(&g->workers[i], i, g->cpus[i], g->tun_fds[i], &g->rxg, &g->txg);
		if (rc) {
			log_warnx("cannot set up worker %u: %s", i, strerror(-rc));
			close_workers(g);
			return rc;
		}
	}
	rx_group_ready(&g->rxg, &g->workers[0].rx);
	return 0;
}

/* The control socket, at --ctl or the default path. A failure leaves the path alone: it may
 * be another gregw's. */
static int open_ctl(struct gregw *g)
{
	const struct privs_user *u = &g->cfg->user;
	int rc;

	default_ctl_path(g);
	rc = ctl_listen(&g->ctl, g->ctl_path, u);
	if (rc == -EACCES && u->set)
		log_warnx("cannot listen on %s: user %s may not remove it at exit (give --ctl in a "
			  "directory %s may write)",
			  g->ctl_path, u->name, u->name);
	else if (rc)
		log_warnx("cannot listen on %s: %s%s", g->ctl_path, strerror(-rc),
			  rc == -EADDRINUSE ? " (another gregw answers there: give --ctl)"
			  : rc == -EEXIST   ? " (not a socket: give --ctl)"
					    : "");
	return rc;
}

static void close_ctl(struct gregw *g)
{
	ctl_close(&g->ctl);
	unlink(g->ctl_path);
}

/* The tunnels at start (tunctl.h), published for the workers to come. */
static int open_tunnels(struct gregw *g)
{
	int rc = tunctl_init(&g->tun, g->cfg);

	if (rc == 0)
		rc = tunnels_pub_init(&g->sh.tunnels, g->nworkers);
	if (rc == 0 && (rc = tunctl_publish(&g->tun, &g->sh.tunnels)))
		tunnels_pub_fini(&g->sh.tunnels);
	if (rc) {
		log_warnx("cannot set the tunnel table up: %s", strerror(-rc));
		tunctl_fini(&g->tun);
	}
	return rc;
}

static void close_tunnels(struct gregw *g)
{
	tunnels_pub_fini(&g->sh.tunnels);
	tunctl_fini(&g->tun);
}

/*
 * Sets gregw up: the plan (namespace, workers, the tunnels and their table, the outer side),
 * the stats output, the TUN device, the receive side's transport and the flows' steering, the
 * workers' stop eventfd, the send side's transport, the workers, the control socket, the stats
 * timer. A failure is said where
 * it happens; what was acquired is released in reverse, and -errno returned. gregw_teardown
 * releases the whole of it the same way.
 */
static int gregw_setup(struct gregw *g)
{
	int rc;

	if ((rc = enter_netns(g->cfg)) || (rc = plan_workers(g)) || (rc = open_tunnels(g)))
		return rc;
	rc = plan_tunnel(g);
	if (rc)
		goto err_tunnels;
	plan_queues(g);
	rc = open_stats(g);
	if (rc)
		goto err_tunnels;
	rc = open_tun(g);
	if (rc)
		goto err_stats;
	rc = receive_setup(g);
	if (rc)
		goto err_tun;
	g->sh.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->sh.stop_fd < 0) {
		rc = -errno;
		log_warn("eventfd");
		goto err_receive;
	}
	rc = send_setup(g);
	if (rc)
		goto err_stop;
	rc = open_workers(g);
	if (rc)
		goto err_send;
	rc = open_ctl(g);
	if (rc)
		goto err_workers;
	g->timer_fd = open_timer(g->cfg->stats_interval_ms);
	if (g->timer_fd < 0) {
		rc = -errno;
		log_warn("timerfd");
		goto err_ctl;
	}
	return 0;

err_ctl:
	close_ctl(g);
err_workers:
	close_workers(g);
err_send:
	tx_group_fini(&g->txg);
err_stop:
	close(g->sh.stop_fd);
err_receive:
	receive_teardown(g);
err_tun:
	tun_close(g->tun_fds, g->nworkers);
err_stats:
	close_stats(g);
err_tunnels:
	close_tunnels(g);
	return rc;
}

/* Releases what gregw_setup acquired, in reverse, once the workers have stopped. */
static void gregw_teardown(struct gregw *g)
{
	close(g->timer_fd);
	close_ctl(g);
	close_workers(g);
	tx_group_fini(&g->txg);
	close(g->sh.stop_fd);
	receive_teardown(g);
	tun_close(g->tun_fds, g->nworkers);
	close_stats(g);
	close_tunnels(g);
}

/*
 * Gives up what the running gateway need not keep (priv.h: the workers start with what
 * remains), starts the workers and says gregw is up. Returns 0 or -errno, said once; the
 * workers it started are stop_workers' to stop.
 */
static int gregw_start(struct gregw *g)
{
	const struct config *c = g->cfg;
	struct netaddr local = { .family = g->ecfg.family };
	char a[NETADDR_STRLEN], r[NETADDR_STRLEN];
	int rc = priv_drop(&c->user);

	if (rc)
		return rc;
	for (unsigned i = 0; i < g->nworkers; i++) {
		rc = worker_start(&g->workers[i]);
		if (rc) {
			log_warnx("cannot start worker %u: %s", i, strerror(-rc));
			return rc;
		}
	}
	set_sched(g);
	memcpy(local.bytes, g->ecfg.local, netaddr_len(local.family));
	log_info("%s up: mtu %u, %u workers, GRE %s -> %s%s%s%s, %u tunnels, control %s", c->tun,
		 g->ecfg.mtu, g->nworkers, netaddr_format(&local, a), netaddr_format(&c->remote, r),
		 c->has_key ? " key" : "", c->seq ? " seq" : "", c->csum ? " csum" : "", g->tun.n,
		 g->ctl_path);
	return 0;
}

int gregw_run(const struct config *cfg)
{
	struct gregw *g;
	int status = 1;

	g = calloc(1, sizeof(*g));
	if (!g)
		fatal("calloc");
	g->cfg = cfg;
	g->start_ns = clock_mono_ns();
	g->stats_out = stdout;
	g->ctl.fd = -1;
	g->sh.steer.flows = g->sh.steer.next = -1;
	for (unsigned i = 0; i < CONFIG_MAX_WORKERS; i++)
		g->tun_fds[i] = -1;
	/* Only the main thread takes signals: block them before any worker exists. */
	g->sig_fd = sigfd_open(SIGFD_HUP | SIGFD_PIPE | SIGFD_NONBLOCK);
	if (g->sig_fd < 0)
		fatalx("signalfd: %s", strerror(-g->sig_fd));
	if (gregw_setup(g) == 0) {
		if (gregw_start(g) == 0) {
			main_loop(g);
			status = 0;
		}
		stop_workers(g);
		if (status == 0)
			emit(g, true);
		gregw_teardown(g);
	}
	close(g->sig_fd);
	free(g);
	return status;
}
