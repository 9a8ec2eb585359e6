/*
 * JSON telemetry of gregw (see telemetry.h; fields documented in docs/gregw.md): gather reads
 * the workers' counters and the kernel's once, into a struct sample; the writers format the
 * sample and gregw's configuration, and read nothing else.
 */
#include "telemetry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpustat.h"
#include "jout.h"
#include "tun.h"

/* One worker's counters and CPU time, each read once. */
struct worker_sample {
	pid_t tid;
	bool udp_gso;	/* UDP_SEGMENT still in use (GRE-in-UDP) */
	bool has_cpu_s; /* its thread's CPU clock was read */
	bool has_task;	/* its /proc stat was read */
	double cpu_s;
	struct cpustat_task task;
	uint64_t ctr[STAT_MAX];
	uint64_t drops[DROP_MAX];
	uint64_t segs[STAT_TUN_DIRS][STAT_SEG_BUCKETS];
	uint64_t rx_drops; /* since start: gregw's ring_drops, as accumulated */
	unsigned flows;
	uint64_t flows_untracked;
};

/* What a stats document says, gathered before a line of it is written. */
struct sample {
	uint64_t time_ns, uptime_ns;
	struct worker_sample w[CONFIG_MAX_WORKERS];
	uint64_t tot[STAT_MAX], drops[DROP_MAX], rx_drops;
	uint64_t segs[STAT_TUN_DIRS][STAT_SEG_BUCKETS];
	bool udp_gso; /* offered by the kernel and still taken by every worker */
	bool has_mib; /* GRE-in-UDP: the namespace's UDP counters were read */
	struct udp_mib mib;
	bool has_tun_drops; /* the TUN device's tx_dropped was read */
	uint64_t tun_tx_dropped;
	struct seq_summary seq;
	const struct nexthop *nh; /* the main thread's; NULL: the transport follows none */
};

/* Prefixes as text: ["198.18.1.0/24", ...]. */
static json_t *prefixes_json(const struct encap_prefix *list, unsigned n)
{
	json_t *arr = json_array();
	char s[NETPREFIX_STRLEN];

	for (unsigned i = 0; i < n; i++) {
		struct netprefix x = { .addr.family = list[i].family, .len = list[i].len };

		memcpy(x.addr.bytes, list[i].addr, sizeof(x.addr.bytes));
		jout_append(arr, json_string(netaddr_format_prefix(&x, s)));
	}
	return arr;
}

static json_t *config_json(const struct gregw *g, const struct sample *s)
{
	const struct config *c = g->cfg;
	char a[NETADDR_STRLEN], p[NETPREFIX_STRLEN], names[64];
	json_t *o = json_object();
	struct netaddr local = { .family = g->ecfg.family };

	memcpy(local.bytes, g->ecfg.local, netaddr_len(local.family));
	jout_str(o, "tun", c->tun);
	jout_int(o, "ifindex", g->ifindex);
	jout_str(o, "local", netaddr_format(&local, a));
	jout_str(o, "remote", netaddr_format(&c->remote, a));
	jout_str(o, "addr", c->has_addr ? netaddr_format_prefix(&c->addr, p) : NULL);
	jout_str(o, "addr6", c->has_addr6 ? netaddr_format_prefix(&c->addr6, p) : NULL);
	jout_bool(o, "any_address", c->any_address);
	/* Inner sources taken from the peer, and never (docs/gregw.md, allowed sources). */
	jout_set(o, "allow_from", prefixes_json(g->ecfg.allow, g->ecfg.nallow));
	jout_set(o, "never_from", prefixes_json(g->ecfg.own, g->ecfg.nown));
	jout_bool(o, "key", c->has_key); /* whether, never which: the socket is no secret store */
	jout_bool(o, "seq", c->seq);
	jout_bool(o, "csum", c->csum);
	/* What --tos and --ttl say, "inherit" or the number (tos.h). */
	if (c->tos.dscp_inherit)
		jout_str(o, "tos", "inherit");
	else
		jout_int(o, "tos", c->tos.dscp);
	if (c->tos.ttl_inherit)
		jout_str(o, "ttl", "inherit");
	else
		jout_int(o, "ttl", c->tos.ttl);
	jout_int(o, "mtu", g->ecfg.mtu);
	jout_int(o, "path_mtu", g->path_mtu);
	jout_bool(o, "mss_clamp", c->mss_clamp);
	jout_int(o, "workers", g->nworkers);
	jout_str(o, "rx_ring", c->rx_ring == PKTRING_V2 ? "v2" : "v3");
	jout_str(o, "sched", g->sched_batch ? "batch" : "normal"); /* what is in force */
	jout_str(o, "encap", c->gre_udp ? "gre-udp" : "gre");
	jout_str(o, "tunnels", c->tunnels[0] ? c->tunnels : NULL); /* the file; null: --remote */
	jout_bool(o, "offload", c->offload);
	/* How the tunnel arrives: the packet ring, or GRE-in-UDP's socket. */
	jout_str(o, "wire_rx", g->rxg.ops == &rx_ring_ops ? "ring" : "socket");
	if (g->rxg.ops == &rx_ring_ops) { /* the drop at tc ingress (tcx), or the stack's sink */
		jout_str(o, "ingress_drop", g->rxg.ring.tcx_fd >= 0 ? "tcx" : "off");
		/* superpackets from the wire: taken whole, or dropped truncated */
		jout_str(o, "wire_gro", g->rxg.ring.whole ? "whole" : "off");
	}
	if (!c->gre_udp)
		jout_bool(o, "tx_csum_offload", g->sh.tx_csum_partial);
	/* How the tunnel leaves: superpackets whole through the TAP (the rest as its fallback
	 * sends it), frames on packet sockets to the next hop, the IP output, UDP sockets; and
	 * why not through the TAP. */
	jout_str(o, "wire_tx", g->txg.ops->name);
	jout_str(o, "wire_tx_why", g->txg.why);
	jout_str(o, "tap", g->txg.tap.nfds ? g->txg.tap.name : NULL);
	/* How flows meet workers (steer.h): turn by turn through the flow table, or a hash. */
	jout_str(o, "steering", g->steer_table ? "table" : "hash");
	jout_int(o, "coalesce_hold_us", c->coalesce_hold_us);
	jout_bool(o, "fair_queue", c->fair_queue);
	jout_bool(o, "tx_merge", c->tx_merge);
	jout_str(o, "fq_full", c->fq_drop ? "drop" : "pause");
	jout_int(o, "fq_limit", c->fq_limit);
	/* How the workers read TUN: read(2), or io_uring; and why not io_uring. */
	jout_str(o, "tun_io", g->sh.tun_uring ? "uring" : "read");
	jout_str(o, "tun_io_why", g->tun_io_why);
	jout_str(o, "aqm", c->aqm ? "codel" : "off");
	if (c->aqm) {
		jout_int(o, "aqm_target_us", c->aqm_target_us);
		jout_int(o, "aqm_interval_us", c->aqm_interval_us);
	}
	jout_str(o, "tun_offloads", tun_offload_names(g->tun_offloads, names, sizeof(names)));
	if (c->gre_udp) {
		jout_bool(o, "udp_gso", s->udp_gso);
		jout_bool(o, "udp_gro", g->sh.udp_gro);
	}
	jout_str(o, "ctl", g->ctl_path);
	return o;
}

/* The next hop as last looked up (nexthop.h): where GRE leaves, or why it takes the IP path. */
static json_t *next_hop_json(const struct nexthop *n)
{
	json_t *o = json_object();
	char a[NETADDR_STRLEN], mac[NEXTHOP_LLADDR_STRLEN];

	jout_str(o, "dev", n->dev[0] ? n->dev : NULL);
	jout_str(o, "via", n->via.family ? netaddr_format(&n->via, a) : NULL);
	jout_str(o, "lladdr", n->hop.ifindex ? nexthop_lladdr(&n->hop, mac) : NULL);
	jout_str(o, "state", nexthop_nud_name(n->nud));
	jout_str(o, "ip_path_why", n->why);
	jout_u64(o, "lookups", n->lookups);
	return o;
}

static json_t *drops_json(const uint64_t *drops)
{
	json_t *o = json_object();

	for (int r = DROP_NONE + 1; r < DROP_MAX; r++)
		jout_u64(o, drop_name((enum drop_reason)r), drops[r]);
	return o;
}

static unsigned flows_tracked(const struct flow_table *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < FLOW_TABLE_SIZE; i++)
		n += __atomic_load_n(&t->e[i].used, __ATOMIC_ACQUIRE) != 0;
	return n;
}

/* Numbers the tunnel never delivered (gather_seq). */
static json_t *seq_json(const struct sample *s)
{
	json_t *o = json_object();
	const uint64_t *tot = s->tot;
	const struct seq_summary *sum = &s->seq;

	jout_u64(o, "received", tot[STAT_SEQ_PACKETS]);
	jout_u64(o, "reordered", tot[STAT_SEQ_REORDERED]);
	jout_u64(o, "duplicate", tot[STAT_SEQ_DUPLICATE]);
	jout_u64(o, "out_of_window", tot[STAT_SEQ_OUTSIDE]);
	jout_u64(o, "resyncs", tot[STAT_SEQ_RESYNCS]);
	if (sum->any) {
		jout_int(o, "lowest", sum->lowest);
		jout_int(o, "highest", sum->highest);
		jout_u64(o, "lost", sum->lost);
	}
	return o;
}

/* Per GB of inner bytes, or null before the first byte. */
static json_t *per_gb(uint64_t n, uint64_t bytes)
{
	return bytes ? json_real((double)n * 1e9 / (double)bytes) : json_null();
}

/* What one direction through gregw costs: the system calls and their load, and how many
 * segments a TUN read or write carried (docs/gregw.md, "What a packet costs"). */
static json_t *direction_cost(uint64_t segments, uint64_t bytes, uint64_t calls,
			      const uint64_t *buckets)
{
	json_t *o = json_object(), *h = json_object();

	jout_u64(o, "segments", segments);
	jout_u64(o, "syscalls", calls);
	jout_set(o, "segments_per_syscall",
		 calls ? json_real((double)segments / (double)calls) : json_null());
	jout_set(o, "syscalls_per_gb", per_gb(calls, bytes));
	for (unsigned b = 0; b < STAT_SEG_BUCKETS; b++)
		jout_u64(h, stat_seg_bucket_name(b), buckets[b]);
	jout_set(o, "superpacket_segments", h);
	return o;
}

/* Per call, or null before the first. */
static json_t *per_call(uint64_t n, uint64_t calls)
{
	return calls ? json_real((double)n / (double)calls) : json_null();
}

/*
 * The sending side of tun_to_wire on its own: the sends (sendmmsg, sendmsg, writes into the
 * TAP) and the segments each carried, and of those the TAP's writes: superpackets whole, the
 * segments each carried (the kernel's, or the device's, to cut).
 */
static void send_cost(json_t *o, const uint64_t *tot)
{
	jout_u64(o, "sends", tot[STAT_SEND_CALLS]);
	jout_set(o, "segments_per_send", per_call(tot[STAT_WIRE_TX_PACKETS], tot[STAT_SEND_CALLS]));
	jout_set(o, "sends_per_gb", per_gb(tot[STAT_SEND_CALLS], tot[STAT_TUN_RX_BYTES]));
	jout_u64(o, "tap_writes", tot[STAT_TAP_WRITES]);
	jout_set(o, "segments_per_tap_write",
		 per_call(tot[STAT_TAP_SEGMENTS], tot[STAT_TAP_WRITES]));
}

static json_t *cost_json(const uint64_t *tot, const uint64_t segs[STAT_TUN_DIRS][STAT_SEG_BUCKETS])
{
	json_t *o = json_object(), *out;

	out = direction_cost(tot[STAT_TUN_RX_PACKETS], tot[STAT_TUN_RX_BYTES],
			     tot[STAT_TUN_READ_CALLS] + tot[STAT_SEND_CALLS], segs[STAT_TUN_READ]);
	send_cost(out, tot);
	jout_set(o, "tun_to_wire", out);
	jout_set(o, "wire_to_tun",
		 direction_cost(tot[STAT_TUN_TX_PACKETS], tot[STAT_TUN_TX_BYTES],
				tot[STAT_RECV_CALLS] + tot[STAT_TUN_WRITE_CALLS],
				segs[STAT_TUN_WRITE]));
	/* A worker serves both directions: its sleeps count against all it carried. */
	jout_u64(o, "wakeups", tot[STAT_POLLS]);
	jout_set(o, "wakeups_per_gb",
		 per_gb(tot[STAT_POLLS], tot[STAT_TUN_RX_BYTES] + tot[STAT_TUN_TX_BYTES]));
	return o;
}

/* Numbers the one tunnel of --seq never delivered: the span of the workers' windows of the
 * era most numbers were taken in, minus the numbers taken (tunnels_pub_seq). A tunnel file's
 * tunnels tell theirs in the tunnels command (tunctl.c). */
static void gather_seq(const struct gregw *g, struct seq_summary *out)
{
	const struct tunnels *t = tunnels_pub_current(&g->sh.tunnels);

	memset(out, 0, sizeof(*out));
	if (t && tunnels_count(t) == 1)
		tunnels_pub_seq(&g->sh.tunnels, tunnels_at(t, 0)->slot, out);
}

/* Worker i's counters, its CPU time from its clock and /proc, and the drops its ring or
 * socket reported since the last call, added to g->ring_drops (the kernel's count resets). */
static void gather_worker(struct gregw *g, unsigned i, struct worker_sample *ws)
{
	struct worker *w = &g->workers[i];
	clockid_t cid;
	struct timespec ts;

	ws->tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);
	ws->udp_gso = worker_udp_gso(w);
	ws->has_cpu_s = w->started && pthread_getcpuclockid(w->thread, &cid) == 0 &&
			clock_gettime(cid, &ts) == 0;
	if (ws->has_cpu_s)
		ws->cpu_s = clock_secs(clock_ns_from_ts(&ts));
	ws->has_task = ws->tid > 0 && cpustat_task_read(getpid(), ws->tid, &ws->task) == 0;
	for (int c = 0; c < STAT_MAX; c++)
		ws->ctr[c] = stat_read(&w->stats.ctr[c]);
	for (int r = 0; r < DROP_MAX; r++)
		ws->drops[r] = stat_read(&w->stats.drops[r]);
	for (unsigned d = 0; d < STAT_TUN_DIRS; d++)
		for (unsigned b = 0; b < STAT_SEG_BUCKETS; b++)
			ws->segs[d][b] = stat_read(&w->stats.segs[d][b]);
	g->ring_drops[i] += worker_rx_drops(w);
	ws->rx_drops = g->ring_drops[i];
	ws->flows = flows_tracked(w->flows);
	ws->flows_untracked = __atomic_load_n(&w->flows->untracked, __ATOMIC_RELAXED);
}

/* Everything a stats document says, read once: the clocks, every worker, their sums, and
 * the kernel's counters (the namespace's UDP, the TUN device's drops). */
static void gather(struct gregw *g, struct sample *s)
{
	struct ifconf_link l;

	s->time_ns = clock_real_ns();
	s->uptime_ns = clock_mono_ns() - g->start_ns;
	s->nh = tx_group_nexthop(&g->txg);
	s->udp_gso = g->sh.udp_gso;
	for (unsigned i = 0; i < g->nworkers; i++) {
		struct worker_sample *ws = &s->w[i];

		gather_worker(g, i, ws);
		s->udp_gso = s->udp_gso && ws->udp_gso;
		for (int c = 0; c < STAT_MAX; c++)
			s->tot[c] += ws->ctr[c];
		for (int r = 0; r < DROP_MAX; r++)
			s->drops[r] += ws->drops[r];
		for (unsigned d = 0; d < STAT_TUN_DIRS; d++)
			for (unsigned b = 0; b < STAT_SEG_BUCKETS; b++)
				s->segs[d][b] += ws->segs[d][b];
		s->rx_drops += ws->rx_drops;
	}
	/* The namespace's, not gregw's alone: datagrams it never saw. */
	s->has_mib = g->cfg->gre_udp && g->nworkers && worker_udp_mib(&g->workers[0], &s->mib) == 0;
	/* The TUN device's own drops (its tx_dropped: a queue's ring full, or a queue without a
	 * reader), packets gregw never read. */
	s->has_tun_drops =
		g->tun_nl.sock && ifconf_link_get(&g->tun_nl, g->ifindex, &l) == 0 && l.has_stats;
	if (s->has_tun_drops)
		s->tun_tx_dropped = l.tx_dropped;
	if (g->cfg->seq)
		gather_seq(g, &s->seq);
}

static json_t *worker_json(const struct gregw *g, unsigned i, const struct worker_sample *ws)
{
	const struct worker *w = &g->workers[i];
	json_t *o = json_object();
	double hz = (double)cpustat_ticks_per_sec();

	jout_int(o, "id", i);
	jout_set(o, "cpu", w->cpu >= 0 ? json_integer(w->cpu) : json_null());
	jout_int(o, "tid", ws->tid);
	if (g->cfg->gre_udp) /* false once this worker had UDP_SEGMENT refused */
		jout_bool(o, "udp_gso", ws->udp_gso);
	if (ws->has_cpu_s)
		jout_real(o, "cpu_s", ws->cpu_s);
	if (ws->has_task) {
		jout_real(o, "cpu_user_s", (double)ws->task.utime / hz);
		jout_real(o, "cpu_system_s", (double)ws->task.stime / hz);
		jout_int(o, "last_cpu", ws->task.processor);
	}
	for (int c = 0; c < STAT_MAX; c++)
		jout_u64(o, stat_name((enum stat_counter)c), ws->ctr[c]);
	/* The ring's frames, or the socket's buffers (a GRO burst counts once): named so. */
	jout_u64(o, g->rxg.ops->drops_name, ws->rx_drops);
	jout_set(o, "drops", drops_json(ws->drops));
	jout_int(o, "flows", ws->flows);
	jout_u64(o, "flows_untracked", ws->flows_untracked);
	return o;
}

/* The stats document of sample s: writes, reads nothing but s and gregw's configuration. */
static json_t *stats_json(const struct gregw *g, const struct sample *s, bool final)
{
	json_t *doc = json_object(), *workers = json_array(), *total = json_object();
	uint64_t all = 0;

	if (!doc || !workers || !total) {
		json_decref(doc);
		json_decref(workers);
		json_decref(total);
		return NULL;
	}
	jout_str(doc, "gregw", TUNBED_VERSION);
	jout_real(doc, "time", clock_secs(s->time_ns));
	jout_real(doc, "uptime", clock_secs(s->uptime_ns));
	jout_bool(doc, "final", final);
	jout_set(doc, "config", config_json(g, s));
	if (s->nh)
		jout_set(doc, "next_hop", next_hop_json(s->nh));
	for (unsigned i = 0; i < g->nworkers; i++)
		jout_append(workers, worker_json(g, i, &s->w[i]));
	for (int c = 0; c < STAT_MAX; c++)
		jout_u64(total, stat_name((enum stat_counter)c), s->tot[c]);
	jout_u64(total, g->rxg.ops->drops_name, s->rx_drops);
	if (s->has_mib) {
		jout_u64(total, "netns_udp_rcvbuf_errors", s->mib.rcvbuf_errors);
		jout_u64(total, "netns_udp_csum_errors", s->mib.csum_errors);
	}
	for (int r = 0; r < DROP_MAX; r++)
		all += s->drops[r];
	jout_u64(total, "dropped", all);
	jout_set(total, "drops", drops_json(s->drops));
	if (s->has_tun_drops)
		jout_u64(total, "tun_device_tx_dropped", s->tun_tx_dropped);
	else /* the TUN device's counters cannot be read */
		jout_set(total, "tun_device_tx_dropped", json_null());
	jout_set(total, "cost", cost_json(s->tot, s->segs));
	jout_set(doc, "total", total);
	if (g->cfg->seq)
		jout_set(doc, "seq", seq_json(s));
	jout_set(doc, "tunnels", tunctl_summary(&g->tun));
	jout_set(doc, "workers", workers);
	return doc;
}

json_t *telemetry_stats(struct gregw *g, bool final)
{
	struct sample *s = calloc(1, sizeof(*s));
	json_t *doc;

	if (!s)
		return NULL;
	gather(g, s);
	doc = stats_json(g, s, final);
	free(s);
	return doc;
}

json_t *telemetry_flows(struct gregw *g)
{
	json_t *doc = json_object(), *arr = json_array();
	char a[NETADDR_STRLEN];

	if (!doc || !arr)
		return NULL;
	for (unsigned i = 0; i < g->nworkers; i++) {
		const struct flow_table *t = g->workers[i].flows;

		for (unsigned k = 0; k < FLOW_TABLE_SIZE; k++) {
			const struct flow_entry *e = &t->e[k];
			struct netaddr x = { .family = e->key.family };
			json_t *o;

			if (!__atomic_load_n(&e->used, __ATOMIC_ACQUIRE))
				continue;
			o = json_object();
			jout_int(o, "worker", i);
			jout_int(o, "proto", e->key.proto);
			memcpy(x.bytes, e->key.addr[0], sizeof(x.bytes));
			jout_str(o, "a", netaddr_format(&x, a));
			jout_int(o, "a_port", e->key.port[0]);
			memcpy(x.bytes, e->key.addr[1], sizeof(x.bytes));
			jout_str(o, "b", netaddr_format(&x, a));
			jout_int(o, "b_port", e->key.port[1]);
			jout_u64(o, "encap_packets", stat_read(&e->encap_packets));
			jout_u64(o, "decap_packets", stat_read(&e->decap_packets));
			jout_append(arr, o);
		}
	}
	jout_set(doc, "flows", arr);
	return doc;
}
