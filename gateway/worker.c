/*
 * The worker loop: TUN -> GRE -> wire in sendmmsg batches, wire -> GRE -> TUN from the
 * receive ring. No allocation, no lock, no log call in the loop: every outcome is a counter.
 */
#include "worker.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

static void send_too_big(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip)
{
	size_t n;

	if (!icmp_allowed(w)) {
		stat_add(&w->stats.ctr[STAT_ICMP_LIMITED], 1);
		return;
	}
	n = icmp_too_big(w->sh->cfg, pkt, len, ip, w->icmp, sizeof(w->icmp));
	if (n && write(w->tun_fd, w->icmp, n) == (ssize_t)n)
		stat_add(&w->stats.ctr[STAT_ICMP_SENT], 1);
}

static void track_flow(struct worker *w, const uint8_t *pkt, size_t len, const struct ip_info *ip,
		       bool encap)
{
	struct flow_key k;
	struct flow_entry *e;

	flow_key_from(pkt, len, ip, &k);
	e = flow_get(w->flows, &k);
	if (e)
		stat_add(encap ? &e->encap_packets : &e->decap_packets, 1);
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
			stat_add(&w->stats.ctr[STAT_WIRE_TX_BYTES], w->iov[off + i].iov_len);
		}
		off += (unsigned)sent;
	}
}

/* Reads up to a batch from TUN, encapsulates and sends it. Returns packets read. */
static unsigned from_tun(struct worker *w)
{
	const struct encap_cfg *c = w->sh->cfg;
	unsigned n = 0, got = 0;
	uint32_t seq = 0;

	while (n < WORKER_BATCH) {
		uint8_t *inner = slot(w, n);
		struct ip_info ip;
		enum drop_reason why;
		ssize_t len = read(w->tun_fd, inner, WORKER_SLOT);

		if (len < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: TUN is empty */
		}
		got++;
		stat_add(&w->stats.ctr[STAT_TUN_RX_PACKETS], 1);
		stat_add(&w->stats.ctr[STAT_TUN_RX_BYTES], (uint64_t)len);
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
		track_flow(w, inner, (size_t)len, &ip, true);
		w->len[n++] = (size_t)len;
	}
	if (n == 0)
		return got;
	if (c->gre_flags & GRE_F_SEQ)
		seq = __atomic_fetch_add(&w->sh->tx_seq, n, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++) {
		w->iov[i].iov_base = encap_build(c, slot(w, i), w->len[i], seq + i);
		w->iov[i].iov_len = c->outer_hlen + w->len[i];
	}
	send_batch(w, n);
	return got;
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
		track_flow(w, inner, r.inner_len, &ip, false);
	}
	if (c->mss_clamp &&
	    mss_clamp(inner, r.inner_len, &ip, ip.family == AF_INET6 ? w->sh->mss6 : w->sh->mss4))
		stat_add(&w->stats.ctr[STAT_MSS_CLAMPED], 1);
	if (write(w->tun_fd, inner, r.inner_len) != (ssize_t)r.inner_len) {
		stat_add(&w->stats.drops[DROP_TUN_WRITE], 1);
		return;
	}
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
	w->flows = calloc(1, sizeof(*w->flows));
	if (!w->flows) {
		rc = -ENOMEM;
		goto err_slots;
	}
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
	for (unsigned i = 0; i < WORKER_BATCH; i++) {
		w->msgs[i].msg_hdr.msg_name = &w->peer;
		w->msgs[i].msg_hdr.msg_namelen = w->peer_len;
		w->msgs[i].msg_hdr.msg_iov = &w->iov[i];
		w->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	return 0;

err_tx:
	close(w->tx_fd);
err_flows:
	free(w->flows);
err_slots:
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
	free(w->slots);
	w->slots = NULL;
}
