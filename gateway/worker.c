/*
 * The worker loop (see worker.h for the map): TUN -> tunnel -> wire and wire -> tunnel -> TUN,
 * and what a gateway decides per packet between the two queues: the ICMP error for a packet
 * too big (RFC 792, RFC 4443), MSS clamping, the flow table, CoDel's mark or drop. Every
 * outcome is a counter; the loop allocates nothing and takes no lock.
 */
#include "worker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mss.h"
#include "thread.h"

static inline bool stopping(const struct worker *w)
{
	return __atomic_load_n(&w->sh->stop, __ATOMIC_ACQUIRE);
}

/* Token bucket of WORKER_ICMP_PER_SEC per one-second window, as routers limit errors. */
static bool icmp_allowed(struct worker *w)
{
	uint64_t now = clock_mono_ns() / NSEC_PER_SEC;

	if (now != w->icmp_window) {
		w->icmp_window = now;
		w->icmp_in_window = 0;
	}
	return w->icmp_in_window++ < WORKER_ICMP_PER_SEC;
}

static void send_too_big(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip)
{
	size_t n;

	if (!icmp_allowed(w)) {
		stat_add(&w->stats.ctr[STAT_ICMP_LIMITED], 1);
		return;
	}
	n = icmp_too_big(w->sh->cfg, pkt, len, ip, w->icmp, sizeof(w->icmp));
	if (n && tunq_put(&w->tun, w->icmp, n))
		stat_add(&w->stats.ctr[STAT_ICMP_SENT], 1);
}

/* The table entry of pkt's flow, inserted if new; NULL when the table has no room for it.
 * *hash gets the flow's hash (the same both ways), which over UDP picks its source port. */
static struct flow_entry *flow_of(struct worker *w, const uint8_t *pkt, size_t len,
				  const struct ip_info *ip, uint32_t *hash)
{
	struct flow_key k;
	struct flow_entry *e;

	flow_key_from(pkt, len, ip, &k);
	e = flow_get(w->flows, &k);
	*hash = e ? e->hash : flow_hash(&k);
	return e;
}

static void clamp(struct worker *w, uint8_t *pkt, size_t len, const struct ip_info *ip,
		  struct l4_csum csum)
{
	if (w->sh->cfg->mss_clamp &&
	    mss_clamp(pkt, len, ip, ip->family == AF_INET6 ? w->sh->mss6 : w->sh->mss4,
		      csum.start != 0))
		stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
}

/* Inner packets and bytes from TUN into tunnel tn's send queue: the worker's and the tunnel's. */
static void count_tx(struct worker *w, const struct tunnel *tn, uint64_t packets, uint64_t bytes)
{
	struct tunnel_stats *ts = tunnels_stats(&w->sh->tunnels, w->id, tn);

	stat_add(&w->stats.ctr[STAT_TUN_RX_PACKETS], packets);
	stat_add(&w->stats.ctr[STAT_TUN_RX_BYTES], bytes);
	tunnels_stat_add(ts, TUNNEL_TX_PACKETS, packets);
	tunnels_stat_add(ts, TUNNEL_TX_BYTES, bytes);
}

/* The tunnel of an inner destination in the pass's table, or NULL. */
static const struct tunnel *tunnel_to(const struct worker *w, const struct ip_info *ip)
{
	uint32_t i = tunnels_encap(w->tab, ip->family, ip->dst);

	return i == TUNNELS_NONE ? NULL : tunnels_at(w->tab, i);
}

/* A packet too big for the tunnel MTU: the ICMP error where it may have one, and a drop of the
 * tunnel its destination leads into. */
static void too_big(struct worker *w, const struct tun_pkt *p)
{
	const struct tunnel *tn = tunnel_to(w, &p->ip);

	if (p->ip.df)
		send_too_big(w, p->data, p->len, &p->ip);
	if (tn)
		tunnels_stat_drop(tunnels_stats(&w->sh->tunnels, w->id, tn), DROP_TX_TOO_BIG);
}

/* A superpacket handed over whole into the send queue; counted as the segments it carries,
 * each with its headers, as if it had been cut. */
static void add_whole(struct worker *w, const struct tunnel *tn, const struct tun_pkt *p,
		      unsigned sock)
{
	const struct tx_gso gso = { .size = (uint16_t)p->gso->mss,
				    .type = (uint8_t)((p->ip.family == AF_INET6
							       ? VIRTIO_NET_HDR_GSO_TCPV6
							       : VIRTIO_NET_HDR_GSO_TCPV4) |
						      (p->gso->ecn ? VIRTIO_NET_HDR_GSO_ECN : 0)),
				    .l4_off = (uint16_t)p->gso->l4_off,
				    .hdr_len = (uint16_t)p->gso->hdr_len,
				    .nseg = (uint16_t)p->nseg };

	txq_add_whole(&w->tx, tn, p->data, p->len, &gso, sock);
	count_tx(w, tn, p->nseg, p->len + (p->nseg - 1) * (size_t)gso.hdr_len);
}

/*
 * The packets of a pass from TUN into the send queue, each into the tunnel of its inner
 * destination (longest prefix; none: dropped, tx_no_tunnel). Over UDP, what may share a
 * UDP_SEGMENT message is a flow's (its table entry's number), or an untracked superpacket's
 * segments; its hash picks its socket, that is its source port. A superpacket's tunnel and
 * flow are looked up once, at its first segment. Superpackets the transport takes whole this
 * pass are queued so, but those of a tunnel it cannot carry whole, which are cut (tunq_cut).
 * Returns packets handled.
 */
static unsigned from_tun(struct worker *w)
{
	unsigned n = 0, sock = 0;
	uint32_t group = 0, hash;
	const struct tunnel *tn = NULL;
	struct tun_pkt p;

	tunq_whole(&w->tun, txq_whole_max(&w->tx));
	tunq_begin(&w->tun);
	while (tunq_next(&w->tun, txq_hdr_room(&w->tx), &p)) {
		struct flow_entry *e;

		n++;
		if (p.drop != DROP_NONE)
			goto drop;
		if (p.seg == 0) {
			tn = tunnel_to(w, &p.ip);
			if (!tn)
				goto no_tunnel;
			/* Its headers where tunq_next wrote a segment's: nothing queued since. */
			if (p.whole && !txq_whole_takes(&w->tx, tn))
				tunq_cut(&w->tun, txq_hdr_room(&w->tx), &p);
			if (!p.nseg)
				clamp(w, p.data, p.len, &p.ip, p.csum);
			e = flow_of(w, p.data, p.len, &p.ip, &hash);
			if (e)
				stat_add(&e->encap_packets, p.nseg ? p.nseg : 1);
			group = e	 ? (uint32_t)(e - w->flows->e) + 1
				: p.nseg ? txq_group(&w->tx)
					 : 0;
			sock = hash % UDP_TX_PORTS;
		} else if (!tn) {
			continue; /* a superpacket for no tunnel: counted once, at its first */
		}
		if (p.whole) {
			add_whole(w, tn, &p, sock);
			continue;
		}
		txq_add(&w->tx, tn, p.data, p.len, p.tail, p.tail_len, group, sock, p.csum);
		count_tx(w, tn, 1, p.len + p.tail_len);
		continue;
no_tunnel:
		p.drop = DROP_TX_NO_TUNNEL;
drop:
		if (p.drop == DROP_TX_TOO_BIG)
			too_big(w, &p);
		stat_add(&w->stats.drops[p.drop], 1);
	}
	txq_flush(&w->tx);
	return n;
}

/* Inner packets and bytes of tunnel tn decapsulated into TUN. */
static void count_rx(struct worker *w, const struct tunnel *tn, uint64_t packets, uint64_t bytes)
{
	struct tunnel_stats *ts = tunnels_stats(&w->sh->tunnels, w->id, tn);

	tunnels_stat_add(ts, TUNNEL_RX_PACKETS, packets);
	tunnels_stat_add(ts, TUNNEL_RX_BYTES, bytes);
}

/* A decapsulated packet: its flow and sequence accounting, the MSS clamp, then into TUN, its
 * checksum as it came (csum). The buffer is ours until the next datagram is taken, so the
 * packet may be edited in place. */
static void deliver_inner(struct worker *w, const struct decap_result *r, struct l4_csum csum)
{
	uint8_t *inner = (uint8_t *)r->inner;
	struct flow_entry *e;
	uint32_t hash;

	e = flow_of(w, inner, r->inner_len, &r->ip, &hash);
	if (e)
		stat_add(&e->decap_packets, 1);
	count_rx(w, r->tn, 1, r->inner_len);
	/* A number out of the window is counted and judged no further: one spoofed packet
	 * moves neither the window nor its flow's last number. The window is the worker's of
	 * the packet's tunnel, whose numbers are the tunnel's own. */
	if (r->has_seq) {
		struct tunnels_pub *pub = &w->sh->tunnels;
		struct seq_window *wins = tunnels_seq_windows(pub, r->tn), *win = &wins[w->id];

		if (stats_seq(win, &w->stats, wins, pub->nreaders, r->seq) && e) {
			switch (flow_seq(e, r->seq, win->seq.id)) {
			case 1:
				stat_add(&w->stats.ctr[STAT_SEQ_REORDERED], 1);
				break;
			case 2:
				stats_seq_duplicate(win, &w->stats);
				break;
			}
		}
	}
	clamp(w, inner, r->inner_len, &r->ip, csum);
	tunq_write(&w->tun, inner, r->inner_len, csum);
}

/*
 * A superpacket from the wire (rx.h: the kernel merged the peer's packets on the interface, or
 * a sender on this host left it whole): into TUN whole, counted as the packets it was, or
 * would have been, on the wire. GRE's GRO merges only packets without sequence numbers, a
 * sender leaves whole only those (tx_tap.h), and never a SYN: no sequence accounting, no MSS
 * clamp to do.
 */
static enum drop_reason deliver_merged(struct worker *w, const struct rx_dgram *d,
				       const struct decap_result *r)
{
	size_t inner_off = (size_t)(r->inner - d->data);
	struct tun_merged m = {
		.gso_size = d->merged.gso_size,
		.gso_type = d->merged.gso_type,
		.csum_start = (uint16_t)(d->merged.csum_start - inner_off),
		.csum_offset = d->merged.csum_offset,
	};
	struct flow_entry *e;
	unsigned nseg;
	uint32_t hash;

	if (d->merged.csum_start <= inner_off)
		return DROP_BAD_INNER;
	nseg = tunq_write_merged(&w->tun, r->inner, r->inner_len, &r->ip, &m);
	if (!nseg)
		return DROP_BAD_INNER;
	/* The packets as they crossed the wire, each with its outer and inner headers (the
	 * socket's datagram starts past its outer IP and UDP headers). */
	stat_add(&w->stats.ctr[STAT_WIRE_RX_PACKETS], nseg - 1);
	stat_add(&w->stats.ctr[STAT_WIRE_RX_BYTES],
		 (uint64_t)(nseg - 1) * (d->wirelen - d->len + inner_off + m.hdr_len));
	e = flow_of(w, r->inner, r->inner_len, &r->ip, &hash);
	if (e)
		stat_add(&e->decap_packets, nseg);
	count_rx(w, r->tn, nseg, r->inner_len + (uint64_t)(nseg - 1) * m.hdr_len);
	return DROP_NONE;
}

/*
 * A packet whose inner checksum a sender on this host left to a device (rx_dgram.csum_partial):
 * its field must be the inner TCP or UDP header's, where the frame's virtio header, when it
 * has one, says it is. Anything else is dropped: TUN would be told to complete a field the
 * sender never meant.
 */
static enum drop_reason partial_csum(const struct rx_dgram *d, const struct decap_result *r,
				     struct l4_csum *csum)
{
	size_t inner_off = (size_t)(r->inner - d->data);

	if (!inet_l4_csum_at(r->inner_len, &r->ip, csum))
		return DROP_BAD_INNER;
	if (d->merged.csum_start && (d->merged.csum_start != inner_off + csum->start ||
				     d->merged.csum_offset != csum->offset))
		return DROP_BAD_INNER;
	return DROP_NONE;
}

/*
 * Over GRE-in-UDP the socket says nothing of checksums (the packet ring's
 * TP_STATUS_CSUMNOTREADY has no counterpart): a sender on this host whose superpacket the
 * kernel cut in software, before a device without UDP tunnel segmentation (a veth with
 * tx-udp_tnl-segmentation off), left each segment's inner checksum partial, and a veth
 * delivers it so. A field that holds the pseudo-header's sum is completed, as the ring's are.
 */
static bool udp_partial_csum(const struct decap_result *r, struct l4_csum *csum)
{
	struct l4_csum at;

	if (!inet_l4_csum_at(r->inner_len, &r->ip, &at) ||
	    !inet_l4_csum_left_partial(r->inner, &r->ip, at))
		return false;
	*csum = at;
	return true;
}

/* The first spoofed_source a worker drops, and then at most one a minute, said on stderr with
 * the way to allow it: a pair started without --route carries nothing and would say nothing
 * but a counter. A drop, off the fast path: one log line a minute at most. */
static void tell_spoofed(struct worker *w, const struct ip_info *ip)
{
	char addr[INET6_ADDRSTRLEN];
	uint64_t now = clock_mono_ns();

	if (w->spoofed_told_ns && now - w->spoofed_told_ns < (uint64_t)WORKER_TELL_S * 1000000000u)
		return;
	w->spoofed_told_ns = now;
	if (!ip->src || !inet_ntop(ip->family, ip->src, addr, sizeof(addr)))
		snprintf(addr, sizeof(addr), "?");
	log_warnx("worker %u: dropped a packet from %s as spoofed_source: the peer may send only "
		  "from --route and --allow-from prefixes (at most one such line a minute; stats "
		  "count them all)",
		  w->id, addr);
}

/* One datagram from the wire, whatever its transport: decapsulated, its inner ECN field as
 * the outer one says (RFC 6040), CoDel's signal given where it carries it, into TUN; or
 * dropped under its reason. */
static void deliver(struct worker *w, const struct rx_dgram *d)
{
	const struct encap_cfg *c = w->sh->cfg;
	struct decap_result r = { .tn = NULL };
	struct l4_csum csum = { 0 };
	enum drop_reason why = d->drop;

	stat_add(&w->stats.ctr[STAT_WIRE_RX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_WIRE_RX_BYTES], d->wirelen);
	if (why != DROP_NONE)
		goto drop;
	/* Without its outer header, a datagram comes with its source (rx.h). */
	why = !d->outer		   ? decap_gre(c, w->tab, d->src, d->data, d->len, &r)
	      : d->merged.gso_size ? decap_merged(c, w->tab, d->data, d->len, &r)
				   : decap(c, w->tab, d->data, d->len, d->wirelen, &r);
	if (why != DROP_NONE)
		goto undelivered;
	/* RFC 6040, 4.2: a CE set on the way reaches an ECN-capable inner packet; on any other
	 * it becomes a loss, as a router would have made it. */
	switch (tos_decap_apply(d->outer ? ip_dsfield(d->data) : d->outer_ds, (uint8_t *)r.inner,
				r.inner_len)) {
	case TOS_DROP:
		why = DROP_ECN_CE_NOT_ECT;
		goto undelivered;
	case TOS_FORWARD_ALARM:
		stat_add(&w->stats.ctr[STAT_ECN_ALARMS], 1);
		break;
	}
	/* A standing queue is told on an ECN-capable packet by CE, on any other by its loss. */
	if (d->aqm) {
		if (!ip_ecn_set_ce((uint8_t *)r.inner, r.inner_len))
			goto aqm_drop;
		stat_add(&w->stats.ctr[STAT_AQM_MARKED], 1);
	}
	if (d->merged.gso_size) {
		why = deliver_merged(w, d, &r);
		if (why != DROP_NONE)
			goto drop;
		return;
	}
	if (d->csum_partial && (why = partial_csum(d, &r, &csum)) != DROP_NONE)
		goto drop;
	if (!d->outer && udp_partial_csum(&r, &csum))
		stat_add(&w->stats.ctr[STAT_UDP_CSUM_PARTIAL], 1);
	deliver_inner(w, &r, csum);
	return;

aqm_drop:
	why = DROP_AQM;
	goto drop;
undelivered:
	if (d->aqm)
		rxq_aqm_unspent(&w->rx);
	if (why == DROP_SPOOFED_SOURCE)
		tell_spoofed(w, &r.ip);
drop:
	stat_add(&w->stats.drops[why], 1);
	if (r.tn)
		tunnels_stat_drop(tunnels_stats(&w->sh->tunnels, w->id, r.tn), why);
}

/* The datagrams of a pass from the wire into TUN. Returns datagrams taken. */
static unsigned from_wire(struct worker *w)
{
	struct rx_dgram d;
	unsigned n = 0;

	uint64_t now = clock_mono_ns();

	rxq_begin(&w->rx);
	tunq_clock(&w->tun, now);
	while (rxq_next(&w->rx, &d)) {
		deliver(w, &d);
		n++;
	}
	tunq_flush(&w->tun, now);
	if (n)
		stat_add(&w->stats.ctr[STAT_RX_BATCHES], 1);
	return n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	/* With --tun-io uring, reads lent to the ring take what comes in: its fd says so. */
	struct pollfd pfd[4] = {
		{ .fd = w->tun.fd, .events = POLLIN },
		{ .fd = rxq_fd(&w->rx), .events = POLLIN },
		{ .fd = w->sh->stop_fd, .events = POLLIN },
		{ .fd = tunq_ring_fd(&w->tun), .events = POLLIN },
	};
	const struct timespec hold = { .tv_nsec = (long)w->sh->coalesce_hold_ns };
	const struct timespec idle = { .tv_sec = WORKER_POLL_MS / 1000,
				       .tv_nsec = WORKER_POLL_MS % 1000 * 1000000L };

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!stopping(w)) {
		unsigned work;

		/* A pass holds one table from here to its end; a change published meanwhile
		 * takes effect at the next pass. */
		w->tab = tunnels_enter(&w->sh->tunnels, w->id);
		work = from_tun(w);
		work += from_wire(w);
		tunnels_leave(&w->sh->tunnels, w->id);
		w->tab = NULL;
		if (!work) {
			/* Nothing more yet. With merged packets held, the rest of a burst gets the
			 * hold to arrive, and then what is held goes into TUN before the worker
			 * sleeps for longer. */
			bool holding = tunq_holding(&w->tun);

			stat_add(&w->stats.ctr[STAT_POLLS], 1);
			if (ppoll(pfd, 4, holding ? &hold : &idle, NULL) == 0 && holding)
				tunq_flush_all(&w->tun);
		}
		/* An error stays pending, and wakes every poll at once, until it is taken: an
		 * interface that went away would make the worker spin. */
		if (pfd[1].revents & POLLERR)
			rxq_take_error(&w->rx);
		pfd[1].revents = 0;
	}
	tunq_quit(&w->tun);
	return NULL;
}

int worker_init(struct worker *w, unsigned id, int cpu, int tun_fd, const struct rx_group *rxg,
		const struct tx_group *txg)
{
	struct gw_shared *sh = rxg->sh;
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	if (sh->nworkers <= id)
		sh->nworkers = id + 1;
	w->cpu = cpu;
	w->sh = sh;
	w->flows = calloc(1, sizeof(*w->flows));
	if (!w->flows)
		return -ENOMEM;
	rc = tunq_init(&w->tun, tun_fd, sh, &w->stats);
	if (rc)
		goto err_tun;
	rc = txq_init(&w->tx, id, txg, &w->stats);
	if (rc)
		goto err_tx;
	rc = rxq_init(&w->rx, id, rxg, &w->stats);
	if (rc)
		goto err_rx;
	return 0;

err_rx:
	txq_fini(&w->tx);
err_tx:
	tunq_fini(&w->tun);
err_tun:
	free(w->flows);
	w->flows = NULL;
	return rc;
}

uint64_t worker_rx_drops(struct worker *w)
{
	return rxq_drops(&w->rx);
}

int worker_start(struct worker *w)
{
	int rc = thread_start(&w->thread, w->cpu, worker_main, w);

	if (rc)
		return rc;
	w->started = true;
	return 0;
}

void worker_join(struct worker *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = false;
}

void worker_fini(struct worker *w)
{
	if (!w->flows)
		return;
	rxq_fini(&w->rx);
	txq_fini(&w->tx);
	tunq_fini(&w->tun);
	free(w->flows);
	w->flows = NULL;
}
