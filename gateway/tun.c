/*
 * TUN multi-queue device and a worker's queue on it (see tun.h;
 * Documentation/networking/tuntap.rst).
 */
#include "tun.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "encap.h"
#include "flows.h"
#include "tun_uring.h"
#include "merge.h"
#include "uapi_newer.h"

int tun_open(const char *name, unsigned n, bool vnet_hdr, int *fds)
{
	struct ifreq ifr;
	unsigned i;
	int rc;

	if (strlen(name) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	if (if_nametoindex(name) != 0)
		return -EEXIST;
	for (i = 0; i < n; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fds[i] < 0) {
			rc = -errno;
			goto err;
		}
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE;
		if (vnet_hdr)
			ifr.ifr_flags |= IFF_VNET_HDR;
		if (ioctl(fds[i], TUNSETIFF, &ifr) < 0) {
			rc = -errno;
			close(fds[i]);
			goto err;
		}
	}
	return 0;
err:
	tun_close(fds, i);
	return rc;
}

void tun_close(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int tun_offload(int fd)
{
	/* Each step down drops what an older kernel may not know; checksum offload alone
	 * still spares the sender's per-packet checksum. */
	static const int tries[] = {
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,
		TUN_F_CSUM,
	};

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)tries[i]) == 0)
			return tries[i];
	if (ioctl(fd, TUNSETOFFLOAD, 0ul) < 0)
		return -errno;
	return 0;
}

const char *tun_offload_names(int flags, char *buf, size_t len)
{
	static const struct {
		int flag;
		const char *name;
	} names[] = {
		{ TUN_F_CSUM, "csum" },	      { TUN_F_TSO4, "tso4" }, { TUN_F_TSO6, "tso6" },
		{ TUN_F_TSO_ECN, "tso_ecn" }, { TUN_F_USO4, "uso4" }, { TUN_F_USO6, "uso6" },
	};
	size_t used = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].flag))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i].name);

		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}

/* A slot's room: a read of any length, and the outer headers before it. */
enum { SLOT_ROOM = ENCAP_HEADROOM + WORKER_SLOT, PAGE_ROOM = TUN_FQ_PAGE_SLOTS * SLOT_ROOM };

_Static_assert(WORKER_BATCH % TUN_FQ_PAGE_SLOTS == 0, "the slots make whole pages");

/* The i-th slot, without --fair-queue: a pass's i-th read. */
static inline uint8_t *region(struct tunq *q, unsigned i)
{
	return q->slots + (size_t)i * SLOT_ROOM + ENCAP_HEADROOM;
}

/* --fair-queue: read s, where it lies in its page. */
static inline uint8_t *slot(struct tunq *q, uint32_t s)
{
	return q->data[s];
}

/* --fair-queue: the memory of the slots as pages, the reads and their headers. */
static int fq_mem_init(struct tunq *q)
{
	unsigned npages = WORKER_BATCH / TUN_FQ_PAGE_SLOTS;

	q->free_slots = calloc(TUN_FQ_READS, sizeof(*q->free_slots));
	q->sent = calloc(TUN_FQ_READS, sizeof(*q->sent));
	q->hdrs = calloc(TUN_FQ_READS, sizeof(*q->hdrs));
	q->data = calloc(TUN_FQ_READS, sizeof(*q->data));
	q->page_of = calloc(TUN_FQ_READS, sizeof(*q->page_of));
	q->page_refs = calloc(npages, sizeof(*q->page_refs));
	q->free_pages = calloc(npages, sizeof(*q->free_pages));
	if (!q->free_slots || !q->sent || !q->hdrs || !q->data || !q->page_of || !q->page_refs ||
	    !q->free_pages)
		return -ENOMEM;
	for (unsigned i = 0; i < TUN_FQ_READS; i++)
		q->free_slots[q->nfree++] = TUN_FQ_READS - 1 - i;
	for (unsigned i = 1; i < npages; i++)
		q->free_pages[q->nfree_pages++] = npages - i;
	q->open_page = 0;
	q->open_off = 0;
	/* A read lent to io_uring, or one --tx-merge may grow in place, keeps a slot's room. */
	q->pack = !q->uring && !q->sh->tx_merge;
	return 0;
}

/*
 * A free read whose packet may take WORKER_SLOT bytes, where the open page has room for it
 * (a new page opened if need be), not taken yet (commit); FQ_NONE when every read or every
 * page is in use (the pages' room runs short before the byte limit only when old reads hold
 * many pages).
 */
static uint32_t reserve(struct tunq *q)
{
	uint32_t s;

	if (!q->nfree)
		return FQ_NONE;
	if (q->open_off + SLOT_ROOM > PAGE_ROOM) {
		if (q->page_refs[q->open_page]) {
			if (!q->nfree_pages)
				return FQ_NONE;
			q->open_page = q->free_pages[--q->nfree_pages];
		}
		q->open_off = 0;
	}
	s = q->free_slots[q->nfree - 1];
	q->data[s] = q->slots + (size_t)q->open_page * PAGE_ROOM + q->open_off + ENCAP_HEADROOM;
	return s;
}

/* Takes the read reserve gave, len bytes long: packed, the next one starts after it on a
 * cache line; otherwise after its slot's room. */
static void commit(struct tunq *q, uint32_t s, size_t len)
{
	q->nfree--;
	q->page_of[s] = (uint16_t)q->open_page;
	q->page_refs[q->open_page]++;
	q->open_off += q->pack ? (ENCAP_HEADROOM + len + 63) & ~(size_t)63 : SLOT_ROOM;
}

/* Gives a read taken by commit back, and its page with its last read. */
static void release(struct tunq *q, uint32_t s)
{
	unsigned p = q->page_of[s];

	if (--q->page_refs[p] == 0) {
		if (p == q->open_page)
			q->open_off = 0;
		else
			q->free_pages[q->nfree_pages++] = p;
	}
	q->free_slots[q->nfree++] = s;
}

int tunq_init(struct tunq *q, int fd, struct gw_shared *sh, struct worker_stats *stats)
{
	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->sh = sh;
	q->stats = stats;
	q->slots = aligned_alloc(64, (size_t)WORKER_BATCH * SLOT_ROOM);
	q->coal_mem = aligned_alloc(64, (size_t)COALESCE_FLOWS * COALESCE_BUF);
	if (!q->slots || !q->coal_mem) {
		tunq_fini(q);
		return -ENOMEM;
	}
	if (sh->tun_uring) {
		const char *what;
		int rc = tun_uring_init(&q->uring, fd, q->slots, (size_t)WORKER_BATCH * SLOT_ROOM,
					&what);

		if (rc) {
			tunq_fini(q);
			return rc;
		}
	}
	if (sh->fair_queue) {
		if (fq_mem_init(q) ||
		    fq_init(&q->fq, TUN_FQ_READS, TUN_FQ_BUCKETS, TUN_FQ_QUANTUM, sh->fq_limit) ||
		    (sh->aqm &&
		     fq_aqm_init(&q->fq, sh->aqm_target_ns, sh->aqm_interval_ns, TUN_FQ_AQM_MIN))) {
			tunq_fini(q);
			return -ENOMEM;
		}
		fq_limit_bytes(&q->fq, TUN_FQ_BYTES);
	}
	coalesce_init(&q->coal, q->coal_mem);
	return 0;
}

void tunq_fini(struct tunq *q)
{
	/* The ring before the slots, its registered buffer. */
	tun_uring_fini(q->uring);
	q->uring = NULL;
	fq_fini(&q->fq);
	free(q->free_pages);
	free(q->page_refs);
	free(q->page_of);
	free(q->data);
	free(q->hdrs);
	free(q->sent);
	free(q->free_slots);
	q->free_pages = q->page_refs = NULL;
	q->page_of = NULL;
	q->data = NULL;
	free(q->coal_mem);
	free(q->slots);
	q->hdrs = NULL;
	q->sent = q->free_slots = NULL;
	q->coal_mem = NULL;
	q->slots = NULL;
}

/* Reads one packet into inner; with virtio headers, *h gets its header. Returns its length,
 * or -1 with errno (EPROTO: a read shorter than the virtio header). */
static ssize_t read_one(struct tunq *q, uint8_t *inner, struct virtio_net_hdr *h)
{
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(*h) },
		{ .iov_base = inner, .iov_len = WORKER_SLOT },
	};
	ssize_t len;

	if (!q->sh->vnet_hdr) {
		memset(h, 0, sizeof(*h));
		return read(q->fd, inner, WORKER_SLOT);
	}
	len = readv(q->fd, iov, 2);
	if (len < 0)
		return len;
	if ((size_t)len < sizeof(*h)) {
		errno = EPROTO;
		return -1;
	}
	return len - (ssize_t)sizeof(*h);
}

/* read_one into inner, again when a signal cut it short, counted as a read call. */
static ssize_t read_counted(struct tunq *q, uint8_t *inner, struct virtio_net_hdr *h)
{
	ssize_t len;

	do {
		stat_add(&q->stats->ctr[STAT_TUN_READ_CALLS], 1);
		len = read_one(q, inner, h);
	} while (len < 0 && errno == EINTR);
	return len;
}

/* fq's flow of a packet read: its inner flow's hash (flows.h), the same both ways. */
static uint32_t flow_of_read(const uint8_t *pkt, size_t len)
{
	struct ip_info ip;
	struct flow_key k;

	if (ip_parse(pkt, len, false, &ip) < 0)
		return 0; /* dropped when taken */
	flow_key_from(pkt, len, &ip, &k);
	return flow_hash(&k);
}

/* Room in fq for one more read, made by --fq-full drop if need be; false: no more reads. */
static bool admit(struct tunq *q)
{
	uint32_t s;

	switch (fq_admission(&q->fq, q->sh->fq_full)) {
	case FQ_ADMIT:
		return true;
	case FQ_WAIT:
		stat_add(&q->stats->ctr[STAT_TUN_READ_PAUSES], 1);
		return false;
	case FQ_EVICT:
		s = fq_drop_longest(&q->fq);
		if (s == FQ_NONE)
			return false;
		stat_add(&q->stats->drops[DROP_TX_FQ_OVERFLOW], 1);
		release(q, s);
		return true;
	}
	return false;
}

/* Room for one more read, in fq and in the slots' memory: the read to make, or FQ_NONE. Memory
 * short is a pause, whatever --fq-full says: giving up a queued read need not free a page. */
static uint32_t admit_read(struct tunq *q)
{
	uint32_t s;

	if (!admit(q))
		return FQ_NONE;
	s = reserve(q);
	if (s == FQ_NONE)
		stat_add(&q->stats->ctr[STAT_TUN_READ_PAUSES], 1);
	return s;
}

/* Queues read s of len bytes into fq, stamped now when --aqm judges its sojourn. */
static void queue_read(struct tunq *q, uint32_t s, size_t len)
{
	if (q->fq.codel)
		fq_clock(&q->fq, clock_mono_ns());
	fq_enqueue(&q->fq, s, flow_of_read(slot(q, s), len), (uint32_t)len);
}

/*
 * --fair-queue: what TUN has, into the slots' pages and fq, while fq admits it (its reads and
 * bytes); at most TUN_FQ_PASS_READS reads a pass. A read is made where a slot's room is free, so
 * whether the next packet fits is known before it is read: a full queue leaves it in the TUN
 * device's queue (--fq-full pause), never read and then dropped, or gives up the oldest
 * packet of its longest flow for it (drop). Once read, it takes only its own length of the
 * page (packed), and the next read goes after it.
 */
static void fill(struct tunq *q)
{
	uint32_t s;

	for (unsigned n = 0; n < TUN_FQ_PASS_READS && (s = admit_read(q)) != FQ_NONE; n++) {
		ssize_t len = read_counted(q, slot(q, s), &q->hdrs[s]);

		if (len < 0) {
			if (errno != EPROTO)
				return; /* EAGAIN: the queue is empty */
			stat_add(&q->stats->drops[DROP_TX_BAD_INNER], 1);
			continue;
		}
		commit(q, s, (size_t)len);
		queue_read(q, s, (size_t)len);
	}
}

/* --tun-io uring: the reads the ring completed into fq (their virtio headers moved out of
 * the headroom, which the encapsulation writes over), their slots back when empty. */
static void take_lent(struct tunq *q)
{
	size_t vh = q->sh->vnet_hdr ? sizeof(struct virtio_net_hdr) : 0;
	uint32_t s;
	int res;

	while (tun_uring_take(q->uring, &s, &res)) {
		q->lent--;
		if (res >= 0 && (size_t)res < vh + 1)
			res = -EPROTO;
		if (res < 0) {
			/* -EPROTO: shorter than its virtio header; else cancelled at the end, or
			 * the device is gone. */
			if (res == -EPROTO)
				stat_add(&q->stats->drops[DROP_TX_BAD_INNER], 1);
			release(q, s);
			continue;
		}
		if (vh)
			memcpy(&q->hdrs[s], slot(q, s) - vh, vh);
		else
			memset(&q->hdrs[s], 0, sizeof(q->hdrs[s]));
		/* With --fq-full pause its room was kept when it was lent. */
		if (q->sh->fq_full == FQ_FULL_DROP && !admit(q)) {
			release(q, s);
			continue;
		}
		queue_read(q, s, (size_t)res - vh);
	}
}

/*
 * --tun-io uring: takes what the ring read; once the last chain of reads is done, lends it a
 * new one into every free slot that fq has room for (--fq-full pause never reads what it
 * cannot queue), submitted with one call; those that found packets are taken at once. The
 * chain's first read to find the queue empty waits there, the rest behind it.
 */
static void fill_uring(struct tunq *q)
{
	size_t vh = q->sh->vnet_hdr ? sizeof(struct virtio_net_hdr) : 0;
	uint32_t chain[WORKER_BATCH];

	take_lent(q);
	if (!q->uring_unsent) {
		unsigned room = WORKER_BATCH;
		uint32_t s;

		if (q->lent)
			return; /* the last chain is not done */
		if (q->sh->fq_full == FQ_FULL_PAUSE) {
			/* Reads of up to WORKER_SLOT bytes each, within the bytes fq takes. */
			uint64_t bytes = q->fq.bytes < q->fq.byte_limit
						 ? (q->fq.byte_limit - q->fq.bytes + WORKER_SLOT -
						    1) / WORKER_SLOT
						 : 0;

			if (room > q->fq.limit - q->fq.queued)
				room = q->fq.limit - q->fq.queued;
			if (room > bytes)
				room = (unsigned)bytes;
		}
		q->lent = 0;
		while (q->lent < room && (s = reserve(q)) != FQ_NONE) {
			commit(q, s, WORKER_SLOT);
			chain[q->lent++] = s;
		}
		if (!q->lent) {
			stat_add(&q->stats->ctr[STAT_TUN_READ_PAUSES], 1);
			return;
		}
		for (unsigned i = 0; i < q->lent; i++)
			tun_uring_lend(q->uring, chain[i], slot(q, chain[i]) - vh, vh + WORKER_SLOT,
				       i + 1 < q->lent);
	}
	stat_add(&q->stats->ctr[STAT_TUN_READ_CALLS], 1);
	/* Refused, they stay queued and lent: the next pass submits them. */
	q->uring_unsent = tun_uring_submit(q->uring) < 0;
	take_lent(q);
}

void tunq_quit(struct tunq *q)
{
	/* Each round ends the read that waits, at least: the chain behind it is issued. */
	for (unsigned i = 0; q->uring && q->lent && i <= WORKER_BATCH; i++) {
		if (tun_uring_cancel(q->uring) < 0)
			break;
		take_lent(q);
	}
}

int tunq_ring_fd(const struct tunq *q)
{
	return q->uring ? tun_uring_fd(q->uring) : -1;
}

void tunq_begin(struct tunq *q)
{
	q->nread = 0;
	if (!q->sh->fair_queue)
		return;
	while (q->nsent)
		release(q, q->sent[--q->nsent]);
	q->pass_segs = 0;
	if (q->uring)
		fill_uring(q);
	else
		fill(q);
	/* The pass's packets are judged as it starts: it sends for a few hundred microseconds. */
	if (q->fq.codel)
		fq_clock(&q->fq, clock_mono_ns());
}

/*
 * Whether a checksum may leave partial: where the receiving side will look for it (the TCP or
 * UDP header right after the IP header, inet_l4_csum_at), so that a gregw there takes it. A
 * packet with an IPv6 extension header before its transport, say, has it completed here.
 */
static bool partial_ok(size_t len, const struct ip_info *ip, struct l4_csum c)
{
	struct l4_csum at;

	return inet_l4_csum_at(len, ip, &at) && at.start == c.start && at.offset == c.offset;
}

/* The next segment of the superpacket being cut, its headers written at hdr. */
static void next_segment(struct tunq *q, uint8_t *hdr, struct tun_pkt *p)
{
	const struct gso_pkt *g = &q->gso;
	unsigned i = q->gso_next++;

	p->data = hdr + ENCAP_HEADROOM;
	p->len = g->hdr_len;
	p->tail_len = gso_segment(g, i, p->data, q->gso_partial);
	p->csum = q->gso_partial ? gso_csum(g) : (struct l4_csum){ 0 };
	p->tail = g->pkt + g->hdr_len + (size_t)i * g->mss;
	p->ip = q->gso_ip;
	p->seg = i;
	p->nseg = g->nseg;
	p->drop = q->gso_drop_last && i + 1 == g->nseg ? DROP_TX_AQM : DROP_NONE;
}

/*
 * --aqm: CoDel's signal on a read of len bytes at pkt: CE when its packet is ECN-capable
 * (RFC 3168, 5; RFC 8311), the IPv4 header checksum kept right, counted; false when it is
 * Not-ECT, to be dropped. A superpacket has one IP header, which each of its segments copies
 * when it is cut (gso.c, or the kernel behind the TAP): marked, it is marked in every segment,
 * as the kernel's fq_codel marks a GSO packet whole, and dropped, it is lost whole.
 */
static bool aqm_signal(struct tunq *q, uint8_t *pkt, size_t len)
{
	if (!ip_ecn_set_ce(pkt, len))
		return false;
	stat_add(&q->stats->ctr[STAT_TX_AQM_MARKED], 1);
	return true;
}

/*
 * --tx-merge: the reads of p's flow that the flow queue would hand out next, in the same turn,
 * appended to p while they may join it (merge.h), each taken off the queue as fq_dequeue would
 * have handed it out (so that order and turns stay as they were) and counted as read; p then
 * leaves whole, as one superpacket. mss: p's gso_size, 0 for a packet. Returns whether any
 * read joined. Only through a transport that takes superpackets whole this pass (whole_max),
 * and only what the pass has already read: nothing waits for more.
 */
static bool merge_turn(struct tunq *q, struct tun_pkt *p, unsigned mss)
{
	size_t room = q->whole_max < TX_MERGE_MAX ? q->whole_max : TX_MERGE_MAX;
	struct merge m;
	bool signal = false;
	uint32_t s;

	if (!q->sh->tx_merge || !q->sh->fair_queue || p->ip.proto != IPPROTO_TCP ||
	    !merge_open(&m, p->data, p->len, mss, p->csum, room))
		return false;
	/* The pass's segment budget, as tunq_next counts it: p's segments are not in it yet. */
	while (q->pass_segs + m.nseg < TUN_FQ_PASS_SEGS && (s = fq_peek_turn(&q->fq)) != FQ_NONE) {
		uint8_t *pkt = slot(q, s);
		size_t len = fq_len(&q->fq, s);
		struct gso_pkt g;

		/* A read that is not merged is taken later as any other, and checked then. */
		if (gso_parse(&q->hdrs[s], pkt, len, q->sh->cfg->mtu, &g) != DROP_NONE ||
		    (g.nseg && (g.l4 != IPPROTO_TCP || g.ecn)) ||
		    !merge_add(&m, pkt, len, g.nseg ? g.mss : 0, g.nseg ? gso_csum(&g) : g.csum))
			break;
		bool sig;

		fq_dequeue(&q->fq, &sig); /* s: fq_peek_turn's */
		signal |= sig;
		q->sent[q->nsent++] = s;
		stat_add(&q->stats->ctr[STAT_TUN_READS], 1);
		stat_add(&q->stats->segs[STAT_TUN_READ][stat_seg_bucket(g.nseg ? g.nseg : 1)], 1);
	}
	if (m.reads == 1)
		return false;
	merge_finish(&m);
	/* CoDel signalled on a read that joined: on the superpacket they make, whose reads all
	 * had one ECN field (tcpjoin.h). */
	if (signal && !aqm_signal(q, m.pkt, m.len))
		p->drop = DROP_TX_AQM;
	stat_add(&q->stats->ctr[STAT_TX_MERGED_READS], m.reads - 1);
	q->gso = (struct gso_pkt){ .pkt = m.pkt,
				   .len = m.len,
				   .family = m.family,
				   .l4 = IPPROTO_TCP,
				   .l4_off = m.l4_off,
				   .hdr_len = m.hdr_len,
				   .mss = m.mss,
				   .nseg = m.nseg };
	q->gso_next = m.nseg;
	p->ip.tot_len = (unsigned)m.len;
	p->len = m.len;
	p->nseg = m.nseg;
	p->whole = true;
	p->gso = &q->gso;
	p->csum = gso_csum(&q->gso);
	return true;
}

/* Superpacket p (q->gso and q->gso_ip describe it) to be cut: its first segment into *p, the
 * rest by tunq_next; with drop_last its last is CoDel's drop (--aqm, DROP_TX_AQM). */
static void cut_first(struct tunq *q, uint8_t *hdr, struct tun_pkt *p, bool drop_last)
{
	stat_add(&q->stats->ctr[STAT_GSO_SUPERPACKETS], 1);
	q->gso_partial =
		q->sh->tx_csum_partial && partial_ok(p->len, &q->gso_ip, gso_csum(&q->gso));
	q->gso_next = 0;
	q->gso_drop_last = drop_last;
	next_segment(q, hdr, p);
}

/* A packet read into inner (len bytes, its virtio header h) into *p, checked; a superpacket's
 * first segment. */
static void take_read(struct tunq *q, uint8_t *inner, size_t len, const struct virtio_net_hdr *h,
		      uint8_t *hdr, struct tun_pkt *p)
{
	unsigned mtu = q->sh->cfg->mtu;
	bool cut = q->aqm_cut;

	q->aqm_cut = false;
	q->gso_drop_last = false;
	stat_add(&q->stats->ctr[STAT_TUN_READS], 1);
	p->data = inner;
	p->len = len;
	/* A superpacket, or a packet whose checksum the kernel left to us. */
	p->drop = gso_parse(h, inner, p->len, mtu, &q->gso);
	if (p->drop != DROP_NONE)
		q->gso.nseg = 0; /* nothing to cut, whatever gso_parse left there */
	if (p->drop == DROP_TX_TOO_BIG && ip_parse(inner, p->len, false, &p->ip) < 0)
		goto bad_inner; /* the ICMP error quotes the header: it must be one */
	if (p->drop != DROP_NONE)
		return;
	stat_add(&q->stats->segs[STAT_TUN_READ][stat_seg_bucket(q->gso.nseg ? q->gso.nseg : 1)], 1);
	if (!q->gso.nseg) {
		p->drop = encap_check(q->sh->cfg, inner, p->len, &p->ip);
		p->csum = q->gso.csum;
		if (p->drop == DROP_NONE && merge_turn(q, p, 0))
			return;
		if (p->csum.start && !(q->sh->tx_csum_partial && p->drop == DROP_NONE &&
				       partial_ok(p->len, &p->ip, p->csum))) {
			inet_csum_finish(inner + p->csum.start, p->len - p->csum.start, NULL, 0,
					 p->csum);
			p->csum = (struct l4_csum){ 0 };
		}
		return;
	}
	/* TUN hands over whole packets, but a local raw socket can write anything into it. */
	if (ip_parse(inner, p->len, false, &q->gso_ip) < 0 || q->gso_ip.tot_len != p->len)
		goto bad_inner;
	if (q->gso.l4 == IPPROTO_TCP && p->len <= q->whole_max && !cut) {
		/* Whole: its checksum stays partial where TUN left it; nothing to cut. */
		p->ip = q->gso_ip;
		p->nseg = q->gso.nseg;
		p->whole = true;
		p->gso = &q->gso;
		p->csum = gso_csum(&q->gso);
		q->gso_next = q->gso.nseg;
		if (!q->gso.ecn) /* CWR on its first segment only: nothing may follow */
			merge_turn(q, p, q->gso.mss);
		return;
	}
	cut_first(q, hdr, p, cut);
	return;

bad_inner:
	q->gso.nseg = 0;
	p->drop = DROP_TX_BAD_INNER;
}

void tunq_cut(struct tunq *q, uint8_t *hdr, struct tun_pkt *p)
{
	/* q->gso describes p, as take_read or merge_turn left it; p->ip is its header. */
	q->gso_ip = p->ip;
	cut_first(q, hdr, p, false);
	p->whole = false;
	p->gso = NULL;
}

bool tunq_next(struct tunq *q, uint8_t *hdr, struct tun_pkt *p)
{
	struct virtio_net_hdr h;
	uint8_t *inner;
	ssize_t len;
	uint32_t s;

	if (q->gso_next < q->gso.nseg) {
		next_segment(q, hdr, p);
		return true;
	}
	memset(p, 0, sizeof(*p));
	if (q->sh->fair_queue) {
		bool signal;

		if (q->pass_segs >= TUN_FQ_PASS_SEGS ||
		    (s = fq_dequeue(&q->fq, &signal)) == FQ_NONE)
			return false;
		q->sent[q->nsent++] = s;
		if (signal && !aqm_signal(q, slot(q, s), fq_len(&q->fq, s))) {
			/* Not-ECT. A superpacket is cut and loses its last segment (take_read):
			 * one loss tells its sender as much as all of them would. */
			if (q->hdrs[s].gso_type != VIRTIO_NET_HDR_GSO_NONE) {
				q->aqm_cut = true;
			} else {
				p->data = slot(q, s);
				p->len = fq_len(&q->fq, s);
				p->drop = DROP_TX_AQM;
				q->pass_segs++;
				return true;
			}
		}
		take_read(q, slot(q, s), fq_len(&q->fq, s), &q->hdrs[s], hdr, p);
		q->pass_segs += q->gso.nseg ? q->gso.nseg : 1;
		return true;
	}
	if (q->nread == WORKER_BATCH)
		return false;
	inner = region(q, q->nread);
	len = read_counted(q, inner, &h);
	if (len < 0) {
		if (errno != EPROTO)
			return false; /* EAGAIN: the queue is empty */
		p->drop = DROP_TX_BAD_INNER;
		return true;
	}
	q->nread++;
	take_read(q, inner, (size_t)len, &h, hdr, p);
	return true;
}

/* Writes one packet into TUN, behind a virtio header when the device has them (h NULL: a
 * packet that needs nothing of the kernel). Returns whether the kernel took it. */
static bool write_one(struct tunq *q, const struct virtio_net_hdr *h, const uint8_t *pkt,
		      size_t len)
{
	static const struct virtio_net_hdr none;
	struct iovec iov[2] = {
		{ .iov_base = (void *)(h ? h : &none), .iov_len = sizeof(*h) },
		{ .iov_base = (void *)pkt, .iov_len = len },
	};

	stat_add(&q->stats->ctr[STAT_TUN_WRITE_CALLS], 1);
	if (!q->sh->vnet_hdr)
		return write(q->fd, pkt, len) == (ssize_t)len;
	return writev(q->fd, iov, 2) == (ssize_t)(sizeof(*h) + len);
}

/* coalesce_emit_fn, and the path without offloads: a packet or superpacket of nseg segments into
 * TUN, counted as the segments that make it up, as they crossed the wire. */
static void emit(void *ctx, const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
		 unsigned nseg)
{
	struct tunq *q = ctx;
	size_t seg_bytes = len + (size_t)(nseg - 1) * (h ? le16toh(h->hdr_len) : 0);

	if (!write_one(q, h, pkt, len)) {
		stat_add(&q->stats->drops[DROP_TUN_WRITE], nseg);
		return;
	}
	stat_add(&q->stats->ctr[STAT_TUN_WRITES], 1);
	stat_add(&q->stats->segs[STAT_TUN_WRITE][stat_seg_bucket(nseg)], 1);
	stat_add(&q->stats->ctr[STAT_TUN_TX_PACKETS], nseg);
	stat_add(&q->stats->ctr[STAT_TUN_TX_BYTES], seg_bytes);
	if (nseg > 1)
		stat_add(&q->stats->ctr[STAT_COALESCED_SUPERPACKETS], 1);
}

void tunq_write(struct tunq *q, uint8_t *pkt, size_t len, struct l4_csum csum)
{
	if (!q->sh->vnet_hdr) {
		if (csum.start)
			inet_csum_finish(pkt + csum.start, len - csum.start, NULL, 0, csum);
		emit(q, NULL, pkt, len, 1);
		return;
	}
	if (coalesce_add(&q->coal, pkt, len, csum, emit, q) == COALESCE_BAD_CSUM)
		stat_add(&q->stats->ctr[STAT_COALESCE_BAD_CSUM], 1);
}

/* The virtio header of a merged superpacket: its kind (gso_type, with the ECN bit) must agree
 * with the packet. Sets *need to the TUN_F_* the device must take for it whole. Returns the
 * segments it holds, or 0. */
static unsigned merged_hdr(const uint8_t *pkt, size_t len, const struct ip_info *ip,
			   struct tun_merged *m, struct virtio_net_hdr *h, unsigned *need)
{
	unsigned kind = m->gso_type & ~VIRTIO_NET_HDR_GSO_ECN, l4_hlen;
	size_t hdr_len;

	switch (kind) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
	case VIRTIO_NET_HDR_GSO_TCPV6:
		*need = kind == VIRTIO_NET_HDR_GSO_TCPV4 ? TUN_F_TSO4 : TUN_F_TSO6;
		if (ip->proto != IPPROTO_TCP || m->csum_offset != TCP_CSUM_OFF ||
		    (ip->family == AF_INET6) != (kind == VIRTIO_NET_HDR_GSO_TCPV6) ||
		    (size_t)m->csum_start + TCP_HLEN > len)
			return 0;
		l4_hlen = (unsigned)(pkt[m->csum_start + TCP_DOFF_OFF] >> 4) * 4;
		break;
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		*need = ip->family == AF_INET6 ? TUN_F_USO6 : TUN_F_USO4;
		if (ip->proto != IPPROTO_UDP || m->csum_offset != UDP_CSUM_OFF)
			return 0;
		l4_hlen = UDP_HLEN;
		break;
	default:
		return 0;
	}
	if (m->gso_type & VIRTIO_NET_HDR_GSO_ECN)
		*need |= TUN_F_TSO_ECN;
	hdr_len = (size_t)m->csum_start + l4_hlen;
	if (m->csum_start < ip->hlen || hdr_len >= len || m->gso_size == 0)
		return 0;
	m->hdr_len = (uint16_t)hdr_len;
	memset(h, 0, sizeof(*h));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = m->gso_type;
	h->hdr_len = htole16((uint16_t)hdr_len);
	h->gso_size = htole16(m->gso_size);
	h->csum_start = htole16(m->csum_start);
	h->csum_offset = htole16(m->csum_offset);
	return (unsigned)((len - hdr_len + m->gso_size - 1) / m->gso_size);
}

/*
 * A superpacket the device cannot take whole (no virtio headers, or its kind not offered),
 * described by h: cut here into segments as the kernel would, each with its checksum
 * completed, and written one by one. Returns the segments TUN took.
 */
static unsigned cut_write(struct tunq *q, const struct virtio_net_hdr *h, const uint8_t *pkt,
			  size_t len)
{
	static const struct virtio_net_hdr none;
	struct gso_pkt g;
	unsigned took = 0;

	if (gso_parse(h, pkt, len, SUPERPACKET_MAX, &g) != DROP_NONE)
		return 0;
	for (unsigned i = 0; i < g.nseg; i++) {
		size_t plen = gso_segment(&g, i, q->seg_hdr, false);
		struct iovec iov[3] = {
			{ .iov_base = (void *)&none, .iov_len = sizeof(none) },
			{ .iov_base = q->seg_hdr, .iov_len = g.hdr_len },
			{ .iov_base = (void *)(pkt + g.hdr_len + (size_t)i * g.mss),
			  .iov_len = plen },
		};
		unsigned skip = q->sh->vnet_hdr ? 0 : 1;
		size_t want = g.hdr_len + plen + (skip ? 0 : sizeof(none));

		stat_add(&q->stats->ctr[STAT_TUN_WRITE_CALLS], 1);
		if (writev(q->fd, iov + skip, 3 - (int)skip) != (ssize_t)want) {
			stat_add(&q->stats->drops[DROP_TUN_WRITE], 1);
			continue;
		}
		stat_add(&q->stats->ctr[STAT_TUN_WRITES], 1);
		stat_add(&q->stats->segs[STAT_TUN_WRITE][0], 1);
		stat_add(&q->stats->ctr[STAT_TUN_TX_PACKETS], 1);
		stat_add(&q->stats->ctr[STAT_TUN_TX_BYTES], g.hdr_len + plen);
		took++;
	}
	return took;
}

unsigned tunq_write_merged(struct tunq *q, const uint8_t *pkt, size_t len, const struct ip_info *ip,
			   struct tun_merged *m)
{
	struct virtio_net_hdr h;
	unsigned nseg, need;

	nseg = merged_hdr(pkt, len, ip, m, &h, &need);
	if (!nseg)
		return 0;
	/* What the coalescer holds arrived before: it goes first. */
	coalesce_flush(&q->coal, emit, q);
	if ((q->sh->tun_offloads & (int)need) != (int)need) {
		stat_add(&q->stats->ctr[STAT_TUN_CUT_SUPERPACKETS], 1);
		return cut_write(q, &h, pkt, len) ? nseg : 0;
	}
	emit(q, &h, pkt, len, nseg);
	return nseg;
}

bool tunq_put(struct tunq *q, const uint8_t *pkt, size_t len)
{
	return write_one(q, NULL, pkt, len);
}

void tunq_clock(struct tunq *q, uint64_t now_ns)
{
	coalesce_clock(&q->coal, now_ns);
}

void tunq_flush(struct tunq *q, uint64_t now_ns)
{
	if (q->sh->vnet_hdr)
		coalesce_flush_older(&q->coal, now_ns + 1 - q->sh->coalesce_hold_ns, emit, q);
}

bool tunq_holding(const struct tunq *q)
{
	return q->sh->vnet_hdr && coalesce_holding(&q->coal);
}

void tunq_flush_all(struct tunq *q)
{
	if (q->sh->vnet_hdr)
		coalesce_flush(&q->coal, emit, q);
}
