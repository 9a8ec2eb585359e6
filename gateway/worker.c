/*
 * The worker loop: TUN -> GRE -> wire in sendmmsg batches, wire -> GRE -> TUN from the
 * receive ring. No allocation, no lock, no log call in the loop: every outcome is a counter.
 */
#include "worker.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "mss.h"
#include "thread.h"
#include "tx.h"

static inline uint8_t *slot(struct worker *w, unsigned i)
{
	return w->slots + (size_t)i * (ENCAP_HEADROOM + WORKER_SLOT) + ENCAP_HEADROOM;
}

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

/*
 * Writes one packet into TUN, behind a virtio header when the device has them (h NULL: a
 * packet that needs nothing of the kernel). Returns whether the kernel took it.
 */
static bool tun_put(struct worker *w, const struct virtio_net_hdr *h, const uint8_t *pkt,
		    size_t len)
{
	static const struct virtio_net_hdr none;
	struct iovec iov[2] = {
		{ .iov_base = (void *)(h ? h : &none), .iov_len = sizeof(*h) },
		{ .iov_base = (void *)pkt, .iov_len = len },
	};

	if (!w->sh->vnet_hdr)
		return write(w->tun_fd, pkt, len) == (ssize_t)len;
	return writev(w->tun_fd, iov, 2) == (ssize_t)(sizeof(*h) + len);
}

static void send_too_big(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip)
{
	size_t n;

	if (!icmp_allowed(w)) {
		stat_add(&w->stats.ctr[STAT_ICMP_LIMITED], 1);
		return;
	}
	n = icmp_too_big(w->sh->cfg, pkt, len, ip, w->icmp, sizeof(w->icmp));
	if (n && tun_put(w, NULL, w->icmp, n))
		stat_add(&w->stats.ctr[STAT_ICMP_SENT], 1);
}

static void track_flow(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip,
		       bool encap, unsigned n)
{
	struct flow_key k;
	struct flow_entry *e;

	flow_key_from(pkt, len, ip, &k);
	e = flow_get(w->flows, &k);
	if (e)
		stat_add(encap ? &e->encap_packets : &e->decap_packets, n);
}

/* Sends msgs[0..n); what the kernel refuses is dropped and counted, never retried forever. */
static void send_batch(struct worker *w, unsigned n)
{
	unsigned off = 0;

	stat_add(&w->stats.ctr[STAT_TX_BATCHES], 1);
	while (off < n) {
		int sent = sendmmsg(w->tx_fd, w->msgs + off, n - off, 0);

		if (sent < 0) {
			if (errno == EINTR)
				continue;
			/* The first message failed (buffer full past the timeout, no route,
			 * too big): drop it and go on with the rest. */
			stat_add(&w->stats.drops[DROP_TX_SEND], 1);
			off++;
			continue;
		}
		for (int i = 0; i < sent; i++) {
			stat_add(&w->stats.ctr[STAT_WIRE_TX_PACKETS], 1);
			stat_add(&w->stats.ctr[STAT_WIRE_TX_BYTES], w->msgs[off + i].msg_len);
		}
		off += (unsigned)sent;
	}
}

/* Encapsulates and sends what is queued. The GRE sequence numbers of the batch are taken
 * with one atomic add: RFC 2890 numbers the tunnel, not a worker. */
static void flush_tx(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned n = w->nents;
	uint32_t seq = 0;

	if (n == 0)
		return;
	if (c->gre_flags & GRE_F_SEQ)
		seq = __atomic_fetch_add(&w->sh->tx_seq, n, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++) {
		const struct tx_ent *e = &w->ents[i];
		struct iovec *iov = &w->iov[2 * i];

		iov[0].iov_base = encap_build2(c, e->inner, e->len, e->tail, e->tail_len, seq + i);
		iov[0].iov_len = c->outer_hlen + e->len;
		iov[1].iov_base = (void *)e->tail;
		iov[1].iov_len = e->tail_len;
		w->msgs[i].msg_hdr.msg_iov = iov;
		w->msgs[i].msg_hdr.msg_iovlen = e->tail ? 2 : 1;
	}
	send_batch(w, n);
	w->nents = 0;
}

static void queue(struct worker *w, uint8_t *inner, size_t len, const uint8_t *tail,
		  size_t tail_len)
{
	if (w->nents == WORKER_TX_MSGS)
		flush_tx(w);
	w->ents[w->nents++] = (struct tx_ent){ inner, len, tail, tail_len };
	stat_add(&w->stats.ctr[STAT_TUN_RX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_TUN_RX_BYTES], len + tail_len);
}

/* Cuts a superpacket into segments, each queued with its own headers and its payload where
 * it lies in the slot. */
static void queue_segments(struct worker *w, const struct gso_pkt *g, const struct ip_info *ip)
{
	for (unsigned i = 0; i < g->nseg; i++) {
		uint8_t *hdr;
		size_t plen;

		if (w->nents == WORKER_TX_MSGS)
			flush_tx(w);
		hdr = w->seg_hdrs + (size_t)w->nents * WORKER_SEG_HDR + ENCAP_HEADROOM;
		plen = gso_segment(g, i, hdr);
		queue(w, hdr, g->hdr_len, g->pkt + g->hdr_len + (size_t)i * g->mss, plen);
	}
	stat_add(&w->stats.ctr[STAT_GSO_SUPERPACKETS], 1);
	track_flow(w, g->pkt, g->len, ip, true, g->nseg);
}

/* Reads one packet from TUN into inner; with virtio headers, *h gets its header. */
static ssize_t tun_get(struct worker *w, uint8_t *inner, struct virtio_net_hdr *h)
{
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(*h) },
		{ .iov_base = inner, .iov_len = WORKER_SLOT },
	};
	ssize_t len;

	if (!w->sh->vnet_hdr) {
		memset(h, 0, sizeof(*h));
		return read(w->tun_fd, inner, WORKER_SLOT);
	}
	len = readv(w->tun_fd, iov, 2);
	if (len < 0)
		return len;
	if ((size_t)len < sizeof(*h)) {
		errno = EPROTO;
		return -1;
	}
	return len - (ssize_t)sizeof(*h);
}

/* Reads up to a batch from TUN, encapsulates and sends it. Returns packets read. */
static unsigned from_tun(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned n = 0, got = 0;

	while (n < WORKER_BATCH) {
		uint8_t *inner = slot(w, n);
		struct virtio_net_hdr h;
		struct gso_pkt g;
		struct ip_info ip;
		enum drop_reason why;
		ssize_t len = tun_get(w, inner, &h);

		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPROTO) {
				stat_add(&w->stats.drops[DROP_TX_BAD_INNER], 1);
				continue;
			}
			break; /* EAGAIN: TUN is empty */
		}
		got++;
		stat_add(&w->stats.ctr[STAT_TUN_READS], 1);
		/* A superpacket, or a packet whose checksum the kernel left to us. */
		why = gso_parse(&h, inner, (size_t)len, c->mtu, &g);
		if (why == DROP_NONE && g.nseg) {
			if (ip_parse(inner, (size_t)len, false, &ip) < 0 || ip.tot_len != len)
				why = DROP_TX_BAD_INNER;
			else {
				queue_segments(w, &g, &ip);
				n++;
				continue;
			}
		}
		if (why == DROP_NONE)
			why = encap_check(c, inner, (size_t)len, &ip);
		if (why == DROP_TX_TOO_BIG && ip.df)
			send_too_big(w, inner, (size_t)len, &ip);
		if (why != DROP_NONE) {
			stat_add(&w->stats.drops[why], 1);
			continue;
		}
		if (c->mss_clamp && mss_clamp(inner, (size_t)len, &ip,
					      ip.family == AF_INET6 ? w->sh->mss6 : w->sh->mss4))
			stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
		track_flow(w, inner, (size_t)len, &ip, true, 1);
		queue(w, inner, (size_t)len, NULL, 0);
		n++;
	}
	flush_tx(w);
	return got;
}

/* gro_emit_fn: a packet or superpacket from the coalescer goes into TUN. */
static void emit_tun(void *ctx, const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
		     unsigned nseg)
{
	struct worker *w = ctx;
	/* Counted as the segments that make it up, as they crossed the wire. */
	size_t seg_bytes = len + (size_t)(nseg - 1) * le16toh(h->hdr_len);

	if (!tun_put(w, h, pkt, len)) {
		stat_add(&w->stats.drops[DROP_TUN_WRITE], nseg);
		return;
	}
	stat_add(&w->stats.ctr[STAT_TUN_WRITES], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_PACKETS], nseg);
	stat_add(&w->stats.ctr[STAT_TUN_TX_BYTES], seg_bytes);
	if (nseg > 1)
		stat_add(&w->stats.ctr[STAT_GRO_SUPERPACKETS], 1);
}

static void deliver(struct worker *w, const struct rx_pkt *p)
{
	const struct encap_cfg *c = w->sh->cfg;
	struct decap_result r;
	struct ip_info ip;
	enum drop_reason why;
	/* The ring slot is ours until the next rx_next: the inner packet may be edited. */
	uint8_t *inner;

	stat_add(&w->stats.ctr[STAT_WIRE_RX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_WIRE_RX_BYTES], p->wirelen);
	why = decap(c, p->data, p->caplen, p->wirelen, &r);
	if (why != DROP_NONE) {
		stat_add(&w->stats.drops[why], 1);
		return;
	}
	inner = (uint8_t *)r.inner;
	ip_parse(inner, r.inner_len, false, &ip);
	if (r.has_seq) {
		struct flow_key k;
		struct flow_entry *e;

		stats_seq(&w->stats, r.seq);
		flow_key_from(inner, r.inner_len, &ip, &k);
		e = flow_get(w->flows, &k);
		if (e) {
			int order = flow_seq(e, r.seq);

			if (order == 1)
				stat_add(&w->stats.ctr[STAT_SEQ_REORDERED], 1);
			else if (order == 2)
				stat_add(&w->stats.ctr[STAT_SEQ_DUPLICATE], 1);
			stat_add(&e->decap_packets, 1);
		}
	} else {
		track_flow(w, inner, r.inner_len, &ip, false, 1);
	}
	if (c->mss_clamp &&
	    mss_clamp(inner, r.inner_len, &ip, ip.family == AF_INET6 ? w->sh->mss6 : w->sh->mss4))
		stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
	if (w->sh->vnet_hdr) {
		gro_add(&w->gro, inner, r.inner_len, emit_tun, w);
		return;
	}
	if (!tun_put(w, NULL, inner, r.inner_len)) {
		stat_add(&w->stats.drops[DROP_TUN_WRITE], 1);
		return;
	}
	stat_add(&w->stats.ctr[STAT_TUN_WRITES], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_PACKETS], 1);
	stat_add(&w->stats.ctr[STAT_TUN_TX_BYTES], r.inner_len);
}

/* Takes up to WORKER_RX_BUDGET packets from the ring into TUN. Returns packets taken. */
static unsigned from_wire(struct worker *w)
{
	struct rx_pkt p;
	unsigned n = 0;

	while (n < WORKER_RX_BUDGET && rx_next(&w->rx, &p)) {
		deliver(w, &p);
		n++;
	}
	if (w->sh->vnet_hdr) {
		/* What was coalesced leaves at the end of the pass, as the kernel's GRO
		 * flushes at the end of a NAPI poll: never held while the worker sleeps. */
		gro_flush(&w->gro, emit_tun, w);
		stat_add(&w->stats.ctr[STAT_GRO_BAD_CSUM],
			 w->gro.bad_csum - stat_read(&w->stats.ctr[STAT_GRO_BAD_CSUM]));
	}
	if (n)
		stat_add(&w->stats.ctr[STAT_RX_BATCHES], 1);
	return n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd[3] = {
		{ .fd = w->tun_fd, .events = POLLIN },
		{ .fd = w->rx.fd, .events = POLLIN },
		{ .fd = w->sh->stop_fd, .events = POLLIN },
	};

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!stopping(w)) {
		unsigned work = from_tun(w);

		work += from_wire(w);
		if (!work)
			poll(pfd, 3, WORKER_POLL_MS);
	}
	return NULL;
}

int worker_init(struct worker *w, unsigned id, int cpu, int tun_fd, const struct rx_cfg *rxc,
		struct gw_shared *sh)
{
	const struct encap_cfg *c = sh->cfg;
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->cpu = cpu;
	w->tun_fd = tun_fd;
	w->sh = sh;
	w->rx.fd = -1;
	w->slots = aligned_alloc(64, (size_t)WORKER_BATCH * (ENCAP_HEADROOM + WORKER_SLOT));
	if (!w->slots)
		return -ENOMEM;
	w->seg_hdrs = aligned_alloc(64, (size_t)WORKER_TX_MSGS * WORKER_SEG_HDR);
	w->gro_mem = aligned_alloc(64, (size_t)GRO_FLOWS * GRO_BUF);
	w->flows = calloc(1, sizeof(*w->flows));
	if (!w->flows || !w->seg_hdrs || !w->gro_mem) {
		rc = -ENOMEM;
		goto err_flows;
	}
	gro_init(&w->gro, w->gro_mem);
	w->tx_fd = tx_open(c->family, WORKER_SEND_TIMEOUT_MS);
	if (w->tx_fd < 0) {
		rc = w->tx_fd;
		goto err_flows;
	}
	rc = rx_open(&w->rx, rxc);
	if (rc)
		goto err_tx;
	if (c->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&w->peer;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, c->remote, 16);
		w->peer_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&w->peer;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, c->remote, 4);
		w->peer_len = sizeof(*s4);
	}
	for (unsigned i = 0; i < WORKER_TX_MSGS; i++) {
		w->msgs[i].msg_hdr.msg_name = &w->peer;
		w->msgs[i].msg_hdr.msg_namelen = w->peer_len;
	}
	return 0;

err_tx:
	close(w->tx_fd);
err_flows:
	free(w->flows);
	free(w->gro_mem);
	free(w->seg_hdrs);
	free(w->slots);
	w->slots = NULL;
	return rc;
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
	if (!w->slots)
		return;
	rx_close(&w->rx);
	close(w->tx_fd);
	free(w->flows);
	free(w->gro_mem);
	free(w->seg_hdrs);
	free(w->slots);
	w->slots = NULL;
}
